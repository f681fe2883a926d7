#include "core/gemm/tile_config.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"

namespace tiletune {

std::string_view to_string(kernel_family f) {
  switch (f) {
    case kernel_family::simt: return "simt";
    case kernel_family::mma: return "mma";
    case kernel_family::wgmma: return "wgmma";
  }
  return "?";
}

int tile_config::threads() const {
  switch (family) {
    case kernel_family::simt:
      return (thread_m && thread_n) ? (block_m / thread_m) * (block_n / thread_n) : 0;
    case kernel_family::mma: return warps_m * warps_n * 32;
    case kernel_family::wgmma: return 128 * (1 + consumers);  // producer + consumer warpgroups
  }
  return 0;
}

std::int64_t tile_config::smem_bytes(dtype t, layout l) const {
  // The templates keep tiles unpadded and XOR-swizzled (kernels_templates/tile_addressing.cuh),
  // so the layout does not change the size; tile_addressing_test checks that this matches it.
  (void)l;
  const std::int64_t bm = block_m, bn = block_n, bk = block_k;
  if (family == kernel_family::simt) {
    // Two buffers of As[BK][BM] and Bs[BK][BN], fp32.
    return 2 * (bk * bm + bk * bn) * 4;
  }
  if (family == kernel_family::wgmma) return wgmma_smem_bytes(*this, t);
  // The pipeline, or the epilogue's fp32 staging of warps_m x 16 rows of C when larger.
  const std::int64_t pipeline = stages * (bm * bk + bk * bn) * element_bytes(t);
  const std::int64_t staging = static_cast<std::int64_t>(warps_m) * 16 * bn * 4;
  return std::max(pipeline, staging);
}

std::string tile_config::id() const {
  std::string s = fmt::format("{}_{}x{}x{}", to_string(family), block_m, block_n, block_k);
  if (family == kernel_family::simt) {
    s += fmt::format("_t{}x{}_v{}", thread_m, thread_n, vector_width);
  } else if (family == kernel_family::wgmma) {
    s += fmt::format("_c{}_s{}_cl{}x{}_g{}{}", consumers, stages, cluster_m, cluster_n,
                     raster_group, raster_along_n ? 'n' : 'm');
  } else {
    s += fmt::format("_w{}x{}_s{}", warps_m, warps_n, stages);
  }
  if (split_k > 1) s += fmt::format("_k{}", split_k);
  if (raster_group > 0 && family != kernel_family::wgmma)  // wgmma always names its order above
    s += fmt::format("_g{}{}", raster_group, raster_along_n ? "n" : "m");
  return s;
}

tile_config mma_tile(int block_m, int block_n, int block_k, int warps_m, int warps_n, int stages) {
  tile_config c;
  c.family = kernel_family::mma;
  c.block_m = block_m;
  c.block_n = block_n;
  c.block_k = block_k;
  c.warps_m = warps_m;
  c.warps_n = warps_n;
  c.stages = stages;
  return c;
}

tile_config wgmma_tile(int block_m, int block_n, int block_k, int consumers, int stages,
                       int raster_group, bool raster_along_n) {
  tile_config c;
  c.family = kernel_family::wgmma;
  c.block_m = block_m;
  c.block_n = block_n;
  c.block_k = block_k;
  c.consumers = consumers;
  c.stages = stages;
  c.raster_group = raster_group;
  c.raster_along_n = raster_along_n;
  return c;
}

tile_config simt_tile(int block_m, int block_n, int block_k, int thread_m, int thread_n, int vector_width) {
  tile_config c;
  c.family = kernel_family::simt;
  c.block_m = block_m;
  c.block_n = block_n;
  c.block_k = block_k;
  c.thread_m = thread_m;
  c.thread_n = thread_n;
  c.vector_width = vector_width;
  c.stages = 2;  // registers -> shared double buffering
  return c;
}

nlohmann::json tile_to_json(const tile_config& c) {
  nlohmann::json j = {{"block_m", c.block_m}, {"block_n", c.block_n}, {"block_k", c.block_k}};
  if (c.family == kernel_family::simt) {
    j["thread_m"] = c.thread_m;
    j["thread_n"] = c.thread_n;
    j["vector_width"] = c.vector_width;
  } else if (c.family == kernel_family::wgmma) {
    j["family"] = "wgmma";
    j["consumers"] = c.consumers;
    j["cluster_m"] = c.cluster_m;
    j["cluster_n"] = c.cluster_n;
    j["raster_group"] = c.raster_group;
    j["raster_along_n"] = c.raster_along_n;
  } else {
    j["warps_m"] = c.warps_m;
    j["warps_n"] = c.warps_n;
    j["warp_m"] = c.warp_tile_m();
    j["warp_n"] = c.warp_tile_n();
  }
  j["stages"] = c.stages;
  j["split_k"] = c.split_k;
  if (c.raster_group > 0) {
    j["raster_group"] = c.raster_group;
    j["raster_along_n"] = c.raster_along_n;
  }
  j["threads"] = c.threads();
  return j;
}

tile_config tile_from_json(const nlohmann::json& j) {
  tile_config c;
  c.block_m = j.at("block_m").get<int>();
  c.block_n = j.at("block_n").get<int>();
  c.block_k = j.at("block_k").get<int>();
  c.stages = j.value("stages", 2);
  c.split_k = j.value("split_k", 1);
  if (j.value("family", std::string()) == "wgmma") {
    c.family = kernel_family::wgmma;
    c.consumers = j.at("consumers").get<int>();
    c.cluster_m = j.value("cluster_m", 1);
    c.cluster_n = j.value("cluster_n", 1);
    c.raster_group = j.value("raster_group", 0);
    c.raster_along_n = j.value("raster_along_n", false);
  } else if (j.contains("warps_m")) {
    c.family = kernel_family::mma;
    c.warps_m = j.at("warps_m").get<int>();
    c.warps_n = j.at("warps_n").get<int>();
  } else {
    c.family = kernel_family::simt;
    c.thread_m = j.at("thread_m").get<int>();
    c.thread_n = j.at("thread_n").get<int>();
    c.vector_width = j.at("vector_width").get<int>();
  }
  return c;
}

}  // namespace tiletune
