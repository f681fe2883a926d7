#include "core/tune/calibration/shipped_calibration.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/data/embedded_profiles.hpp"
#include "core/gemm/family.hpp"

namespace tiletune {

std::optional<model_calibration> shipped_calibration(const std::string& device_model) {
  const std::string path = "calibration/" + device_model + ".json";
  const auto text = embedded_profile_text(path);
  if (!text) return std::nullopt;
  model_calibration c = calibration_from_json(nlohmann::json::parse(*text).at("calibration"));
  c.source = "profiles/" + path + " (built in)";
  return c;
}

namespace {
std::string part_name(const device_spec& d) { return d.preset.empty() ? d.name : d.preset; }
}  // namespace

model_calibration carried_across_architectures(model_calibration c, const device_spec& from_part,
                                              const device_spec& to_part) {
  const int from = from_part.compute_capability, to = to_part.compute_capability;
  std::vector<std::string> ratios;
  for (const gemm_family* f : all_families()) {
    const double here = f->attainable_efficiency(from), there = f->attainable_efficiency(to);
    if (!(here > 0) || !(there > 0) || here == there) continue;
    const std::string prefix = std::string(f->name()) + "/";
    bool fitted = false;
    for (auto& [key, efficiency] : c.efficiency)
      if (key.starts_with(prefix)) {
        efficiency *= there / here;
        fitted = true;
      }
    if (fitted) ratios.push_back(fmt::format("{} {:.2f}/{:.2f}", f->name(), there, here));
  }
  c.source += fmt::format(
      ", measured on {} ({}) and carried to {} ({}), an architecture not measured: each family's efficiency "
      "scaled by its assumed ceilings there and here ({})",
      from_part.preset, from_part.arch(), part_name(to_part), to_part.arch(),
      ratios.empty() ? std::string("all alike") : fmt::format("{}", fmt::join(ratios, ", ")));
  return c;
}

std::optional<model_calibration> shipped_calibration_for(const device_spec& d) {
  if (!d.preset.empty())
    if (auto own = shipped_calibration(d.preset)) return own;
  for (const device_spec& other : device_presets()) {
    if (other.compute_capability != d.compute_capability || other.preset == d.preset) continue;
    auto c = shipped_calibration(other.preset);
    if (!c) continue;
    c->source += fmt::format(", measured on {} and applied to {} by architecture ({})", other.preset, part_name(d), d.arch());
    return c;
  }
  // No part of d's architecture measured: the first preset of another that was.
  for (const device_spec& other : device_presets()) {
    auto c = shipped_calibration(other.preset);
    if (!c) continue;
    return carried_across_architectures(std::move(*c), other, d);
  }
  return std::nullopt;
}

}  // namespace tiletune
