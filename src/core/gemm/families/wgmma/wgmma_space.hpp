#pragma once
#include <optional>
#include <vector>

#include "core/device/device_spec.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/tile_config.hpp"

namespace tiletune {

// The wgmma family's default search space for a tensor-core dtype.
std::vector<tile_config> wgmma_space(dtype t);

// The space for one problem: the default points, plus a stream-K copy of each tile (in the first
// raster order) whose last wave would leave at least wgmma_stream_k_idle_share of the grid's
// SM-time idle: fewer tiles than SMs (decode shapes), or a partial last wave.
inline constexpr double wgmma_stream_k_idle_share = 0.02;
// Problems of at most wgmma_decode_max_rows rows (decode and small batches, bound by reading B)
// also get a 64 x 128 one-consumer tile with 4 stages and the deepest ring that fits (at most
// wgmma_decode_max_stages); those of at most wgmma_swap_ab_max_rows with A K-major get swap-AB
// tiles (wgmma_family.hpp): BM the smallest of 8, 16, 32, 64 that holds M, BN 64 and 128 (one
// consumer) and 256 (two), each with 4 stages and the deepest ring; the deepest ring also with
// evict-first on B (the weights, read once), and split 2 and 4 ways in a cluster, each with and
// without evict-first; the swap-AB tiles also with evict-first in the deepest ring of at most
// wgmma_decode_deeper_stages, where that is deeper, whole and split in pairs.
// Problems of 16-bit C with beta 0 get the TMA-store copy (_tmas) of each default tile in the first
// raster order (and, like every tile, its stream-K copy where the last wave idles).
// Plain problems also get ping-pong copies (_pp) of 128x128 and 64x256 at 3-5 stages (with the
// TMA-store epilogue too where it applies).
// Plain problems of two or more M tiles get the 2x1-cluster copy (TMA multicast of B) of each
// default tile in the first raster order.
// fp8 problems: every tile promotes every k-tile (_p1) and applies the problem's scales (_rw, _blk);
// the default tiles in the first raster order also every 2 k-tiles (_p2, whole tiles only), except
// under block scales (a k-block's scales apply at its own promotion).
inline constexpr std::int64_t wgmma_decode_max_rows = 128;
inline constexpr std::int64_t wgmma_swap_ab_max_rows = 64;
inline constexpr int wgmma_decode_max_stages = 8;
inline constexpr int wgmma_decode_deeper_stages = 16;
std::vector<tile_config> wgmma_problem_space(const gemm_problem& p, const device_spec& d);

// The wgmma family's own named constraints (architecture, dtype, layout,
// tma_alignment, warpgroup_tile, accumulator_registers, cluster); the
// common ones (threads, shared memory) are checked by check_constraints.
std::optional<constraint_violation> check_wgmma(const tile_config& c, const gemm_problem& p,
                                                const device_spec& d);

}  // namespace tiletune
