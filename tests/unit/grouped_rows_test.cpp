// Rows per expert of a grouped GEMM: routing, rows given by hand, and their errors.
// The expected figures are arithmetic in the comments, not the function's own output.
#include <gtest/gtest.h>

#include <numeric>

#include "core/errors.hpp"
#include "core/gemm/grouped_rows.hpp"

using namespace tiletune;

namespace {
std::int64_t sum(const std::vector<std::int64_t>& v) { return std::accumulate(v.begin(), v.end(), std::int64_t{0}); }
}  // namespace

TEST(grouped_rows, uniform_routing_splits_tokens_times_top_k_evenly) {
  // Mixtral: 4096 tokens, top-2 over 8 experts: 8192 rows, 1024 each.
  EXPECT_EQ(routed_rows(4096, 2, 8, parse_routing("uniform")), std::vector<std::int64_t>(8, 1024));
  // 10 rows over 3 experts: 4, 3, 3 (the remainder to the first).
  EXPECT_EQ(routed_rows(10, 1, 3, expert_routing{}), (std::vector<std::int64_t>{4, 3, 3}));
  // Every expert picked by every token.
  EXPECT_EQ(routed_rows(7, 4, 4, expert_routing{}), std::vector<std::int64_t>(4, 7));
}

TEST(grouped_rows, zipf_routing_follows_one_over_rank_to_the_s_and_caps_at_the_tokens) {
  // zipf:1.2 over 8 experts: sum of r^-1.2 for r = 1..8 is 2.3331, so of 8192 rows expert 1
  // expects 8192 / 2.3331 = 3511 and expert 8 expects 8192 x 8^-1.2 / 2.3331 = 289.
  const auto rows = routed_rows(4096, 2, 8, parse_routing("zipf:1.2"));
  EXPECT_EQ(sum(rows), 8192);
  EXPECT_NEAR(static_cast<double>(rows[0]), 3511, 1.5);
  EXPECT_NEAR(static_cast<double>(rows[7]), 289, 1.5);
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_LE(rows[i], rows[i - 1]);
  // zipf:3, 100 tokens top-4 over 8 experts: expert 1's share, 400 / 1.1951 = 335 rows, is past
  // the 100 tokens it can see; it gets 100 and the rest goes to the others in proportion:
  // expert 2 then expects 300 x 0.125 / 0.1951 = 192, capped too; expert 3 200 x 0.0370 / 0.0701
  // = 106, capped; the last 100 go to experts 4-8, expert 4 taking 100 x 0.0156 / 0.0335 = 46.6.
  const auto capped = routed_rows(100, 4, 8, parse_routing("zipf:3"));
  EXPECT_EQ(sum(capped), 400);
  EXPECT_EQ(capped[0], 100);
  EXPECT_EQ(capped[1], 100);
  EXPECT_EQ(capped[2], 100);
  EXPECT_NEAR(static_cast<double>(capped[3]), 46.6, 1);
  for (auto r : capped) EXPECT_LE(r, 100);
}

TEST(grouped_rows, routings_and_row_lists_name_what_is_wrong) {
  EXPECT_EQ(parse_routing("zipf:1.2").name(), "zipf:1.2");
  EXPECT_EQ(parse_routing("uniform").name(), "uniform");
  for (const char* bad : {"zipf:", "zipf:-1", "zipf:abc", "zipf:1.2x", "normal", ""})
    EXPECT_THROW(parse_routing(bad), usage_error) << bad;
  EXPECT_THROW(routed_rows(10, 0, 8, {}), usage_error);
  EXPECT_THROW(routed_rows(10, 9, 8, {}), usage_error);
  EXPECT_THROW(routed_rows(0, 1, 8, {}), usage_error);
  EXPECT_EQ(parse_group_rows("128,0,517"), (std::vector<std::int64_t>{128, 0, 517}));
  try {
    parse_group_rows("1,,2");
    FAIL() << "an empty entry was accepted";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("entry 2"), std::string::npos) << e.what();
  }
  for (const char* bad : {"-1", "", "1,2,", "3x", "1 ,2"}) EXPECT_THROW(parse_group_rows(bad), usage_error) << bad;
  EXPECT_EQ(parse_group_layout("masked"), group_layout::masked);
  EXPECT_THROW(parse_group_layout("padded"), usage_error);
}
