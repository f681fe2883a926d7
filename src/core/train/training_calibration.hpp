#pragma once
#include <cstdint>
#include <string_view>

// Constants of the training-step model that the formulas cannot derive,
// each fitted to real training on an H100 (profiles/measured/h100-2026-11-22/
// batch/training_calibration.jsonl).
namespace tiletune {

// The fitted constants of profiles/batch_calibration.json (embedded in the
// binary: that file is the only copy; its "meaning" and "fitted" fields say
// what each is and how it was fitted). The allocator slacks apply only to
// memory allocated and freed within a step; see training_memory_peak.cpp.
struct batch_calibration {
  std::int64_t cuda_context_bytes = 0;          // device memory outside PyTorch's allocator
  double allocator_slack_of_transient = 0;      // slack over the peak's transient part
  double allocator_slack_ckpt_of_gradients = 0; // further slack, checkpointed, per gradient byte
  std::int64_t library_workspace_bytes = 0;     // cuBLAS workspaces inside max_allocated
  double elementwise_bandwidth_share = 0;       // share of HBM bandwidth eager kernels reach
  double launch_us = 0;                         // per-kernel cost beyond its bytes
};

// Parsed once, on first use; throws naming the file and the field when one is
// missing or not a number, so a broken profile stops the command loudly.
const batch_calibration& batch_calibration_constants();
// The same from a profile's text (the embedded one above; tests pass others).
batch_calibration parse_batch_calibration(std::string_view text);

// The host's issuing time of an eager step (host_time.cpp). Per-op costs in
// microseconds on the CPU that measured them (profiles/host_time/
// cpu_host_times.jsonl: the real modules at tiny widths, one thread), fitted
// by least squares per phase:
inline constexpr double host_forward_kernel_us = 11.13;   // a forward op issued from Python
inline constexpr double host_backward_kernel_us = 7.71;   // a backward kernel issued by autograd's engine
inline constexpr double host_forward_layer_us = 262.3;    // a layer's modules and hooks, forward
inline constexpr double host_backward_layer_us = 129.5;   // and its autograd nodes' bookkeeping, backward
inline constexpr double host_checkpoint_forward_layer_us = 479.2;   // a checkpointed layer's wrapper, forward
inline constexpr double host_checkpoint_backward_layer_us = 1257.6;  // and in backward, beside its recompute
inline constexpr double host_trainable_tensor_us = 9.77;  // fused AdamW and zero_grad, per trainable tensor
// That CPU's times to the H100 machine's host (PyTorch 2.11, transformers
// 5.17): fitted on the steps measured there whose kernels were too short to
// hide it (profiles/measured/h100-2026-11-23/batch).
inline constexpr double host_scale = 2.6;

}  // namespace tiletune
