// The time of one training step: its GEMMs (timed or predicted), the
// memory-bound kernels, launches and the optimizer step.
#include "core/train/training_plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/tune/perf_model.hpp"
#include "core/train/training_calibration.hpp"
#include "core/train/training_context.hpp"
#include "core/train/zero_buffers.hpp"
#include "core/train/fused_projections.hpp"
#include "core/train/gradient_traffic.hpp"
#include "core/train/training_fp8.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_inventory.hpp"
#include "core/train/host_time.hpp"
#include "core/train/lora_step.hpp"
#include "core/train/moe_parallel.hpp"
#include "core/train/optimizer_placement.hpp"
#include "core/train/quantized_base.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_pipeline.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

dtype gemm_dtype(precision p) {
  switch (p) {
    case precision::fp32: return dtype::f32;
    case precision::fp16_mixed: return dtype::f16;
    default: return dtype::bf16;
  }
}

layout step_gemm_layout(const std::string& gemm_name) {
  if (gemm_name.starts_with("attention")) return {};
  if (gemm_name.ends_with(" weight-grad")) return parse_layout("tn");
  if (gemm_name.ends_with(" data-grad")) return parse_layout("nn");
  return parse_layout("nt");  // forward and recompute
}

namespace {

// Every linear layer's forward, recompute, data- and weight-gradient GEMMs.
void add_linear_gemms(const training_setup& s, std::int64_t tokens, bool checkpointing, std::vector<step_gemm>& out) {
  const model_spec& m = s.model;
  const bool lora = s.lora_rank > 0;
  const int ep = expert_parallel_degree(s);
  for (const auto& t : weight_tensors(m)) {
    if (!t.linear) continue;
    if (t.group > 1) {
      // Routed experts: one grouped GEMM per projection and layer over the
      // experts this GPU holds, each with its average rows (rounded up): tokens x top-k /
      // experts from every expert-parallel rank (x the capacity factor's
      // padding where the config sets one).
      const std::int64_t layers = t.count / t.group;
      std::int64_t local = t.group / ep;
      const double average = static_cast<double>(tokens) * t.token_share * ep * std::max(1.0, m.capacity_factor);
      // Rounded up to a whole row; with fewer routed rows than experts (a decode step), only as
      // many experts as rows get one (uniform routing), not every expert a row.
      const auto rows = static_cast<std::int64_t>(std::ceil(average));
      if (average < 1)
        local = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(average * static_cast<double>(local))));
      const std::string name = t.name + fmt::format(" (grouped over {} experts)", local);
      out.push_back({name + " forward", rows, t.rows, t.cols, local, layers, 1});
      if (checkpointing) out.push_back({name + " recompute", rows, t.rows, t.cols, local, recomputed_count(s, layers), 1});
      out.push_back({name + " data-grad", rows, t.cols, t.rows, local, layers, 1});
      if (!lora) out.push_back({name + " weight-grad", t.rows, t.cols, rows, local, layers, 1});
      continue;
    }
    const bool in_layers = t.name.rfind("layers.", 0) == 0;
    const std::size_t first = out.size();
    // y = x W^T, dx = dy W, dW = dy^T x (frozen weights skip dW).
    out.push_back({t.name + " forward", tokens, t.rows, t.cols, 1, t.count, 1});
    // (Per op: only the matmuls the policy does not save.)
    if (checkpointing && in_layers && (!s.checkpoint_ops || selective_recomputes(t.name)))
      out.push_back({t.name + " recompute", tokens, t.rows, t.cols, 1, recomputed_count(s, t.count), 1});
    out.push_back({t.name + " data-grad", tokens, t.cols, t.rows, 1, t.count, 1});
    if (!lora) out.push_back({t.name + " weight-grad", t.rows, t.cols, tokens, 1, t.count, 1});
    // torchtitan's router runs under autocast(float32) (moe_inventory.cpp): its GEMMs in fp32.
    if (t.name == "layers.router" && layers_of(s) == layer_impl::torchtitan)
      for (std::size_t i = first; i < out.size(); ++i) out[i].fp32 = true;
  }
}

// Attention as batched GEMMs over batch x heads: S = Q K^T, O = P V; backward
// computes dP, dV, dQ, dK (flash recomputes S); causal flash skips the
// masked half.
void add_attention_gemms(const training_setup& s, std::int64_t b, bool checkpointing, std::vector<step_gemm>& out) {
  const model_spec& m = s.model;
  // --packing N: each row's seq_len / N samples attend only within themselves (varlen), so
  // attention runs as seq_len / N problems of N tokens per row.
  const std::int64_t per_row = s.packing > 0 ? s.seq_len / s.packing : 1;
  const std::int64_t bh = b * m.num_heads * per_row, sl = s.packing > 0 ? s.packing : s.seq_len, d = m.head_dim,
                     dv = m.v_dim();
  // Context parallelism's shard: its sl queries attend to every key of the sequence.
  const std::int64_t keys = sl * std::max(1, s.attention_span);
  // Fused SDPA kernels only (not eager attention nor SDPA's math fallback,
  // which compute every score and keep the probabilities for backward).
  const bool flash = attention_kernel_of(s) == attention_kernel::fused;
  double scale = flash && m.causal ? 0.5 : 1.0;
  if (flash && m.causal && m.sliding_window > 0 && m.sliding_window < sl) {
    // Local layers (Gemma 2/3) compute only a window of w keys per query:
    // s w - w^2 / 2 of the s^2 score entries; averaged over the layers.
    const double w = static_cast<double>(m.sliding_window) / static_cast<double>(sl);
    scale = (1 - m.sliding_layers) * 0.5 + m.sliding_layers * (w - w * w / 2);
  }
  // Forward once, and again in the recomputed layers (not per op: the policy saves its outputs).
  const std::int64_t fwd = m.num_layers + (checkpointing && !s.checkpoint_ops ? recomputed_count(s, m.num_layers) : 0);
  out.push_back({"attention scores", sl, keys, d, bh, fwd + (flash ? m.num_layers : 0), scale});
  out.push_back({"attention values", sl, dv, keys, bh, fwd, scale});
  if (dv == d) {
    out.push_back({"attention backward", sl, keys, d, bh, m.num_layers * 4, scale});
  } else {
    // MLA: dQ and dK over the query/key width, dP and dV over the values'.
    out.push_back({"attention backward (q, k)", sl, sl, d, bh, m.num_layers * 2, scale});
    out.push_back({"attention backward (v)", sl, sl, dv, bh, m.num_layers * 2, scale});
  }
}

}  // namespace

std::vector<step_gemm> step_gemms(const training_setup& s, std::int64_t b, bool checkpointing) {
  if (s.tensor_parallel > 1) return step_gemms(tensor_parallel_shard(s), b, checkpointing);  // one GPU's
  if (s.pipeline_parallel > 1) return step_gemms(pipeline_stage(s), b, checkpointing);        // one stage's
  if (s.context_parallel > 1) return step_gemms(context_parallel_shard(s), b, checkpointing);  // one GPU's tokens
  const model_spec& m = s.model;
  const std::int64_t tokens = b * s.seq_len;
  const bool lora = s.lora_rank > 0;
  std::vector<step_gemm> out;
  add_linear_gemms(s, tokens, checkpointing, out);
  add_lora_gemms(s, tokens, checkpointing, out);
  if (!m.causal || m.tied_embeddings) {
    // The output projection onto the vocabulary reuses the embedding matrix
    // (BERT's MLM decoder and tied decoders).
    out.push_back({"lm_head forward", tokens, m.vocab_size, m.hidden_size, 1, 1, 1});
    out.push_back({"lm_head data-grad", tokens, m.hidden_size, m.vocab_size, 1, 1, 1});
    if (!lora) out.push_back({"lm_head weight-grad", m.vocab_size, m.hidden_size, tokens, 1, 1, 1});
  }
  add_attention_gemms(s, b, checkpointing, out);
  return out;
}

namespace {

// The step's GEMM time and, of it, the forward pass's linears and attention.
struct gemm_times {
  double total_ms = 0, forward_ms = 0, attention_ms = 0;
};

// A routed expert GEMM (forward, recompute or data-grad) as `tiletune gemm --model --routing uniform`
// tunes it: the step's tokens routed uniformly to top-k of the experts, one grouped problem whose
// stored time is cuBLASLt's loop over the experts. None with expert parallelism or capacity padding
// (the rows differ), and for the weight-grad GEMMs (grouped along K).
std::optional<gemm_problem> uniform_grouped(const training_setup& s, const step_gemm& g, const gemm_problem& p,
                                            std::int64_t tokens) {
  const model_spec& m = s.model;
  if (g.batch <= 1 || g.thin || g.name.find(" (grouped over ") == std::string::npos || g.name.ends_with(" weight-grad") || !m.is_moe() || m.capacity_factor > 1 ||
      expert_parallel_degree(s) != 1 || m.experts_per_token < 1 || m.experts_per_token > g.batch)
    return std::nullopt;
  return grouped_problem(groups_of_routing(tokens, static_cast<int>(m.experts_per_token), static_cast<int>(g.batch),
                                           expert_routing{}, group_layout::contiguous),
                         p.n, p.k, p.type, p.layout);
}

gemm_times time_gemms(const training_setup& s, const device_spec& d, std::int64_t b, bool checkpointing,
                      const gemm_time_fn& gemm_time, const device_rates& rates) {
  gemm_times times;
  const dtype type = gemm_dtype(s.prec);
  // As the model's modules run them, so that what `gemm --model` tuned and stored is found.
  for (step_gemm g : fuse_projections(s.model, step_gemms(s, b, checkpointing))) {
    const layout lay = model_gemm_layout(s.model, g);
    gemm_problem p;
    p.m = g.m;
    p.n = g.n;
    p.k = g.k;
    p.batch = g.batch;
    // --fp8: the converted linears' GEMMs in fp8 (training_fp8.hpp), the rest in the precision's.
    p.type = g.fp32 ? dtype::f32 : fp8_gemm_dtype(s, g.converted_name()).value_or(type);
    // fp8's scales as the recipe's (per tensor or rowwise): keyed as gemm --model --fp8 tunes them
    p.scaling = is_fp8(p.type) ? fp8_gemm_scaling(s) : default_scaling(p.type);
    p.layout = lay;
    std::optional<double> stored;
    if (!gemm_time && rates.stored_gemm_us) {
      if (const auto grouped = uniform_grouped(s, g, p, b * s.seq_len)) stored = rates.stored_gemm_us(*grouped);
      if (!stored) stored = rates.stored_gemm_us(p);
    }
    const double us = gemm_time ? gemm_time(p)
                      : stored  ? *stored
                      : g.thin  ? thin_gemm_us(p, d, rates.copy_bandwidth_gbs.value_or(d.memory_bandwidth_gbs) *
                                                        batch_calibration_constants().elementwise_bandwidth_share)
                                : predict_library_gemm(d, p).time_us * rates.stored_gemm_scale;
    const double ms = us * 1e-3 * static_cast<double>(g.count) * g.flop_scale;
    times.total_ms += ms;
    if (g.name.ends_with(" forward")) times.forward_ms += ms;
    if (g.name.starts_with("attention")) times.attention_ms += ms;
  }
  return times;
}

// The memory-bound rest: the bytes every non-GEMM kernel reads and writes
// (training_inventory.cpp, op by op), forward once, backward about twice
// (each op's gradient reads the incoming gradient and what it kept, and
// writes its own), recompute once more in the checkpointed layers.
double memory_bound_bytes(const training_setup& s, const token_inventory& inv, const lora_path_cost& lora,
                          const memory_breakdown& mem, const gradient_traffic& gradients, std::int64_t b,
                          bool checkpointing) {
  const model_spec& m = s.model;
  const double tokens = static_cast<double>(b * s.seq_len), L = static_cast<double>(m.num_layers);
  const double passes = 3 + recompute_share(s, checkpointing);
  double bytes = tokens * (L * (inv.layer_traffic * passes - inv.layer_backward_once) + inv.outer_traffic * 3);
  bytes += tokens * static_cast<double>(m.vocab_size) * inv.logit_traffic;
  // LoRA: the adapter path's casts, scale and adds (lora_step.cpp); QLoRA's dequantizations.
  bytes += lora.bytes + dequantize_traffic_bytes(s, mem.expert_parallel, checkpointing);
  bytes += fp8_cast_bytes(s, b * s.seq_len, checkpointing);  // --fp8: scales, casts and transposes
  if (is_mixed(s.prec)) {
    // Autocast casts each linear weight to 16 bits per forward (again in recompute).
    const double casts = static_cast<double>(mem.autocast_weight_copies_bytes) / 2;
    bytes += casts * 6 * (1 + recompute_share(s, checkpointing));
  }
  // The framework's handling of each micro-step's gradients: autocast's cast back to fp32, FSDP's
  // reduce-scatter input, DeepSpeed's buckets (gradient_traffic.hpp).
  bytes += mem.local_trainable_parameters() * gradients.micro_step;
  return bytes;
}

// Optimizer step: fused AdamW reads weight, gradient, m and v and writes
// weight, m and v, in the parameters' dtype (fp32 under AMP); Lion the same
// without v. Around it, the framework's handling of the rank's shard of the
// gradients once a step (gradient_traffic.hpp): the clipping, the unscale and
// the copies to and from fp32.
double optimizer_step_ms(const training_setup& s, const memory_breakdown& mem, const gradient_traffic& gradients,
                         double bandwidth, double host_ms) {
  // What this GPU updates: the dense parameters sharded over the world
  // under ZeRO, its experts over the GPUs holding the same ones.
  const double ep_share = mem.expert_parallel;
  const double Te = static_cast<double>(mem.expert_trainable_parameters) / ep_share;
  const double Td = static_cast<double>(mem.trainable_parameters - mem.expert_trainable_parameters);
  const double T = s.zero_stage >= 1 ? Td / s.world_size + Te / (s.world_size / ep_share) : Td + Te;
  const double bytes = (optimizer_bytes_per_parameter(s) + gradients.step) * T;
  return std::max(bytes / bandwidth * 1e3, host_ms);
}

}  // namespace

step_time predict_step(const training_setup& s, const device_spec& d, std::int64_t b, bool checkpointing,
                       const gemm_time_fn& gemm_time, const device_rates& rates) {
  if (s.tensor_parallel > 1) {  // one GPU's shard of the work, and the layers' collectives
    step_time t = predict_step(tensor_parallel_shard(s), d, b, checkpointing, gemm_time, rates);
    // (with context parallelism the collectives carry one GPU's seq_len / C tokens)
    t.tensor_parallel_ms =
        tensor_parallel_comm_ms(s.context_parallel > 1 ? context_parallel_shard(s) : s, d, b, checkpointing);
    return t;
  }
  if (s.pipeline_parallel > 1) {  // the last stage's layers, LM head and loss, and its sends
    step_time t = predict_step(pipeline_stage(s), d, b, checkpointing, gemm_time, rates);
    t.p2p_ms = pipeline_p2p_ms(s.context_parallel > 1 ? context_parallel_shard(s) : s, d, b);  // seq_len / C tokens
    return t;
  }
  if (s.context_parallel > 1) {  // one GPU's tokens, and the ring's transfers the attention does not hide
    step_time t = predict_step(context_parallel_shard(s), d, b, checkpointing, gemm_time, rates);
    t.context_parallel_ms = std::max(0.0, context_parallel_comm_ms(s, d, b, checkpointing) - t.attention_ms);
    // What the ring adds to the GPU's time fills its wait for the host first: the micro-step takes
    // the longer of the two, not their sum (a faster GPU's shorter attention left more of the ring
    // exposed and was planned slower, host-bound as both were).
    t.host_wait_ms = std::max(0.0, t.host_wait_ms - t.context_parallel_ms);
    return t;
  }
  step_time t;
  const gemm_times gemms = time_gemms(s, d, b, checkpointing, gemm_time, rates);
  t.gemm_ms = gemms.total_ms;
  t.attention_ms = gemms.attention_ms;
  const model_spec& m = s.model;
  const token_inventory inv = plan_inventory(s);
  const double passes = 3 + recompute_share(s, checkpointing);
  const lora_path_cost lora = lora_path(s, b * s.seq_len, checkpointing);
  const memory_breakdown mem = estimate_memory(s);
  const gradient_traffic gradients = gradient_traffic_of(s);
  const double bytes = memory_bound_bytes(s, inv, lora, mem, gradients, b, checkpointing);
  const double bandwidth =
      rates.copy_bandwidth_gbs.value_or(d.memory_bandwidth_gbs) * 1e9 *
      batch_calibration_constants().elementwise_bandwidth_share;
  t.memory_bound_bytes = bytes;
  t.memory_bound_ms = bytes / bandwidth * 1e3;
  // Eager PyTorch launches every op as its own kernel (host_time.hpp counts them by phase).
  const step_kernels kernels = count_step_kernels(m, inv, lora, recompute_share(s, checkpointing));
  t.kernels = kernels.total();
  t.launch_ms = t.kernels * batch_calibration_constants().launch_us * 1e-3;
  // Measured: no kernel runs faster than the GPU's launch floor, so the step
  // takes at least kernels x floor; what that adds shows as launch time.
  if (rates.launch_floor_us)
    t.launch_ms = std::max(t.launch_ms, t.kernels * *rates.launch_floor_us * 1e-3 - t.gemm_ms - t.memory_bound_ms);
  // The host issues each phase while the GPU runs what it has issued: the
  // GPU waits where the host needs longer (host_time.hpp). The forward's GPU
  // time is its linears' GEMMs and its share of the rest (one pass of
  // `passes`).
  const host_issue host = host_issue_time(s, kernels, checkpointing);
  const double gpu_forward = gemms.forward_ms + (gemms.attention_ms + t.memory_bound_ms + t.launch_ms) / passes;
  const double gpu_backward = t.gemm_ms + t.memory_bound_ms + t.launch_ms - gpu_forward;
  t.host_forward_ms = host.forward_ms;
  t.host_backward_ms = host.backward_ms;
  t.host_optimizer_ms = host.optimizer_ms;
  t.host_wait_ms = std::max(0.0, host.forward_ms - gpu_forward) + std::max(0.0, host.backward_ms - gpu_backward);
  t.optimizer_ms = optimizer_step_ms(s, mem, gradients, bandwidth, host.optimizer_ms);
  // The once-a-step bucket copies run in the last micro-step's backward, where they first fill the
  // time its GPU waits for the host.
  t.gradient_boundary_ms = gradients.boundary * mem.local_trainable_parameters() / bandwidth * 1e3;
  t.gradient_boundary_added_ms = std::max(0.0, t.gradient_boundary_ms - std::max(0.0, host.backward_ms - gpu_backward));
  add_offload_time(s, d, mem, t);  // --offload: the CPU steps instead, after the PCIe transfers
  return t;
}

}  // namespace tiletune
