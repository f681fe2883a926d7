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

std::string out_id_suffix(std::optional<element_type> out) {
  return out ? fmt::format("_o{}", to_string(*out)) : std::string();
}

std::string out_define(std::optional<element_type> out) {
  return out ? fmt::format("#define TT_OUT {}\n", *out == element_type::f16 ? 1 : 2) : std::string();
}

std::optional<constraint_violation> out_mismatch(std::optional<element_type> out, const gemm_problem& p) {
  if (out == p.out) return std::nullopt;
  return constraint_violation{"out_dtype", fmt::format("the variant writes {} C, the problem's is {}",
                                                       to_string(out.value_or(row_of(p.type).c)),
                                                       to_string(p.elements().c))};
}

}  // namespace tiletune
