#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/gemm/problem.hpp"

namespace tiletune {

enum class kernel_family { simt, mma, wgmma };
std::string_view to_string(kernel_family f);

// One point of a family's search space. Fields a family does not use stay 0.
struct tile_config {
  kernel_family family = kernel_family::simt;
  int block_m = 0;  // block tile BM x BN x BK
  int block_n = 0;
  int block_k = 0;
  int thread_m = 0;  // simt: per-thread register tile TM x TN
  int thread_n = 0;
  int vector_width = 0;  // simt: elements per global vector load
  int warps_m = 0;  // mma: warps along M and N; warp tile is BM/warps_m x BN/warps_n
  int warps_n = 0;
  int stages = 2;  // shared-memory pipeline depth (simt double-buffers)
  int split_k = 1;
  int consumers = 0;            // wgmma: consumer warpgroups (1 or 2)
  int cluster_m = 1;            // wgmma: thread-block cluster shape (TMA multicast)
  int cluster_n = 1;
  int raster_group = 0;         // grouped rasterization: block tiles per group (0 = plain order)
  bool raster_along_n = false;  // rasterization order

  int threads() const;
  int warp_tile_m() const { return warps_m ? block_m / warps_m : 0; }
  int warp_tile_n() const { return warps_n ? block_n / warps_n : 0; }
  // Dynamic shared memory the kernel asks for, padding included; must match the template.
  std::int64_t smem_bytes(dtype t, layout l) const;
  // Stable name, e.g. "mma_128x128x32_w2x2_s3" or "simt_64x64x8_t8x8_v4".
  std::string id() const;
  friend bool operator==(const tile_config&, const tile_config&) = default;
};

tile_config mma_tile(int block_m, int block_n, int block_k, int warps_m, int warps_n, int stages);
// wgmma: BM x BN x BK, consumer warpgroups, stages, rasterization (cluster 1x1).
tile_config wgmma_tile(int block_m, int block_n, int block_k, int consumers, int stages,
                       int raster_group = 8, bool raster_along_n = false);
tile_config simt_tile(int block_m, int block_n, int block_k, int thread_m, int thread_n, int vector_width = 4);

nlohmann::json tile_to_json(const tile_config& c);
tile_config tile_from_json(const nlohmann::json& j);

}  // namespace tiletune
