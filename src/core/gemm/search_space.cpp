#include "core/gemm/search_space.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_set>

#include <fmt/format.h>

#include "core/gemm/k_major_copies.hpp"

namespace tiletune {

std::vector<kernel_family> families_for(dtype t) {
  std::vector<kernel_family> out;
  for (const gemm_family* f : all_families())
    if (f->serves(t)) out.push_back(kernel_family{f});
  return out;
}

std::vector<tile_config> default_search_space(kernel_family family, dtype t) { return family->default_space(t); }

std::vector<tile_config> problem_search_space(kernel_family family, const gemm_problem& p, const device_spec& d) {
  std::vector<tile_config> space = family->problem_space(p, d);
  std::unordered_set<std::string> seen;
  std::erase_if(space, [&](const tile_config& c) { return !seen.insert(c.id()).second; });
  return space;
}

std::optional<constraint_violation> check_constraints(const tile_config& c, const gemm_problem& p,
                                                      const device_spec& d) {
  if (p.grouped() && !c.family->runs_grouped()) {
    std::string those;
    for (const gemm_family* f : all_families())
      if (f->runs_grouped()) those += (those.empty() ? "" : ", ") + std::string(f->name());
    return violation("grouped", fmt::format("the {} family has no grouped kernel; grouped GEMMs run on: {}",
                                            to_string(c.family), those.empty() ? "none" : those));
  }
  if (auto v = c.family->check(c, p, d)) return v;
  // A variant on K-major copies runs on matrices padded to 16 bytes, indexed with 32-bit offsets as
  // the problem's own are (validate): a copy past 2^31-1 elements is a problem it cannot run.
  if (c.family->prologue_launches(c, p) > 0)
    for (const char operand : {'a', 'b'}) {
      const k_major_copy copy = k_major_copy_of(p, operand);
      if (copy.row > 0 && copy.cols > std::numeric_limits<std::int32_t>::max() / copy.row)
        return violation("index_limit", fmt::format("its K-major copy of {} ({} x {}) holds more than 2^31-1 elements",
                                                    operand == 'a' ? "A" : "B", copy.cols, copy.row));
    }
  if (c.threads() > d.max_threads_per_block)
    return violation("threads_per_block",
                     fmt::format("{} threads per block, the GPU allows {}", c.threads(),
                                 d.max_threads_per_block));
  const auto smem = c.smem_bytes(p.type, p.layout);
  if (smem > d.smem_per_block_optin_bytes)
    return violation("shared_memory",
                     fmt::format("needs {} bytes of shared memory per block, the GPU allows {}",
                                 smem, d.smem_per_block_optin_bytes));
  // Block tiles of N go on gridDim.y, which holds at most 65535 (a persistent grid loops instead).
  if (c.family->persistent_grid()) return std::nullopt;
  const std::int64_t n_tiles = (p.n + c.block_n - 1) / c.block_n;
  if (n_tiles > 65535)
    return violation("grid", fmt::format("{} block columns exceed the grid's 65535", n_tiles));
  return std::nullopt;
}

}  // namespace tiletune
