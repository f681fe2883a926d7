#include "core/tile_config.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/wgmma/wgmma_layout.hpp"

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

namespace {
// Shared-memory row padding in elements; the templates use the same rule.
// 16-bit types pad rows by 16 bytes so ldmatrix row addresses fall in distinct
// banks; tf32 pads k-contiguous rows by 4 and m/n-contiguous rows by 8 words,
// which makes its scalar fragment loads conflict-free. simt pads by 4 floats.
int row_pad(const tile_config& c, dtype t, bool k_contiguous) {
  if (c.family == kernel_family::simt) return 4;
  if (element_bytes(t) == 2) return 8;
  return k_contiguous ? 4 : 8;
}
}  // namespace

std::int64_t tile_config::smem_bytes(dtype t, layout l) const {
  const std::int64_t bm = block_m, bn = block_n, bk = block_k;
  if (family == kernel_family::simt) {
    // Two buffers of As[BK][BM+pad] and Bs[BK][BN+pad], fp32.
    const int pad = row_pad(*this, t, false);
    return 2 * (bk * (bm + pad) + bk * (bn + pad)) * 4;
  }
  if (family == kernel_family::wgmma) return wgmma_smem_bytes(*this, t);
  // A is kept as stored: [BM][BK+pad] for 'n', [BK][BM+pad] for 't'.
  const std::int64_t a = l.a_transposed ? bk * (bm + row_pad(*this, t, false))
                                        : bm * (bk + row_pad(*this, t, true));
  // B: [BK][BN+pad] for 'n', [BN][BK+pad] for 't'.
  const std::int64_t b = l.b_transposed ? bn * (bk + row_pad(*this, t, true))
                                        : bk * (bn + row_pad(*this, t, false));
  return stages * (a + b) * element_bytes(t);
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
