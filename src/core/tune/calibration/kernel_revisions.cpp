#include "core/tune/calibration/kernel_revisions.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/gemm/family.hpp"
#include "core/gemm/tile_config.hpp"
#include "core/iso_date.hpp"
#include "core/plan_mode.hpp"

namespace tiletune {

std::string kernels_as_of() {
  std::string newest;
  for (const gemm_family* f : all_families()) newest = std::max(newest, std::string(f->newest_revision()));
  return newest;
}

std::string kernels_as_of(const nlohmann::json& result) {
  if (!result.is_object() || !result.contains("tool") || !result["tool"].is_object()) return {};
  const nlohmann::json& tool = result["tool"];
  for (const char* key : {"kernels_as_of", "date"})
    if (tool.contains(key) && tool[key].is_string() && iso_date(tool[key].get<std::string>()).empty())
      return canonical_iso_date(tool[key].get<std::string>());
  return {};
}

std::string superseded_timings::describe() const {
  std::vector<std::string> parts;
  for (const auto& [family, n] : by_family) parts.push_back(fmt::format("{} {}", family, n));
  return fmt::format("{} ({})", variants, fmt::join(parts, ", "));
}

namespace {
// The family of a variant whose kernel was revised after `as_of`; none where it was not (or where its
// tile is of no family this build knows: calibration reads it as before).
std::optional<std::string> revised_after(const nlohmann::json& variant, const std::string& as_of) {
  try {
    const tile_config c = tile_from_json(variant.at("tile"));
    if (c.family.impl && std::string(c.family->revised(c)) > as_of) return std::string(c.family->name());
  } catch (const std::exception&) {
  }
  return std::nullopt;
}
}  // namespace

superseded_timings mark_superseded(std::vector<nlohmann::json>& results) {
  superseded_timings found;
  for (nlohmann::json& r : results) {
    if (!r.is_object() || !r.contains("variants") || !r["variants"].is_array()) continue;
    const std::string as_of = kernels_as_of(r);
    bool any_current = false;
    for (nlohmann::json& v : r["variants"]) {
      // (A variant the search did not time holds no timing to leave out.)
      if (!v.is_object() || !is_ok_variant(v) || !v.contains("median_us") || !v["median_us"].is_number()) continue;
      const auto family = as_of.empty() ? std::nullopt : revised_after(v, as_of);
      if (!family) {
        any_current = true;  // a timing this build's kernels stand by
        continue;
      }
      v["superseded"] = true;
      ++found.variants;
      ++found.by_family[*family];
    }
    if (!any_current) ++found.results;
  }
  return found;
}

}  // namespace tiletune
