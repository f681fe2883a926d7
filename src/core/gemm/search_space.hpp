#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/device/device_spec.hpp"
#include "core/gemm/family.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"

namespace tiletune {

// The kernel families that can run a dtype, in registration order.
std::vector<kernel_family> families_for(dtype t);

// Every point of a family's default search space for a dtype, before pruning.
std::vector<tile_config> default_search_space(kernel_family family, dtype t);

// The search space for one problem: the default space plus the family's
// per-problem copies (e.g. split-K where block tiles leave SMs idle, grouped
// rasterization where the problem runs many waves of blocks). Each variant once: a copy a family
// adds that is already there (fp8's 64x128 decode ring is one of its default tiles) is left out.
std::vector<tile_config> problem_search_space(kernel_family family, const gemm_problem& p, const device_spec& d);

// Checks that need no compilation: the family's own named constraints, then
// threads, shared memory and grid.
std::optional<constraint_violation> check_constraints(const tile_config& c, const gemm_problem& p,
                                                      const device_spec& d);

}  // namespace tiletune
