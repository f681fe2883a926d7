#pragma once
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

// One point of a family's search space. Fields a family does not use stay 0.
struct tile_config {
  kernel_family family;
  int block_m = 0;  // block tile BM x BN x BK
  int block_n = 0;
  int block_k = 0;
  int thread_m = 0;  // per-thread register tile TM x TN (a thread-tiled family)
  int thread_n = 0;
  int vector_width = 0;  // elements per global vector load (a thread-tiled family)
  int warps_m = 0;  // warps along M and N; warp tile is BM/warps_m x BN/warps_n (a warp-tiled family)
  int warps_n = 0;
  int stages = 2;  // shared-memory pipeline depth (a register-staged family double-buffers)
  int split_k = 1;
  int consumers = 0;            // consumer warpgroups (1 or 2) of a warp-specialized family
  int cluster_m = 1;            // thread-block cluster shape (TMA multicast)
  int cluster_n = 1;
  int raster_group = 0;         // grouped rasterization: block tiles per group (0 = plain order)
  bool raster_along_n = false;  // rasterization order

  int threads() const;
  int warp_tile_m() const { return warps_m ? block_m / warps_m : 0; }
  int warp_tile_n() const { return warps_n ? block_n / warps_n : 0; }
  // Dynamic shared memory the kernel asks for, padding included; must match the template.
  std::int64_t smem_bytes(dtype t, layout l) const;
  // Stable name, "<family>_BMxBNxBK" and the family's fields.
  std::string id() const;
  friend bool operator==(const tile_config&, const tile_config&) = default;
};

nlohmann::json tile_to_json(const tile_config& c);
tile_config tile_from_json(const nlohmann::json& j);

}  // namespace tiletune
