#pragma once
#include <cstdint>

// Constants of the training-step model that the formulas cannot derive,
// each fitted to real training on an H100 (profiles/measured/h100-2026-11-22/
// batch/training_calibration.jsonl; profiles/batch_calibration.json records
// the values and how they were fitted; a unit test keeps the two equal).
namespace tiletune {

// device_used_end - max_reserved, the same in all seven runs: the CUDA
// context, loaded kernel modules and cuBLAS handles outside PyTorch's allocator.
inline constexpr std::int64_t cuda_context_bytes = 804'061'184;
// The caching allocator's slack (max_reserved - max_allocated), which only
// memory allocated and freed within a step can have: weights, optimizer
// states and library workspaces are allocated once, before the timed steps,
// and never freed, so they leave no free fragments (issue 21: multiplying
// them too made checkpointing raise the predicted peak).
// - allocator_slack_of_transient: slack over the transient part of the
//   peak (gradients, autocast copies, activations, logits); the largest seen
//   without checkpointing is 0.101 (0.049..0.101 over four runs), rounded up.
// - allocator_slack_ckpt_of_gradients: with checkpointing, a further slack
//   of this share of the gradients' bytes. The plain step frees its kept
//   activations layer by layer as backward goes, and the gradients take those
//   blocks; a checkpointed step holds almost nothing to free, so the
//   gradients split the large segments the loss's logits left, and the
//   recompute's allocations need new ones. Fitted on the two TinyLlama
//   checkpointed runs (0.69 and 0.923 after the transient slack; GPT-2's
//   checkpointed run needs none): 0.93 (rounded up), weakly determined.
inline constexpr double allocator_slack_of_transient = 0.11;
inline constexpr double allocator_slack_ckpt_of_gradients = 0.93;
// PyTorch's cuBLAS/cuBLASLt workspaces and small per-step tensors, allocated
// from the caching allocator: the median over the seven runs of measured
// max_allocated minus the tensors the formulas count (65 to 84 MiB; 67 MiB).
inline constexpr std::int64_t library_workspace_bytes = 70'254'592;
// Share of the HBM bandwidth (the GPU preset's figure) that eager PyTorch's
// elementwise, reduction and optimizer kernels reach, and microseconds each
// kernel adds beyond its bytes (launch and tail of short kernels, which the
// queue does not hide): fitted together by least squares on log(tokens/s)
// over the six 16-bit runs, with their GEMMs timed by cuBLASLt on the same
// H100 (batch-*.json), so GEMM-model error is not soaked up here.
inline constexpr double elementwise_bandwidth_share = 0.79;
inline constexpr double launch_us = 3.0;

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
