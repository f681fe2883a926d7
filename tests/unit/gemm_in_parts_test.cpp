#include "core/gemm/gemm_in_parts.hpp"

#include <gtest/gtest.h>

using namespace tiletune;

namespace {
// A worker that times anything with at most 2^31 elements per matrix, in
// proportion to the work, and refuses bigger shapes (as the real one does).
std::optional<double> fake_worker(const gemm_problem& p) {
  const std::int64_t limit = std::int64_t{1} << 31;
  if (p.m * p.n > limit || p.m * p.k > limit || p.n * p.k > limit) return std::nullopt;
  return 1e-9 * static_cast<double>(p.m * p.n * p.k * p.batch);
}
gemm_problem shape(std::int64_t m, std::int64_t n, std::int64_t k) {
  gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.type = dtype::bf16;
  return p;
}
}  // namespace

TEST(gemm_in_parts, a_shape_that_fits_is_timed_whole) {
  int splits = 0;
  EXPECT_DOUBLE_EQ(*time_in_parts(shape(32768, 50257, 768), fake_worker, &splits), 1e-9 * 32768.0 * 50257 * 768);
  EXPECT_EQ(splits, 0);
}

// GPT-2's LM head at micro-batch 64 x 1024 tokens: too big whole, timed in
// halves, and its time is twice micro-batch 32's (it was predicted before,
// on another basis, and came out faster than micro-batch 32's).
TEST(gemm_in_parts, a_too_big_shape_is_timed_in_halves_and_grows_with_the_work) {
  int splits = 0;
  const auto big = time_in_parts(shape(65536, 50257, 768), fake_worker, &splits);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(splits, 1);
  EXPECT_NEAR(*big, 2 * *time_in_parts(shape(32768, 50257, 768), fake_worker), 1e-9);
  // Its weight gradient splits along the tokens (k) the same way.
  EXPECT_TRUE(time_in_parts(shape(50257, 768, 65536 * 2), fake_worker).has_value());
}

TEST(gemm_in_parts, gives_up_after_sixteen_parts) {
  EXPECT_FALSE(time_in_parts(shape(1 << 20, 1 << 20, 8), [](const gemm_problem&) { return std::optional<double>(); })
                   .has_value());
}
