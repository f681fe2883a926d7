#pragma once
#include <optional>

#include "core/gemm/family.hpp"

namespace tiletune {

// The mma family (kernels_templates/mma/): warp-level mma.sync on the
// tensor cores (sm_80 on), cp.async pipelines, split-K and grouped rasterization.
const gemm_family& mma_family();

// Its knobs (tile_config::knobs): warps along M and N, fp8's output type.
inline int mma_warps_m(const tile_config& c) { return c.knobs[0]; }
inline int& mma_warps_m(tile_config& c) { return c.knobs[0]; }
inline int mma_warps_n(const tile_config& c) { return c.knobs[1]; }
inline int& mma_warps_n(tile_config& c) { return c.knobs[1]; }
// fp8's C where it is not the dtype's bf16 (knob 2: the element type + 1; TT_OUT), the problem's `out`.
inline std::optional<element_type> mma_out(const tile_config& c) {
  return c.knobs[2] ? std::optional(static_cast<element_type>(c.knobs[2] - 1)) : std::nullopt;
}
inline void set_mma_out(tile_config& c, std::optional<element_type> out) {
  c.knobs[2] = out ? static_cast<int>(*out) + 1 : 0;
}
// The warp tile, BM/warps_m x BN/warps_n (0 without warps).
inline int mma_warp_tile_m(const tile_config& c) { return mma_warps_m(c) ? c.block_m / mma_warps_m(c) : 0; }
inline int mma_warp_tile_n(const tile_config& c) { return mma_warps_n(c) ? c.block_n / mma_warps_n(c) : 0; }

// BM x BN x BK, warps along M and N, pipeline stages.
tile_config mma_tile(int block_m, int block_n, int block_k, int warps_m, int warps_n, int stages);

}  // namespace tiletune
