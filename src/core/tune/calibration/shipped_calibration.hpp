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

}  // namespace tiletune
