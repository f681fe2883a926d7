// What the readers of result files (compare, check, report, db import) hold a file to: the GPU's
// limits (the preset's, never higher ones a file gives itself), every figure a reader draws or
// stores, grouped problems keyed and checked by their rows, and every incorrect variant a verdict.
#include "core/results/result_compare.hpp"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"

using namespace tiletune;

namespace {

// The H100 SXM as a result file records it (bf16 989.4, fp8 1978.9 TFLOP/s; 3352 GB/s; 50 MiB of L2).
nlohmann::json h100() {
  return {{"name", "NVIDIA H100 80GB HBM3"},
          {"arch", "sm_90"},
          {"preset", "h100-sxm"},
          {"l2_bytes", 52428800},
          {"memory_bandwidth_gbs", 3352.32},
          {"peak_tflops", {{"bf16", 989.4}, {"f16", 989.4}, {"f32", 66.9}, {"tf32", 494.7}, {"fp8", 1978.9}}}};
}

nlohmann::json problem(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& dtype = "bf16") {
  return {{"m", m}, {"n", n}, {"k", k}, {"dtype", dtype}, {"layout", "nt"}};
}

double tflops_of(const nlohmann::json& p, double us) {
  return 2.0 * p["m"].get<double>() * p["n"].get<double>() * p["k"].get<double>() / (us * 1e-6) / 1e12;
}

// A measured tiletune.gemm/1 result of one variant at `us`, its TFLOP/s what the time says.
nlohmann::json measured(const nlohmann::json& p, double us) {
  const nlohmann::json variant = {
      {"id", "v1"}, {"status", "ok"}, {"median_us", us}, {"predicted_us", us}, {"tflops", tflops_of(p, us)}};
  nlohmann::json rec = variant;
  rec.erase("status");
  return {{"schema", "tiletune.gemm/1"}, {"mode", "measured"}, {"device", h100()}, {"problem", p},
          {"variants", {variant}},       {"recommendation", rec}};
}

// A predicted one (a plan): no median, the model's time.
nlohmann::json predicted(const nlohmann::json& p, double us) {
  nlohmann::json j = measured(p, us);
  j["mode"] = "predicted";
  j["variants"][0].erase("median_us");
  j["recommendation"].erase("median_us");
  return j;
}

std::string refusal(const nlohmann::json& j) {
  try {
    (void)result_file_from_json(j, "r.json");
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

comparison compare_files(const nlohmann::json& base, const nlohmann::json& fresh) {
  return compare_results(result_file_from_json(base, "base.json"), result_file_from_json(fresh, "new.json"), {});
}

bool says(const std::string& text, const std::string& words) { return text.find(words) != std::string::npos; }

// A grouped problem of given rows: 2 x 4096 x 4096 experts, the rows one after another.
nlohmann::json given_rows_problem(const std::vector<std::int64_t>& rows) {
  std::int64_t m = 0;
  for (auto r : rows) m += r;
  nlohmann::json p = problem(m, 4096, 4096);
  p["groups"] = {{"count", rows.size()}, {"rows", rows}, {"layout", "contiguous"}, {"routing", "given"}};
  return p;
}

}  // namespace

// 4096^3 bf16 needs >= 139 us at the H100's 989.4 TFLOP/s: a file that gives itself a higher peak,
// bandwidth or L2 while naming the preset is still held to the preset's (db import stored 12,977
// TFLOP/s on an H100). It may lower a limit: the smaller of the two holds.
TEST(result_reader, a_known_preset_holds_a_file_to_its_figures_whatever_the_file_raises) {
  auto forged = measured(problem(4096, 4096, 4096), 10.6);
  for (auto& [type, peak] : forged["device"]["peak_tflops"].items()) peak = 1e6;
  forged["device"]["memory_bandwidth_gbs"] = 1e8;
  EXPECT_TRUE(says(refusal(forged), "faster than the GPU's peak 989.4 TFLOP/s")) << refusal(forged);
  // A skinny problem bound by memory (64x32768x32768 streams ~2.1 GB beyond the L2, >= 630 us): a huge
  // L2 or bandwidth in the file does not lift the floor.
  auto skinny = measured(problem(64, 32768, 32768), 400);
  skinny["device"]["l2_bytes"] = 1e12;
  EXPECT_TRUE(says(refusal(skinny), "memory allows")) << refusal(skinny);
  skinny["device"]["l2_bytes"] = 52428800;
  skinny["device"]["memory_bandwidth_gbs"] = 1e8;
  EXPECT_TRUE(says(refusal(skinny), "memory allows")) << refusal(skinny);
  // A lower peak than the preset's is the file's to give (a slower part of the model): it holds.
  auto slower = measured(problem(4096, 4096, 4096), 200);
  EXPECT_EQ(refusal(slower), "");
  slower["device"]["peak_tflops"]["bf16"] = 500.0;  // 275 us at 500 TFLOP/s
  EXPECT_TRUE(says(refusal(slower), "peak 500 TFLOP/s")) << refusal(slower);
  // A preset this version does not know: the file's own figures, as before.
  auto unknown = forged;
  unknown["device"]["preset"] = "my-h100";
  EXPECT_EQ(refusal(unknown), "");
}

// The device keys fp8's peak as "fp8" (e4m3 and e5m2 alike): 4096^3 e4m3 needs >= 69 us at 1978.9
// TFLOP/s, so 10 us (above the memory floor) was accepted, 7x the peak.
TEST(result_reader, fp8_problems_are_held_to_the_fp8_peak) {
  for (const char* dtype : {"e4m3", "e5m2", "e4m3_e5m2", "e5m2_e4m3"}) {
    const auto fast = predicted(problem(4096, 4096, 4096, dtype), 10);
    const std::string why = refusal(fast);
    EXPECT_TRUE(says(why, "predicted_us 10 us is faster than the GPU's peak 1978.9 TFLOP/s")) << dtype << ": " << why;
    EXPECT_EQ(refusal(predicted(problem(4096, 4096, 4096, dtype), 80)), "") << dtype;
  }
}

// Each variant's predicted_us and TFLOP/s, and the reference's TFLOP/s, are drawn by report and stored
// by db import: held to the GPU and to their own time as the recommendation's are, naming the figure.
TEST(result_reader, every_variant_figure_and_the_references_tflops_are_checked) {
  const auto p = problem(4096, 4096, 4096);
  const auto good = measured(p, 528);
  EXPECT_EQ(refusal(good), "");
  auto tflops = good;  // 101x the peak, and not what its 528 us say
  tflops["variants"][0]["tflops"] = 99999.0;
  std::string why = refusal(tflops);
  EXPECT_TRUE(says(why, "r.json: 4096x4096x4096 bf16 nt: variant v1: \"tflops\" 99999")) << why;
  auto disagrees = good;  // under the peak, but not what the time says
  disagrees["variants"][0]["tflops"] = 300.0;
  why = refusal(disagrees);
  EXPECT_TRUE(says(why, "variant v1: \"tflops\" 300 disagrees with the problem's FLOPs over median_us")) << why;
  auto guess = good;  // a model's time of 0.01 us
  guess["variants"][0]["predicted_us"] = 0.01;
  why = refusal(guess);
  EXPECT_TRUE(says(why, "variant v1: predicted_us 0.01 us is faster than the GPU's peak")) << why;
  // A plan's variant: its TFLOP/s is over its predicted time.
  auto plan = predicted(p, 300);
  plan["variants"][0]["tflops"] = tflops_of(p, 150);
  why = refusal(plan);
  EXPECT_TRUE(says(why, "variant v1: \"tflops\"")) << why;
  EXPECT_TRUE(says(why, "over predicted_us")) << why;
  // The reference: its TFLOP/s against its own time, and so against the peak.
  auto reference = good;
  reference["reference"] = {{"provider", "cublaslt"}, {"median_us", 170.0}, {"tflops", tflops_of(p, 170)}};
  EXPECT_EQ(refusal(reference), "");
  reference["reference"]["tflops"] = 99999.0;
  why = refusal(reference);
  EXPECT_TRUE(says(why, "4096x4096x4096 bf16 nt: reference: \"tflops\" 99999")) << why;
  reference["reference"]["median_us"] = nullptr;  // no time to hold it to: the peak still does
  why = refusal(reference);
  EXPECT_TRUE(says(why, "\"tflops\" 99999 is more than the GPU's peak 989.4 TFLOP/s")) << why;
}

// Grouped problems are keyed by their rows: 120+8 and 64+64 rows are two problems ("rows given"
// in both keys judged them SAME). An ungrouped problem's key reads as before.
TEST(result_reader, grouped_problems_of_other_rows_are_other_problems) {
  EXPECT_EQ(problem_key(result_file_from_json(measured(problem(4096, 4096, 4096), 200), "a").entries[0].problem),
            "4096x4096x4096 bf16 nt");
  const auto a = result_file_from_json(predicted(given_rows_problem({120, 8}), 37), "a.json");
  const auto b = result_file_from_json(predicted(given_rows_problem({64, 64}), 37), "b.json");
  EXPECT_NE(a.entries[0].key, b.entries[0].key);
  EXPECT_TRUE(says(a.entries[0].key, "120,8")) << a.entries[0].key;
  EXPECT_THROW((void)compare_results(a, b, {}), usage_error);
  EXPECT_EQ(compare_results(a, a, {}).rows.at(0).result, verdict::same);
}

// A problem only NEW holds is not judged against a baseline, but a variant of it that failed
// verification fails the gate all the same (it went through CI as "new problem").
TEST(result_reader, an_incorrect_variant_of_a_problem_only_new_holds_is_incorrect) {
  auto base = nlohmann::json{{"schema", "tiletune.gemm-suite/1"}, {"mode", "measured"}, {"device", h100()},
                             {"results", nlohmann::json::array()}};
  auto one = measured(problem(4096, 4096, 4096), 200);
  for (const char* k : {"schema", "mode", "device"}) one.erase(k);
  one["name"] = "q_proj";
  base["results"].push_back(one);
  auto fresh = base;
  auto other = measured(problem(4096, 1024, 4096), 100);
  for (const char* k : {"schema", "mode", "device"}) other.erase(k);
  other["name"] = "k_proj";
  fresh["results"].push_back(other);
  EXPECT_FALSE(compare_files(base, fresh).failed());
  fresh["results"][1]["variants"].push_back({{"id", "broken"}, {"status", "incorrect"}});
  const auto c = compare_files(base, fresh);
  EXPECT_TRUE(c.failed());
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[1].label, "k_proj");
  EXPECT_EQ(c.rows[1].result, verdict::incorrect);
  EXPECT_TRUE(says(c.rows[1].detail, "not in base.json")) << c.rows[1].detail;
}

// The recommendation's own check, where it carries one, counts as a variant's does.
TEST(result_reader, a_recommendation_past_its_error_bound_is_incorrect) {
  const auto base = measured(problem(4096, 4096, 4096), 200);
  auto fresh = base;
  fresh["recommendation"]["max_rel_error"] = 0.5;
  fresh["recommendation"]["error_bound"] = 0.01;
  const auto c = compare_files(base, fresh);
  EXPECT_EQ(c.rows.at(0).result, verdict::incorrect);
  fresh["variants"] = nlohmann::json::array();  // a compact record: no variants
  const auto compact = compare_files(base, fresh);
  EXPECT_EQ(compact.rows.at(0).result, verdict::incorrect);
}

// A grouped problem's fields are named as fields, never a command's flag (compare has no
// --group-layout), and a count the rows disagree with is refused.
TEST(result_reader, malformed_group_fields_are_named) {
  struct damage {
    const char* field;
    nlohmann::json value;
    std::string words;
  };
  const damage damages[] = {
      {"routing", 5, "\"problem\": \"groups\": \"routing\" is 5, not a string"},
      {"rows", nlohmann::json::array({120, "8"}), "\"problem\": \"groups\": \"rows\" holds \"8\", not a whole number"},
      {"rows", "120,8", "\"problem\": \"groups\": \"rows\" is \"120,8\", not a list"},
      {"layout", "bogus", "\"problem\": \"groups\": \"layout\" is \"bogus\", not contiguous or masked"},
      {"count", 3, "\"problem\": \"groups\": \"count\" 3 is not the 2 groups \"rows\" gives"},
      {"stride", "x", "\"problem\": \"groups\": \"stride\" is \"x\", not a whole number"},
  };
  for (const auto& d : damages) {
    auto j = predicted(given_rows_problem({120, 8}), 37);
    j["problem"]["groups"][d.field] = d.value;
    const std::string why = refusal(j);
    EXPECT_TRUE(says(why, "r.json: " + d.words)) << why;
    EXPECT_FALSE(says(why, "--")) << why;
  }
  auto rowless = predicted(given_rows_problem({120, 8}), 37);
  rowless["problem"]["groups"].erase("rows");
  EXPECT_TRUE(says(refusal(rowless), "\"problem\": \"groups\" has no \"rows\"")) << refusal(rowless);
}

// A preset is one GPU model however a file spells it, as --gpu H100-SXM is h100-sxm; an unknown one
// stays as written.
TEST(result_reader, a_preset_is_read_in_its_canonical_spelling) {
  auto upper = measured(problem(4096, 4096, 4096), 200);
  upper["device"]["preset"] = "H100-SXM";
  const auto f = result_file_from_json(upper, "upper.json");
  EXPECT_EQ(f.device_model, "h100-sxm");
  const auto lower = result_file_from_json(measured(problem(4096, 4096, 4096), 200), "a.json");
  EXPECT_NO_THROW((void)compare_results(lower, f, {}));
  EXPECT_EQ(canonical_preset("H100-SXM"), "h100-sxm");
  EXPECT_EQ(canonical_preset("My-H100"), "My-H100");
  upper["device"]["preset"] = "My-H100";
  EXPECT_EQ(result_file_from_json(upper, "u.json").device_model, "My-H100");
}
