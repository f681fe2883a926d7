#pragma once
#include <optional>
#include <vector>

#include "core/gemm/family.hpp"

namespace tiletune {

// The mma family's search space and constraints (mma_space.cpp).
std::vector<tile_config> mma_space(dtype t);
std::vector<tile_config> mma_problem_space(const gemm_problem& p, const device_spec& d);
std::optional<constraint_violation> check_mma(const tile_config& c, const gemm_problem& p, const device_spec& d);

}  // namespace tiletune
