#include "core/train/gradient_traffic.hpp"

#include "core/train/lora_step.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_precision.hpp"
#include "core/train/zero_buffers.hpp"

namespace tiletune {

namespace {

// The gradients autograd leaves on the trainable parameters: 16-bit where the framework made the
// model 16-bit or the precision is pure bf16, fp32 on fp32 weights (autocast casts back); LoRA's
// at the adapters' dtype unless the framework casts them with the model.
double model_gradient_width(const training_setup& s) {
  if (sixteen_bit_model(s) || s.prec == precision::bf16) return 2;
  if (s.lora_rank > 0) return adapter_element_bytes(s);
  return 4;
}

// The gradients the optimizer steps: fp32 under every mixed precision (AMP's, FSDP's fp32 shard,
// DeepSpeed's and Megatron-LM's fp32 copies), the adapters' or the model's dtype otherwise: the
// optimizer states' width.
double optimizer_gradient_width(const training_setup& s) { return optimizer_state_element_bytes(s); }

// Trainable fp32 weights that autocast casts to 16 bits: their 16-bit gradients are cast back.
bool casts_gradients_back(const training_setup& s) {
  if (!is_mixed(s.prec) || sixteen_bit_model(s)) return false;
  return s.lora_rank == 0 || s.adapters == adapter_dtype::fp32;
}

// FSDP1 (LitGPT's full fine-tuning, Composer) reduce-scatters its flat gradient itself where no
// cast to the reduce dtype is needed; FSDP2 always copies into a reduce-scatter input.
bool fsdp_copies_gradients(const training_setup& s) {
  if (!fsdp_runs(s)) return false;
  const bool fsdp1 = s.framework == training_framework::composer ||
                     (s.framework == training_framework::litgpt && s.lora_rank == 0);
  return !fsdp1 || is_mixed(s.prec);
}

}  // namespace

gradient_traffic gradient_traffic_of(const training_setup& s) {
  gradient_traffic t;
  const double width = model_gradient_width(s);
  const bool megatron = s.framework == training_framework::megatron;
  const bool several = data_parallel_degree(s) > 1;
  // Every micro-step.
  if (casts_gradients_back(s)) t.micro_step += 2 + 4;
  if (fsdp_copies_gradients(s)) t.micro_step += fsdp_unit_gradient_bytes_per_parameter(s);
  if (deepspeed_zero(s) && s.zero_stage >= 2) t.micro_step += 2 * width;
  // Once per optimizer step, on every local gradient.
  if (s.zero_stage == 0 && several && !megatron && !fsdp_replicated(s)) t.boundary += 4 * width;  // DDP's buckets, DeepSpeed's flatten
  if (deepspeed_zero(s) && s.zero_stage == 1) t.boundary += 2 * width;
  // Once per optimizer step, on the rank's shard.
  if (deepspeed_runs(s)) {
    t.step += deepspeed_16bit(s) ? 2 + (2 + 4) + (4 + 4) + (4 + 2) : s.grad_clip ? 3 * 4 : 0;
  } else if (megatron) {
    if (is_mixed(s.prec)) t.step += 4 + 2;
    if (s.prec == precision::fp16_mixed) t.step += (2 + 4) + (4 + 4);
    if (s.grad_clip) t.step += 4;
  } else {
    if (s.prec == precision::fp16_mixed) t.step += 4 + 4;
    if (s.grad_clip) t.step += 3 * optimizer_gradient_width(s);
  }
  return t;
}

}  // namespace tiletune
