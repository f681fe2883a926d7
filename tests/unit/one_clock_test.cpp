// The pick's slowdown at one clock (core/tune/calibration/one_clock.hpp): a halving search's
// finalists ran on a hotter card than the variants it dropped, so a dropped variant's recorded time
// can undercut the finalists'; each is compared within the stage where it was last timed. The H200
// of 2026-12-04: on 4096x14336x4096 a finalist measured 670.0 us at 1665 MHz, a variant dropped
// after the longer stage (3.4% behind its leader) 622.2 us at 1980 MHz.
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/tune/calibration/one_clock.hpp"

using namespace tiletune;

namespace {
nlohmann::json halving_result() {
  nlohmann::json r;
  r["search"]["stages"] = nlohmann::json::array({{{"name", "model"}, {"timed", 0}},
                                                 {{"name", "brief"}, {"timed", 4}},
                                                 {{"name", "longer"}, {"timed", 3}},
                                                 {{"name", "full"}, {"timed", 2}}});
  auto v = [](const char* id, const char* stage, double us, const char* reason) {
    nlohmann::json j = {{"id", id}, {"status", "ok"}, {"search_stage", stage}, {"median_us", us}};
    if (*reason) j["reason"] = reason;
    return j;
  };
  r["variants"] = nlohmann::json::array({v("winner", "full", 670.0, ""), v("second", "full", 690.0, ""),
                                         v("cool", "longer", 622.2, "dropped after the longer stage: 3.4% behind the leader"),
                                         v("slow", "brief", 700.0, "dropped after the brief stage: 24.0% behind the leader")});
  return r;
}
std::map<std::string, double> medians(const nlohmann::json& r) {
  std::map<std::string, double> m;
  for (const auto& v : r["variants"]) m[v["id"]] = v["median_us"];
  return m;
}
}  // namespace

TEST(one_clock, a_finalist_is_compared_with_the_finalists_a_dropped_variant_by_its_margin) {
  const nlohmann::json r = halving_result();
  const auto m = medians(r);
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "winner", m), 1.0);            // not 670.0 / 622.2
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "second", m), 690.0 / 670.0);
  EXPECT_NEAR(slowdown_at_one_clock(r, "cool", m), 1.034, 1e-12);           // not 1.0: it lost its stage
  EXPECT_NEAR(slowdown_at_one_clock(r, "slow", m), 1.24, 1e-12);
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "absent", m), 0);
  // A numeric margin (the tuning database's rows) stands for the reason.
  nlohmann::json numeric = r;
  numeric["variants"][3].erase("reason");
  numeric["variants"][3]["behind_leader"] = 0.5;
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(numeric, "slow", m), 1.5);
}

TEST(one_clock, a_search_without_stages_compares_every_variant_as_recorded) {
  nlohmann::json r = halving_result();
  r.erase("search");  // an exhaustive search, or a recording from before the stages
  const auto m = medians(r);
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "winner", m), 670.0 / 622.2);
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "cool", m), 1.0);
  EXPECT_DOUBLE_EQ(behind_the_leader(nlohmann::json{{"reason", "dropped after the brief stage: 12.5% behind the leader"}}),
                   0.125);
  EXPECT_LT(behind_the_leader(nlohmann::json{{"reason", "verified"}}), 0);
}

// The recommended variant is timed again beside cuBLASLt after the search (reference.first_median_us
// says so) and that later, often hotter time replaces its search figure: among the finalists it
// counts at the time the search ranked it by (in_search), else at the search's verdict.
TEST(one_clock, the_recommended_variant_counts_at_the_time_the_search_ranked_it_by) {
  nlohmann::json r = halving_result();
  r["recommendation"] = {{"id", "winner"}};
  r["reference"] = {{"median_us", 614.4}, {"first_median_us", 578.8}};
  r["variants"][0]["median_us"] = 705.6;  // the pair after the search, at 1,440 MHz
  auto m = medians(r);
  // No search figure kept (recordings before it): no slower than the fastest other finalist.
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "winner", m), 1.0);  // not 705.6 / 690.0
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "second", m), 1.0);
  // The search kept it beside the other finalists.
  r["recommendation"]["in_search"] = {{"median_us", 660.0}, {"sm_clock_mhz", 1635.0}};
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "second", m), 690.0 / 660.0);
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "winner", m), 1.0);
  // Recommended within the noise over a faster one: the margin its note gives.
  r["recommendation"].erase("in_search");
  r["notes"] = {"recommended winner over the fastest second: 1.5% slower, within the measured noise of 2.0%, with "
                "fewer resources"};
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "winner", m), 1.015);
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "second", m), 1.0);
  // A pair time below every other finalist's stands (a short kernel, its clock steady).
  r.erase("notes");
  r["variants"][0]["median_us"] = 600.0;
  m = medians(r);
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "second", m), 690.0 / 600.0);
  // Not timed again (no first_median_us): every finalist as recorded.
  r["variants"][0]["median_us"] = 705.6;
  m = medians(r);
  r["reference"].erase("first_median_us");
  EXPECT_DOUBLE_EQ(slowdown_at_one_clock(r, "winner", m), 705.6 / 690.0);
}
