#include "core/train/zero_buffers.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/train/lora_step.hpp"
#include "core/train/moe_parallel.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

namespace {
double parameter_bytes(const training_setup& s) { return s.prec == precision::fp32 ? 4 : 2; }

// The gradients the largest unit produces: its parameters, or under LoRA a block's adapters.
double unit_trainable_parameters(const training_setup& s) {
  if (s.lora_rank == 0) return gathered_unit_parameters(s);
  const double ep = expert_parallel_degree(s);
  double adapters = 0;
  for (const auto& t : weight_tensors(s.model))
    if (lora_adapts(s, t))
      adapters += static_cast<double>(s.lora_rank) * static_cast<double>(t.rows + t.cols) *
                  static_cast<double>(t.count) / (t.routed() ? ep : 1);
  return adapters / std::max<double>(1, static_cast<double>(s.model.num_layers));
}

std::int64_t reduce_bucket_elements(const training_setup& s) { return s.model.hidden_size * s.model.hidden_size; }
}  // namespace

bool deepspeed_zero(const training_setup& s) {
  return s.zero_stage >= 1 && (s.framework == training_framework::hf || s.framework == training_framework::deepspeed);
}

bool deepspeed_runs(const training_setup& s) { return s.framework == training_framework::deepspeed || deepspeed_zero(s); }

bool deepspeed_16bit(const training_setup& s) { return deepspeed_runs(s) && is_mixed(s.prec); }

bool megatron_grad_buffer(const training_setup& s) {
  return s.framework == training_framework::megatron && s.zero_stage <= 1;
}

bool sixteen_bit_model(const training_setup& s) {
  // torchtitan applies fully_shard at every --zero (llama3/parallelize.py, apply_fsdp_to_decoder: at
  // shard degree 1, replicated, "a no-op for the all-gather but still installs the MixedPrecisionPolicy").
  return is_mixed(s.prec) && (deepspeed_16bit(s) || s.framework == training_framework::megatron ||
                              s.framework == training_framework::fsdp2);
}

bool runs_under_autocast(const training_setup& s) {
  return is_mixed(s.prec) && (s.lora_rank == 0 || fp32_model_under_autocast(s)) && !sixteen_bit_model(s);
}

double gathered_unit_parameters(const training_setup& s) {
  const double layers = std::max<double>(1, static_cast<double>(s.model.num_layers));
  const double ep = expert_parallel_degree(s);
  double blocks = 0, largest_outer = 0;
  for (const auto& t : weight_tensors(s.model)) {
    if (t.name.rfind("layers.", 0) == 0) blocks += static_cast<double>(t.parameters()) / (t.routed() ? ep : 1);
    else largest_outer = std::max(largest_outer, static_cast<double>(t.parameters()));
  }
  return std::max(blocks / layers, largest_outer);
}

double gathered_parameter_bytes(const training_setup& s) {
  // LitGPT and Composer keep fp32 parameters under AMP: FSDP1's param_dtype fp32, LitGPT's LoRA FSDP2
  // without a policy.
  const bool fp32_parameters = s.framework == training_framework::litgpt || s.framework == training_framework::composer;
  return fp32_parameters && fsdp_runs(s) && is_mixed(s.prec) ? 4 : parameter_bytes(s);
}

std::int64_t gathered_weights_bytes(const training_setup& s) {
  return std::llround(2 * gathered_parameter_bytes(s) * gathered_unit_parameters(s));
}

bool fsdp_replicated(const training_setup& s) {
  return s.zero_stage == 0 && s.framework == training_framework::fsdp2;
}

bool fsdp_runs(const training_setup& s) {
  using f = training_framework;
  return fsdp_replicated(s) ||
         (s.zero_stage >= 2 && (s.framework == f::fsdp2 || s.framework == f::torchtune || s.framework == f::litgpt ||
                                s.framework == f::composer));
}

bool fsdp_no_sync(const training_setup& s) {
  return s.framework == training_framework::litgpt && fsdp_runs(s) && s.world_size > 1;
}

double fsdp_no_sync_gradient_width(const training_setup& s) {
  if (!fsdp_no_sync(s)) return 0;
  return s.lora_rank > 0 ? adapter_element_bytes(s) : gathered_parameter_bytes(s);
}

bool fsdp1_reduces_in_16_bits(const training_setup& s) {
  using f = training_framework;
  return fsdp_runs(s) && is_mixed(s.prec) &&
         (s.framework == f::composer || (s.framework == f::litgpt && s.lora_rank == 0));
}

double fsdp_unit_gradient_bytes_per_parameter(const training_setup& s) {
  if (!fsdp_runs(s)) return 0;
  const bool lora = s.lora_rank > 0;
  // The gradients' width: the gathered parameters' (2 under FSDP2's bf16 policy), a LoRA adapter's.
  const double width = lora ? adapter_element_bytes(s) : s.prec == precision::fp32 ? 4 : 2;
  double bytes = 0;  // per trainable parameter of the unit
  switch (s.framework) {
    case training_framework::fsdp2:  // MixedPrecisionPolicy(param_dtype bf16, reduce_dtype float32)
      bytes = width + 4;
      break;
    case training_framework::torchtune:  // no mixed-precision policy: the model's dtype throughout
      bytes = 2 * width;
      break;
    case training_framework::litgpt:  // LoRA: FSDP2 without a policy (finetune/lora.py's parallelize_fn)
      bytes = lora ? 2 * width : is_mixed(s.prec) ? 4 + 2 : width;
      break;
    case training_framework::composer:  // FSDP1: Lightning's FSDPPrecision and Composer's "DEFAULT"
      bytes = is_mixed(s.prec) ? 4 + 2 : width;  // policy keep fp32 parameters and reduce in 16 bits
      break;
    default:
      return 0;  // hf and deepspeed: DeepSpeed's buckets; megatron: its own buffers
  }
  return bytes;
}

std::int64_t fsdp_unit_gradient_bytes(const training_setup& s) {
  return std::llround(fsdp_unit_gradient_bytes_per_parameter(s) * unit_trainable_parameters(s));
}

std::int64_t deepspeed_bucket_bytes(const training_setup& s) {
  if (!deepspeed_zero(s)) return 0;
  const int buffers = s.zero_stage < 3 && s.overlap_comm ? 2 : 1;
  return std::llround(buffers * parameter_bytes(s) * static_cast<double>(reduce_bucket_elements(s)));
}

void add_deepspeed_zero_settings(const training_setup& s, nlohmann::json& zero) {
  if (s.zero_stage < 1) return;
  zero["reduce_bucket_size"] = reduce_bucket_elements(s);
  if (s.zero_stage < 3) return;
  const auto unit = std::llround(gathered_unit_parameters(s));
  zero["stage3_prefetch_bucket_size"] = unit;
  zero["stage3_max_live_parameters"] = 2 * unit;
  zero["stage3_max_reuse_distance"] = unit;
}

}  // namespace tiletune
