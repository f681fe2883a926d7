#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/gemm/problem.hpp"

namespace tiletune {

class gemm_family;  // core/gemm/family.hpp

// A registered kernel family (core/gemm/families/registry.cpp, family_named):
// a handle that compares by identity.
struct kernel_family {
  const gemm_family* impl = nullptr;
  const gemm_family* operator->() const { return impl; }
  const gemm_family& operator*() const { return *impl; }
  friend bool operator==(kernel_family, kernel_family) = default;
  friend bool operator<(kernel_family a, kernel_family b) { return std::less<const gemm_family*>()(a.impl, b.impl); }
};
std::string_view to_string(kernel_family f);
// The registered family with a name; throws std::invalid_argument for an unknown one.
kernel_family family_named(std::string_view name);

// Up to four integers whose meaning the tile's family defines; its header names
// the slots and gives accessors. Unused slots stay 0 so equality stays exact.
using family_knobs = std::array<int, 4>;

// One point of a family's search space: the geometry and launch shape every
// family and the tuner share, plus the family's own knobs.
struct tile_config {
  kernel_family family;
  int block_m = 0;  // block tile BM x BN x BK
  int block_n = 0;
  int block_k = 0;
  int stages = 2;  // shared-memory pipeline depth (a register-staged family double-buffers)
  int split_k = 1;
  int cluster_m = 1;            // thread-block cluster shape (TMA multicast)
  int cluster_n = 1;
  int raster_group = 0;         // grouped rasterization: block tiles per group (0 = plain order)
  bool raster_along_n = false;  // rasterization order
  family_knobs knobs{};

  int threads() const;
  // Dynamic shared memory the kernel asks for, padding included; must match the template.
  std::int64_t smem_bytes(dtype t, layout l) const;
  // Stable name, "<family>_BMxBNxBK" and the family's fields.
  std::string id() const;
  friend bool operator==(const tile_config&, const tile_config&) = default;
};

nlohmann::json tile_to_json(const tile_config& c);
tile_config tile_from_json(const nlohmann::json& j);
// The tile of a result's "recommendation": its "tile", with the recommendation's "family" where the
// tile names none (as results write it). Throws as tile_from_json does.
tile_config recommended_tile_from_json(const nlohmann::json& recommendation);

}  // namespace tiletune
