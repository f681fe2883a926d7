// A result lists its best --top variants and, always, the recommended one: a measured search may
// recommend a variant within the noise of faster ones, with fewer resources, ranked below the top
// rows (the H200's 2026-12-04 decode suite recommended lm_head's 64-token pick from outside its 10
// listed variants, and every reader of the file refused it).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/tune/gemm_tuner.hpp"
#include "core/tune/search/replay_backend.hpp"

namespace fs = std::filesystem;
using namespace tiletune;

TEST(result_listing, the_recommended_variant_is_listed_beyond_the_top_rows) {
  std::ifstream in(fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h200-2026-12-04-3/call1/gemm/06.json");
  ASSERT_TRUE(in);
  gemm_plan plan = plan_from_recording(nlohmann::json::parse(in));
  ASSERT_GT(plan.variants.size(), 8u);
  plan.recommended = 7;
  const nlohmann::json j = result_body(plan, 3);
  ASSERT_EQ(j["variants"].size(), 4u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(j["variants"][i]["id"], plan.variants[i].config.id());
  EXPECT_EQ(j["variants"][3]["id"], plan.variants[7].config.id());
  EXPECT_EQ(j["variants_listed"]["listed"], 4);
  EXPECT_EQ(j["variants_listed"]["of"], plan.variants.size());
  // Among the top rows: listed once.
  plan.recommended = 1;
  EXPECT_EQ(result_body(plan, 3)["variants"].size(), 3u);
}
