#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/gemm/family.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"

namespace tiletune {

// Dynamic shared memory of a wgmma variant: operand stages, epilogue staging
// and mbarriers (the template's layout, kernels_templates/wgmma/wgmma_tile_math.cuh)
// plus 1024 bytes of slack to align the base for 128-byte swizzling.
std::int64_t wgmma_smem_bytes(const tile_config& c, dtype t);

// The k of one wgmma instruction: 32 bytes of it, 16 for f16/bf16, 8 for tf32, 32 for fp8.
int wgmma_instruction_k(dtype t);

// Device source of tt_wgmma(acc, desc_a, desc_b, scale_d): the one
// wgmma.mma_async m64 x n x k instruction of a variant, with n/2 fp32
// accumulators per thread and the layout's transpose immediates
// (16-bit types only; tf32 and fp8 have none and need both operands K-major).
// With swap_ab the kernel's A is the problem's B: a mixed fp8 instruction names B's type first.
std::string wgmma_instruction_source(dtype t, int n, layout l, bool swap_ab = false);

// Output tiles of a problem, all batches.
std::int64_t wgmma_output_tiles(const tile_config& c, const gemm_problem& p);
// Persistent grid: one CTA per SM, never more CTAs than output tiles; with stream-K, every SM.
std::int64_t wgmma_grid_size(const tile_config& c, const gemm_problem& p, int sm_count);

// Stream-K (wgmma_schedule.cuh run on the host): the fewest k-tiles a worker's range takes.
inline constexpr int wgmma_stream_k_min_unit = 8;
// What a k-tile of a stream-K range cost against one of a whole tile on the H200 (2026-12-04,
// profiles/measured/h200-2026-12-04-3/call1/gemm): over 201 pairs of a stream-K variant and its
// twin without (same tile, the range at least 0.3 of a tile), the time the ranges took beyond
// the twin's whole waves came to a median 1.82 times their k-tiles at the whole tiles' rate
// (quartiles 1.33 and 2.15). Each range is one or two units at its own K offset: no CTA running
// at once shares its panels in L2 (a median 2.09 over the 53 pairs whose last tiles' panels do not
// fit in L2, 1.63 where they do), and each unit another fill, partial store and wait. Counted as
// one, stream-K's variants were predicted 2% faster than their twins and measured 4% slower
// (median), and the offline pick was a stream-K variant 19-25% slower than the best on three
// of 13 problems.
inline constexpr double wgmma_stream_k_tile_cost = 1.8;
// The workspace the kernel's fixup needs: one fp32 BM x BN slot and one flag per stream-K worker
// (0 where the schedule has none, or the variant is not stream-K).
std::int64_t wgmma_stream_k_workspace_bytes(const tile_config& c, const gemm_problem& p, int sm_count);
// The model's view of that schedule (gemm_family::shared_k); none without stream-K workers.
std::optional<shared_k_schedule> wgmma_shared_k(const tile_config& c, const gemm_problem& p, int sm_count);

}  // namespace tiletune
