// The training setup's flags: the names of precisions, optimizers, attention
// and checkpointing policies, read and written, and the setup's validation.
#include "core/train/training_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "core/train/lora_step.hpp"
#include "core/train/moe_parallel.hpp"
#include "core/train/optimizer_placement.hpp"
#include "core/train/quantized_base.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_context.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_pipeline.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

namespace {

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
                                                                  {optimizer_kind::sgd_momentum, "sgd-momentum"},
                                                                  {optimizer_kind::lion, "lion"}};
const std::pair<attention_impl, const char*> attention_names[] = {{attention_impl::flash, "flash"},
                                                                  {attention_impl::eager, "eager"}};
const std::pair<loss_impl, const char*> loss_names[] = {
    {loss_impl::eager, "eager"}, {loss_impl::chunked, "chunked"}, {loss_impl::fused, "fused"}};
const std::pair<offload_kind, const char*> offload_names[] = {{offload_kind::none, "none"},
                                                              {offload_kind::optimizer, "optimizer"},
                                                              {offload_kind::optimizer_params, "optimizer+params"}};
const std::pair<quantize_kind, const char*> quantize_names[] = {{quantize_kind::none, "none"},
                                                                {quantize_kind::nf4, "nf4"}};
const std::pair<fp8_recipe, const char*> fp8_names[] = {{fp8_recipe::none, "none"},
                                                        {fp8_recipe::tensorwise, "tensorwise"},
                                                        {fp8_recipe::rowwise, "rowwise"}};
const std::pair<adapter_dtype, const char*> adapter_names[] = {{adapter_dtype::fp32, "fp32"},
                                                                {adapter_dtype::bf16, "bf16"}};
const std::pair<checkpoint_policy, const char*> checkpoint_names[] = {
    {checkpoint_policy::automatic, "auto"}, {checkpoint_policy::on, "on"}, {checkpoint_policy::off, "off"}};

template <typename E, std::size_t N>
std::string_view name_of(E e, const std::pair<E, const char*> (&names)[N]) {
  for (const auto& [v, name] : names)
    if (v == e) return name;
  return "?";
}

}  // namespace

std::string_view to_string(precision p) { return name_of(p, precision_names); }
std::string_view to_string(optimizer_kind o) { return name_of(o, optimizer_names); }
std::string_view to_string(attention_impl a) { return name_of(a, attention_names); }
std::string_view to_string(loss_impl l) { return name_of(l, loss_names); }
precision parse_precision(std::string_view s) { return parse_enum(s, "--precision", precision_names); }
optimizer_kind parse_optimizer(std::string_view s) { return parse_enum(s, "--optimizer", optimizer_names); }
attention_impl parse_attention(std::string_view s) { return parse_enum(s, "--attention", attention_names); }
loss_impl parse_loss(std::string_view s) { return parse_enum(s, "--loss", loss_names); }
std::string_view to_string(offload_kind o) { return name_of(o, offload_names); }
offload_kind parse_offload(std::string_view s) { return parse_enum(s, "--offload", offload_names); }
std::string_view to_string(quantize_kind q) { return name_of(q, quantize_names); }
quantize_kind parse_quantize(std::string_view s) { return parse_enum(s, "--quantize", quantize_names); }
std::string_view to_string(fp8_recipe r) { return name_of(r, fp8_names); }
fp8_recipe parse_fp8_recipe(std::string_view s) { return parse_enum(s, "--fp8", fp8_names); }
checkpoint_policy parse_checkpointing(std::string_view s) {
  if (s == "full" || s == "selective" || parse_checkpoint_every(s) > 1 || s == "every-1") return checkpoint_policy::on;
  for (const auto& [e, name] : checkpoint_names)
    if (s == name) return e;
  throw usage_error(fmt::format("--checkpointing '{}' is not one of auto, on (also: full), off, every-N (N from 1 to "
                                "1000) or selective",
                                s));
}

int parse_checkpoint_every(std::string_view s) {
  if (!s.starts_with("every-")) return 1;
  const std::string n(s.substr(6));
  char* end = nullptr;
  const long v = std::strtol(n.c_str(), &end, 10);
  if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || end != n.c_str() + n.size() || v < 1 ||
      v > 1000)
    throw usage_error(fmt::format("--checkpointing {} is invalid: every-N checkpoints every N-th layer, N from 1 "
                                  "(every layer, as on) to 1000",
                                  s));
  return static_cast<int>(v);
}

// torchtitan's per-op policy saves the outputs of aten.mm except every second one, counted per
// block, and of the attention kernel: in a Llama block's order q, k, v, o, gate, up, down that is
// q, v, gate and down saved, k, o and up recomputed.
bool selective_recomputes(const std::string& linear_name) {
  return linear_name == "layers.k_proj" || linear_name == "layers.o_proj" || linear_name == "layers.up_proj";
}

double selective_layer_bytes_per_token(const training_setup& s, double layer_input_bytes) {
  const model_spec& m = s.model;
  const double a = activation_bytes(s.prec);
  const double saved_matmuls = static_cast<double>(m.q_size() + m.kv_size() + m.intermediate_size + m.hidden_size);
  // The attention kernel's output and its fp32 log-sum-exp per head.
  const double attention = static_cast<double>(m.q_size()) * a + 4.0 * static_cast<double>(m.num_heads);
  return layer_input_bytes + saved_matmuls * a + attention;
}

// torchtitan's layer policy counts the blocks from 1 and wraps those whose count is a multiple of N
// (_layer_sac_count += 1 before `% ac_freq == 0`): floor(L / N) of L, none where N > L (validate refuses).
double recompute_share(const training_setup& s, bool checkpointing) {
  if (!checkpointing) return 0;
  const std::int64_t layers = std::max<std::int64_t>(1, s.model.num_layers);
  const std::int64_t every = std::max(1, s.checkpoint_every);
  return static_cast<double>(std::max<std::int64_t>(1, layers / every)) / static_cast<double>(layers);
}

std::int64_t recomputed_count(const training_setup& s, std::int64_t count) {
  return std::llround(static_cast<double>(count) * recompute_share(s, true));
}

namespace {
const std::pair<lora_target, const char*> lora_target_names[] = {{lora_q, "q"},       {lora_k, "k"},  {lora_v, "v"},
                                                                  {lora_o, "o"},       {lora_gate, "gate"},
                                                                  {lora_up, "up"},     {lora_down, "down"}};
}  // namespace

std::string_view to_string(adapter_dtype a) { return name_of(a, adapter_names); }
adapter_dtype parse_adapter_dtype(std::string_view s) { return parse_enum(s, "--adapter-dtype", adapter_names); }

unsigned parse_lora_targets(std::string_view s) {
  if (s == "all-linear") return lora_all_linear;
  unsigned targets = 0;
  for (const std::string& item : split_commas(s)) {
    unsigned bit = 0;
    for (const auto& [b, name] : lora_target_names)
      if (item == name) bit = b;
    if (bit == 0)
      throw usage_error(fmt::format("--lora-targets '{}': {} is not one of q, k, v, o, gate, up, down (or use all-linear)",
                                    s, item.empty() ? std::string("an empty name") : "'" + item + "'"));
    if (targets & bit) throw usage_error(fmt::format("--lora-targets '{}' names {} twice", s, item));
    targets |= bit;
  }
  return targets;
}

std::string lora_targets_name(unsigned targets) {
  if (targets == lora_all_linear) return "all-linear";
  std::string out;
  for (const auto& [b, name] : lora_target_names)
    if (targets & b) {
      if (!out.empty()) out += ',';
      out += name;
    }
  return out;
}

// The matmul order and the bias-free linears (aten.mm, not addmm) the per-op policy counts.
const char* selective_unmodelled(const training_setup& s) {
  const model_spec& m = s.model;
  return m.is_moe() ? "a mixture of experts"
         : m.is_mla() ? "multi-head latent attention"
         : !m.gated_mlp ? "an MLP without a gate"
         : m.qkv_bias || m.attn_out_bias || m.mlp_bias ? "biased linears (addmm, which the policy does not save)"
         : s.lora_rank > 0 ? "LoRA adapters (their matmuls shift the policy's count)"
         : s.attention != attention_impl::flash ? "eager attention"
         : s.framework == training_framework::megatron
             ? "Megatron-LM's Transformer Engine layers (its own --recompute-granularity selective recomputes the "
               "attention kernel, not this op policy)"
             : nullptr;
}

void set_checkpointing(training_setup& s, std::string_view text) {
  s.checkpointing = parse_checkpointing(text);
  s.checkpoint_every = parse_checkpoint_every(text);
  s.checkpoint_ops = text == "selective";
}

void require_bandwidth_gbs(const char* option, double gbs, const char* what) {
  if (!(gbs >= 0.01 && gbs <= 1e5))
    throw usage_error(fmt::format("{} {} is invalid: GB/s {}, from 0.01 to 100000", option, gbs, what));
}

void validate(const training_setup& s) {
  if (s.checkpoint_ops) {
    const model_spec& m = s.model;
    if (const char* why = selective_unmodelled(s))
      throw usage_error(fmt::format("--checkpointing selective is modelled for Llama-style blocks (q, k, v, o, gate, "
                                    "up, down without biases, flash attention, full fine-tuning); {} has {}: use on "
                                    "or every-N",
                                    m.name, why));
  }
  if (s.adapters == adapter_dtype::bf16 && s.prec != precision::bf16 && s.prec != precision::bf16_mixed)
    throw usage_error(fmt::format("--adapter-dtype bf16 needs a bf16 base: --precision bf16 or bf16-mixed, not {}",
                                  to_string(s.prec)));
  if (s.seq_len < 1) throw usage_error(fmt::format("--seq-len {} is invalid: it must be at least 1", s.seq_len));
  if (s.model.max_positions > 0 && s.seq_len > s.model.max_positions)
    throw usage_error(fmt::format("--seq-len {} is longer than {}'s {} positions", s.seq_len, s.model.name,
                                  s.model.max_positions));
  if (s.seq_len > 1'048'576) throw usage_error(fmt::format("--seq-len {} is too long (at most 1048576)", s.seq_len));
  if (s.micro_batch && (*s.micro_batch < 1 || *s.micro_batch > (1 << 20)))
    throw usage_error(fmt::format("--micro-batch {} is invalid: 1 to 1048576 samples", *s.micro_batch));
  if (s.zero_stage < 0 || s.zero_stage > 3)
    throw usage_error(fmt::format("--zero {} is invalid: ZeRO stages are 0 to 3", s.zero_stage));
  if (s.link_gbs) require_bandwidth_gbs("--link-gbs", *s.link_gbs, "per GPU");
  if (s.gpus_per_node < 1 || s.gpus_per_node > 1024)
    throw usage_error(fmt::format("--gpus-per-node {} is invalid: 1 to 1024", s.gpus_per_node));
  require_bandwidth_gbs("--network-gbs", s.network_gbs, "per GPU");
  if (s.world_size < 1 || s.world_size > 65536)
    throw usage_error(fmt::format("--world-size {} is invalid: 1 to 65536 GPUs", s.world_size));
  // Past one node, whole nodes: the collectives' rings and the groups kept inside a node are
  // planned on nodes of --gpus-per-node GPUs each.
  if (s.world_size > s.gpus_per_node && s.world_size % s.gpus_per_node)
    throw usage_error(fmt::format("--world-size {} is not a whole number of nodes of --gpus-per-node {}: give "
                                  "the GPUs of each node with --gpus-per-node (the default is 8)",
                                  s.world_size, s.gpus_per_node));
  if (s.lora_rank < 0 || s.lora_rank > s.model.hidden_size)
    throw usage_error(fmt::format("--lora-rank {} is invalid: 0 (off) to the hidden size {}", s.lora_rank,
                                  s.model.hidden_size));
  if (!(s.lora_dropout >= 0 && s.lora_dropout < 1))
    throw usage_error(fmt::format("--lora-dropout {} is invalid: a probability from 0 up to (not including) 1",
                                  s.lora_dropout));
  if (s.lora_dropout > 0 && s.lora_rank == 0)
    throw usage_error(fmt::format("--lora-dropout {} needs --lora-rank above 0", s.lora_dropout));
  // Targets the model has no linear for adapt nothing: peft refuses target modules it finds none of
  // (a GPT-2 with --lora-targets gate was planned training 0 parameters).
  if (s.lora_rank > 0 && s.lora_targets != lora_all_linear) {
    const std::vector<weight_tensor> tensors = weight_tensors(s.model);
    bool any = false;
    for (const weight_tensor& t : tensors) any = any || lora_adapts(s, t);
    if (!any) {
      std::string linears;
      for (const weight_tensor& t : tensors)
        if (t.linear && t.name.starts_with("layers.") && linears.find(t.name.substr(7)) == std::string::npos)
          linears += (linears.empty() ? "" : ", ") + t.name.substr(7);
      throw usage_error(fmt::format("--lora-targets {}: {} has none of these linears in its blocks (they are {}): pass "
                                    "all-linear, or targets among q, k, v, o, gate, up, down that it has",
                                    lora_targets_name(s.lora_targets), s.model.name, linears));
    }
  }
  if (s.global_batch && (*s.global_batch < 1 || *s.global_batch > 100'000'000))
    throw usage_error(fmt::format("--global-batch {} is invalid: 1 to 100000000 samples", *s.global_batch));
  validate_tensor_parallel(s);
  validate_pipeline_parallel(s);
  // every-N wraps the blocks counted N, 2N, ...: past the layers a GPU holds (a pipeline stage's), none.
  if (s.checkpoint_every > 1) {
    const std::int64_t p = std::max(1, s.pipeline_parallel);
    const std::int64_t held = (s.model.num_layers + p - 1) / p;
    if (s.checkpoint_every > held)
      throw usage_error(fmt::format(
          "--checkpointing every-{} is more than {}: every-N checkpoints the layers counted N, 2N, ... (torchtitan's "
          "ac_freq), so none would be; pass {}on or off",
          s.checkpoint_every,
          p > 1 ? fmt::format("the {} layers a pipeline stage holds ({}'s {} over {} stages)", held, s.model.name,
                              s.model.num_layers, p)
                : fmt::format("{}'s {} layers", s.model.name, s.model.num_layers),
          held > 1 ? fmt::format("every-N with N from 2 to {}, ", held) : ""));
  }
  validate_context_parallel(s);
  // A sample of one token has no next token to predict: packing starts at two.
  if (s.packing < 0 || s.packing == 1 || (s.packing > 0 && (s.packing >= s.seq_len || s.seq_len % s.packing)))
    throw usage_error(fmt::format("--packing {} is invalid: samples of N tokens, N from 2, dividing --seq-len {} and "
                                  "below it (a sample of one token has no next token to learn; 0: off)",
                                  s.packing, s.seq_len));
  if (s.packing > 0 && s.attention != attention_impl::flash)
    throw usage_error(fmt::format("--packing {} needs --attention flash: a block-diagonal mask saves work only in "
                                  "FlashAttention's varlen kernel (eager attention computes every score of the row)",
                                  s.packing));
  if (s.global_batch && *s.global_batch < data_parallel_degree(s))
    throw usage_error(fmt::format("--global-batch {} is smaller than --world-size {}{}: each {} needs a sample",
                                  *s.global_batch, s.world_size,
                                  data_parallel_degree(s) < s.world_size ? fmt::format(" / (tensor x pipeline{} parallel {})", s.context_parallel > 1 ? " x context" : "", s.world_size / data_parallel_degree(s)) : "",
                                  data_parallel_degree(s) < s.world_size ? "data-parallel rank" : "GPU"));
  // A micro-batch on every data-parallel rank is already more samples a step than the global batch:
  // planned, the step would run a larger global batch than asked (a training hyper-parameter).
  if (s.global_batch && s.micro_batch && *s.micro_batch > *s.global_batch / data_parallel_degree(s))
    throw usage_error(fmt::format("--micro-batch {} on {} data-parallel rank(s) is {} samples a step, more than "
                                  "--global-batch {}: pass --micro-batch {} or less, or a larger --global-batch",
                                  *s.micro_batch, data_parallel_degree(s), *s.micro_batch * data_parallel_degree(s),
                                  *s.global_batch, *s.global_batch / data_parallel_degree(s)));
  validate_expert_parallel(s);
  validate_optimizer_placement(s);
  validate_offload(s);
  validate_paged_optimizer(s);
  validate_quantize(s);
  if (!(s.safety_margin >= 0 && s.safety_margin < 0.9))
    throw usage_error(fmt::format("--safety-margin {} is invalid: a share of memory from 0 up to (not including) 0.9",
                                  s.safety_margin));
}

}  // namespace tiletune
