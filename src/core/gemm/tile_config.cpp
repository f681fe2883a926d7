#include "core/gemm/tile_config.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/gemm/family.hpp"

namespace tiletune {

std::string_view to_string(kernel_family f) { return f.impl ? f->name() : "?"; }

int tile_config::threads() const { return family->threads(*this); }

std::int64_t tile_config::smem_bytes(dtype t, layout l) const {
  // The templates keep tiles unpadded and XOR-swizzled (kernels_templates/common/tile_addressing.cuh),
  // so the layout does not change the size; tile_addressing_test checks that this matches it.
  (void)l;
  return family->smem_bytes(*this, t);
}

std::string tile_config::id() const {
  return fmt::format("{}_{}x{}x{}", to_string(family), block_m, block_n, block_k) + family->id_suffix(*this);
}

nlohmann::json tile_to_json(const tile_config& c) {
  // The family's name first: a tile reads back through its own family (tile_from_json).
  nlohmann::json j = {
      {"family", to_string(c.family)}, {"block_m", c.block_m}, {"block_n", c.block_n}, {"block_k", c.block_k}};
  c.family->to_json(c, j);
  j["stages"] = c.stages;
  j["split_k"] = c.split_k;
  if (c.raster_group > 0) {
    j["raster_group"] = c.raster_group;
    j["raster_along_n"] = c.raster_along_n;
  }
  j["threads"] = c.threads();
  return j;
}

tile_config recommended_tile_from_json(const nlohmann::json& rec) {
  nlohmann::json tile = rec.at("tile");
  if (tile.is_object() && !tile.contains("family") && rec.contains("family")) tile["family"] = rec["family"];
  return tile_from_json(tile);
}

tile_config tile_from_json(const nlohmann::json& j) {
  tile_config c;
  c.block_m = j.at("block_m").get<int>();
  c.block_n = j.at("block_n").get<int>();
  c.block_k = j.at("block_k").get<int>();
  c.stages = j.value("stages", 2);
  c.split_k = j.value("split_k", 1);
  // tile_to_json writes these where the tile groups its rasterization; they were not read back.
  c.raster_group = j.value("raster_group", 0);
  c.raster_along_n = j.value("raster_along_n", false);
  const std::string name = j.value("family", std::string());
  for (const gemm_family* f : all_families())
    if (name.empty() ? f->claims_json(j) : f->name() == name) {
      c.family = kernel_family{f};
      f->from_json(j, c);
      return c;
    }
  throw std::invalid_argument(name.empty() ? "a tile JSON of no known kernel family"
                                           : fmt::format("no kernel family named '{}'", name));
}

}  // namespace tiletune
