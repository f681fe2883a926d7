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

}  // namespace tiletune
