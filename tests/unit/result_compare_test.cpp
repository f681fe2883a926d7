#include "core/results/result_compare.hpp"

#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/errors.hpp"
#include "core/utf8.hpp"

using namespace tiletune;

namespace {
struct measured_entry {
  std::int64_t m;
  double ratio;      // vs_reference
  double time_us;
  double noise = 0.005;
  std::string status = "ok";
};

nlohmann::json suite(const std::vector<measured_entry>& rows, const std::string& device = "NVIDIA H100 80GB HBM3") {
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
      res["variants"] = nlohmann::json::array({{{"id", "mma_128x128x32_w2x2_s3"}, {"status", "ok"}}});
    } else {
      res["recommendation"] = nullptr;
      res["variants"] = nlohmann::json::array({{{"id", "mma_64x64x32_w2x2_s3"}, {"status", r.status}}});
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

// report checks a comparison file's verdicts with the rule judge gives them by: each verdict judge gives
// fits its change, and no other speed verdict does away from a boundary.
TEST(compare, a_written_verdict_fits_its_change_by_the_rule_judge_uses) {
  const std::vector<verdict> speed = {verdict::same, verdict::noisy, verdict::faster, verdict::slower};
  int noisy = 0;
  for (double change = -0.5; change <= 0.5; change += 0.0125)
    for (const double tolerance : {0.0, 0.02, 0.05})
      for (const double noise : {0.0, 0.03, 0.2}) {
        const verdict v = timing_verdict(change, tolerance, noise);
        noisy += v == verdict::noisy;
        EXPECT_TRUE(verdict_fits_change(to_string(v), change, tolerance, noise)) << change;
        const double off = std::min(std::abs(std::abs(change) - tolerance), std::abs(std::abs(change) - noise));
        if (off <= 1e-6) continue;
        for (const verdict other : speed) {
          if (other == v) continue;
          EXPECT_FALSE(verdict_fits_change(to_string(other), change, tolerance, noise)) << change;
        }
      }
  EXPECT_GT(noisy, 0);
  EXPECT_TRUE(verdict_fits_change("INCORRECT", 0.9, 0.05, 0));
  EXPECT_EQ(timing_verdict(-0.2, 0.05, 0.1), verdict::slower);
  EXPECT_EQ(timing_verdict(0.08, 0.05, 0.1), verdict::noisy);
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

// A problem the baseline has no result for (no variant ran there) that NEW answers is no regression:
// ANSWERED, and the gate passes (it was MISSING, "the files carry no comparable figure", exit 1).
// The other way round is MISSING, as before.
TEST(compare, a_problem_answered_for_the_first_time_is_answered_not_missing) {
  const auto unanswered = suite({{1, 0.8, 100, 0.005, "resource_limit"}, {2, 0.8, 100}});
  const auto answered = suite({{1, 0.8, 100}, {2, 0.8, 100}});
  const auto c = compare(unanswered, answered);
  EXPECT_EQ(c.rows[0].result, verdict::answered);
  EXPECT_EQ(to_string(c.rows[0].result), "ANSWERED");
  EXPECT_NE(c.rows[0].detail.find("the baseline has no result"), std::string::npos) << c.rows[0].detail;
  EXPECT_EQ(c.rows[1].result, verdict::same);
  EXPECT_FALSE(c.failed());
  const auto back = compare(answered, unanswered);
  EXPECT_EQ(back.rows[0].result, verdict::missing);
  EXPECT_TRUE(back.failed());
  // Neither has one (a file against itself, where a GPU runs no variant of a problem): SAME, which
  // was MISSING, failing a file compared with itself.
  const auto itself = compare(unanswered, unanswered);
  EXPECT_EQ(itself.rows[0].result, verdict::same);
  EXPECT_NE(itself.rows[0].detail.find("neither file has a result"), std::string::npos);
  EXPECT_FALSE(itself.failed());
}

TEST(compare, nothing_shared_or_other_gpus_are_refused) {
  EXPECT_THROW(compare(suite({{1, 0.8, 100}}), suite({{2, 0.8, 100}})), usage_error);
  EXPECT_THROW(compare(suite({{1, 0.8, 100}}), suite({{1, 0.8, 100}}, "NVIDIA A100-SXM4-80GB")), environment_error);
  compare_options o;
  o.allow_device_mismatch = true;
  EXPECT_FALSE(compare(suite({{1, 0.8, 100}}), suite({{1, 0.8, 100}}, "NVIDIA A100-SXM4-80GB"), o).failed());
}

// Two files of the same GPU name that differ in preset or architecture: the refusal says what
// differs (it printed the same name and architecture on both sides).
TEST(compare, a_gpu_mismatch_names_what_differs) {
  auto with_preset = suite({{1, 0.8, 100}});
  with_preset["device"]["preset"] = "h100-sxm";
  const auto without = suite({{1, 0.8, 100}});
  try {
    compare(with_preset, without);
    ADD_FAILURE() << "compared a preset's result with one of no preset";
  } catch (const environment_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("(sm_90, GPU model h100-sxm)"), std::string::npos) << what;
    EXPECT_NE(what.find("(sm_90, no preset)"), std::string::npos) << what;
  }
  auto no_arch = with_preset;
  no_arch["device"].erase("arch");
  try {
    compare(with_preset, no_arch);
    ADD_FAILURE() << "compared results of different architectures";
  } catch (const environment_error& e) {
    EXPECT_NE(std::string(e.what()).find("no architecture given"), std::string::npos) << e.what();
  }
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
  // Characters XML 1.0 has no place for (controls, U+FFFE, U+FFFF) are left out; the rest stay.
  auto odd = c;
  odd.rows[0].label = "bad\x01\xef\xbf\xbf\xef\xbf\xbe\xc3\xa9name";
  const std::string y = to_junit_xml(odd);
  EXPECT_NE(y.find("name=\"bad\xc3\xa9name\""), std::string::npos) << y;
  // Bytes that are not UTF-8 (a Latin-1 name, a sequence cut short, a surrogate) are U+FFFD, as JSON gives
  // them: the file stays one an XML reader takes.
  odd.rows[0].label = std::string("caf\xe9 \xed\xa0\x80 \xe2\x82", 11);
  const std::string z = to_junit_xml(odd);
  EXPECT_NE(z.find("name=\"caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\""), std::string::npos) << z;
  for (std::size_t i = 0; i < z.size();) {
    const auto ch = utf8_at(z, i);
    ASSERT_TRUE(ch.has_value()) << "invalid UTF-8 at byte " << i;
    i += ch->length;
  }
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

TEST(compare, each_suite_entry_meets_its_own_counterpart_when_shapes_repeat) {
  // Two entries of one shape under their own names, the new file in the other order.
  auto base = suite({{16, 0.8, 100}, {16, 0.5, 160}});
  base["results"][0]["name"] = "qkv";
  base["results"][1]["name"] = "o_proj";
  auto fresh = base;
  std::swap(fresh["results"][0], fresh["results"][1]);
  auto c = compare(base, fresh);
  ASSERT_EQ(c.rows.size(), 2u);
  for (const auto& r : c.rows) EXPECT_EQ(r.result, verdict::same) << r.label << " " << r.change;
  EXPECT_TRUE(c.only_in_new.empty());
  // Unnamed repeats pair in order; one more in the new file is judged against the first of its
  // problem in the baseline (it is a measurement of a baseline problem, not a new problem).
  auto plain = suite({{16, 0.8, 100}, {16, 0.5, 160}});
  for (auto& r : plain["results"]) r.erase("name");
  auto more = plain;
  more["results"].push_back(plain["results"][0]);
  c = compare(plain, more);
  ASSERT_EQ(c.rows.size(), 3u);
  for (const auto& r : c.rows) EXPECT_EQ(r.result, verdict::same);
  EXPECT_NE(c.rows[2].detail.find("judged against"), std::string::npos) << c.rows[2].detail;
  EXPECT_TRUE(c.only_in_new.empty());
}

// A file holding a problem fewer times than the other: every entry of it on either side is judged
// (against the first of its problem there), so a slowed suite entry never hides behind a lone
// result of its shape as a "new problem", nor is an entry the other file measured MISSING.
TEST(compare, an_entry_whose_problem_the_other_file_holds_fewer_times_is_judged_not_new_or_missing) {
  auto lone = suite({{16, 0.8, 100}});
  lone["results"][0].erase("name");
  auto two = suite({{16, 0.8, 100}, {16, 0.8, 100}});
  two["results"][0]["name"] = "4096^3";
  two["results"][1]["name"] = "q_proj";
  auto slowed = two;
  slowed["results"][1]["recommendation"]["median_us"] = 150.0;
  slowed["results"][1]["recommendation"]["vs_reference"] = 0.8 * 100 / 150;
  // The lone baseline against the suite whose q_proj regressed: q_proj is SLOWER, and the gate fails.
  auto c = compare(lone, slowed);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].result, verdict::same);
  EXPECT_EQ(c.rows[1].label, "q_proj");
  EXPECT_EQ(c.rows[1].result, verdict::slower) << c.rows[1].detail;
  EXPECT_TRUE(c.only_in_new.empty());
  EXPECT_TRUE(c.failed());
  // The suite as the baseline against the lone result: q_proj is judged against it, not MISSING.
  c = compare(two, lone);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[1].label, "q_proj");
  EXPECT_EQ(c.rows[1].result, verdict::same) << c.rows[1].detail;
  EXPECT_NE(c.rows[1].detail.find("judged against"), std::string::npos);
  // A problem the baseline lacks is still new, under its suite name.
  auto other = two;
  other["results"][1]["problem"]["m"] = 32;
  c = compare(lone, other);
  ASSERT_EQ(c.only_in_new.size(), 1u);
  EXPECT_NE(c.only_in_new[0].find("q_proj"), std::string::npos) << c.only_in_new[0];
}

TEST(compare, a_variant_that_failed_verification_is_incorrect_even_beside_a_recommendation) {
  const auto base = suite({{1, 0.8, 100}, {2, 0.8, 100}});
  auto fresh = base;
  fresh["results"][1]["variants"].push_back({{"id", "broken"}, {"status", "incorrect"}});
  const auto c = compare(base, fresh);
  EXPECT_EQ(c.rows[0].result, verdict::same);
  EXPECT_EQ(c.rows[1].result, verdict::incorrect);
  EXPECT_NE(c.rows[1].detail.find("failed verification"), std::string::npos);
  EXPECT_TRUE(c.failed());
  // "ok" beside an error past the variant's own bound is incorrect too; within it, not.
  auto past = base;
  past["results"][0]["variants"].push_back(
      {{"id", "says_ok"}, {"status", "ok"}, {"max_rel_error", 0.5}, {"error_bound", 0.01}});
  past["results"][1]["variants"].push_back(
      {{"id", "within"}, {"status", "ok"}, {"max_rel_error", 0.005}, {"error_bound", 0.01}});
  const auto p = compare(base, past);
  EXPECT_EQ(p.rows[0].result, verdict::incorrect);
  EXPECT_EQ(p.rows[1].result, verdict::same);
}

namespace {
std::string compare_refusal(const nlohmann::json& j) {
  try {
    (void)result_file_from_json(j, "r.json");
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(result_file, a_problem_the_tool_would_refuse_is_refused_naming_the_field) {
  for (const char* field : {"m", "n", "k"})
    for (int bad : {0, -3}) {
      auto j = suite({{64, 0.8, 100}});
      j["results"][0]["problem"][field] = bad;
      const std::string why = compare_refusal(j);
      EXPECT_NE(why.find(std::string("\"") + field + "\""), std::string::npos) << why;
      EXPECT_NE(why.find("r.json"), std::string::npos) << why;
    }
}

// A null device name or arch is none, as the schema allows (it stopped readers with a type error).
TEST(result_file, a_null_device_name_is_none) {
  auto j = suite({{64, 0.8, 100}});
  j["device"]["arch"] = nullptr;
  j["device"]["preset"] = "h100-sxm";
  j["device"]["name"] = nullptr;
  EXPECT_EQ(compare_refusal(j), "");
}

// Another kind of tiletune file is named by its schema before any field a result needs: a suite's
// definition given where its result belongs (check --baseline S.json) says so and how to make one.
TEST(result_file, a_suite_definition_or_other_file_is_named_by_its_schema) {
  const std::string definition = compare_refusal(
      {{"schema", "tiletune.suite/1"}, {"problems", {{{"m", 8}, {"n", 8}, {"k", 8}, {"dtype", "bf16"}}}}});
  EXPECT_NE(definition.find("r.json: schema \"tiletune.suite/1\" is not a gemm result"), std::string::npos) << definition;
  EXPECT_NE(definition.find("suite's definition"), std::string::npos) << definition;
  EXPECT_NE(definition.find("--suite FILE --out R.json"), std::string::npos) << definition;
  const std::string plan = compare_refusal({{"schema", "tiletune.batch/1"}, {"mode", "predicted"}});
  EXPECT_NE(plan.find("schema \"tiletune.batch/1\" is not a gemm result"), std::string::npos) << plan;
}

// What the schema requires of a result, a reader requires too, naming the file: a mode that is
// measured or predicted, variants that name themselves and a known outcome, a recommendation among
// them, and a problem of a known dtype.
TEST(result_file, a_result_the_schema_refuses_is_refused_naming_the_file) {
  struct damage {
    std::function<void(nlohmann::json&)> apply;
    std::string words;
  };
  const std::vector<damage> damages = {
      {[](nlohmann::json& j) { j["mode"] = "weird"; }, "\"mode\" is \"weird\""},
      {[](nlohmann::json& j) { j.erase("mode"); }, "no \"mode\""},
      {[](nlohmann::json& j) { j["results"][0]["variants"][0].erase("id"); }, "a variant without an \"id\""},
      {[](nlohmann::json& j) { j["results"][0]["variants"][0]["status"] = "weird"; }, "\"status\" \"weird\" is not one of ok"},
      {[](nlohmann::json& j) { j["results"][0]["recommendation"]["id"] = "mma_elsewhere"; },
       "the recommendation mma_elsewhere is none of its variants"},
      {[](nlohmann::json& j) { j["results"][0]["problem"]["dtype"] = "bf17"; }, "unknown dtype 'bf17'"},
      {[](nlohmann::json& j) { j["device"]["peak_tflops"] = {{"bf16", "x"}}; }, "\"peak_tflops\": \"bf16\" is \"x\""},
      // What db import stores and report draws (a "registers": "many" stopped db import with a
      // library's type error after the files before it were stored).
      {[](nlohmann::json& j) { j["results"][0]["variants"][0]["resources"] = {{"registers", "many"}}; },
       "variant mma_128x128x32_w2x2_s3: \"resources\": \"registers\" is \"many\", not a whole number or null"},
      {[](nlohmann::json& j) { j["results"][0]["variants"][0]["tile"] = 7; },
       "variant mma_128x128x32_w2x2_s3: \"tile\" is 7, not an object"},
      {[](nlohmann::json& j) { j["results"][0]["variants"][0]["tile"] = {{"block_m", 64}, {"stages", "x"}}; },
       "\"tile\": \"stages\" is \"x\", not a whole number"},
      {[](nlohmann::json& j) { j["results"][0]["recommendation"]["tflops"] = "x"; },
       "\"recommendation\": \"tflops\" is \"x\", not a number or null"},
      {[](nlohmann::json& j) { j["results"][0]["summary"] = {{"incorrect", "x"}}; },
       "\"summary\": \"incorrect\" is \"x\", not a whole number"},
      {[](nlohmann::json& j) { j["results"][0]["search"] = {{"strategy", -1}}; }, "\"search\": \"strategy\" is -1, not a string"},
      {[](nlohmann::json& j) { j["results"][0]["tuning_db"] = "x"; }, "\"tuning_db\" is \"x\", not an object or null"},
      // Figures out of the schema's range, and a TFLOP/s the time does not give (db list and export
      // show it: a -5 was stored and listed).
      {[](nlohmann::json& j) { j["results"][0]["recommendation"]["tflops"] = -5; },
       "\"recommendation\": \"tflops\" is -5, not a non-negative number"},
      {[](nlohmann::json& j) { j["results"][0]["variants"][0]["error_bound"] = 0; },
       "\"error_bound\" is 0, not a positive number"},
      {[](nlohmann::json& j) { j["results"][0]["variants"][0]["median_us"] = -1; },
       "\"median_us\" is -1, not a positive number"},
      {[](nlohmann::json& j) { j["results"][0]["recommendation"]["tflops"] = 1e308; },
       "\"tflops\" 1e+308 disagrees with the problem's FLOPs over median_us"},
      // The reference's figures are held as the recommendation's (a -1 was drawn as -1.0 TFLOP/s).
      {[](nlohmann::json& j) { j["results"][0]["reference"] = {{"median_us", 90.0}, {"tflops", -1}}; },
       "\"reference\": \"tflops\" is -1, not a non-negative number"},
      // The problem's derived figures, which the report draws, are the problem's own.
      {[](nlohmann::json& j) { j["results"][0]["problem"]["flops"] = -5; },
       "\"problem\": \"flops\" is -5, not the problem's 2147483648"},
      {[](nlohmann::json& j) { j["results"][0]["problem"]["flops"] = 1e300; }, "\"flops\" is 1e+300"},
      {[](nlohmann::json& j) { j["results"][0]["problem"]["operand_bytes"] = "x"; },
       "\"operand_bytes\" is \"x\", not the problem's"},
      // A spread past any timing's would call every change noise (1.8e306 printed "inf%", exit 0).
      {[](nlohmann::json& j) { j["results"][0]["recommendation"]["noise"] = 1.8e306; },
       "\"noise\" is 1.8e+306, not a timing's spread"},
      {[](nlohmann::json& j) { j["results"][0]["recommendation"]["noise"] = 10.5; }, "\"noise\" is 10.5"},
  };
  for (const auto& d : damages) {
    auto j = suite({{64, 0.8, 100}});
    d.apply(j);
    const std::string why = compare_refusal(j);
    EXPECT_NE(why.find(d.words), std::string::npos) << why;
    EXPECT_NE(why.find("r.json"), std::string::npos) << why;
  }
}

TEST(result_file, figures_faster_than_the_gpu_allows_are_refused_naming_the_figure) {
  // H100 SXM figures as a result file records them: 4096x4096x4096 bf16 needs >= 139 us at 989 TFLOP/s.
  auto j = suite({{4096, 1.0, 180}});
  j["device"]["peak_tflops"] = {{"bf16", 989.4}, {"f32", 66.9}};
  j["device"]["memory_bandwidth_gbs"] = 3352.32;
  j["device"]["l2_bytes"] = 52428800;
  EXPECT_EQ(compare_refusal(j), "");
  auto fast = j;
  fast["results"][0]["recommendation"]["median_us"] = 120.0;
  std::string why = compare_refusal(fast);
  EXPECT_NE(why.find("median_us 120"), std::string::npos) << why;
  EXPECT_NE(why.find("989.4 TFLOP/s"), std::string::npos) << why;
  auto reference = j;
  reference["results"][0]["reference"] = {{"median_us", 60.0}};
  reference["results"][0]["recommendation"]["vs_reference"] = 60.0 / 180;
  EXPECT_NE(compare_refusal(reference).find("reference"), std::string::npos);
  auto variant = j;
  variant["results"][0]["variants"].push_back({{"id", "v7"}, {"status", "ok"}, {"median_us", 1.0}});
  EXPECT_NE(compare_refusal(variant).find("variant v7"), std::string::npos);
  // A skinny problem is bound by memory: 64x32768x32768 bf16 streams ~2.1 GB beyond the L2 (>= 630 us).
  auto skinny = suite({{64, 1.0, 3000}});
  skinny["device"] = j["device"];
  for (auto& r : skinny["results"]) r["problem"]["n"] = r["problem"]["k"] = 32768;
  EXPECT_EQ(compare_refusal(skinny), "");
  skinny["results"][0]["recommendation"]["median_us"] = 400.0;
  why = compare_refusal(skinny);
  EXPECT_NE(why.find("memory allows"), std::string::npos) << why;
  // A file of a known preset that leaves its figures out, or gives 0, is held to the preset's
  // (the check was skipped before: a forged time passed by deleting the GPU's figures).
  for (const bool removed : {true, false}) {
    auto forged = fast;
    forged["device"]["preset"] = "h100-sxm";
    if (removed) {
      forged["device"].erase("peak_tflops");
      forged["device"].erase("memory_bandwidth_gbs");
    } else {
      forged["device"]["peak_tflops"]["bf16"] = 0;
      forged["device"]["memory_bandwidth_gbs"] = 0;
    }
    EXPECT_NE(compare_refusal(forged).find("faster than the GPU's peak"), std::string::npos) << removed;
    auto thin = skinny;
    thin["device"]["preset"] = "h100-sxm";
    thin["device"]["memory_bandwidth_gbs"] = removed ? nlohmann::json() : nlohmann::json(0);
    if (removed) thin["device"].erase("memory_bandwidth_gbs");
    EXPECT_NE(compare_refusal(thin).find("memory allows"), std::string::npos) << removed;
  }
}

TEST(result_file, every_recorded_measurement_in_profiles_passes_the_checks) {
  std::size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(TILETUNE_SOURCE_DIR) + "/profiles")) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object() || !j.contains("schema")) continue;
    const std::string schema = j["schema"].is_string() ? j["schema"].get<std::string>() : "";
    if (schema != "tiletune.gemm/1" && schema != "tiletune.gemm-suite/1") continue;
    EXPECT_NO_THROW((void)result_file_from_json(j, e.path().string())) << e.path();
    ++files;
  }
  EXPECT_GT(files, 5u);
}

// A partial run (--only, --verify-only, --kernel-debug) is judged as it is and said: its
// recommendation is the best of the variants it was given. By its "partial" field, or an older
// file's command line. (compare said nothing: a --only run read as a retuned problem.)
TEST(compare, a_partial_run_is_said_to_be_one) {
  const auto base = suite({{64, 0.8, 100}, {128, 0.8, 100}});
  auto fresh = base;
  fresh["results"][0]["partial"] = "--only";
  const auto c = compare(base, fresh);
  std::string notes;
  for (const auto& n : c.notes) notes += n + "\n";
  EXPECT_NE(notes.find("NEW new.json: 1 of its 2 result(s) is a partial run (--only)"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("BASE"), std::string::npos) << notes;
  auto old = base;
  old["tool"] = {{"command_line", "tiletune gemm --suite s.json --verify-only"}};
  const auto o = compare(old, base);
  notes.clear();
  for (const auto& n : o.notes) notes += n + "\n";
  EXPECT_NE(notes.find("BASE base.json: 2 of its 2 result(s) are a partial run (--verify-only)"), std::string::npos)
      << notes;
  EXPECT_TRUE(compare(base, base).notes.empty());
}

// --absolute where no problem has a ratio in both files changes nothing: said, not taken in silence.
TEST(compare, absolute_without_ratios_is_said_to_have_no_effect) {
  const auto measured = suite({{64, 0.8, 100}});
  compare_options absolute;
  absolute.absolute = true;
  auto has_note = [](const comparison& c) {
    for (const auto& n : c.notes)
      if (n.find("--absolute has no effect") != std::string::npos) return true;
    return false;
  };
  EXPECT_FALSE(has_note(compare(measured, measured, absolute)));
  auto predicted = measured;
  predicted["mode"] = "predicted";
  predicted["results"][0]["recommendation"].erase("vs_reference");
  predicted["results"][0]["recommendation"].erase("median_us");
  predicted["results"][0]["recommendation"]["predicted_us"] = 100.0;
  EXPECT_TRUE(has_note(compare(predicted, predicted, absolute)));
  EXPECT_FALSE(has_note(compare(predicted, predicted)));
}

// A run's summary holds counts: a negative one (a damaged or edited file) is refused by every
// reader of result files (compare, check's baseline, report, db import), naming it.
TEST(compare, a_negative_summary_count_is_refused_naming_it) {
  auto damaged = suite({{16, 0.8, 100}});
  damaged["results"][0]["summary"] = {{"ok", 1}, {"incorrect", -1}};
  try {
    result_file_from_json(damaged, "base.json");
    FAIL() << "read a negative count";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"summary\": \"incorrect\" is -1, not a count"), std::string::npos)
        << e.what();
  }
  damaged["results"][0]["summary"]["incorrect"] = 0;
  EXPECT_NO_THROW(result_file_from_json(damaged, "base.json"));
}
