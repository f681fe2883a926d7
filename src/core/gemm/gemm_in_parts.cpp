#include "core/gemm/gemm_in_parts.hpp"

namespace tiletune {

namespace {
std::optional<double> time_at(const gemm_problem& p, const gemm_timer& time_whole, int depth, int* splits) {
  if (const auto us = time_whole(p)) return us;
  if (depth >= 4) return std::nullopt;
  std::int64_t gemm_problem::*dim = &gemm_problem::m;
  if (p.n > p.*dim) dim = &gemm_problem::n;
  if (p.k > p.*dim) dim = &gemm_problem::k;
  if (p.batch > 65535) dim = &gemm_problem::batch;
  if (p.*dim < 2) return std::nullopt;
  gemm_problem lo = p, hi = p;
  lo.*dim = p.*dim / 2;
  hi.*dim = p.*dim - lo.*dim;
  const auto a = time_at(lo, time_whole, depth + 1, splits);
  if (!a) return std::nullopt;
  const auto b = time_at(hi, time_whole, depth + 1, splits);
  if (!b) return std::nullopt;
  if (splits) ++*splits;
  return *a + *b;
}
}  // namespace

std::optional<double> time_in_parts(const gemm_problem& p, const gemm_timer& time_whole, int* splits) {
  return time_at(p, time_whole, 0, splits);
}

}  // namespace tiletune
