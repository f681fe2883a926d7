#include "core/tune/calibration/shipped_calibration.hpp"

#include <nlohmann/json.hpp>

#include "core/data/embedded_profiles.hpp"

namespace tiletune {

std::optional<model_calibration> shipped_calibration(const std::string& device_model) {
  const std::string path = "calibration/" + device_model + ".json";
  const auto text = embedded_profile_text(path);
  if (!text) return std::nullopt;
  model_calibration c = calibration_from_json(nlohmann::json::parse(*text).at("calibration"));
  c.source = "profiles/" + path + " (built in)";
  return c;
}

}  // namespace tiletune
