#include "core/tune/fleet/suite_shard.hpp"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "core/errors.hpp"

using namespace tiletune;

namespace {

gemm_suite suite_of(int count, int first_m = 16) {
  gemm_suite s;
  s.name = "t";
  for (int i = 0; i < count; ++i) {
    suite_problem p;
    p.name = "p" + std::to_string(i);
    p.problem.m = first_m + 16 * i;
    p.problem.n = 4096;
    p.problem.k = 4096;
    p.problem.type = dtype::bf16;
    s.problems.push_back(p);
  }
  return s;
}

std::set<std::int64_t> ms(const gemm_suite& s) {
  std::set<std::int64_t> out;
  for (const auto& p : s.problems) out.insert(p.problem.m);
  return out;
}

}  // namespace

TEST(suite_shard, parses_i_of_n_from_0_and_names_a_bad_value) {
  const auto s = parse_shard("2/3");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(parse_shard("0/1").count, 1);
  for (const char* bad : {"3/3", "-1/3", "1/0", "0/-2", "a/b", "1", "1/2x", "/2", "1/", " 1/2", "1/2/3", ""}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const usage_error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--shard ") + bad), std::string::npos) << e.what();
    }
  }
}

TEST(suite_shard, fnv1a_matches_its_published_vectors) {
  // FNV-1a 64 of "" is the offset basis; of "a", 0xaf63dc4c8601ec8c (the FNV test vectors).
  EXPECT_EQ(fnv1a64(""), 14695981039346656037ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}

TEST(suite_shard, shards_cover_the_suite_once_and_are_balanced_enough) {
  const auto suite = suite_of(60);
  std::set<std::int64_t> seen;
  std::size_t total = 0;
  for (int i = 0; i < 4; ++i) {
    const auto part = select_shard(suite, {i, 4});
    EXPECT_GE(part.problems.size(), 5u) << "shard " << i << " of 60 problems in 4";
    total += part.problems.size();
    for (auto m : ms(part)) EXPECT_TRUE(seen.insert(m).second) << m << " in two shards";
  }
  EXPECT_EQ(total, suite.problems.size());
  EXPECT_EQ(seen, ms(suite));
  EXPECT_EQ(select_shard(suite, {0, 1}).problems.size(), suite.problems.size());
}

TEST(suite_shard, adding_removing_or_reordering_problems_moves_no_other_problem) {
  const auto suite = suite_of(30);
  auto grown = suite_of(31);                        // one more problem at the end
  std::reverse(grown.problems.begin(), grown.problems.end());  // and the order reversed
  grown.problems.erase(grown.problems.begin() + 5);  // and one of the old ones gone
  for (int i = 0; i < 3; ++i) {
    const auto before = ms(select_shard(suite, {i, 3}));
    const auto after = ms(select_shard(grown, {i, 3}));
    for (const auto& p : grown.problems) {
      if (p.problem.m == 16 + 16 * 30) continue;  // the new one
      EXPECT_EQ(before.count(p.problem.m), after.count(p.problem.m)) << "m " << p.problem.m << " moved";
    }
  }
  // The shard depends on the problem, not its name.
  auto renamed = suite;
  for (auto& p : renamed.problems) p.name += " renamed";
  EXPECT_EQ(ms(select_shard(renamed, {1, 3})), ms(select_shard(suite, {1, 3})));
}
