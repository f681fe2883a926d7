// The time of one training step: its GEMMs (timed or predicted), the
// memory-bound kernels, launches and the optimizer step.
#include "core/train/training_plan.hpp"

#include <algorithm>

#include "core/tune/perf_model.hpp"
#include "core/train/training_calibration.hpp"
#include "core/train/training_inventory.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

dtype gemm_dtype(precision p) {
  switch (p) {
    case precision::fp32: return dtype::f32;
    case precision::fp16_mixed: return dtype::f16;
    default: return dtype::bf16;
  }
}

std::vector<step_gemm> step_gemms(const training_setup& s, std::int64_t b, bool checkpointing) {
  const model_spec& m = s.model;
  const std::int64_t tokens = b * s.seq_len;
  const bool lora = s.lora_rank > 0;
  std::vector<step_gemm> out;
  for (const auto& t : weight_tensors(m)) {
    if (!t.linear) continue;
    const bool in_layers = t.name.rfind("layers.", 0) == 0;
    // y = x W^T, dx = dy W, dW = dy^T x (frozen weights skip dW).
    out.push_back({t.name + " forward", tokens, t.rows, t.cols, 1, t.count, 1});
    if (checkpointing && in_layers) out.push_back({t.name + " recompute", tokens, t.rows, t.cols, 1, t.count, 1});
    out.push_back({t.name + " data-grad", tokens, t.cols, t.rows, 1, t.count, 1});
    if (!lora) out.push_back({t.name + " weight-grad", t.rows, t.cols, tokens, 1, t.count, 1});
  }
  if (!m.causal || m.tied_embeddings) {
    // The output projection onto the vocabulary reuses the embedding matrix
    // (BERT's MLM decoder and tied decoders).
    out.push_back({"lm_head forward", tokens, m.vocab_size, m.hidden_size, 1, 1, 1});
    out.push_back({"lm_head data-grad", tokens, m.hidden_size, m.vocab_size, 1, 1, 1});
    if (!lora) out.push_back({"lm_head weight-grad", m.vocab_size, m.hidden_size, tokens, 1, 1, 1});
  }
  // Attention as batched GEMMs over batch x heads: S = Q K^T, O = P V; backward
  // computes dP, dV, dQ, dK (flash recomputes S); causal flash skips the
  // masked half.
  const std::int64_t bh = b * m.num_heads, sl = s.seq_len, d = m.head_dim;
  const bool flash = s.attention == attention_impl::flash;
  const double scale = flash && m.causal ? 0.5 : 1.0;
  const std::int64_t fwd = checkpointing ? 2 : 1;
  out.push_back({"attention scores", sl, sl, d, bh, m.num_layers * (fwd + (flash ? 1 : 0)), scale});
  out.push_back({"attention values", sl, d, sl, bh, m.num_layers * fwd, scale});
  out.push_back({"attention backward", sl, sl, d, bh, m.num_layers * 4, scale});
  return out;
}

step_time predict_step(const training_setup& s, const device_spec& d, std::int64_t b, bool checkpointing,
                       const gemm_time_fn& gemm_time, const device_rates& rates) {
  step_time t;
  const dtype type = gemm_dtype(s.prec);
  for (const auto& g : step_gemms(s, b, checkpointing)) {
    gemm_problem p;
    p.m = g.m;
    p.n = g.n;
    p.k = g.k;
    p.batch = g.batch;
    p.type = type;
    const double us = gemm_time ? gemm_time(p) : predict_library_gemm(d, p).time_us;
    t.gemm_ms += us * 1e-3 * static_cast<double>(g.count) * g.flop_scale;
  }
  // The memory-bound rest: the bytes every non-GEMM kernel reads and writes
  // (training_inventory.cpp, op by op), forward once, backward about twice
  // (each op's gradient reads the incoming gradient and what it kept, and
  // writes its own), recompute once more under checkpointing.
  const model_spec& m = s.model;
  const bool mixed = is_mixed(s.prec);
  const token_inventory inv = inventory(m, s.seq_len, activation_bytes(s.prec), mixed,
                                        s.attention == attention_impl::eager);
  const double tokens = static_cast<double>(b * s.seq_len), L = static_cast<double>(m.num_layers);
  const double passes = checkpointing ? 4 : 3;
  double bytes = tokens * (L * inv.layer_traffic * passes + inv.outer_traffic * 3);
  bytes += tokens * static_cast<double>(m.vocab_size) * inv.logit_traffic;
  double lora_kernels = 0;
  if (s.lora_rank > 0) {
    // peft's adapter path beside each adapted linear, per token: lora_A reads
    // the input, lora_B writes an output-wide tensor, scaled and added to the
    // base output; backward reads and writes the same again and adds the
    // input gradient: about 6 input-wide and 10 output-wide element moves.
    for (const auto& w : weight_tensors(m)) {
      if (!w.linear || w.name.rfind("layers.", 0) != 0) continue;
      const double count = static_cast<double>(w.count);
      bytes += tokens * count * (6 * static_cast<double>(w.cols) + 10 * static_cast<double>(w.rows)) *
               activation_bytes(s.prec) * passes / 3;
      lora_kernels += count * 12 * passes / 3;  // A, B, scale, add; their backward
    }
  }
  const memory_breakdown mem = estimate_memory(s);
  if (mixed) {
    // Autocast casts each linear weight to 16 bits per forward (again in
    // recompute), and each 16-bit weight gradient is accumulated into fp32.
    const double casts = static_cast<double>(mem.autocast_weight_copies_bytes) / 2;
    bytes += casts * 6 * (checkpointing ? 2 : 1) + static_cast<double>(mem.trainable_parameters) * 6;
  }
  const double bandwidth =
      rates.copy_bandwidth_gbs.value_or(d.memory_bandwidth_gbs) * 1e9 * elementwise_bandwidth_share;
  t.memory_bound_bytes = bytes;
  t.memory_bound_ms = bytes / bandwidth * 1e3;
  // Eager PyTorch launches every op as its own kernel; backward launches
  // about two per forward op.
  t.kernels = (L * inv.layer_kernels * passes + inv.outer_kernels * 3) + lora_kernels;
  t.launch_ms = t.kernels * launch_us * 1e-3;
  // Measured: no kernel runs faster than the GPU's launch floor, so the step
  // takes at least kernels x floor; what that adds shows as launch time.
  if (rates.launch_floor_us)
    t.launch_ms = std::max(t.launch_ms, t.kernels * *rates.launch_floor_us * 1e-3 - t.gemm_ms - t.memory_bound_ms);
  // Optimizer step: fused AdamW reads weight, gradient, m and v and writes
  // weight, m and v, in the parameters' dtype (fp32 under AMP).
  const double T = static_cast<double>(mem.trainable_parameters);
  const double state = s.prec == precision::bf16 ? 2 : 4;
  double per_param = 7 * state;
  switch (s.optimizer) {
    case optimizer_kind::adamw: per_param = 7 * state; break;
    case optimizer_kind::adamw_8bit: per_param = 3 * state + 4; break;
    case optimizer_kind::adafactor: per_param = 4 * state; break;
    case optimizer_kind::sgd: per_param = 3 * state; break;
    case optimizer_kind::sgd_momentum: per_param = 5 * state; break;
  }
  const double shard = s.zero_stage >= 1 ? s.world_size : 1;
  t.optimizer_ms = per_param * T / shard / bandwidth * 1e3;
  return t;
}

}  // namespace tiletune
