// The kernel families, one registration line each. A new family is a folder
// under core/gemm/families/ (a gemm_family, core/gemm/family.hpp) and a line here.
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/simt/simt_family.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"

namespace tiletune {

namespace {
std::vector<const gemm_family*>& registry() {
  static std::vector<const gemm_family*> families{
      &simt_family(),
      &mma_family(),
      &wgmma_family(),
  };
  return families;
}
}  // namespace

const std::vector<const gemm_family*>& all_families() { return registry(); }

family_registration::family_registration(const gemm_family& f) : family_(&f) {
  for (const gemm_family* g : registry())
    if (g->name() == f.name()) throw std::invalid_argument(fmt::format("a family named '{}' is registered", f.name()));
  registry().push_back(family_);
}

family_registration::~family_registration() { std::erase(registry(), family_); }

kernel_family family_named(std::string_view name) {
  for (const gemm_family* f : all_families())
    if (f->name() == name) return kernel_family{f};
  throw std::invalid_argument(fmt::format("no kernel family named '{}'", name));
}

}  // namespace tiletune
