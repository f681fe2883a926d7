#pragma once
#include <optional>

#include "core/gemm/family.hpp"
#include "core/gemm/k_major_copies.hpp"

namespace tiletune {

// The mma family (kernels_templates/mma/): warp-level mma.sync on the
// tensor cores (sm_80 on), cp.async pipelines, split-K and grouped rasterization.
const gemm_family& mma_family();

// Its knobs (tile_config::knobs): warps along M and N, fp8's output type, K-major copies.
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
// Knob 3 holds two bits: 1 K-major copies, 2 rowwise scales.
// K-major copies ("_kc", TT_K_MAJOR_COPIES): fp8 in a layout other than nt runs on copies the
// transposing pre-pass writes (core/gemm/k_major_copies.hpp), the GEMM as layout nt; ldmatrix
// transposes 16-bit elements, not bytes.
inline bool mma_k_major_copies(const tile_config& c) { return (c.knobs[3] & 1) != 0; }
inline void set_mma_k_major_copies(tile_config& c, bool on) { c.knobs[3] = on ? c.knobs[3] | 1 : c.knobs[3] & ~1; }
// Rowwise scales ("_rw", TT_SCALING 1): fp8 with a scale per row of A and per column of B, the
// problem's scaling, applied to each sum as the epilogue writes it (C = alpha * scale_a[m] *
// scale_b[n] * sum_k op(A) op(B) + beta * C); the kernel takes scale_a and scale_b.
inline bool mma_rowwise_scales(const tile_config& c) { return (c.knobs[3] & 2) != 0; }
inline void set_mma_rowwise_scales(tile_config& c, bool on) { c.knobs[3] = on ? c.knobs[3] | 2 : c.knobs[3] & ~2; }
// The layout the GEMM kernel runs: nt on K-major copies, the problem's otherwise.
inline layout mma_kernel_layout(const tile_config& c, layout l) {
  return mma_k_major_copies(c) ? k_major_layout() : l;
}
// The warp tile, BM/warps_m x BN/warps_n (0 without warps).
inline int mma_warp_tile_m(const tile_config& c) { return mma_warps_m(c) ? c.block_m / mma_warps_m(c) : 0; }
inline int mma_warp_tile_n(const tile_config& c) { return mma_warps_n(c) ? c.block_n / mma_warps_n(c) : 0; }

// BM x BN x BK, warps along M and N, pipeline stages.
tile_config mma_tile(int block_m, int block_n, int block_k, int warps_m, int warps_n, int stages);

}  // namespace tiletune
