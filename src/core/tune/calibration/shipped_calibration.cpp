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

std::vector<std::string> take_missing_figures(model_calibration& c, const model_calibration& other) {
  std::vector<std::string> taken;
  for (const auto& figure : other.efficiency) {
    const std::string& key = figure.first;  // (a name, not a structured binding: the lambda below captures it)
    if (c.efficiency.contains(key) || c.time_scale.contains(key) || c.overlap_loss.contains(key)) continue;
    c.efficiency[key] = figure.second;
    auto copy = [&](const auto& from, auto& to) {
      if (const auto it = from.find(key); it != from.end()) to[key] = it->second;
    };
    copy(other.time_scale, c.time_scale);
    copy(other.overlap_loss, c.overlap_loss);
    copy(other.variants, c.variants);
    taken.push_back(key);
  }
  return taken;
}

std::string describe_figures(const std::vector<std::string>& keys) {
  std::vector<std::string> parts;
  std::string family, dtypes;
  auto flush = [&] {
    if (!family.empty()) parts.push_back(fmt::format("{} ({})", family, dtypes));
  };
  for (const std::string& key : keys) {
    const auto slash = key.find('/');
    const std::string f = key.substr(0, slash), t = slash == std::string::npos ? "" : key.substr(slash + 1);
    if (f != family) {
      flush();
      family = f;
      dtypes = t;
    } else {
      dtypes += ", " + t;
    }
  }
  flush();
  return fmt::format("{}", fmt::join(parts, ", "));
}

namespace {
// The architecture's calibration: the first preset of compute capability cc with a shipped
// calibration (its GPU terms: DRAM and peak shares, the sustained clock), each figure it has no
// timing of (take_missing_figures) taken from the next preset of cc that has; `first`: the preset it
// came from; the preset leaving_out counts as not measured. One calibration for every part of the
// architecture, so that a part slower on every figure is never predicted faster.
std::optional<model_calibration> of_architecture(int cc, std::string_view leaving_out, std::string& first) {
  std::optional<model_calibration> c;
  for (const device_spec& part : device_presets()) {
    if (part.compute_capability != cc || part.preset == leaving_out) continue;
    auto o = shipped_calibration(part.preset);
    if (!o) continue;
    if (!c) {
      c = std::move(o);
      first = part.preset;
      continue;
    }
    const std::vector<std::string> taken = take_missing_figures(*c, *o);
    if (!taken.empty())
      c->source += fmt::format("; {} from profiles/calibration/{}.json, measured on {} with this build's kernels",
                               describe_figures(taken), part.preset, part.preset);
  }
  return c;
}
}  // namespace

std::optional<model_calibration> shipped_calibration_for(const device_spec& d, std::string_view leaving_out) {
  std::string first;
  if (auto c = of_architecture(d.compute_capability, leaving_out, first)) {
    if (first != d.preset)
      c->source += fmt::format(", measured on {} and applied to {} by architecture ({})", first, part_name(d), d.arch());
    return c;
  }
  // No part of d's architecture measured: the first preset of another that was.
  for (const device_spec& other : device_presets())
    if (auto c = of_architecture(other.compute_capability, leaving_out, first))
      return carried_across_architectures(std::move(*c), find_preset(first), d);
  return std::nullopt;
}

}  // namespace tiletune
