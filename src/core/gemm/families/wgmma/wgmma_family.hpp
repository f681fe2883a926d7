#pragma once
#include "core/gemm/family.hpp"

namespace tiletune {

// The wgmma family (kernels_templates/wgmma/wgmma_gemm.cu): Hopper's warpgroup MMA
// with TMA operand loads, a producer and 1 or 2 consumer warpgroups, a
// persistent grid (sm_90a only).
const gemm_family& wgmma_family();

// Its knobs (tile_config::knobs): consumer warpgroups, 1 or 2; stream-K on the tiles past
// the last whole wave (1) or every tile whole (0), kernels_templates/wgmma/wgmma_schedule.cuh.
inline int wgmma_consumers(const tile_config& c) { return c.knobs[0]; }
inline int& wgmma_consumers(tile_config& c) { return c.knobs[0]; }
inline bool wgmma_stream_k(const tile_config& c) { return c.knobs[1] != 0; }
inline void set_wgmma_stream_k(tile_config& c, bool on) { c.knobs[1] = on ? 1 : 0; }

// BM x BN x BK, consumer warpgroups, stages, rasterization (cluster 1x1).
tile_config wgmma_tile(int block_m, int block_n, int block_k, int consumers, int stages,
                       int raster_group = 8, bool raster_along_n = false);

}  // namespace tiletune
