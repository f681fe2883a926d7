// The kernel families, one registration line each. A new family is a folder
// under core/gemm/families/ (a gemm_family, core/gemm/family.hpp) and a line here.
#include <stdexcept>

#include <fmt/format.h>

#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/simt/simt_family.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"

namespace tiletune {

const std::vector<const gemm_family*>& all_families() {
  static const std::vector<const gemm_family*> families{
      &simt_family(),
      &mma_family(),
      &wgmma_family(),
  };
  return families;
}

kernel_family family_named(std::string_view name) {
  for (const gemm_family* f : all_families())
    if (f->name() == name) return kernel_family{f};
  throw std::invalid_argument(fmt::format("no kernel family named '{}'", name));
}

}  // namespace tiletune
