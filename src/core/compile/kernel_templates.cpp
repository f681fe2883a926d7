#include "core/compile/kernel_templates.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "core/gemm/family.hpp"

namespace tiletune {

std::string_view template_text(std::string_view name) {
  for (const auto& t : embedded_templates()) {
    if (name == t.name) return t.text;
  }
  throw std::out_of_range(fmt::format("no kernel template named '{}'", name));
}

void append_template(std::string& source, std::string_view name) {
  const std::string_view text = template_text(name);
  source.reserve(source.size() + name.size() + text.size() + 16);
  source += "#line 1 \"";
  source += name;
  source += "\"\n";
  source += text;
}

std::string render_kernel_source(const tile_config& c, dtype t, layout l) {
  if (!c.family.impl) throw std::out_of_range("no kernel template for a tile of no family");
  const int dtype_code = row_of(t).template_code;
  const std::string head = fmt::format(
      "// tiletune variant {} for {} {}\n"
      "#define TT_DTYPE {}\n#define TT_A_T {}\n#define TT_B_T {}\n"
      "#define TT_BM {}\n#define TT_BN {}\n#define TT_BK {}\n",
      c.id(), to_string(t), l.name(), dtype_code, l.a_transposed ? 1 : 0, l.b_transposed ? 1 : 0,
      c.block_m, c.block_n, c.block_k);
  std::string body = c.family->render(c, t, l);
  std::string s;
  s.reserve(head.size() + body.size());
  s += head;
  s += body;
  return s;
}

}  // namespace tiletune
