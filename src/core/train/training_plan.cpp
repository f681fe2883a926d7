#include "core/train/training_plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/tune/perf_model.hpp"
#include "core/train/training_calibration.hpp"
#include "core/train/training_communication.hpp"
#include "core/train/training_inventory.hpp"
#include "core/version.hpp"

namespace tiletune {

namespace {
constexpr std::int64_t MiB = 1024 * 1024;

template <typename E, std::size_t N>
E parse_enum(std::string_view text, const char* flag, const std::pair<E, const char*> (&names)[N]) {
  std::string all;
  for (const auto& [e, name] : names) {
    if (text == name) return e;
    all += (all.empty() ? "" : ", ") + std::string(name);
  }
  throw usage_error(fmt::format("{} '{}' is not one of {}", flag, text, all));
}

const std::pair<precision, const char*> precision_names[] = {{precision::fp32, "fp32"},
                                                             {precision::fp16_mixed, "fp16-mixed"},
                                                             {precision::bf16_mixed, "bf16-mixed"},
                                                             {precision::bf16, "bf16"}};
const std::pair<optimizer_kind, const char*> optimizer_names[] = {{optimizer_kind::adamw, "adamw"},
                                                                  {optimizer_kind::adamw_8bit, "adamw-8bit"},
                                                                  {optimizer_kind::adafactor, "adafactor"},
                                                                  {optimizer_kind::sgd, "sgd"},
                                                                  {optimizer_kind::sgd_momentum, "sgd-momentum"}};
const std::pair<attention_impl, const char*> attention_names[] = {{attention_impl::flash, "flash"},
                                                                  {attention_impl::eager, "eager"}};
const std::pair<checkpoint_policy, const char*> checkpoint_names[] = {
    {checkpoint_policy::automatic, "auto"}, {checkpoint_policy::on, "on"}, {checkpoint_policy::off, "off"}};

template <typename E, std::size_t N>
std::string_view name_of(E e, const std::pair<E, const char*> (&names)[N]) {
  for (const auto& [v, name] : names)
    if (v == e) return name;
  return "?";
}

bool is_mixed(precision p) { return p == precision::fp16_mixed || p == precision::bf16_mixed; }
// Bytes of one activation element: autocast runs the layers in 16 bits.
int activation_bytes(precision p) { return p == precision::fp32 ? 4 : 2; }
std::int64_t linear_parameters(const model_spec& m) {
  std::int64_t n = 0;
  for (const auto& t : weight_tensors(m))
    if (t.linear) n += t.parameters();
  return n;
}

// LoRA adapters on every linear layer of the blocks ("all-linear", as in the
// QLoRA paper): r * (in + out) parameters per adapted matrix.
std::int64_t lora_parameters(const model_spec& m, int rank) {
  std::int64_t n = 0;
  for (const auto& t : weight_tensors(m))
    if (t.linear && t.name.rfind("layers.", 0) == 0) n += static_cast<std::int64_t>(rank) * (t.rows + t.cols) * t.count;
  return n;
}

// Adafactor (Shazeer & Stern 2018) keeps, per matrix, one row and one column
// of second-moment factors, and a full second moment per vector; no first
// moment (transformers' default beta1=None). fp32 states.
std::int64_t adafactor_state_bytes(const model_spec& m, int lora_rank) {
  std::int64_t elements = 0;
  if (lora_rank > 0) {
    for (const auto& t : weight_tensors(m))
      if (t.linear && t.name.rfind("layers.", 0) == 0)
        elements += (lora_rank + t.cols + t.rows + lora_rank) * t.count;  // A: r x in, B: out x r
  } else {
    for (const auto& t : weight_tensors(m)) elements += (t.cols > 1 ? t.rows + t.cols : t.rows) * t.count;
  }
  return elements * 4;
}

// Bytes of optimizer state per trainable parameter (not counting Adafactor).
double optimizer_state_bytes(optimizer_kind o, precision p) {
  const double state = p == precision::bf16 ? 2 : 4;  // pure bf16 keeps states in the parameter dtype
  switch (o) {
    case optimizer_kind::adamw: return 2 * state;        // m and v
    case optimizer_kind::adamw_8bit: return 2;           // bitsandbytes: m and v in 8 bits
    case optimizer_kind::sgd: return 0;
    case optimizer_kind::sgd_momentum: return state;     // the momentum buffer
    case optimizer_kind::adafactor: return 0;            // counted per tensor
  }
  return 0;
}

}  // namespace

std::string_view to_string(precision p) { return name_of(p, precision_names); }

dtype gemm_dtype(precision p) {
  switch (p) {
    case precision::fp32: return dtype::f32;
    case precision::fp16_mixed: return dtype::f16;
    default: return dtype::bf16;
  }
}
std::string_view to_string(optimizer_kind o) { return name_of(o, optimizer_names); }
std::string_view to_string(attention_impl a) { return name_of(a, attention_names); }
precision parse_precision(std::string_view s) { return parse_enum(s, "--precision", precision_names); }
optimizer_kind parse_optimizer(std::string_view s) { return parse_enum(s, "--optimizer", optimizer_names); }
attention_impl parse_attention(std::string_view s) { return parse_enum(s, "--attention", attention_names); }
checkpoint_policy parse_checkpointing(std::string_view s) { return parse_enum(s, "--checkpointing", checkpoint_names); }

void validate(const training_setup& s) {
  if (s.seq_len < 1) throw usage_error(fmt::format("--seq-len {} is invalid: it must be at least 1", s.seq_len));
  if (s.model.max_positions > 0 && s.seq_len > s.model.max_positions)
    throw usage_error(fmt::format("--seq-len {} is longer than {}'s {} positions", s.seq_len, s.model.name,
                                  s.model.max_positions));
  if (s.seq_len > 1'048'576) throw usage_error(fmt::format("--seq-len {} is too long (at most 1048576)", s.seq_len));
  if (s.zero_stage < 0 || s.zero_stage > 3)
    throw usage_error(fmt::format("--zero {} is invalid: ZeRO stages are 0 to 3", s.zero_stage));
  if (s.link_gbs && !(*s.link_gbs > 0 && *s.link_gbs < 1e6))
    throw usage_error(fmt::format("--link-gbs {} is invalid: GB/s per GPU, above 0", *s.link_gbs));
  if (s.world_size < 1 || s.world_size > 65536)
    throw usage_error(fmt::format("--world-size {} is invalid: 1 to 65536 GPUs", s.world_size));
  if (s.lora_rank < 0 || s.lora_rank > s.model.hidden_size)
    throw usage_error(fmt::format("--lora-rank {} is invalid: 0 (off) to the hidden size {}", s.lora_rank,
                                  s.model.hidden_size));
  if (s.global_batch && (*s.global_batch < 1 || *s.global_batch > 100'000'000))
    throw usage_error(fmt::format("--global-batch {} is invalid: it must be at least 1", *s.global_batch));
  if (s.global_batch && *s.global_batch < s.world_size)
    throw usage_error(fmt::format("--global-batch {} is smaller than --world-size {}: each GPU needs a sample",
                                  *s.global_batch, s.world_size));
  if (!(s.safety_margin >= 0 && s.safety_margin < 0.9))
    throw usage_error(fmt::format("--safety-margin {} is invalid: 0 to 0.9", s.safety_margin));
}

std::int64_t memory_breakdown::per_sample_bytes(bool checkpointing) const {
  return (checkpointing ? checkpointed_activation_bytes_per_sample : activation_bytes_per_sample) +
         logits_bytes_per_sample;
}

namespace {
// Allocated bytes in each phase of a step, the largest of which PyTorch
// reports as its peak. Gradients are None in forward (zero_grad(set_to_none)).
// Through backward, layer by layer, kept activations and 16-bit weight copies
// are freed as gradients appear: the sum moves linearly from the loss's
// backward to the optimizer step, so those two ends bound it.
struct phase_bytes {
  const char* name;
  std::int64_t bytes;
};
std::vector<phase_bytes> phases(const memory_breakdown& m, std::int64_t b, bool ckpt) {
  const std::int64_t states = m.weights_bytes + m.optimizer_bytes + m.library_workspace_bytes;
  const std::int64_t kept = ckpt ? m.checkpointed_activation_bytes_per_sample : m.activation_bytes_per_sample;
  std::vector<phase_bytes> out;
  out.push_back({"forward", states + m.autocast_weight_copies_bytes + b * (kept + m.logits_forward_bytes_per_sample)});
  // Under checkpointing only the LM head still holds its autocast copy in backward.
  out.push_back({"loss backward", states + (ckpt ? m.lm_head_copy_bytes : m.autocast_weight_copies_bytes) +
                                      b * (kept + m.logits_bytes_per_sample)});
  // Bounded above by all gradients beside the layer inputs and one recomputed layer.
  if (ckpt)
    out.push_back({"recompute", states + m.gradients_bytes + b * (kept + m.recompute_layer_bytes_per_sample)});
  // Fused AdamW updates in place (torch._fused_adamw_ over tensor lists): no temporaries.
  out.push_back({"optimizer step", states + m.gradients_bytes});
  return out;
}
}  // namespace

std::string memory_breakdown::peak_phase(std::int64_t micro_batch, bool checkpointing) const {
  const auto all = phases(*this, micro_batch, checkpointing);
  return std::max_element(all.begin(), all.end(), [](auto& x, auto& y) { return x.bytes < y.bytes; })->name;
}

std::int64_t memory_breakdown::peak_allocated_bytes(std::int64_t micro_batch, bool checkpointing) const {
  std::int64_t peak = 0;
  for (const auto& p : phases(*this, micro_batch, checkpointing)) peak = std::max(peak, p.bytes);
  return peak;
}

std::int64_t memory_breakdown::peak_bytes(std::int64_t micro_batch, bool checkpointing) const {
  const double slack = checkpointing ? allocator_overhead_ckpt : allocator_overhead;
  return static_cast<std::int64_t>(static_cast<double>(peak_allocated_bytes(micro_batch, checkpointing)) *
                                   (1 + slack)) +
         cuda_context_bytes;
}

memory_breakdown estimate_memory(const training_setup& s) {
  const model_spec& m = s.model;
  memory_breakdown r;
  r.parameters = parameter_count(m);
  const bool lora = s.lora_rank > 0;
  const std::int64_t adapters = lora ? lora_parameters(m, s.lora_rank) : 0;
  r.trainable_parameters = lora ? adapters : r.parameters;
  const double P = static_cast<double>(r.parameters), T = static_cast<double>(r.trainable_parameters);
  const double N = s.world_size;

  double weights = 0, grads = 0, optimizer = 0;
  const double states = s.optimizer == optimizer_kind::adafactor
                            ? static_cast<double>(adafactor_state_bytes(m, s.lora_rank))
                            : optimizer_state_bytes(s.optimizer, s.prec) * T;
  if (s.zero_stage == 0) {
    // PyTorch / Hugging Face Trainer ("Model training anatomy" in the
    // transformers docs): AMP keeps fp32 weights and gradients (autocast's
    // 16-bit weight copies are counted apart: they live only until backward). Pure
    // bf16 keeps everything in bf16. LoRA freezes a base loaded in 16 bits
    // (fp32 for fp32 training) and trains fp32 adapters.
    if (lora) {
      const double base = s.prec == precision::fp32 ? 4 : 2;
      weights = base * P + 4 * T;
      grads = 4 * T;
    } else if (is_mixed(s.prec)) {
      weights = 4 * P;
      grads = 4 * T;
    } else {
      const double b = s.prec == precision::fp32 ? 4 : 2;
      weights = b * P;
      grads = b * T;
    }
    optimizer = states;
  } else {
    // DeepSpeed ZeRO (Rajbhandari et al. 2020): mixed precision keeps 2-byte
    // weights and gradients and an fp32 master copy with the optimizer
    // states; stage 1 shards the optimizer states over N GPUs, stage 2 also
    // the gradients, stage 3 also the weights.
    const double wb = s.prec == precision::fp32 ? 4 : 2;
    const double master = is_mixed(s.prec) ? 4 * T : 0;
    weights = wb * P;
    grads = wb * T;
    optimizer = states + master;
    optimizer /= N;
    if (s.zero_stage >= 2) grads /= N;
    if (s.zero_stage >= 3) weights /= N;
  }
  r.weights_bytes = static_cast<std::int64_t>(weights);
  r.gradients_bytes = static_cast<std::int64_t>(grads);
  r.optimizer_bytes = static_cast<std::int64_t>(optimizer);

  // Autocast caches one 16-bit copy of each fp32 weight a linear layer reads
  // (autocast_mode.cpp, cached_cast: leaf tensors that require grad), the
  // LM head's (the tied embedding's) included; the linear nodes keep them
  // for backward after the cache is cleared at the end of the autocast block.
  if (s.zero_stage == 0 && is_mixed(s.prec)) {
    const bool head_shares_embedding = !m.causal || m.tied_embeddings;
    const double head = head_shares_embedding ? static_cast<double>(m.vocab_size * m.hidden_size) : 0;
    if (lora) {
      r.autocast_weight_copies_bytes = static_cast<std::int64_t>(2 * T);  // the frozen base is 16-bit already
    } else {
      r.autocast_weight_copies_bytes = static_cast<std::int64_t>(2 * (static_cast<double>(linear_parameters(m)) + head));
      r.lm_head_copy_bytes = 2 * m.vocab_size * m.hidden_size;
    }
  }

  // Activations kept for backward, op by op (training_inventory.cpp has the
  // sources); the layers' share replaces Korthikanti et al. 2022's 34h + 5as
  // bytes per token, which assumes 16-bit everything and fused kernels.
  const token_inventory inv = inventory(m, s.seq_len, activation_bytes(s.prec), is_mixed(s.prec),
                                        s.attention == attention_impl::eager);
  const double seq = static_cast<double>(s.seq_len), L = static_cast<double>(m.num_layers);
  double lora_extra = 0;
  if (lora) {
    // peft's lora_A keeps its own 16-bit copy of each adapted linear's input,
    // lora_B its r-wide input.
    for (const auto& t : weight_tensors(m))
      if (t.linear && t.name.rfind("layers.", 0) == 0)
        lora_extra += (2.0 * static_cast<double>(t.cols) + 2.0 * s.lora_rank) * static_cast<double>(t.count);
  }
  r.activation_bytes_per_sample = static_cast<std::int64_t>(seq * (L * inv.layer_saved + inv.outer_saved + lora_extra));
  // Hugging Face's gradient checkpointing (torch.utils.checkpoint around each
  // decoder layer) keeps each layer's input; backward recomputes one layer at
  // a time, whose activations are alive during its backward.
  r.checkpointed_activation_bytes_per_sample =
      static_cast<std::int64_t>(seq * (L * inv.layer_input + inv.outer_saved));
  r.recompute_layer_bytes_per_sample =
      static_cast<std::int64_t>(seq * (inv.layer_saved + lora_extra / std::max(1.0, L) + 2 * inv.layer_input));
  const double logits = static_cast<double>(m.vocab_size) * seq;
  r.logits_bytes_per_sample = static_cast<std::int64_t>(inv.logit_backward_bytes * logits);
  r.logits_forward_bytes_per_sample = static_cast<std::int64_t>(inv.logit_forward_bytes * logits);
  // PyTorch allocates cuBLAS's and cuBLASLt's workspaces from its caching
  // allocator, so they count in max_memory_allocated.
  r.library_workspace_bytes = library_workspace_bytes;
  r.cuda_context_bytes = cuda_context_bytes;
  r.allocator_overhead = reserved_over_allocated;
  r.allocator_overhead_ckpt = reserved_over_allocated_ckpt;
  return r;
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

batch_plan plan_batch(const training_setup& s, const device_spec& d, const gemm_time_fn& gemm_time,
                      const device_rates& rates) {
  validate(s);
  batch_plan plan;
  plan.rates = rates;
  if (gemm_time) plan.mode = "measured";
  plan.setup = s;
  plan.device = d;
  plan.memory = estimate_memory(s);
  plan.memory_budget_bytes = static_cast<std::int64_t>(static_cast<double>(d.memory_bytes) * (1 - s.safety_margin));
  const memory_breakdown& mem = plan.memory;

  // The peak is a maximum of phases, each linear in the micro-batch, so it
  // only grows with it: the largest that fits is found by bisection.
  auto max_fit = [&](bool ckpt) -> std::int64_t {
    auto fits = [&](std::int64_t b) { return mem.peak_bytes(b, ckpt) <= plan.memory_budget_bytes; };
    if (!fits(1)) return 0;
    std::int64_t lo = 1, hi = 2;
    while (hi <= (1 << 20) && fits(hi)) lo = hi, hi *= 2;
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    return std::min<std::int64_t>(lo, 1 << 20);
  };
  plan.max_micro_batch_no_ckpt = max_fit(false);
  plan.max_micro_batch_ckpt = max_fit(true);

  std::vector<bool> policies;
  if (s.checkpointing != checkpoint_policy::on) policies.push_back(false);
  if (s.checkpointing != checkpoint_policy::off) policies.push_back(true);

  const communication_estimate comm = estimate_communication(s, d);
  if (s.world_size > 1)
    plan.notes.push_back(fmt::format(
        "communication across the {} GPUs is modelled from the bytes of the {} at {} (ring collectives at 80% of "
        "it), not overlapped with compute: an upper bound, since DDP and DeepSpeed overlap much of it with backward",
        s.world_size,
        s.zero_stage < 3 ? "gradient all-reduce per optimizer step" : "ZeRO-3 gathers and reduce-scatters per micro-step",
        comm.link));
  // Per GPU, a global batch G needs G / world samples per optimizer step.
  const std::int64_t per_gpu = s.global_batch ? std::max<std::int64_t>(1, *s.global_batch / s.world_size) : 0;
  for (bool ckpt : policies) {
    const std::int64_t limit = ckpt ? plan.max_micro_batch_ckpt : plan.max_micro_batch_no_ckpt;
    std::vector<std::int64_t> sizes;
    for (std::int64_t b = 1; b <= std::max<std::int64_t>(limit, 1) * 2 && b <= (1 << 20); b *= 2) sizes.push_back(b);
    if (limit > 0) sizes.push_back(limit);
    if (per_gpu > 0) {
      // No micro-batch beyond the per-GPU batch; its divisors reach the global batch exactly.
      std::erase_if(sizes, [&](std::int64_t b) { return b > per_gpu; });
      for (std::int64_t b = 1; b <= std::min(per_gpu, limit); ++b)
        if (per_gpu % b == 0) sizes.push_back(b);
    }
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    for (std::int64_t b : sizes) {
      batch_candidate c;
      c.micro_batch = b;
      c.checkpointing = ckpt;
      c.peak_bytes = mem.peak_bytes(b, ckpt);
      c.peak_allocated_bytes = mem.peak_allocated_bytes(b, ckpt);
      c.peak_phase = mem.peak_phase(b, ckpt);
      c.fits = c.peak_bytes <= plan.memory_budget_bytes;
      c.grad_accum_steps = per_gpu > 0 ? (per_gpu + b - 1) / b : 1;
      c.effective_global_batch = b * c.grad_accum_steps * s.world_size;
      c.exact_global_batch = !s.global_batch || c.effective_global_batch == *s.global_batch;
      // Only a candidate that fits is worth timing on the GPU.
      c.measured = c.fits && gemm_time;
      c.time = predict_step(s, d, b, ckpt, c.measured ? gemm_time : gemm_time_fn{}, rates);
      c.time.allreduce_ms = comm.per_global_step_ms;
      c.time.gather_ms = comm.per_micro_step_ms;
      // More work never takes less GEMM time: a timing that says so (noise,
      // a shape timed in parts) is raised to the smaller batch's.
      if (!plan.candidates.empty() && plan.candidates.back().checkpointing == ckpt)
        c.time.gemm_ms = std::max(c.time.gemm_ms, plan.candidates.back().time.gemm_ms);
      const double global_step_ms = static_cast<double>(c.grad_accum_steps) * c.time.micro_step_ms() +
                                    c.time.optimizer_ms + c.time.allreduce_ms;
      c.step_ms = global_step_ms / static_cast<double>(c.grad_accum_steps);
      c.samples_per_s = static_cast<double>(b * c.grad_accum_steps * s.world_size) / (global_step_ms * 1e-3);
      c.tokens_per_s = c.samples_per_s * static_cast<double>(s.seq_len);
      plan.candidates.push_back(c);
    }
  }

  // The throughput-best candidate that fits and reaches the asked global batch
  // exactly; when none can, the nearest one (the asked batch is the user's
  // choice, not a few percent of speed's). Without checkpointing preferred
  // while within 1%.
  std::optional<std::size_t> best;
  auto better = [&](std::size_t i, std::size_t j) {
    const auto &a = plan.candidates[i], &b = plan.candidates[j];
    if (s.global_batch) {
      const auto off = [&](const batch_candidate& c) { return std::llabs(c.effective_global_batch - *s.global_batch); };
      if (off(a) != off(b)) return off(a) < off(b);
    }
    if (a.checkpointing != b.checkpointing) {
      const auto& plain = a.checkpointing ? b : a;
      const auto& ckpt = a.checkpointing ? a : b;
      const bool plain_wins = plain.samples_per_s >= 0.99 * ckpt.samples_per_s;
      return a.checkpointing != plain_wins;
    }
    return a.samples_per_s > b.samples_per_s;
  };
  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    if (!plan.candidates[i].fits) continue;
    if (!best || better(i, *best)) best = i;
  }
  plan.recommended = best;

  plan.notes.push_back(fmt::format(
      "peak memory = modelled allocation x (1 + {:.2f} allocator slack; {:.2f} with checkpointing) + {:.2f} GiB CUDA "
      "context, as measured with PyTorch on an H100; the {:.0f}% safety margin covers what the model cannot know "
      "(other processes, other PyTorch or driver versions, allocator settings, tensors a script keeps beyond the step)",
      mem.allocator_overhead, mem.allocator_overhead_ckpt, static_cast<double>(mem.cuda_context_bytes) / (1LL << 30),
      s.safety_margin * 100));
  if (best) {
    const auto& r = plan.candidates[*best];
    if (r.checkpointing && plan.max_micro_batch_no_ckpt == 0)
      plan.notes.push_back("gradient checkpointing is needed: without it not even one sample fits");
    else if (r.checkpointing)
      plan.notes.push_back(fmt::format("gradient checkpointing pays: micro-batch {} with it beats the best without "
                                       "(the largest that fits without it is {})",
                                       r.micro_batch, plan.max_micro_batch_no_ckpt));
    else
      plan.notes.push_back("no gradient checkpointing: the best micro-batch fits without it");
    if (s.global_batch && !r.exact_global_batch)
      plan.notes.push_back(fmt::format("--global-batch {} cannot be reached exactly with micro-batch {} on {} GPU(s); "
                                       "the effective global batch is {}",
                                       *s.global_batch, r.micro_batch, s.world_size, r.effective_global_batch));
  } else {
    plan.notes.push_back(fmt::format("nothing fits: the weights, gradients and optimizer states alone need {:.1f} GiB "
                                     "of the {:.1f} GiB budget",
                                     mem.fixed_tensor_bytes() / double(1LL << 30),
                                     plan.memory_budget_bytes / double(1LL << 30)));
    // What would fit, smallest change first.
    auto fits_with = [&](training_setup alt) {
      const memory_breakdown m2 = estimate_memory(alt);
      return m2.peak_bytes(1, true) <= plan.memory_budget_bytes;
    };
    if (s.optimizer == optimizer_kind::adamw || s.optimizer == optimizer_kind::sgd_momentum) {
      for (auto o : {optimizer_kind::adamw_8bit, optimizer_kind::adafactor}) {
        training_setup alt = s;
        alt.optimizer = o;
        if (fits_with(alt)) plan.suggestions.push_back(fmt::format("--optimizer {}", to_string(o)));
      }
    }
    if (s.lora_rank == 0) {
      training_setup alt = s;
      alt.lora_rank = 16;
      if (fits_with(alt)) plan.suggestions.push_back("--lora-rank 16 (LoRA on every linear layer)");
    }
    if (s.world_size > 1 && s.zero_stage < 3) {
      training_setup alt = s;
      alt.zero_stage = 3;
      if (fits_with(alt)) plan.suggestions.push_back("--zero 3");
    }
    if (s.seq_len > 512) {
      training_setup alt = s;
      alt.seq_len = s.seq_len / 2;
      if (fits_with(alt)) plan.suggestions.push_back(fmt::format("--seq-len {}", alt.seq_len));
    }
  }
  return plan;
}

namespace {

nlohmann::json step_json(const step_time& t) {
  return {{"gemm_ms", t.gemm_ms},
          {"memory_bound_ms", t.memory_bound_ms},
          {"launch_ms", t.launch_ms},
          {"optimizer_ms_per_global_step", t.optimizer_ms},
          {"allreduce_ms_per_global_step", t.allreduce_ms},
          {"zero3_gather_ms", t.gather_ms},
          {"memory_bound_bytes", t.memory_bound_bytes},
          {"kernels", t.kernels}};
}

std::string hf_optim(optimizer_kind o) {
  switch (o) {
    case optimizer_kind::adamw: return "adamw_torch_fused";
    case optimizer_kind::adamw_8bit: return "adamw_bnb_8bit";
    case optimizer_kind::adafactor: return "adafactor";
    case optimizer_kind::sgd:
    case optimizer_kind::sgd_momentum: return "sgd";
  }
  return "adamw_torch";
}

}  // namespace

nlohmann::json to_json(const batch_plan& plan, const std::string& command_line, const std::string& date_utc) {
  const training_setup& s = plan.setup;
  const memory_breakdown& m = plan.memory;
  nlohmann::json j;
  j["schema"] = "tiletune.batch/1";
  j["tool"] = {{"name", "tiletune"}, {"version", tool_version}, {"commit", source_commit()}, {"command_line", command_line}, {"date", date_utc}};
  j["mode"] = plan.mode;
  j["model"] = to_json(s.model);
  j["model"]["parameters"] = m.parameters;
  j["model"]["trainable_parameters"] = m.trainable_parameters;
  j["gpu"] = to_json(plan.device);
  j["setup"] = {{"seq_len", s.seq_len},
                {"precision", to_string(s.prec)},
                {"optimizer", to_string(s.optimizer)},
                {"attention", to_string(s.attention)},
                {"zero_stage", s.zero_stage},
                {"world_size", s.world_size},
                {"lora_rank", s.lora_rank},
                {"global_batch", s.global_batch ? nlohmann::json(*s.global_batch) : nlohmann::json(nullptr)},
                {"safety_margin", s.safety_margin}};
  j["memory"] = {{"weights_bytes", m.weights_bytes},
                 {"gradients_bytes", m.gradients_bytes},
                 {"optimizer_bytes", m.optimizer_bytes},
                 {"activation_bytes_per_sample", m.activation_bytes_per_sample},
                 {"checkpointed_activation_bytes_per_sample", m.checkpointed_activation_bytes_per_sample},
                 {"logits_bytes_per_sample", m.logits_bytes_per_sample},
                 {"overhead_bytes", m.cuda_context_bytes},
                 {"allocator_overhead_fraction", m.allocator_overhead},
                 {"allocator_overhead_fraction_checkpointing", m.allocator_overhead_ckpt},
                 {"autocast_weight_copies_bytes", m.autocast_weight_copies_bytes},
                 {"lm_head_copy_bytes", m.lm_head_copy_bytes},
                 {"recompute_layer_bytes_per_sample", m.recompute_layer_bytes_per_sample},
                 {"logits_forward_bytes_per_sample", m.logits_forward_bytes_per_sample},
                 {"library_workspace_bytes", m.library_workspace_bytes},
                 {"safety_margin_covers",
                  "peak_bytes adds to the modelled tensors the caching allocator's reserved-over-allocated share "
                  "(largest seen in real training) and the CUDA context measured on an H100; the safety margin "
                  "covers the rest the model cannot know: other processes, a different PyTorch or driver, "
                  "allocator settings, tensors a training script keeps beyond the step"},
                 {"budget_bytes", plan.memory_budget_bytes},
                 {"max_micro_batch", {{"no_checkpointing", plan.max_micro_batch_no_ckpt},
                                      {"checkpointing", plan.max_micro_batch_ckpt}}},
                 {"peak_bytes_means",
                  "allocated tensors (torch.cuda.max_memory_allocated) plus allocator slack plus the CUDA context"}};
  j["candidates"] = nlohmann::json::array();
  for (const auto& c : plan.candidates) {
    j["candidates"].push_back({{"micro_batch", c.micro_batch},
                               {"checkpointing", c.checkpointing},
                               {"peak_bytes", c.peak_bytes},
                               {"peak_allocated_bytes", c.peak_allocated_bytes},
                               {"peak_phase", c.peak_phase},
                               {"fits", c.fits},
                               {"grad_accum_steps", c.grad_accum_steps},
                               {"effective_global_batch", c.effective_global_batch},
                               {"step_ms", c.step_ms},
                               {"samples_per_s", c.samples_per_s},
                               {"tokens_per_s", c.tokens_per_s},
                               {"time", step_json(c.time)},
                               {"gemm_time_basis", c.measured ? "measured (cuBLASLt)" : "predicted"}});
  }
  auto optional_number = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  j["device_rates"] = {{"copy_bandwidth_gbs", optional_number(plan.rates.copy_bandwidth_gbs)},
                       {"launch_floor_us", optional_number(plan.rates.launch_floor_us)}};
  j["calibration"] = {{"source", "profiles/batch_calibration.json"},
                      {"cuda_context_bytes", cuda_context_bytes},
                      {"library_workspace_bytes", library_workspace_bytes},
                      {"reserved_over_allocated", reserved_over_allocated},
                      {"reserved_over_allocated_checkpointing", reserved_over_allocated_ckpt},
                      {"elementwise_bandwidth_share", elementwise_bandwidth_share},
                      {"launch_us", launch_us}};
  j["notes"] = plan.notes;
  if (!plan.recommended) {
    j["recommendation"] = nullptr;
    j["suggestions"] = plan.suggestions;
    j["hf_training_args"] = nullptr;
    j["deepspeed"] = nullptr;
    return j;
  }
  const auto& r = plan.candidates[*plan.recommended];
  j["recommendation"] = {{"micro_batch", r.micro_batch},
                         {"grad_accum_steps", r.grad_accum_steps},
                         {"global_batch", r.effective_global_batch},
                         {"exact_global_batch", r.exact_global_batch},
                         {"checkpointing", r.checkpointing},
                         {"precision", to_string(s.prec)},
                         {"optimizer", to_string(s.optimizer)},
                         {"peak_bytes", r.peak_bytes},
                         {"samples_per_s", r.samples_per_s},
                         {"tokens_per_s", r.tokens_per_s}};
  nlohmann::json hf = {{"per_device_train_batch_size", r.micro_batch},
                       {"gradient_accumulation_steps", r.grad_accum_steps},
                       {"gradient_checkpointing", r.checkpointing},
                       {"bf16", s.prec == precision::bf16_mixed || s.prec == precision::bf16},
                       {"fp16", s.prec == precision::fp16_mixed},
                       {"optim", hf_optim(s.optimizer)}};
  if (s.optimizer == optimizer_kind::sgd_momentum) hf["optim_args"] = "momentum=0.9";
  j["hf_training_args"] = hf;
  j["deepspeed"] = {{"train_micro_batch_size_per_gpu", r.micro_batch},
                    {"gradient_accumulation_steps", r.grad_accum_steps},
                    {"train_batch_size", r.effective_global_batch},
                    {"zero_optimization", {{"stage", s.zero_stage}}},
                    {"bf16", {{"enabled", s.prec == precision::bf16_mixed || s.prec == precision::bf16}}},
                    {"fp16", {{"enabled", s.prec == precision::fp16_mixed}}}};
  return j;
}

}  // namespace tiletune
