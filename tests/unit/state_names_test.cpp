// The states that travel as names (results' mode, a variant's status, search
// stages, worker ops) read back to the value they were written from, and a
// name that is no state reads as none rather than as a default.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/measure/variant_status.hpp"
#include "core/plan_mode.hpp"
#include "core/tune/search/search_stage.hpp"

using namespace tiletune;

TEST(state_names, every_status_and_op_reads_back_from_its_name) {
  for (int i = 0; i < variant_status_count; ++i) {
    const auto s = static_cast<variant_status>(i);
    EXPECT_EQ(variant_status_named(to_string(s)), s) << to_string(s);
    EXPECT_EQ(status_of(nlohmann::json{{"status", std::string(to_string(s))}}), s);
  }
  for (auto op : {measure_op::variant, measure_op::reference, measure_op::library, measure_op::bandwidth,
                  measure_op::launch})
    EXPECT_EQ(measure_op_named(to_string(op)), op) << to_string(op);
  EXPECT_FALSE(variant_status_named("OK"));
  EXPECT_FALSE(measure_op_named(""));
}

TEST(state_names, a_result_mode_is_read_only_from_a_string_that_names_one) {
  EXPECT_EQ(mode_of(nlohmann::json{{"mode", "measured"}}), plan_mode::measured);
  EXPECT_EQ(mode_of(nlohmann::json{{"mode", "predicted"}}), plan_mode::predicted);
  EXPECT_TRUE(is_measured_result(nlohmann::json{{"mode", "measured"}}));
  EXPECT_FALSE(is_measured_result(nlohmann::json{{"mode", "Measured"}}));
  EXPECT_FALSE(mode_of(nlohmann::json{{"mode", 1}}));
  EXPECT_FALSE(mode_of(nlohmann::json::array()));
  EXPECT_FALSE(mode_of(nlohmann::json::object()));
  EXPECT_FALSE(is_ok_variant(nlohmann::json{{"status", nullptr}}));
}

TEST(state_names, search_stages_rank_deeper_timings_first) {
  EXPECT_EQ(to_string(search_stage::not_timed), "not_timed");
  EXPECT_EQ(to_string(search_stage::longer), "longer");
  EXPECT_LT(timing_depth(search_stage::not_timed), timing_depth(search_stage::brief));
  EXPECT_EQ(timing_depth(search_stage::model), timing_depth(search_stage::not_timed));  // the model times nothing
  EXPECT_LT(timing_depth(search_stage::brief), timing_depth(search_stage::longer));
  EXPECT_LT(timing_depth(search_stage::longer), timing_depth(search_stage::full));
}
