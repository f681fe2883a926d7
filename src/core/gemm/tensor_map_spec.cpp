#include "core/gemm/tensor_map_spec.hpp"

#include <nlohmann/json.hpp>

#include "core/gemm/family.hpp"

namespace tiletune {

tensor_map_spec tensor_map_for(const gemm_problem& p, const tile_config& c, char operand) {
  return c.family->tensor_map(p, c, operand);
}

nlohmann::json to_json(const tensor_map_spec& s) {
  const char* type = s.type == tensor_map_spec::element::f16    ? "f16"
                     : s.type == tensor_map_spec::element::bf16 ? "bf16"
                     : s.type == tensor_map_spec::element::u8   ? "u8"
                                                                : "f32";
  return {{"data_type", type},
          {"rank", s.rank},
          {"dims", s.dims},
          {"strides_bytes", s.strides_bytes},
          {"box", s.box},
          {"element_strides", s.element_strides},
          {"swizzle", s.swizzle_bytes == 128 ? "128B" : "none"},
          {"interleave", s.interleave ? "yes" : "none"},
          {"oob_fill", s.oob_fill_zero ? "zero" : "nan"}};
}

}  // namespace tiletune
