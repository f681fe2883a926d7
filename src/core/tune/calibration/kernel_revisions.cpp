#include "core/tune/calibration/kernel_revisions.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/gemm/family.hpp"
#include "core/gemm/tile_config.hpp"
#include "core/iso_date.hpp"

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

superseded_timings mark_superseded(std::vector<nlohmann::json>& results) {
  superseded_timings found;
  for (nlohmann::json& r : results) {
    if (!r.is_object() || !r.contains("variants") || !r["variants"].is_array()) continue;
    const std::string as_of = kernels_as_of(r);
    bool any_current = false;
    for (nlohmann::json& v : r["variants"]) {
      // (A variant the search did not time holds no timing to leave out.)
      if (!v.is_object() || v.value("status", "") != "ok" || !v.contains("median_us") || !v["median_us"].is_number())
        continue;
      bool old = false;
      if (!as_of.empty() && v.contains("tile")) try {
          // (A result names the family beside the tile; older ones not inside it.)
          nlohmann::json tile = v["tile"];
          if (tile.is_object() && !tile.contains("family") && v.contains("family")) tile["family"] = v["family"];
          const tile_config c = tile_from_json(tile);
          old = c.family.impl && std::string(c.family->revised(c)) > as_of;
          if (old) ++found.by_family[std::string(c.family->name())];
        } catch (const std::exception&) {
          // a tile of no family this build knows: calibration reads it as before
        }
      if (old) {
        v["superseded"] = true;
        ++found.variants;
      } else {
        any_current = true;  // a timing this build's kernels stand by
      }
    }
    if (!any_current) ++found.results;
  }
  return found;
}

}  // namespace tiletune
