#pragma once
// Test helpers: a problem from its sizes, and the variants of a family's space that can run it.
#include <cstdint>
#include <vector>

#include "core/device/device_spec.hpp"
#include "core/gemm/family.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/search_space.hpp"

namespace tiletune_test {

// m x n x k (batch of them) of dtype t in layout l, with the dtype's default scaling unless given.
inline tiletune::gemm_problem problem_of(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch,
                                         tiletune::dtype t, const char* l) {
  tiletune::gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.type = t;
  p.scaling = tiletune::default_scaling(t);
  p.layout = tiletune::parse_layout(l);
  return p;
}

// The family's problem space for p on d, less what its constraints refuse.
inline std::vector<tiletune::tile_config> runnable_space(const tiletune::gemm_family& f,
                                                         const tiletune::gemm_problem& p,
                                                         const tiletune::device_spec& d) {
  std::vector<tiletune::tile_config> out;
  for (const tiletune::tile_config& c : f.problem_space(p, d))
    if (!tiletune::check_constraints(c, p, d)) out.push_back(c);
  return out;
}

}  // namespace tiletune_test
