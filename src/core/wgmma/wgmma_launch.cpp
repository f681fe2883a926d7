#include "core/wgmma/wgmma_launch.hpp"

#include <nlohmann/json.hpp>

#include "core/wgmma/tensor_map_spec.hpp"
#include "core/wgmma/wgmma_layout.hpp"

namespace tiletune {

const std::vector<kernel_parameter>& wgmma_kernel_parameters() {
  static const std::vector<kernel_parameter> params = {
      {"tmap_a", "const __grid_constant__ CUtensorMap (128 bytes, 64-byte aligned)", "A's tensor map (tensor_maps.a)"},
      {"tmap_b", "const __grid_constant__ CUtensorMap (128 bytes, 64-byte aligned)", "B's tensor map (tensor_maps.b)"},
      {"C", "elem_t*", "C, M x N row-major, read when beta != 0"},
      {"M", "int", "rows of C"},
      {"N", "int", "columns of C"},
      {"K", "int", "inner dimension"},
      {"ldc", "int", "row stride of C in elements (any value >= N)"},
      {"batch_stride_c", "long long", "elements between the C matrices of a batch"},
      {"batch", "int", "number of GEMMs"},
      {"alpha", "float", "C = alpha * A B + beta * C"},
      {"beta", "float", "0 never reads C"},
  };
  return params;
}

nlohmann::json wgmma_launch_json(const tile_config& c, const gemm_problem& p, int sm_count) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& k : wgmma_kernel_parameters())
    params.push_back({{"name", k.name}, {"type", k.type}, {"meaning", k.meaning}});
  return {{"entry", "tiletune_gemm"},
          {"arch", "sm_90a"},
          {"grid", {wgmma_grid_size(c, p, sm_count), 1, 1}},
          {"grid_rule", "min(output tiles, SM count): a persistent grid"},
          {"block", {c.threads(), 1, 1}},
          {"cluster", {c.cluster_m * c.cluster_n, 1, 1}},
          {"dynamic_smem_bytes", c.smem_bytes(p.type, p.layout)},
          {"parameters", params},
          {"tensor_maps", {{"a", to_json(tensor_map_for(p, c, 'a'))}, {"b", to_json(tensor_map_for(p, c, 'b'))}}}};
}

}  // namespace tiletune
