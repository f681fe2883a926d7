#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/problem.hpp"
#include "core/tile_config.hpp"

namespace tiletune {

// One parameter of the wgmma kernel, in order: what to pass and how it is typed in the template.
struct kernel_parameter {
  std::string name;
  std::string type;
  std::string meaning;
};

// tiletune_gemm's parameters in the wgmma template (kernels_templates/wgmma_gemm.cu).
const std::vector<kernel_parameter>& wgmma_kernel_parameters();

// How to launch a wgmma variant on a problem: grid (persistent, sm_count
// SMs), block, cluster, dynamic shared memory, the parameters and the two
// tensor maps (for `--export` and for anyone calling the kernel by hand).
nlohmann::json wgmma_launch_json(const tile_config& c, const gemm_problem& p, int sm_count);

}  // namespace tiletune
