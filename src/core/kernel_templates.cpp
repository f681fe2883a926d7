#include "core/kernel_templates.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace tiletune {

std::string_view template_text(std::string_view name) {
  for (const auto& t : embedded_templates()) {
    if (name == t.name) return t.text;
  }
  throw std::out_of_range(fmt::format("no kernel template named '{}'", name));
}

std::string render_kernel_source(const tile_config& c, dtype t, layout l) {
  const int dtype_code = t == dtype::f32 ? 0 : t == dtype::tf32 ? 1 : t == dtype::f16 ? 2 : 3;
  std::string s = fmt::format(
      "// tiletune variant {} for {} {}\n"
      "#define TT_DTYPE {}\n#define TT_A_T {}\n#define TT_B_T {}\n"
      "#define TT_BM {}\n#define TT_BN {}\n#define TT_BK {}\n",
      c.id(), to_string(t), l.name(), dtype_code, l.a_transposed ? 1 : 0, l.b_transposed ? 1 : 0,
      c.block_m, c.block_n, c.block_k);
  std::string_view family_template;
  switch (c.family) {
    case kernel_family::simt:
      s += fmt::format("#define TT_TM {}\n#define TT_TN {}\n#define TT_VEC {}\n", c.thread_m,
                       c.thread_n, c.vector_width);
      family_template = template_text("simt_gemm.cu");
      break;
    case kernel_family::mma:
      s += fmt::format("#define TT_WARPS_M {}\n#define TT_WARPS_N {}\n#define TT_STAGES {}\n",
                       c.warps_m, c.warps_n, c.stages);
      family_template = template_text("mma_gemm.cu");
      break;
  }
  s += fmt::format("#define TT_SPLIT_K {}\n#define TT_RASTER_GROUP {}\n#define TT_RASTER_ALONG_N {}\n",
                   c.split_k, c.raster_group, c.raster_along_n ? 1 : 0);
  s += "#line 1 \"gemm_common.cuh\"\n";
  s += template_text("gemm_common.cuh");
  s += "#line 1 \"tile_addressing.cuh\"\n";
  s += template_text("tile_addressing.cuh");
  s += fmt::format("#line 1 \"{}\"\n", c.family == kernel_family::simt ? "simt_gemm.cu" : "mma_gemm.cu");
  s += family_template;
  return s;
}

}  // namespace tiletune
