// Internal to src/core/train: when and where the optimizer step runs (--optimizer-in-backward: per
// parameter, inside backward; --offload: on the CPU) and what that allows and costs. The sources of
// each rule: optimizer_placement.cpp and docs/batch.md (#optimizer-in-backward, #cpu-offload).
#pragma once
#include <cstdint>
#include <string>

#include "core/train/training_plan.hpp"

namespace tiletune {

// Throws usage_error naming the combination --optimizer-in-backward cannot run with: ZeRO 1 or 2,
// data parallelism without sharding (DDP), and a global batch other than micro-batch x GPUs.
void validate_optimizer_placement(const training_setup& s);

// The most gradient bytes alive at once when each parameter's step frees its gradient as soon as
// it is complete: the largest of one block's gradients (its tensors' gradients all arrive within
// its backward) and each tensor's outside the blocks (the LM head's, the embedding's), as a share
// of r.gradients_bytes (which must be set). 0 without --optimizer-in-backward.
std::int64_t gradients_in_flight_bytes(const training_setup& s, const memory_breakdown& r);

// With --optimizer-in-backward and --global-batch (no --micro-batch), every candidate is the per-GPU
// batch in one micro-step: where none fits, throws usage_error naming why, the peak and what fits.
void refuse_unfitting_in_backward_batch(const batch_plan& plan, std::int64_t per_gpu_batch,
                                        std::int64_t largest_fitting);

// The plan's note on what --optimizer-in-backward changes and leaves out ("" without it).
std::string optimizer_in_backward_note(const training_setup& s, const memory_breakdown& m);

// --offload: throws usage_error for a combination no trainer offloads (no ZeRO stage, parameters
// without ZeRO-3, bitsandbytes' 8-bit optimizers, the step in backward) and for --pcie-gbs or
// --host-memory-gbs out of range or without --offload.
void validate_offload(const training_setup& s);
// Each GPU's PCIe link to the host, GB/s one direction, effective: --pcie-gbs, else by generation.
double default_pcie_gbs(const device_spec& d);
double pcie_gbs(const training_setup& s, const device_spec& d);
inline constexpr double default_host_memory_gbs = 100;  // the CPU optimizer's, per node: an assumption
double host_memory_gbs(const training_setup& s);
// Bytes the optimizer's step reads and writes per parameter, in the states' dtype.
double optimizer_bytes_per_parameter(const training_setup& s);
// With --offload: the PCIe transfers and the CPU step into t (t.optimizer_ms becomes their per-step
// sum); nothing without it.
void add_offload_time(const training_setup& s, const device_spec& d, const memory_breakdown& m, step_time& t);
// --paged-optimizer (bitsandbytes' PagedAdamW, PagedAdamW8bit, PagedLion: the states in CUDA managed
// memory, which the driver evicts to the host under pressure and pages back on access): throws
// usage_error for an optimizer bitsandbytes has no paged form of, --offload or the step in backward.
void validate_paged_optimizer(const training_setup& s);
// The states' bytes a step pages out and back: what the peak (PyTorch's pool, the states outside it)
// leaves no room for beside them within the budget, at most all of them; 0 unless paged.
std::int64_t paged_optimizer_bytes(const memory_breakdown& m, std::int64_t peak_bytes, std::int64_t budget_bytes);
// Their time per global step: out under the peak and back for the optimizer step, over PCIe.
double paged_optimizer_ms(const training_setup& s, const device_spec& d, std::int64_t bytes);
std::string paged_optimizer_note(const training_setup& s, const device_spec& d);
// The plan's note on what offload assumed ("" without it).
std::string offload_note(const training_setup& s, const device_spec& d, const memory_breakdown& m);

}  // namespace tiletune
