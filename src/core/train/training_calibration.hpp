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
// max_reserved / max_allocated - 1, the largest seen, rounded up: 0.095
// without checkpointing, 0.192 with it (recompute frees and re-allocates
// per layer, which fragments the caching allocator's segments).
inline constexpr double reserved_over_allocated = 0.10;
inline constexpr double reserved_over_allocated_ckpt = 0.20;
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
