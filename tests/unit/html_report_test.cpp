// The data each chart of `tiletune report` gets, from each kind of result file.
#include "core/report/html_report.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "core/results/json_file.hpp"
#include "core/report/report_charts.hpp"

namespace tiletune {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const fs::path profiles = fs::path(TILETUNE_SOURCE_DIR) / "profiles";
const fs::path measured_gemm = profiles / "measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json";
const fs::path baseline_suite = profiles / "baselines/h100-sxm.json";
const fs::path measured_batch = profiles / "measured/h100-2026-11-23/batch/batch-gpt2.json";

const report_chart& chart(const std::vector<report_section>& s, const std::string& id) {
  for (const auto& sec : s)
    for (const auto& c : sec.charts)
      if (c.id == id) return c;
  throw std::runtime_error("no chart " + id);
}

bool has_chart(const std::vector<report_section>& s, const std::string& id) {
  for (const auto& sec : s)
    for (const auto& c : sec.charts)
      if (c.id == id) return true;
  return false;
}

// A small gemm result: one cell of each outcome.
json failing_gemm(const std::string& mode) {
  auto variant = [](std::string id, std::string status, int bm, int bn, json tflops, json median_us) {
    return json{{"id", id}, {"family", "mma"}, {"status", status}, {"tile", {{"block_m", bm}, {"block_n", bn}}},
                {"tflops", tflops}, {"median_us", median_us}, {"predicted_us", 100.0}, {"rank", 1},
                {"resources", {{"registers", 128}, {"smem_bytes", 32768}, {"threads", 128}}},
                {"occupancy", {{"warps_per_sm", 8}, {"blocks_per_sm", 2}, {"limited_by", "registers"}}}};
  };
  // A TFLOP/s is the FLOPs over its variant's time (the measured one, else the model's 100 us), as readers require.
  const double flops = 2.0 * 1024 * 1024 * 1024;
  const bool measured = mode == "measured";
  return {{"schema", "tiletune.gemm/1"},
          {"mode", mode},
          {"device", {{"name", "test GPU"}, {"memory_bandwidth_gbs", 2000.0}, {"peak_tflops", {{"bf16", 500.0}}}}},
          {"problem", {{"m", 1024}, {"n", 1024}, {"k", 1024}, {"dtype", "bf16"}, {"layout", "nt"}, {"flops", 2.0 * 1024 * 1024 * 1024},
                       {"operand_bytes", 3.0 * 1024 * 1024 * 2}}},
          {"reference", mode == "measured" ? json{{"tflops", 300.0}} : json{{"tflops", nullptr}}},
          {"variants", {variant("a", "ok", 128, 128, measured ? 250.0 : flops / 100e6, measured ? json(flops / 250e6) : json(nullptr)),
                        variant("b", "ok", 128, 128, measured ? 200.0 : flops / 100e6, measured ? json(flops / 200e6) : json(nullptr)),
                        variant("c", "compile_error", 64, 128, nullptr, nullptr),
                        variant("d", "pruned", 64, 128, nullptr, nullptr),
                        [&] { auto v = variant("e", "pruned", 256, 128, nullptr, nullptr); v["constraint"] = "smem_limit"; return v; }(),
                        variant("f", "incorrect", 128, 64, nullptr, nullptr),
                        variant("g", "launch_error", 128, 64, nullptr, nullptr)}},
          {"recommendation", {{"id", "a"}, {"tflops", 250.0}}}};
}

std::map<std::pair<int, int>, json> cells_by_tile(const json& rows) {
  std::map<std::pair<int, int>, json> m;
  for (const auto& r : rows) m[{r["block_m"].get<int>(), r["block_n"].get<int>()}] = r;
  return m;
}

TEST(html_report, classify_dispatches_on_the_schema_and_refuses_others_naming_file_and_schema) {
  EXPECT_EQ(classify_result(json{{"schema", "tiletune.gemm/1"}}, "f"), result_kind::gemm);
  EXPECT_EQ(classify_result(json{{"schema", "tiletune.gemm-suite/1"}}, "f"), result_kind::suite);
  EXPECT_EQ(classify_result(json{{"schema", "tiletune.batch/1"}}, "f"), result_kind::batch);
  EXPECT_EQ(classify_result(json{{"schema", "tiletune.compare/1"}}, "f"), result_kind::comparison);
  EXPECT_EQ(classify_result(json{{"schema", "tiletune.tuning-db-list/1"}}, "f"), result_kind::tuning_db);
  try {
    classify_result(json{{"schema", "acme.thing/7"}}, "some/file.json");
    FAIL() << "accepted a foreign schema";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("some/file.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("acme.thing/7"), std::string::npos);
  }
  EXPECT_THROW(classify_result(json::array(), "f"), usage_error);
  EXPECT_THROW(classify_result(json{{"schema", 3}}, "f"), usage_error);
  // A result whose promised parts are missing or of the wrong type.
  EXPECT_THROW(report_sections(json{{"schema", "tiletune.gemm/1"}}, "f"), usage_error);
  EXPECT_THROW(report_sections(json{{"schema", "tiletune.gemm/1"}, {"problem", json::object()}, {"variants", 5}}, "f"),
               usage_error);
  EXPECT_THROW(report_sections(json{{"schema", "tiletune.batch/1"}, {"memory", json::object()}, {"candidates", {1}}}, "f"),
               usage_error);
}

TEST(html_report, heatmap_cells_hold_the_best_measured_figure_of_their_tile) {
  const json doc = read_json_file(measured_gemm);
  const json rows = report::gemm_heatmap_rows(doc, plan_mode::measured);
  ASSERT_FALSE(rows.empty());
  int counted = 0;
  double best = 0;
  for (const auto& r : rows) {
    counted += r["variants"].get<int>();
    EXPECT_EQ(r["variants"].get<int>(), r["ok"].get<int>() + r["pruned"].get<int>() + r["failed"].get<int>());
    if (r["tflops"].is_number()) best = std::max(best, r["tflops"].get<double>());
  }
  EXPECT_EQ(counted, static_cast<int>(doc["variants"].size()));
  // The best cell holds the best measured variant (computed here from the variants).
  double want = 0;
  json best_tile;
  for (const auto& v : doc["variants"])
    if (v["status"] == "ok" && v["median_us"].is_number() && v["tflops"].get<double>() > want)
      want = v["tflops"].get<double>(), best_tile = v["tile"];
  EXPECT_DOUBLE_EQ(best, want);
  const auto cells = cells_by_tile(rows);
  EXPECT_DOUBLE_EQ(cells.at({best_tile["block_m"].get<int>(), best_tile["block_n"].get<int>()})["tflops"].get<double>(), want);
  // The recommended variant's cell holds at least that variant's figure in the search.
  const json& rec = doc["recommendation"];
  const json& cell = cells.at({rec["tile"]["block_m"].get<int>(), rec["tile"]["block_n"].get<int>()});
  for (const auto& v : doc["variants"]) {
    if (v["id"] == rec["id"]) {
      EXPECT_GE(cell["tflops"].get<double>(), v["tflops"].get<double>());
    }
  }
}

TEST(html_report, failed_and_pruned_cells_show_their_status) {
  const json rows = report::gemm_heatmap_rows(failing_gemm("measured"), plan_mode::measured);
  const auto cells = cells_by_tile(rows);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells.at({128, 128})["status"], "ok");
  EXPECT_DOUBLE_EQ(cells.at({128, 128})["tflops"].get<double>(), 250.0);
  EXPECT_EQ(cells.at({64, 128})["status"], "compile_error");  // worse than pruned
  EXPECT_TRUE(cells.at({64, 128})["tflops"].is_null());
  EXPECT_EQ(cells.at({256, 128})["status"], "pruned");
  EXPECT_EQ(cells.at({256, 128})["label"], "smem_limit");  // the constraint that pruned it
  EXPECT_EQ(cells.at({128, 64})["status"], "incorrect");
  EXPECT_EQ(cells.at({128, 64})["label"], "incorrect");
  // The chart gets exactly these rows, and a status legend for the cells without a figure.
  const auto s = report_sections(failing_gemm("measured"), "f.json");
  const report_chart& c = chart(s, "heatmap-mma bf16");
  EXPECT_EQ(c.spec["data"][0]["values"], c.rows);
  EXPECT_EQ(c.rows, rows);
  bool status_scale = false;
  for (const auto& sc : c.spec["scales"])
    if (sc["name"] == "status") status_scale = sc["domain"].size() == 3;  // compile_error, pruned, incorrect
  EXPECT_TRUE(status_scale);
}

TEST(html_report, a_measured_run_colours_only_timed_variants_and_plots_cublas) {
  json doc = failing_gemm("measured");
  doc["variants"][1]["median_us"] = nullptr;  // "b" was not timed
  const json points = report::gemm_roofline_rows(doc, plan_mode::measured);
  ASSERT_EQ(points.size(), 2u);  // "a" and cuBLAS
  EXPECT_EQ(points[0]["id"], "a");
  EXPECT_EQ(points[1]["series"], "cuBLASLt");
  EXPECT_DOUBLE_EQ(points[1]["tflops"].get<double>(), 300.0);
  const double flops = doc["problem"]["flops"].get<double>(), bytes = doc["problem"]["operand_bytes"].get<double>();
  EXPECT_DOUBLE_EQ(points[1]["intensity"].get<double>(), flops / bytes);
}

TEST(html_report, a_predicted_plan_is_drawn_from_the_model_and_says_so) {
  const json doc = failing_gemm("predicted");
  const json points = report::gemm_roofline_rows(doc, plan_mode::predicted);
  ASSERT_EQ(points.size(), 2u);  // both ok variants, no cuBLAS (it was not measured)
  for (const auto& p : points) {
    EXPECT_NE(p["series"], "cuBLASLt");
    EXPECT_EQ(p["basis"], "predicted");
  }
  const auto s = report_sections(doc, "plan.json");
  EXPECT_EQ(s[0].basis.rfind("Predicted", 0), 0u);
  EXPECT_TRUE(s[0].predicted);
  EXPECT_FALSE(report_sections(failing_gemm("measured"), "run.json")[0].predicted);
  EXPECT_FALSE(has_chart(s, "search"));  // a plan times nothing: a notice says so
  EXPECT_FALSE(s[0].notices.empty());
  // Without tflops the model's time gives the figure.
  json bare = doc;
  for (auto& v : bare["variants"]) v.erase("tflops");
  const json rows = report::gemm_heatmap_rows(bare, plan_mode::predicted);
  const double want = doc["problem"]["flops"].get<double>() / (100.0 * 1e6);
  EXPECT_DOUBLE_EQ(cells_by_tile(rows).at({128, 128})["tflops"].get<double>(), want);
}

TEST(html_report, the_roof_rises_with_bandwidth_to_the_dtype_peak) {
  const json device = read_json_file(measured_gemm)["device"];
  const double peak = device["peak_tflops"]["bf16"].get<double>(), bw = device["memory_bandwidth_gbs"].get<double>();
  const json roof = report::gemm_roof_rows(device, "bf16", 1, 10000);
  ASSERT_EQ(roof.size(), 3u);
  EXPECT_DOUBLE_EQ(roof[0]["tflops"].get<double>(), bw * 1 / 1000);
  EXPECT_DOUBLE_EQ(roof[1]["intensity"].get<double>(), peak * 1000 / bw);
  EXPECT_DOUBLE_EQ(roof[1]["tflops"].get<double>(), peak);
  EXPECT_DOUBLE_EQ(roof[2]["tflops"].get<double>(), peak);
  EXPECT_TRUE(report::gemm_roof_rows(device, "fp8", 1, 10).empty());  // no peak for it: no roof
}

TEST(html_report, search_rows_follow_the_recorded_stages) {
  const json doc = read_json_file(measured_gemm);
  const json rows = report::gemm_search_rows(doc);
  const json& stages = doc["search"]["stages"];
  ASSERT_EQ(rows.size(), stages.size());
  double timed = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["stage"], stages[i]["name"]);
    EXPECT_EQ(rows[i]["timed"].get<double>(), stages[i]["timed"].get<double>());
    EXPECT_EQ(rows[i]["wall_ms"].get<double>(), stages[i]["wall_ms"].get<double>());
    timed += rows[i]["timed"].get<double>();
  }
  EXPECT_EQ(timed, doc["search"]["requests"].get<double>());
  EXPECT_TRUE(report::gemm_search_rows(failing_gemm("measured")).empty());
}

TEST(html_report, resource_rows_are_the_top_ranked_usable_variants) {
  const json doc = read_json_file(measured_gemm);
  const json rows = report::gemm_resource_rows(doc, 5);
  ASSERT_EQ(rows.size(), 5u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& id = rows[i]["id"];
    const auto it = std::find_if(doc["variants"].begin(), doc["variants"].end(), [&](const json& v) { return v["id"] == id; });
    ASSERT_NE(it, doc["variants"].end());
    EXPECT_EQ((*it)["status"], "ok");
    EXPECT_EQ((*it)["rank"].get<int>(), static_cast<int>(i) + 1);
    EXPECT_DOUBLE_EQ(rows[i]["registers"].get<double>(), (*it)["resources"]["registers"].get<double>());
    EXPECT_DOUBLE_EQ(rows[i]["smem_kib"].get<double>(), (*it)["resources"]["smem_bytes"].get<double>() / 1024);
  }
  EXPECT_EQ(report::gemm_resource_rows(failing_gemm("measured"), 10).size(), 2u);  // only the ok ones
}

TEST(html_report, suite_rows_give_each_problem_its_ratio_to_cublas) {
  const json doc = read_json_file(baseline_suite);
  const json rows = report::suite_rows(doc, "b.json");
  ASSERT_EQ(rows.size(), doc["results"].size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["problem"], doc["results"][i]["name"]);
    EXPECT_DOUBLE_EQ(rows[i]["vs_reference"].get<double>(), doc["results"][i]["recommendation"]["vs_reference"].get<double>());
  }
  report_options o;
  o.goal_vs_reference = 0.9;
  const auto s = report_sections(doc, "b.json", o);
  const report_chart& ratio = chart(s, "suite-ratio");
  int below = 0;
  for (const auto& r : ratio.rows) below += r["goal"] == "below the goal";
  int want = 0;
  for (const auto& r : doc["results"]) want += r["recommendation"]["vs_reference"].get<double>() < 0.9;
  EXPECT_EQ(below, want);
  EXPECT_EQ(chart(s, "suite-tflops").rows.size(), 2 * rows.size());  // variant and cuBLAS per problem
}

TEST(html_report, batch_memory_stacks_the_terms_under_each_candidates_peak) {
  const json doc = read_json_file(measured_batch);
  for (const bool ckpt : {false, true}) {
    const json rows = report::batch_memory_rows(doc, ckpt, "b.json");
    std::map<double, double> sum, peak;
    for (const auto& r : rows) {
      sum[r["micro_batch"].get<double>()] += r["gib"].get<double>();
      peak[r["micro_batch"].get<double>()] = r["peak_gib"].get<double>();
      EXPECT_GE(r["gib"].get<double>(), 0);
    }
    int candidates = 0;
    for (const auto& c : doc["candidates"]) candidates += c["checkpointing"].get<bool>() == ckpt;
    EXPECT_EQ(static_cast<int>(sum.size()), candidates);
    EXPECT_EQ(rows.size(), 6u * candidates);  // six terms each
    for (const auto& [mb, s] : sum) EXPECT_GE(s + 1e-9, peak[mb]) << mb;  // overhead closes the gap to the peak
  }
  const json tp = report::batch_throughput_rows(doc, "b.json");
  EXPECT_EQ(tp.size(), doc["candidates"].size());
  int recommended = 0;
  for (const auto& r : tp)
    if (r["recommended"].get<bool>()) {
      ++recommended;
      EXPECT_EQ(r["micro_batch"].get<double>(), doc["recommendation"]["micro_batch"].get<double>());
    }
  EXPECT_EQ(recommended, 1);
}

TEST(html_report, a_batch_where_nothing_fits_marks_no_recommendation) {
  json doc = read_json_file(measured_batch);
  for (auto& c : doc["candidates"]) c["fits"] = false;
  doc["recommendation"] = nullptr;
  doc["suggestions"] = {"use LoRA"};
  const auto s = report_sections(doc, "b.json");
  for (const auto& r : chart(s, "throughput").rows) {
    EXPECT_FALSE(r["recommended"].get<bool>());
    EXPECT_FALSE(r["fits"].get<bool>());
  }
  for (const auto& r : chart(s, "memory-no-checkpointing").rows) EXPECT_FALSE(r["recommended"].get<bool>());
  EXPECT_NE(s[0].facts[0].find("Nothing fits"), std::string::npos);
  EXPECT_NE(s[0].facts[1].find("use LoRA"), std::string::npos);
}

TEST(html_report, comparison_rows_carry_verdict_change_and_noise) {
  const json cmp = {{"schema", "tiletune.compare/1"}, {"base", "a"}, {"new", "b"}, {"tolerance", 0.05},
                    {"rows", {{{"name", "p1"}, {"verdict", "SLOWER"}, {"basis", "ratio to cuBLAS"}, {"base", 0.9}, {"new", 0.8},
                               {"change", -0.111}, {"noise", 0.01}, {"detail", ""}},
                              {{"name", "p2"}, {"verdict", "MISSING"}, {"basis", ""}, {"base", 0.9}, {"new", nullptr},
                               {"change", 0.0}, {"noise", 0.0}, {"detail", "not in new"}}}},
                    {"failed", true}};
  const json rows = report::comparison_rows(cmp, "c.json");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["verdict"], "SLOWER");
  EXPECT_DOUBLE_EQ(rows[0]["change_pct"].get<double>(), -11.1);
  EXPECT_DOUBLE_EQ(rows[0]["noise_pct"].get<double>(), 1.0);
  EXPECT_TRUE(rows[1]["new"].is_null());
  const auto s = report_sections(cmp, "c.json");
  EXPECT_EQ(chart(s, "comparison").rows, rows);
  EXPECT_NE(s[0].facts[0].find("FAILED"), std::string::npos);
}

TEST(html_report, comparison_colour_follows_the_modes_of_its_files) {
  json cmp = {{"schema", "tiletune.compare/1"}, {"base", "a"}, {"new", "b"}, {"tolerance", 0.05},
              {"rows", {{{"name", "p1"}, {"verdict", "SAME"}, {"basis", "time"}, {"base", 10.0}, {"new", 10.0},
                         {"change", 0.0}, {"noise", 0.0}, {"detail", ""}}}},
              {"failed", false}};
  EXPECT_FALSE(report_sections(cmp, "c.json")[0].predicted);  // an older file without modes: as recorded
  cmp["base_mode"] = "measured";
  cmp["new_mode"] = "measured";
  EXPECT_FALSE(report_sections(cmp, "c.json")[0].predicted);
  cmp["base_mode"] = cmp["new_mode"] = "predicted";
  auto s = report_sections(cmp, "c.json");
  EXPECT_TRUE(s[0].predicted);
  EXPECT_NE(s[0].basis.find("predicted figures"), std::string::npos);
  cmp["base_mode"] = "measured";  // allowed with --allow-mode-mismatch: not a measurement
  s = report_sections(cmp, "c.json");
  EXPECT_TRUE(s[0].predicted);
  EXPECT_NE(s[0].basis.find("the new file predicted"), std::string::npos);
}

TEST(html_report, tuning_db_rows_give_each_record_its_own_bar) {
  const json list = {{"schema", "tiletune.tuning-db-list/1"}, {"file", "t.sqlite3"},
                     {"records", {{{"problem", "4096x4096x4096 bf16 nt"}, {"device_model", "h100-sxm"}, {"tflops", 700.0},
                                   {"recommended", "a"}, {"driver", "13.0"}},
                                  {{"problem", "4096x4096x4096 bf16 nt"}, {"device_model", "h100-sxm"}, {"tflops", 720.0},
                                   {"recommended", "b"}, {"driver", "13.1"}}}}};
  const json rows = report::tuning_db_rows(list, "l.json");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[0]["record"], rows[1]["record"]);
  EXPECT_DOUBLE_EQ(rows[1]["tflops"].get<double>(), 720.0);
  EXPECT_EQ(chart(report_sections(list, "l.json"), "tuning-db").rows, rows);
}

// A compare or db-list file's rows are objects with a verdict or mode of their kind and figures in
// range: [1, "x"] had drawn bars labelled "? (?)", a tflops -5 and a verdict "WHAT" drawn as given.
TEST(html_report, malformed_comparison_and_database_rows_are_refused_naming_the_entry) {
  auto refusal = [](const std::function<json()>& rows) {
    try {
      (void)rows();
    } catch (const usage_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const json cmp = {{"schema", "tiletune.compare/1"}, {"rows", {{{"verdict", "SAME"}}, 1}}};
  EXPECT_NE(refusal([&] { return report::comparison_rows(cmp, "c.json"); }).find("c.json: entry 2 of \"rows\" is 1, not an object"),
            std::string::npos);
  for (const json& row : {json{{"verdict", "WHAT"}}, json{{"verdict", "SAME"}, {"noise", -3}}})
    EXPECT_NE(refusal([&] { return report::comparison_rows({{"rows", {row}}}, "c.json"); }).find("\""), std::string::npos)
        << row.dump();
  EXPECT_NE(refusal([&] { return report::comparison_rows({{"rows", {{{"verdict", "WHAT"}}}}}, "c.json"); }).find("not one of SAME"),
            std::string::npos);
  const json list = {{"schema", "tiletune.tuning-db-list/1"}, {"file", "x"}, {"records", {"s"}}};
  EXPECT_NE(refusal([&] { return report::tuning_db_rows(list, "l.json"); }).find("entry 1 of \"records\" is \"s\""),
            std::string::npos);
  EXPECT_NE(refusal([&] { return report::tuning_db_rows({{"records", {{{"tflops", -5}}}}}, "l.json"); }).find("at least 0"),
            std::string::npos);
  EXPECT_NE(refusal([&] { return report::tuning_db_rows({{"records", {{{"mode", "bogus"}}}}}, "l.json"); })
                .find("\"mode\" is \"bogus\", not one of measured, predicted"),
            std::string::npos);
  EXPECT_EQ(refusal([&] { return report::tuning_db_rows({{"records", {{{"mode", "predicted"}, {"tflops", 0}}}}}, "l.json"); }),
            "accepted");
}

// db export --format json: the best config per problem (the problem as an object, its key as text);
// plans stored offline with --store-plans are drawn as predicted and the section says so.
TEST(html_report, a_tuning_database_export_is_drawn_and_says_which_records_are_predicted) {
  const json problem = {{"m", 1024}, {"n", 1024}, {"k", 1024}, {"dtype", "bf16"}, {"layout", "nt"}};
  json doc = {{"schema", "tiletune.tuning-export/1"}, {"database", "t.sqlite"},
              {"configs", {{{"key", "1024x1024x1024 b1 bf16 nt a1 b0"}, {"problem", problem},
                            {"device_model", "h100-sxm"}, {"id", "mma_128x64x32_w2x2_s2"}, {"mode", "predicted"},
                            {"tflops", 210.0}}}}};
  EXPECT_EQ(classify_result(doc, "e.json"), result_kind::tuning_db);
  const json rows = report::tuning_db_rows(doc, "e.json");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["problem"], "1024x1024x1024 b1 bf16 nt a1 b0");
  EXPECT_EQ(rows[0]["recommended"], "mma_128x64x32_w2x2_s2");
  auto s = report_sections(doc, "e.json");
  EXPECT_TRUE(s[0].predicted);
  EXPECT_NE(s[0].basis.find("Predicted"), std::string::npos) << s[0].basis;
  doc["configs"].push_back(doc["configs"][0]);
  doc["configs"][1]["mode"] = "measured";
  s = report_sections(doc, "e.json");
  EXPECT_FALSE(s[0].predicted);
  EXPECT_NE(s[0].basis.find("1 of 2"), std::string::npos) << s[0].basis;
}

TEST(html_report, every_result_file_in_profiles_is_drawn_and_other_files_are_refused) {
  int drawn = 0;
  for (const auto& e : fs::recursive_directory_iterator(profiles)) {
    if (e.path().extension() != ".json") continue;
    const json doc = read_json_file(e.path());
    const std::string schema = doc.value("schema", "");
    if (schema == "tiletune.gemm/1" || schema == "tiletune.gemm-suite/1" || schema == "tiletune.batch/1") {
      const auto s = report_sections(doc, e.path().string());
      ASSERT_FALSE(s.empty()) << e.path();
      for (const auto& sec : s)
        for (const auto& c : sec.charts) {
          EXPECT_FALSE(c.rows.empty()) << e.path() << " " << c.id;  // no empty chart is drawn
          EXPECT_EQ(c.spec["data"][0]["values"], c.rows) << e.path() << " " << c.id;
        }
      ++drawn;
    } else {
      EXPECT_THROW(report_sections(doc, e.path().string()), usage_error) << e.path();
    }
  }
  EXPECT_GT(drawn, 30);
}

TEST(html_report, the_page_escapes_text_and_keeps_scripts_whole) {
  report_section s;
  s.source = "x.json";
  s.title = "a </script><b>bold</b> & more";
  s.basis = "Predicted: test";
  json rows = json::array({{{"a", "</script>"}}});
  s.charts.push_back(report::make_chart("c", "t", "cap", rows, report::bar_spec(rows, report::bars("a", "v", "v"))));
  vega_library lib;
  lib.bundle = true;
  lib.scripts.push_back({"vega", "vega.min.js", "var s = '</script>';"});
  // A --vega-dir whose path holds "*/" would end the comment naming the file and break its script.
  lib.scripts.push_back({"vega-lite", "v*/x/vega-lite.min.js", "var t = 1;"});
  const std::string page = render_report_page({s}, lib, "tiletune report x.json");
  EXPECT_EQ(page.find("v*/x"), std::string::npos);
  EXPECT_NE(page.find("<script>/* v* /x/vega-lite.min.js */\nvar t = 1;"), std::string::npos);
  EXPECT_EQ(page.find("<b>bold</b>"), std::string::npos);
  EXPECT_NE(page.find("a &lt;/script&gt;&lt;b&gt;bold&lt;/b&gt; &amp; more"), std::string::npos);
  // The only "</script" are the ends of the page's own script elements.
  std::size_t opens = 0, closes = 0;
  for (auto p = page.find("<script"); p != std::string::npos; p = page.find("<script", p + 1)) ++opens;
  for (auto p = page.find("</script"); p != std::string::npos; p = page.find("</script", p + 1)) ++closes;
  EXPECT_EQ(opens, closes);
  EXPECT_NE(page.find("id=\"tiletune-errors\""), std::string::npos);
  EXPECT_NE(page.find("data-charts=\"1\""), std::string::npos);
  EXPECT_EQ(page.find("window.define"), std::string::npos);  // a bundle needs no module loader
}

// Issue 39: a problem named "a <!-- <script> b" drew no charts. "<!--" then
// "<script" inside a script element puts the HTML parser in its double-escaped
// state, where "</script>" no longer ends the element: escaping "</" was not enough.
TEST(html_report, a_name_that_opens_an_html_comment_and_a_script_stays_data) {
  const std::string name = "a <!-- <script> b";
  report_section s;
  s.source = name + ".json";
  s.title = name;
  s.basis = "Predicted: test";
  s.facts.push_back(name);
  s.notices.push_back(name);
  json rows = json::array({{{"a", name}, {"v", 1.0}, {"tip", name + " -->"}}});
  s.charts.push_back(report::make_chart(name, name, name, rows, report::bar_spec(rows, report::bars("a", "v", "v"))));
  vega_library lib;
  lib.bundle = true;
  lib.scripts.push_back({"vega", "vega.min.js", "/* bundle */"});
  const std::string page = render_report_page({s}, lib, "tiletune report '" + name + "'");
  // Outside the scripts the name is text, escaped wherever it appears.
  EXPECT_EQ(page.find(name), std::string::npos);
  EXPECT_EQ(page.find("<!--"), std::string::npos);
  EXPECT_NE(page.find("a &lt;!-- &lt;script&gt; b"), std::string::npos);
  // The specs' JSON holds no '<' at all, and reads back as the very same data.
  const std::string open = "<script type=\"application/json\" id=\"tiletune-specs\">";
  const auto from = page.find(open);
  ASSERT_NE(from, std::string::npos);
  const auto to = page.find("</script>", from);
  ASSERT_NE(to, std::string::npos);
  const std::string text = page.substr(from + open.size(), to - from - open.size());
  EXPECT_EQ(text.find('<'), std::string::npos) << text.substr(0, 200);
  EXPECT_EQ(text.find('>'), std::string::npos);
  const json specs = json::parse(text);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0]["spec"]["data"][0]["values"][0]["a"], name);
  EXPECT_EQ(specs[0]["spec"]["data"][0]["values"][0]["tip"], name + " -->");
  // Every script element the page opens is closed by its own end tag: the draw script is still a script.
  std::size_t opens = 0, closes = 0;
  for (auto p = page.find("<script"); p != std::string::npos; p = page.find("<script", p + 1)) ++opens;
  for (auto p = page.find("</script"); p != std::string::npos; p = page.find("</script", p + 1)) ++closes;
  EXPECT_EQ(opens, closes);
  EXPECT_NE(page.find("JSON.parse(document.getElementById('tiletune-specs')"), std::string::npos);
}

TEST(html_report, a_missing_chart_library_is_an_environment_error_naming_the_file_and_package) {
  const fs::path dir = fs::temp_directory_path() / "tiletune_vega_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  try {
    load_vega_library(dir);
    FAIL() << "an empty folder gave a library";
  } catch (const environment_error& e) {
    EXPECT_NE(std::string(e.what()).find("libjs-vega"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos);
  }
  std::ofstream(dir / "vega.min.js") << "/* bundle */";
  const vega_library lib = load_vega_library(dir);
  EXPECT_TRUE(lib.bundle);
  ASSERT_EQ(lib.scripts.size(), 1u);
  EXPECT_EQ(lib.scripts[0].source, "/* bundle */");
  EXPECT_THROW(load_vega_library(dir / "nowhere"), environment_error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tiletune
