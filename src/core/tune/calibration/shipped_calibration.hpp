#pragma once
#include <optional>
#include <string>

#include "core/tune/calibration/model_calibration.hpp"

namespace tiletune {

// The calibration `tiletune db calibrate` fits to the measured results shipped
// in profiles/measured/, as profiles/calibration/<model>.json records it (with
// its ranking quality), built into the binary so that an offline plan for that
// GPU model is ranked by it where the tuning database holds no measured results
// of its own. None for a GPU model without shipped measurements: there the
// physical model stands.
std::optional<model_calibration> shipped_calibration(const std::string& device_model);

// The shipped calibration of the GPU's own model, else one measured on another preset of the same
// architecture: its figures are shares of a GPU's own peaks and rates (efficiencies, DRAM and peak
// shares, time scales, overlap), so they carry over to a part with other SM counts, clocks and
// bandwidth, whose predictions then scale with that part's figures. Where no part of the
// architecture was measured, one of another architecture, carried_across_architectures: an
// assumed model beside a measured one predicted an A100 (slower than an H100 PCIe on every figure)
// up to 2.35x faster on the same kernel. A family the calibration has no timing of (none measured,
// or only of kernels revised since: kernel_revisions.hpp) takes its figures from another part of the
// same architecture that has (the H100's of 2026-11-23 time one family's kernel as it was before
// 2026-11-28; the H200's of 2026-12-04 time today's). Its source says which, and how.
std::optional<model_calibration> shipped_calibration_for(const device_spec& d);

// A calibration measured on the part `from`, for a GPU `to` of another architecture: each family's fitted
// efficiency (a share of the peak the family is assumed to attain on `from`) rescaled by the
// ratio of its assumed ceilings (gemm_family::attainable_efficiency: the warp-level tensor-core
// family's 0.85 of an A100's peak against 0.63 of an H100's, whose peak needs the warpgroup
// instructions), so the kernel keeps the share of its architecture's ceiling it was measured to
// reach; the time scales, overlap and the shared DRAM and peak shares (what the measuring
// protocol let any kernel draw) as measured.
model_calibration carried_across_architectures(model_calibration c, const device_spec& from, const device_spec& to);

}  // namespace tiletune
