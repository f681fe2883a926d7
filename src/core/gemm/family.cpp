#include "core/gemm/family.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "core/gemm/tensor_map_spec.hpp"
#include "core/measure/measure_protocol.hpp"

namespace tiletune {

std::vector<tile_config> gemm_family::problem_space(const gemm_problem& p, const device_spec&) const {
  return default_space(p.type);
}

launch_shape gemm_family::launch(const tile_config& c, const gemm_problem& p, int) const {
  return launch_shape_for(c, p);
}

tensor_map_spec gemm_family::tensor_map(const gemm_problem&, const tile_config& c, char) const {
  throw std::invalid_argument(fmt::format("{} takes no tensor maps", c.id()));
}

std::string split_k_id_suffix(const tile_config& c) {
  return c.split_k > 1 ? fmt::format("_k{}", c.split_k) : std::string();
}

std::string raster_id_suffix(const tile_config& c) {
  return fmt::format("_g{}{}", c.raster_group, c.raster_along_n ? 'n' : 'm');
}

smem_traffic warp_tile_smem_traffic(const tile_config& c, dtype t) {
  const int bytes = element_bytes(row_of(t).a);  // A and B are what shared memory holds
  const double k = bytes == 2 ? 16 : 8;
  return {2.0 * c.warp_tile_m() * c.warp_tile_n() * k,  // per warp and k-step
          (c.warp_tile_m() + c.warp_tile_n()) * k * bytes};
}

}  // namespace tiletune
