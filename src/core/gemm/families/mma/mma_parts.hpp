#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/gemm/family.hpp"

namespace tiletune {

// The mma family's search space and constraints (mma_space.cpp).
std::vector<tile_config> mma_space(dtype t);
std::vector<tile_config> mma_problem_space(const gemm_problem& p, const device_spec& d);
std::optional<constraint_violation> check_mma(const tile_config& c, const gemm_problem& p, const device_spec& d);
// Split-K's scratch buffers: fp32 partial tiles [batch][tile][slice][BM x BN]
// and one 32-bit counter per output tile (none without split-K).
struct mma_split_k_buffers {
  std::int64_t tiles = 0;
  std::int64_t workspace_bytes = 0;
  std::int64_t counter_bytes = 0;
};
mma_split_k_buffers mma_split_k_scratch(const tile_config& c, const gemm_problem& p);
// Its launch: the tile grid, and the split-K scratch buffers (mma_launch.cpp).
kernel_launch mma_launch(const tile_config& c, const gemm_problem& p);

}  // namespace tiletune
