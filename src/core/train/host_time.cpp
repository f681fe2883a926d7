// The host's issuing time of an eager training step (host_time.hpp), from
// the op counts the step's inventory already has. The per-op costs were
// measured on a CPU with the real modules at tiny widths
// (scripts/measure_host_time.py, profiles/host_time/) and scaled once to the
// host of the H100 machine (training_calibration.hpp).
#include "core/train/host_time.hpp"

#include "core/train/training_calibration.hpp"

namespace tiletune {

host_issue host_issue_time(const training_setup& s, const token_inventory& inv, const lora_path_cost& lora,
                           bool checkpointing) {
  host_issue h;
  const double L = static_cast<double>(s.model.num_layers);
  const double layers_k = L * inv.layer_kernels;
  // Autograd's backward runs about two kernels per forward op (the
  // inventory's rule for time), issued by its C++ engine, not by Python.
  h.forward_kernels = layers_k + inv.outer_kernels + lora.forward_kernels;
  h.backward_kernels = 2 * (layers_k + inv.outer_kernels) + lora.backward_kernels;
  for (const auto& t : weight_tensors(s.model)) {
    // AdamW and zero_grad visit each trainable tensor: LoRA's two adapters
    // per adapted linear, or every weight.
    if (s.lora_rank > 0) {
      if (lora_adapts(t)) h.trainable_tensors += 2.0 * static_cast<double>(t.count);
    } else {
      h.trainable_tensors += static_cast<double>(t.count);
    }
  }
  double forward_us = host_forward_kernel_us * h.forward_kernels + host_forward_layer_us * L;
  double backward_us = host_backward_kernel_us * h.backward_kernels + host_backward_layer_us * L;
  if (checkpointing) {
    // Each checkpointed layer: its wrapper in the forward, and in the
    // backward its forward again, in Python, with its own wrapper work.
    forward_us += host_checkpoint_forward_layer_us * L;
    backward_us += host_forward_kernel_us * (layers_k + lora.forward_kernels) + host_checkpoint_backward_layer_us * L;
  }
  const double optimizer_us = host_trainable_tensor_us * h.trainable_tensors;
  h.forward_ms = host_scale * forward_us * 1e-3;
  h.backward_ms = host_scale * backward_us * 1e-3;
  h.optimizer_ms = host_scale * optimizer_us * 1e-3;
  return h;
}

}  // namespace tiletune
