// The host's issuing time of an eager training step (host_time.hpp), from
// the op counts the step's inventory already has. The per-op costs were
// measured on a CPU with the real modules at tiny widths
// (scripts/calibrate/measure_host_time.py, profiles/host_time/) and scaled once to the
// host of the H100 machine (training_calibration.hpp).
#include "core/train/host_time.hpp"

#include "core/train/training_calibration.hpp"

namespace tiletune {

step_kernels count_step_kernels(const model_spec& m, const token_inventory& inv, const lora_path_cost& lora,
                                double recompute_share) {
  const double layers_k = static_cast<double>(m.num_layers) * inv.layer_kernels;
  step_kernels k;
  k.forward = layers_k + inv.outer_kernels + lora.forward_kernels;
  k.recompute = recompute_share * (layers_k + lora.forward_kernels);
  k.backward = 2 * (layers_k + inv.outer_kernels - inv.outer_forward_only_kernels) -
               static_cast<double>(m.num_layers) * inv.layer_backward_once_kernels + lora.backward_kernels;
  return k;
}

host_issue host_issue_time(const training_setup& s, const step_kernels& k, bool checkpointing) {
  const double L = static_cast<double>(s.model.num_layers);
  // AdamW and zero_grad visit each trainable tensor: LoRA's two adapters per
  // adapted linear, or every weight.
  // (LitGPT's qkv adapter: one lora_A and one lora_B for the adapted parts of q, k and v.)
  double trainable_tensors = 0, qkv_adapters = 0;
  for (const auto& t : weight_tensors(s.model)) {
    if (s.lora_rank == 0)
      trainable_tensors += static_cast<double>(t.count);
    else if (one_qkv_adapter(s, t))
      qkv_adapters = static_cast<double>(t.count);
    else if (lora_adapts(s, t))
      trainable_tensors += 2.0 * static_cast<double>(t.count);
  }
  trainable_tensors += 2.0 * qkv_adapters + (lora_head_adapter(s) ? 2.0 : 0.0);
  // Python issues the forward (and the recompute), autograd's C++ engine the backward.
  double forward_us = host_forward_kernel_us * k.forward + host_forward_layer_us * L;
  double backward_us = host_backward_kernel_us * k.backward + host_backward_layer_us * L +
                       host_forward_kernel_us * k.recompute;
  if (checkpointing) {
    // Each checkpointed layer's wrapper, in the forward and again in the
    // backward beside its recompute.
    const double wrapped = L * recompute_share(s, true);
    forward_us += host_checkpoint_forward_layer_us * wrapped;
    backward_us += host_checkpoint_backward_layer_us * wrapped;
  }
  host_issue h;
  h.forward_ms = host_scale * forward_us * 1e-3;
  h.backward_ms = host_scale * backward_us * 1e-3;
  h.optimizer_ms = host_scale * host_trainable_tensor_us * trainable_tensors * 1e-3;
  return h;
}

}  // namespace tiletune
