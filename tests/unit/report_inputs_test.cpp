// The batch, compare and tuning database files `tiletune report` draws are checked before drawing, as
// gemm results are: files tiletune writes are drawn, and each damaged field is refused naming the file
// and the field.
#include <filesystem>
#include <functional>
#include <utility>
#include <vector>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/report/html_report.hpp"
#include "core/results/json_file.hpp"
#include "core/results/result_compare.hpp"

namespace tiletune {
namespace {

using report_json = nlohmann::json;
namespace fs = std::filesystem;

const fs::path report_inputs_profiles = fs::path(TILETUNE_SOURCE_DIR) / "profiles";

// Written by `tiletune db import` of two measured h100 results, then `db list --json` and `db export`.
const char* report_inputs_list_text = R"J({"file":"t.sqlite","matching":2,"records":[{"compiler":"nvrtc 13.0","cuda_runtime":"unknown","device_model":"h100-sxm","device_name":"NVIDIA H100 80GB HBM3","driver":"unknown","measured_at":"2026-11-22T10:22:59Z","mode":"measured","problem":"1000x3000x777 bf16 nt","recommended":"mma_128x64x64_w4x2_s3","strategy":"exhaustive","tflops":24.48902406353909,"tool_version":"0.1.0"},{"compiler":"nvrtc 13.0","cuda_runtime":"unknown","device_model":"h100-sxm","device_name":"NVIDIA H100 80GB HBM3","driver":"unknown","measured_at":"2026-11-22T10:00:40Z","mode":"measured","problem":"4096x4096x4096 bf16 nt","recommended":"mma_128x128x32_w2x2_s3","strategy":"exhaustive","tflops":259.5344875731622,"tool_version":"0.1.0"}],"schema":"tiletune.tuning-db-list/1"})J";
const char* report_inputs_export_text = R"J({"configs":[{"compiler":"nvrtc 13.0","cutlass":"ThreadblockShape<128,64,64>, WarpShape<32,32,64>, InstructionShape<16,8,16>, stages 3","device_model":"h100-sxm","driver":"unknown","family":"mma","id":"mma_128x64x64_w4x2_s3","key":"1000x3000x777 b1 bf16 nt a1 b0","measured_at":"2026-11-22T10:22:59Z","median_us":190.371,"mode":"measured","problem":{"alpha":1.0,"batch":1,"beta":0.0,"dtype":"bf16","k":777,"layout":"nt","m":1000,"n":3000},"tflops":24.48902406353909,"tile":{"block_k":64,"block_m":128,"block_n":64,"family":"mma","split_k":1,"stages":3,"threads":256,"warp_m":32,"warp_n":32,"warps_m":4,"warps_n":2},"tool_version":"0.1.0","triton":{"BLOCK_SIZE_K":64,"BLOCK_SIZE_M":128,"BLOCK_SIZE_N":64,"GROUP_SIZE_M":1,"num_stages":3,"num_warps":8},"verified":true},{"compiler":"nvrtc 13.0","cutlass":"ThreadblockShape<128,128,32>, WarpShape<64,64,32>, InstructionShape<16,8,16>, stages 3","device_model":"h100-sxm","driver":"unknown","family":"mma","id":"mma_128x128x32_w2x2_s3","key":"4096x4096x4096 b1 bf16 nt a1 b0","measured_at":"2026-11-22T10:00:40Z","median_us":529.5595000000001,"mode":"measured","problem":{"alpha":1.0,"batch":1,"beta":0.0,"dtype":"bf16","k":4096,"layout":"nt","m":4096,"n":4096},"tflops":259.5344875731622,"tile":{"block_k":32,"block_m":128,"block_n":128,"family":"mma","split_k":1,"stages":3,"threads":128,"warp_m":64,"warp_n":64,"warps_m":2,"warps_n":2},"tool_version":"0.1.0","triton":{"BLOCK_SIZE_K":32,"BLOCK_SIZE_M":128,"BLOCK_SIZE_N":128,"GROUP_SIZE_M":1,"num_stages":3,"num_warps":4},"verified":true}],"database":"t.sqlite","date":"2026-12-04T02:58:21Z","no_config":[],"schema":"tiletune.tuning-export/1"})J";

// The refusal's text, or "accepted".
std::string report_inputs_refusal(const report_json& doc, const std::string& path) {
  try {
    (void)report_sections(doc, path);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "accepted";
}

// A change of a real file, refused with a message that holds every one of WANTED.
void report_inputs_expect_refused(const report_json& real, const std::function<void(report_json&)>& change,
                                  const std::string& path, const std::vector<std::string>& wanted) {
  report_json doc = real;
  change(doc);
  const std::string why = report_inputs_refusal(doc, path);
  for (const auto& w : wanted) EXPECT_NE(why.find(w), std::string::npos) << why << "\n wanted: " << w;
}

report_json report_inputs_batch() {
  return read_json_file(report_inputs_profiles / "measured/h100-2026-11-23/batch/batch-gpt2.json");
}

report_json report_inputs_compare() {
  const auto base = load_result_file(report_inputs_profiles / "baselines/h100-sxm.json");
  return to_json(compare_results(base, base, {}));
}

TEST(report_inputs, files_tiletune_writes_are_drawn) {
  int batches = 0;
  for (const auto& e : fs::recursive_directory_iterator(report_inputs_profiles)) {
    if (e.path().extension() != ".json") continue;
    const report_json doc = read_json_file(e.path());
    if (doc.value("schema", "") != "tiletune.batch/1") continue;
    EXPECT_EQ(report_inputs_refusal(doc, e.path().string()), "accepted") << e.path();
    ++batches;
  }
  EXPECT_GT(batches, 3);
  EXPECT_EQ(report_inputs_refusal(report_inputs_compare(), "cmp.json"), "accepted");
  EXPECT_EQ(report_inputs_refusal(report_json::parse(report_inputs_list_text), "list.json"), "accepted");
  EXPECT_EQ(report_inputs_refusal(report_json::parse(report_inputs_export_text), "export.json"), "accepted");
}

TEST(report_inputs, a_batch_plan_with_fields_of_other_types_or_out_of_range_is_refused) {
  const report_json b = report_inputs_batch();
  report_inputs_expect_refused(b, [](report_json& j) { j["mode"] = "bogus"; }, "plan.json",
                               {"plan.json: \"mode\" is \"bogus\", not measured or predicted"});
  report_inputs_expect_refused(b, [](report_json& j) { j["model"] = "x"; }, "plan.json", {"plan.json", "\"model\"", "not an object"});
  report_inputs_expect_refused(b, [](report_json& j) { j["recommendation"] = 5; }, "plan.json",
                               {"plan.json", "\"recommendation\" is 5, not an object"});
  report_inputs_expect_refused(b, [](report_json& j) { j["candidates"][0]["micro_batch"] = -1; }, "plan.json",
                               {"plan.json: candidate 1: \"micro_batch\" is -1"});
  report_inputs_expect_refused(b, [](report_json& j) { j["candidates"][0]["micro_batch"] = 0; }, "plan.json",
                               {"\"micro_batch\" is 0"});
  report_inputs_expect_refused(b, [](report_json& j) { j["candidates"][0]["peak_bytes"] = -5; }, "plan.json",
                               {"plan.json: candidate 1: \"peak_bytes\" is -5"});
  report_inputs_expect_refused(b, [](report_json& j) { j["recommendation"]["peak_bytes"] = -5; }, "plan.json",
                               {"plan.json: \"recommendation\": \"peak_bytes\" is -5"});
  report_inputs_expect_refused(b, [](report_json& j) { j["memory"]["weights_bytes"] = -1; }, "plan.json",
                               {"plan.json: \"memory\": \"weights_bytes\" is -1"});
}

TEST(report_inputs, a_comparison_with_fields_out_of_range_or_a_contradicting_verdict_is_refused) {
  const report_json c = report_inputs_compare();
  ASSERT_EQ(c["rows"][0]["verdict"], "SAME");
  report_inputs_expect_refused(c, [](report_json& j) { j["tolerance"] = -3; }, "cmp.json", {"cmp.json: \"tolerance\" is -3"});
  report_inputs_expect_refused(c, [](report_json& j) { j["base_mode"] = "bogus"; }, "cmp.json",
                               {"cmp.json: \"base_mode\" is \"bogus\", not measured or predicted"});
  report_inputs_expect_refused(c, [](report_json& j) { j["new_mode"] = 3; }, "cmp.json", {"cmp.json: \"new_mode\" is 3"});
  report_inputs_expect_refused(c, [](report_json& j) { j["rows"][0]["base"] = -1.0; }, "cmp.json", {"cmp.json: row 1: \"base\""});
  auto verdict = [](std::string v, double change) {
    return [=](report_json& j) { j["rows"][0]["verdict"] = v, j["rows"][0]["change"] = change, j["rows"][0]["noise"] = 0.01; };
  };
  // Noise past what two timings' spreads join to (compare refuses a spread past 10) would excuse any change.
  report_inputs_expect_refused(c, [](report_json& j) { j["rows"][0]["noise"] = 1e306; }, "cmp.json",
                               {"row 1: \"noise\" is 1e+306, more than two timings' spreads can join to"});
  report_inputs_expect_refused(c, verdict("SLOWER", 0.5), "cmp.json", {"cmp.json: row 1: \"verdict\" SLOWER contradicts"});
  report_inputs_expect_refused(c, verdict("FASTER", -0.5), "cmp.json", {"row 1: \"verdict\" FASTER contradicts"});
  report_inputs_expect_refused(c, verdict("SAME", 0.3), "cmp.json", {"row 1: \"verdict\" SAME contradicts"});
  report_inputs_expect_refused(c, verdict("NOISY", 0.3), "cmp.json", {"row 1: \"verdict\" NOISY contradicts"});
  // What judge concludes is accepted: beyond the tolerance by sign, within the noise NOISY.
  // (Each pair by name: a lambda may not capture a structured binding before C++20's clang 16.)
  for (const auto& judged : std::vector<std::pair<std::string, double>>{{"SLOWER", -0.5}, {"FASTER", 0.5}, {"SAME", 0.04}}) {
    report_json j = c;
    verdict(judged.first, judged.second)(j);
    EXPECT_EQ(report_inputs_refusal(j, "cmp.json"), "accepted") << judged.first;
  }
  report_json noisy = c;
  noisy["rows"][0]["verdict"] = "NOISY", noisy["rows"][0]["change"] = 0.08, noisy["rows"][0]["noise"] = 0.1;
  EXPECT_EQ(report_inputs_refusal(noisy, "cmp.json"), "accepted");
}

TEST(report_inputs, a_tuning_database_record_faster_than_its_gpu_is_refused) {
  const report_json list = report_json::parse(report_inputs_list_text), exported = report_json::parse(report_inputs_export_text);
  report_inputs_expect_refused(list, [](report_json& j) { j["records"][1]["tflops"] = 99999.0; }, "list.json",
                               {"list.json: record 2 (h100-sxm): \"tflops\" 99999", "989.4"});
  // 4096^3 in 1 us, the TFLOP/s to match.
  report_inputs_expect_refused(exported, [](report_json& j) {
    for (auto& c : j["configs"]) if (c["problem"]["m"] == 4096) c["median_us"] = 1.0, c["tflops"] = 137438.953472;
  }, "export.json", {"export.json: config", "(h100-sxm): median_us 1 us is faster than the GPU's peak"});
  // A TFLOP/s the time does not give.
  report_inputs_expect_refused(exported, [](report_json& j) { j["configs"][0]["tflops"] = 500.0; }, "export.json",
                               {"export.json: config 1 (h100-sxm): \"tflops\" 500 disagrees", "median_us"});
  // A GPU without a preset: its figures are not held to one.
  report_json other = list;
  other["records"][1]["device_model"] = "some-future-gpu", other["records"][1]["tflops"] = 99999.0;
  EXPECT_EQ(report_inputs_refusal(other, "list.json"), "accepted");
}

}  // namespace
}  // namespace tiletune
