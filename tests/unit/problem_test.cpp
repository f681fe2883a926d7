#include "core/gemm/problem.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"

using namespace tiletune;

namespace {
std::string problem_usage_message(const gemm_problem& p) {
  try {
    validate(p);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}
gemm_problem square_problem(std::int64_t n) {
  gemm_problem p;
  p.m = p.n = p.k = n;
  return p;
}
}  // namespace

TEST(problem, parses_every_dtype_and_rejects_others_by_name) {
  EXPECT_EQ(parse_dtype("bf16"), dtype::bf16);
  EXPECT_EQ(parse_dtype("tf32"), dtype::tf32);
  try {
    parse_dtype("f64");
    FAIL();
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("'f64'"), std::string::npos);
  }
}

TEST(problem, layout_letters_are_a_then_b) {
  const layout nt = parse_layout("nt");
  EXPECT_FALSE(nt.a_transposed);
  EXPECT_TRUE(nt.b_transposed);
  EXPECT_EQ(nt.name(), "nt");
  EXPECT_THROW(parse_layout("xx"), usage_error);
  EXPECT_THROW(parse_layout("n"), usage_error);
  EXPECT_THROW(parse_layout("ntt"), usage_error);
}

TEST(problem, leading_dimensions_follow_the_layout) {
  gemm_problem p;
  p.m = 10;
  p.n = 20;
  p.k = 30;
  p.layout = parse_layout("nn");
  EXPECT_EQ(p.lda(), 30);
  EXPECT_EQ(p.ldb(), 20);
  p.layout = parse_layout("tt");
  EXPECT_EQ(p.lda(), 10);
  EXPECT_EQ(p.ldb(), 30);
  EXPECT_EQ(p.ldc(), 20);
}

TEST(problem, flops_and_bytes) {
  gemm_problem p = square_problem(4096);
  p.batch = 2;
  p.type = dtype::bf16;
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 4096.0 * 4096 * 4096 * 2);
  EXPECT_EQ(p.operand_bytes(), 3LL * 4096 * 4096 * 2 * 2);
  // The least traffic reads C once more when beta reads it.
  EXPECT_EQ(p.least_traffic_bytes(), p.operand_bytes());
  p.beta = 0.5;
  EXPECT_EQ(p.least_traffic_bytes(), p.operand_bytes() + 4096LL * 4096 * 2 * 2);
}

TEST(problem, validation_names_the_bad_value) {
  EXPECT_EQ(problem_usage_message(square_problem(17)), "");
  gemm_problem p = square_problem(8);
  p.m = 0;
  EXPECT_NE(problem_usage_message(p).find("--m 0"), std::string::npos);
  p.m = -5;
  EXPECT_NE(problem_usage_message(p).find("--m -5"), std::string::npos);
  p = square_problem(8);
  p.k = 3'000'000'000LL;
  EXPECT_NE(problem_usage_message(p).find("--k 3000000000"), std::string::npos);
  p = square_problem(8);
  p.batch = 70000;
  EXPECT_NE(problem_usage_message(p).find("--batch 70000"), std::string::npos);
  p = square_problem(100000);  // each dimension fits an int, A does not
  EXPECT_NE(problem_usage_message(p).find("2^31-1"), std::string::npos);
  p = square_problem(8);
  p.alpha = std::numeric_limits<double>::infinity();
  EXPECT_NE(problem_usage_message(p).find("--alpha"), std::string::npos);
}

TEST(problem, json_round_trip) {
  gemm_problem p = square_problem(33);
  p.n = 65;
  p.type = dtype::f16;
  p.layout = parse_layout("tn");
  p.beta = 0.5;
  const gemm_problem q = gemm_problem_from_json(to_json(p));
  EXPECT_EQ(q.n, 65);
  EXPECT_EQ(q.type, dtype::f16);
  EXPECT_EQ(q.layout, p.layout);
  EXPECT_EQ(q.beta, 0.5);
}

// A problem's words name alpha and beta where they are not 1 and 0 (beta reads C: another problem),
// as compare keyed it; the banners and suite tables printed the plain problem.
TEST(problem, its_words_name_alpha_and_beta_where_they_are_not_1_and_0) {
  gemm_problem p;
  p.m = p.n = p.k = 64;
  p.type = dtype::f16;
  p.layout = parse_layout("nn");
  EXPECT_EQ(p.describe(), "64x64x64 f16 nn");
  p.alpha = 2;
  p.beta = 1;
  EXPECT_EQ(p.describe(), "64x64x64 f16 nn alpha 2 beta 1");
  p.alpha = 1;
  p.beta = 0.5;
  EXPECT_EQ(p.describe(), "64x64x64 f16 nn alpha 1 beta 0.5");
}

// One group is one group (the banner said "in 1 groups").
TEST(problem, one_group_is_named_in_the_singular) {
  gemm_problem p = grouped_problem(groups_of_rows({439}, group_layout::contiguous), 2048, 1024, dtype::bf16,
                                   parse_layout("nt"));
  EXPECT_NE(p.describe().find(" in 1 group ("), std::string::npos) << p.describe();
}
