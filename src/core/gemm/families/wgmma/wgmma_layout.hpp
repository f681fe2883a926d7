#pragma once
#include <cstdint>
#include <string>

#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"

namespace tiletune {

// Dynamic shared memory of a wgmma variant: operand stages, epilogue staging
// and mbarriers (the template's layout, kernels_templates/wgmma/wgmma_tile_math.cuh)
// plus 1024 bytes of slack to align the base for 128-byte swizzling.
std::int64_t wgmma_smem_bytes(const tile_config& c, dtype t);

// The k of one wgmma instruction: 16 for f16/bf16, 8 for tf32.
int wgmma_instruction_k(dtype t);

// Device source of tt_wgmma(acc, desc_a, desc_b, scale_d): the one
// wgmma.mma_async m64 x n x k instruction of a variant, with n/2 fp32
// accumulators per thread and the layout's transpose immediates
// (16-bit types only; tf32 has none and needs both operands K-major).
std::string wgmma_instruction_source(dtype t, int n, layout l);

// Persistent grid: one CTA per SM, never more CTAs than output tiles.
std::int64_t wgmma_grid_size(const tile_config& c, const gemm_problem& p, int sm_count);

}  // namespace tiletune
