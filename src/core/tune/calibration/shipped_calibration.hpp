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
// bandwidth, whose predictions then scale with that part's figures. Its source says which.
std::optional<model_calibration> shipped_calibration_for(const device_spec& d);

}  // namespace tiletune
