#include "core/report/result_compare.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/errors.hpp"

using namespace tiletune;

namespace {
struct measured {
  std::int64_t m;
  double ratio;      // vs_reference
  double time_us;
  double noise = 0.005;
  std::string status = "ok";
};

nlohmann::json suite(const std::vector<measured>& rows, const std::string& device = "NVIDIA H100 80GB HBM3") {
  nlohmann::json j = {{"schema", "tiletune.gemm-suite/1"},
                      {"mode", "measured"},
                      {"device", {{"name", device}, {"arch", "sm_90"}}},
                      {"results", nlohmann::json::array()}};
  for (const auto& r : rows) {
    std::string name = "m";
    name += std::to_string(r.m);
    name += " & <friends>";
    nlohmann::json res = {{"name", name},
                          {"problem", {{"m", r.m}, {"n", 4096}, {"k", 4096}, {"dtype", "bf16"}, {"layout", "nt"}}}};
    if (r.status == "ok") {
      res["recommendation"] = {{"id", "mma_128x128x32_w2x2_s3"}, {"vs_reference", r.ratio}, {"median_us", r.time_us},
                               {"noise", r.noise}};
      res["variants"] = nlohmann::json::array({{{"status", "ok"}}});
    } else {
      res["recommendation"] = nullptr;
      res["variants"] = nlohmann::json::array({{{"status", r.status}}});
    }
    j["results"].push_back(res);
  }
  return j;
}

comparison compare(const nlohmann::json& a, const nlohmann::json& b, compare_options o = {}) {
  return compare_results(result_file_from_json(a, "base.json"), result_file_from_json(b, "new.json"), o);
}
}  // namespace

TEST(compare, identical_is_same_and_passes) {
  const auto j = suite({{1, 0.8, 100}, {4096, 0.7, 2000}});
  const auto c = compare(j, j);
  ASSERT_EQ(c.rows.size(), 2u);
  for (const auto& r : c.rows) {
    EXPECT_EQ(r.result, verdict::same);
    EXPECT_EQ(r.basis, "ratio to cuBLAS");
  }
  EXPECT_FALSE(c.failed());
}

TEST(compare, verdicts_by_ratio_to_the_reference) {
  const auto base = suite({{1, 0.80, 100}, {2, 0.80, 100}, {3, 0.80, 100}, {4, 0.80, 100}});
  // 1% slower: same. 10% slower: slower. 10% faster: faster. Slower in time only: same by ratio.
  const auto fresh = suite({{1, 0.792, 100}, {2, 0.72, 100}, {3, 0.88, 100}, {4, 0.80, 150}});
  const auto c = compare(base, fresh);
  EXPECT_EQ(c.rows[0].result, verdict::same);
  EXPECT_EQ(c.rows[1].result, verdict::slower);
  EXPECT_NEAR(c.rows[1].change, -0.10, 1e-9);
  EXPECT_EQ(c.rows[2].result, verdict::faster);
  EXPECT_EQ(c.rows[3].result, verdict::same);
  EXPECT_TRUE(c.failed());
  // --absolute judges time: the fourth got 33% slower.
  compare_options abs;
  abs.absolute = true;
  const auto a = compare(base, fresh, abs);
  EXPECT_EQ(a.rows[3].result, verdict::slower);
  EXPECT_EQ(a.rows[3].basis, "time");
  EXPECT_EQ(a.rows[1].result, verdict::same);
}

TEST(compare, a_change_within_the_noise_is_noisy_not_a_failure) {
  const auto base = suite({{1, 0.80, 100, 0.10}});
  const auto fresh = suite({{1, 0.72, 100, 0.10}});
  const auto c = compare(base, fresh);
  EXPECT_EQ(c.rows[0].result, verdict::noisy);
  EXPECT_FALSE(c.failed());
}

TEST(compare, tolerance_is_respected) {
  compare_options o;
  o.tolerance = 0.15;
  EXPECT_EQ(compare(suite({{1, 0.8, 100}}), suite({{1, 0.72, 100}}), o).rows[0].result, verdict::same);
  o.tolerance = 1.5;
  EXPECT_THROW(compare(suite({{1, 0.8, 100}}), suite({{1, 0.72, 100}}), o), usage_error);
}

TEST(compare, incorrect_and_missing_fail) {
  const auto base = suite({{1, 0.8, 100}, {2, 0.8, 100}, {3, 0.8, 100}});
  const auto fresh = suite({{1, 0.8, 100, 0, "incorrect"}, {2, 0.8, 100}, {5, 0.8, 100}});
  const auto c = compare(base, fresh);
  EXPECT_EQ(c.rows[0].result, verdict::incorrect);
  EXPECT_EQ(c.rows[2].result, verdict::missing);
  EXPECT_NE(c.rows[2].detail.find("not in new.json"), std::string::npos);
  ASSERT_EQ(c.only_in_new.size(), 1u);
  EXPECT_NE(c.only_in_new[0].find("5x4096x4096"), std::string::npos);
  EXPECT_TRUE(c.failed());
}

TEST(compare, nothing_shared_or_other_gpus_are_refused) {
  EXPECT_THROW(compare(suite({{1, 0.8, 100}}), suite({{2, 0.8, 100}})), usage_error);
  EXPECT_THROW(compare(suite({{1, 0.8, 100}}), suite({{1, 0.8, 100}}, "NVIDIA A100-SXM4-80GB")), environment_error);
  compare_options o;
  o.allow_device_mismatch = true;
  EXPECT_FALSE(compare(suite({{1, 0.8, 100}}), suite({{1, 0.8, 100}}, "NVIDIA A100-SXM4-80GB"), o).failed());
}

TEST(compare, predicted_results_compare_on_time) {
  auto base = suite({{1, 0.8, 100}});
  base["results"][0]["recommendation"].erase("vs_reference");
  base["results"][0]["recommendation"].erase("median_us");
  base["results"][0]["recommendation"]["predicted_us"] = 100.0;
  auto fresh = base;
  fresh["results"][0]["recommendation"]["predicted_us"] = 120.0;
  const auto c = compare(base, fresh);
  EXPECT_EQ(c.rows[0].basis, "time");
  EXPECT_EQ(c.rows[0].result, verdict::slower);
}

TEST(compare, junit_has_a_case_per_problem_and_escapes_names) {
  const auto c = compare(suite({{1, 0.8, 100}, {2, 0.8, 100}}), suite({{1, 0.8, 100}, {2, 0.6, 100}}));
  const std::string x = to_junit_xml(c);
  EXPECT_NE(x.find("tests=\"2\" failures=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("m2 &amp; &lt;friends&gt;"), std::string::npos) << x;
  EXPECT_NE(x.find("<failure message=\"SLOWER"), std::string::npos) << x;
  EXPECT_EQ(x.find("<friends>"), std::string::npos);
  const auto j = to_json(c);
  EXPECT_EQ(j["counts"]["SLOWER"], 1);
  EXPECT_EQ(j["failed"], true);
  EXPECT_EQ(j["base_mode"], "measured");  // the report colours the comparison by these
  EXPECT_EQ(j["new_mode"], "measured");
}

TEST(compare, single_gemm_results_load_too_and_bad_files_say_where) {
  const auto path = std::filesystem::temp_directory_path() / ("tiletune-result-" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << R"({"schema": "tiletune.gemm/1", "mode": "predicted", "device": {"name": "x", "arch": "sm_90"},
    "problem": {"m": 8, "n": 8, "k": 8, "dtype": "f32", "layout": "nn"},
    "recommendation": {"id": "a", "predicted_us": 4.0}})";
  const auto f = load_result_file(path);
  ASSERT_EQ(f.entries.size(), 1u);
  EXPECT_EQ(f.entries[0].key, "8x8x8 f32 nn");
  std::ofstream(path) << R"({"schema": "tiletune.gemm/1", "problem": {"m": 8,)";
  try {
    load_result_file(path);
    FAIL();
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 1"), std::string::npos) << e.what();
  }
  std::ofstream(path) << R"({"schema": "something/else"})";
  EXPECT_THROW(load_result_file(path), usage_error);
  std::filesystem::remove(path);
  EXPECT_THROW(load_result_file(path), usage_error);
}
