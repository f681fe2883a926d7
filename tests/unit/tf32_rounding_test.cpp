// The mma family's tf32 operands (kernels_templates/mma/mma_addressing.cuh,
// tt_tf32_round_bits): a finite value's bits plus half a tf32 ulp, the low 13
// bits left for mma.sync to ignore, must be the tf32 value that
// cvt.rna.tf32.f32 gives (PTX ISA "cvt": to nearest, ties away from zero) for
// every fp32 bit pattern, worked out here from the values themselves, and
// keep every infinity and NaN what truncation makes of it.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/gemm/families/mma/mma_family.hpp"
#include "core/tune/variant_ranking.hpp"

#define TT_HOST_DEVICE inline
#include "common/tile_addressing.cuh"
#include "mma/mma_addressing.cuh"

namespace {

using u32 = std::uint32_t;

float from_bits(u32 b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// What the tensor cores read of an operand register: its high 19 bits.
constexpr u32 tf32_part(u32 bits) { return bits & 0xffffe000u; }

// The tf32 value nearest x, ties away from zero, as fp32 bits; the two
// candidates are the tf32 values either side of x (the next one up past the
// largest finite is infinity, at 2^128), compared in double, where every
// difference is exact. Infinities stay; a NaN is what the cores read of it.
u32 reference(u32 bits) {
  const float x = from_bits(bits);
  if (!std::isfinite(x)) return tf32_part(bits);
  const u32 sign = bits & 0x80000000u, toward_zero = tf32_part(bits & 0x7fffffffu);
  const u32 away = toward_zero + 0x2000u;
  const double lo = from_bits(toward_zero), hi = away >= 0x7f800000u ? std::ldexp(1.0, 128) : from_bits(away);
  const double a = std::fabs(static_cast<double>(x));
  return sign | (hi - a <= a - lo ? away : toward_zero);
}

// Bit patterns: a stride through all 2^32, and around every tie of a spread
// of high parts (low bits 0, 1, just under, at and just over half an ulp,
// all ones), both signs, and the ends of the range.
std::vector<u32> patterns() {
  std::vector<u32> out;
  for (std::uint64_t b = 0; b < (1ull << 32); b += 4099) out.push_back(static_cast<u32>(b));
  for (u32 high = 0; high < (1u << 19); high += 37)
    for (u32 low : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu}) out.push_back((high << 13) | low);
  for (u32 b : {0x7f7fffffu, 0x7f7fefffu, 0x7f7ff000u, 0x7f7fe000u, 0x00000001u, 0x00001000u, 0x007fffffu, 0x7f800000u,
                0x7f800001u, 0x7f801000u, 0x7fc00000u, 0x7fffefffu, 0x7ffff000u, 0x7fffffffu})
    for (u32 s : {0u, 0x80000000u}) out.push_back(b | s);
  return out;
}

// The patterns on which round(bits) is not the reference, as the cores read both.
std::vector<u32> wrong(const std::function<u32(u32)>& round) {
  std::vector<u32> out;
  for (u32 b : patterns())
    if (tf32_part(round(b)) != reference(b)) out.push_back(b);
  return out;
}

u32 kernels(u32 b) { return tt_tf32_round_bits(b, tt_tf32_finite(std::fabs(from_bits(b)))); }

}  // namespace

TEST(tf32_rounding, the_reference_rounds_to_nearest_with_ties_away_from_zero) {
  EXPECT_EQ(reference(0x3f801000u), 0x3f802000u);  // 1 + 2^-11: a tie, away from zero
  EXPECT_EQ(reference(0xbf801000u), 0xbf802000u);
  EXPECT_EQ(reference(0x3f800fffu), 0x3f800000u);
  EXPECT_EQ(reference(0x3f803000u), 0x3f804000u);  // a tie at an odd ulp: away, not to even
  EXPECT_EQ(reference(0x3f802fffu), 0x3f802000u);
  EXPECT_EQ(reference(0x7f7ff000u), 0x7f800000u);  // past the largest tf32 by half an ulp: infinity
  EXPECT_EQ(reference(0x7f7fefffu), 0x7f7fe000u);
  EXPECT_EQ(reference(0x00001000u), 0x00002000u);  // subnormals round on the same grid
  EXPECT_EQ(reference(0x7fffffffu), 0x7fffe000u);  // CUDA's NaN stays a NaN
}

TEST(tf32_rounding, the_kernels_operand_is_cvt_rna_for_every_pattern) {
  const auto w = wrong(kernels);
  EXPECT_TRUE(w.empty()) << w.size() << " patterns, the first " << std::hex << (w.empty() ? 0 : w.front());
  EXPECT_GT(patterns().size(), 1'000'000u);
}

// The test fails on each planted defect: truncation alone (no rounding), the
// add without its finiteness test (CUDA's NaN becomes -0), ties to even (the
// rounding of cvt.rn, not cvt.rna), and a finiteness test that lets NaN through.
TEST(tf32_rounding, each_planted_defect_is_caught) {
  const std::pair<std::string, std::function<u32(u32)>> planted[] = {
      {"truncation", [](u32 b) { return b; }},
      {"no finiteness test", [](u32 b) { return b + 0x1000u; }},
      {"ties to even", [](u32 b) { return std::isfinite(from_bits(b)) ? b + 0xfffu + ((b >> 13) & 1u) : b; }},
      {"NaN counted finite", [](u32 b) { return std::isinf(from_bits(b)) ? b : b + 0x1000u; }},
  };
  for (const auto& [what, round] : planted) {
    const auto w = wrong(round);
    EXPECT_FALSE(w.empty()) << what;
    std::printf("planted: %-20s wrong on %zu patterns\n", what.c_str(), w.size());
  }
}

// The rounding in shared memory ran correct on an H200 (2026-12-04, the mma family's tf32 variants on
// copies): an offline plan that recommends a tf32 mma variant no longer says it has not run; an fp8 one
// (mma.sync m16n8k32, never on a GPU) does.
TEST(tf32_rounding, an_offline_plan_of_a_tf32_mma_tile_no_longer_says_it_has_not_run) {
  tiletune::gemm_plan plan;
  plan.mode = tiletune::plan_mode::predicted;
  plan.problem.type = tiletune::dtype::tf32;
  tiletune::variant_result v;
  v.config = tiletune::mma_tile(128, 128, 16, 2, 2, 3);
  plan.variants.push_back(v);
  plan.recommended = 0;
  tiletune::note_untried_recommendation(plan);
  EXPECT_TRUE(plan.notes.empty()) << plan.notes[0];
  plan.problem.type = tiletune::dtype::e4m3;
  tiletune::note_untried_recommendation(plan);
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("fp8 through mma.sync m16n8k32, which has not run on a GPU"), std::string::npos)
      << plan.notes[0];
}
