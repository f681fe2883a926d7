#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/device/device_spec.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"

namespace tiletune {

// The kernel families that can run a dtype: simt for f32, mma for the tensor-core dtypes.
std::vector<kernel_family> families_for(dtype t);

// Every point of a family's default search space for a dtype, before pruning.
std::vector<tile_config> default_search_space(kernel_family family, dtype t);

// The search space for one problem: the default space, plus split-K copies of
// the mma configs when their block tiles leave SMs idle (skinny or small
// problems), plus grouped-rasterization copies of the large mma tiles when
// the problem runs many waves of blocks.
std::vector<tile_config> problem_search_space(kernel_family family, const gemm_problem& p, const device_spec& d);

// Why a config cannot run a problem on a device: which named constraint it breaks.
struct constraint_violation {
  std::string constraint;  // e.g. "shared_memory"
  std::string message;     // e.g. "needs 139264 bytes of shared memory, the GPU allows 101376"
};

// Checks that need no compilation: shapes, thread counts, shared memory, grid.
std::optional<constraint_violation> check_constraints(const tile_config& c, const gemm_problem& p,
                                                      const device_spec& d);

}  // namespace tiletune
