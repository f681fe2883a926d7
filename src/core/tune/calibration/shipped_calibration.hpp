#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tune/calibration/model_calibration.hpp"

namespace tiletune {

// The calibration `tiletune db calibrate` fits to the measured results shipped
// in profiles/measured/, as profiles/calibration/<model>.json records it (with
// its ranking quality), built into the binary so that an offline plan for that
// GPU model is ranked by it where the tuning database holds no measured results
// of its own. None for a GPU model without shipped measurements: there the
// physical model stands.
std::optional<model_calibration> shipped_calibration(const std::string& device_model);

// The shipped calibration of the GPU's architecture, one for all its parts (so that a part slower on
// every figure is never predicted faster): the first preset of its compute capability that has one
// (the H100 SXM's for every sm_90 part, the H200 included), whatever part it was measured on: its
// figures are shares of a GPU's own peaks and rates (efficiencies, DRAM and peak shares, time scales,
// overlap), so they carry over to a part with other SM counts, clocks and bandwidth, whose
// predictions then scale with that part's figures. Where no part of the
// architecture was measured, one of another architecture, carried_across_architectures: an
// assumed model beside a measured one predicted an A100 (slower than an H100 PCIe on every figure)
// up to 2.35x faster on the same kernel. A figure the calibration has no timing of (take_missing_figures)
// comes from another part of the same architecture that has (the H100's of 2026-11-23 time one
// family's kernel as it was before 2026-11-28; the H200's of 2026-12-04 time today's). Its source
// says which, and how. leaving_out: a preset whose own shipped calibration is not to be used (as
// though never measured): `db calibrate` of that very part, whose held-out problems its shipped file
// was fitted to.
std::optional<model_calibration> shipped_calibration_for(const device_spec& d, std::string_view leaving_out = {});

// The figures (efficiency, time scale, overlap loss and variant count, by "family/dtype" or
// "family/*" key) that `other` has and `c` has no timing of, copied into c: a family or a dtype of it
// that c's measurements lack (none measured, only kernels revised since: kernel_revisions.hpp, or the
// one problem that measured it held out). They are properties of the kernel on its architecture,
// shares of the part's own peaks, as the efficiencies carry between parts (above), while c keeps its
// own GPU terms (clock, DRAM and peak shares). Held out of the H100's 2026-11-23 fit, f32 (its
// family's only problem) took the H200's figures of that family instead of the assumed ones: 12.3%
// -> 0.3% off; tf32 and f16 their own dtypes' rather than their family's over all dtypes: 5.4% ->
// 2.9%, 2.1% -> 0.4%.
// Returns the keys taken, in order.
std::vector<std::string> take_missing_figures(model_calibration& c, const model_calibration& other);
// Keys as take_missing_figures returns them, for a message: "a/*", "a/bf16", "b/tf32" read
// "a (*, bf16), b (tf32)".
std::string describe_figures(const std::vector<std::string>& keys);

// A calibration measured on the part `from`, for a GPU `to` of another architecture: each family's fitted
// efficiency (a share of the peak the family is assumed to attain on `from`) rescaled by the
// ratio of its assumed ceilings (gemm_family::attainable_efficiency: the warp-level tensor-core
// family's 0.85 of an A100's peak against 0.63 of an H100's, whose peak needs the warpgroup
// instructions), so the kernel keeps the share of its architecture's ceiling it was measured to
// reach; the time scales, overlap and the shared DRAM and peak shares (what the measuring
// protocol let any kernel draw) as measured.
model_calibration carried_across_architectures(model_calibration c, const device_spec& from, const device_spec& to);

}  // namespace tiletune
