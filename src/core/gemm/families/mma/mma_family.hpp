#pragma once
#include "core/gemm/family.hpp"

namespace tiletune {

// The mma family (kernels_templates/mma/mma_gemm.cu): warp-level mma.sync on the
// tensor cores (sm_80 on), cp.async pipelines, split-K and grouped rasterization.
const gemm_family& mma_family();

// BM x BN x BK, warps along M and N, pipeline stages.
tile_config mma_tile(int block_m, int block_n, int block_k, int warps_m, int warps_n, int stages);

}  // namespace tiletune
