#include "core/tune/calibration/shipped_calibration.hpp"

#include <fmt/format.h>
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

std::optional<model_calibration> shipped_calibration_for(const device_spec& d) {
  if (!d.preset.empty())
    if (auto own = shipped_calibration(d.preset)) return own;
  for (const device_spec& other : device_presets()) {
    if (other.compute_capability != d.compute_capability || other.preset == d.preset) continue;
    auto c = shipped_calibration(other.preset);
    if (!c) continue;
    c->source += fmt::format(", measured on {} and applied to {} by architecture ({})", other.preset,
                             d.preset.empty() ? d.name : d.preset, d.arch());
    return c;
  }
  return std::nullopt;
}

}  // namespace tiletune
