#pragma once
#include "core/gemm/family.hpp"

namespace tiletune {

// The mma family (kernels_templates/mma/): warp-level mma.sync on the
// tensor cores (sm_80 on), cp.async pipelines, split-K and grouped rasterization.
const gemm_family& mma_family();

// Its knobs (tile_config::knobs): warps along M and N.
inline int mma_warps_m(const tile_config& c) { return c.knobs[0]; }
inline int& mma_warps_m(tile_config& c) { return c.knobs[0]; }
inline int mma_warps_n(const tile_config& c) { return c.knobs[1]; }
inline int& mma_warps_n(tile_config& c) { return c.knobs[1]; }
// The warp tile, BM/warps_m x BN/warps_n (0 without warps).
inline int mma_warp_tile_m(const tile_config& c) { return mma_warps_m(c) ? c.block_m / mma_warps_m(c) : 0; }
inline int mma_warp_tile_n(const tile_config& c) { return mma_warps_n(c) ? c.block_n / mma_warps_n(c) : 0; }

// BM x BN x BK, warps along M and N, pipeline stages.
tile_config mma_tile(int block_m, int block_n, int block_k, int warps_m, int warps_n, int stages);

}  // namespace tiletune
