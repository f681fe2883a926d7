// The tiletune binary on good and bad input: exit codes, messages, JSON, files.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace {

bool has_gpu() { return run({"devices", "--json"}).out.find("\"why_none\"") == std::string::npos; }

std::vector<std::string> gemm(std::vector<std::string> extra) {
  std::vector<std::string> a{"gemm", "--gpu", "l4", "--dry-run"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void expect_usage_error(std::vector<std::string> args, const std::string& named) {
  const fs::path out = tmp_dir() / "never.json";
  fs::remove(out);
  args.push_back("--out");
  args.push_back(out.string());
  const result r = run(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(named), std::string::npos) << "message should name '" << named << "': " << r.err;
  EXPECT_FALSE(fs::exists(out)) << "no output file on bad input";
}

}  // namespace

TEST(cli, help_and_version_exit_0) {
  const result h = run({"--help"});
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("gemm"), std::string::npos);
  const result g = run({"gemm", "--help"});
  EXPECT_EQ(g.code, 0);
  EXPECT_NE(g.out.find("Examples"), std::string::npos);
  EXPECT_NE(g.out.find("--layout"), std::string::npos);
  EXPECT_EQ(run({"--version"}).code, 0);
}

TEST(cli, no_command_or_unknown_command_is_usage) {
  EXPECT_EQ(run({}).code, 2);
  EXPECT_EQ(run({"frobnicate"}).code, 2);
}

TEST(cli, bad_values_exit_2_naming_them_and_write_nothing) {
  expect_usage_error(gemm({"--m", "0", "--n", "8", "--k", "8"}), "--m 0");
  expect_usage_error(gemm({"--m", "-5", "--n", "8", "--k", "8"}), "-5");
  expect_usage_error(gemm({"--m", "abc", "--n", "8", "--k", "8"}), "abc");
  expect_usage_error(gemm({"--m", "8", "--n", "8", "--k", "8", "--dtype", "f64"}), "f64");
  expect_usage_error(gemm({"--m", "8", "--n", "8", "--k", "8", "--layout", "xx"}), "xx");
  expect_usage_error({"gemm", "--gpu", "no-such-gpu", "--m", "8", "--n", "8", "--k", "8"}, "no-such-gpu");
  expect_usage_error(gemm({"--m", "30000", "--n", "30000", "--k", "30000", "--batch", "4"}), "30000x30000x30000");
  expect_usage_error(gemm({"--m", "99999999999", "--n", "8", "--k", "8"}), "99999999999");
  expect_usage_error(gemm({"--m", "8", "--n", "8"}), "--k");
  expect_usage_error(gemm({"--m", "8", "--n", "8", "--k", "8", "--top", "0"}), "--top 0");
  expect_usage_error(gemm({"--m", "8", "--n", "8", "--k", "8", "--alpha", "x"}), "x");
}

TEST(cli, out_into_a_missing_folder_is_refused_before_work) {
  const result r = run(gemm({"--m", "8", "--n", "8", "--k", "8", "--out", "/no/such/folder/plan.json"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/no/such/folder"), std::string::npos);
}

TEST(cli, devices_never_fails) {
  const result r = run({"devices"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("h100-sxm"), std::string::npos);
  const result j = run({"devices", "--json"});
  EXPECT_EQ(j.code, 0);
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["schema"], "tiletune.devices/1");
  EXPECT_GE(doc["presets"].size(), 7u);
}

TEST(cli, without_a_gpu_gemm_teaches_the_gpu_flag) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const result r = run({"gemm", "--m", "64", "--n", "64", "--k", "64"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("--gpu"), std::string::npos) << r.err;
}

TEST(cli, dry_run_writes_the_contract_json) {
  const fs::path out = tmp_dir() / "plan.json";
  fs::remove(out);
  const result r = run({"gemm", "--m", "17", "--n", "33", "--k", "65", "--dtype", "bf16", "--layout", "nt", "--gpu",
                        "h100-sxm", "--dry-run", "--out", out.string(), "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["schema"], "tiletune.gemm/1");
  EXPECT_EQ(j["mode"], "predicted");
  EXPECT_EQ(j["device"]["arch"], "sm_90");
  EXPECT_EQ(j["problem"]["m"], 17);
  EXPECT_EQ(j["problem"]["layout"], "nt");
  EXPECT_FALSE(j["recommendation"].is_null());
  int ok = 0;
  for (const auto& v : j["variants"]) {
    if (v["status"] == "ok") {
      ++ok;
      EXPECT_EQ(v["resources"]["spill_bytes"], 0);
      EXPECT_GT(v["resources"]["registers"].get<int>(), 0);
      EXPECT_GT(v["occupancy"]["blocks_per_sm"].get<int>(), 0);
    } else {
      EXPECT_TRUE(v.contains("reason")) << v.dump();
    }
  }
  EXPECT_GT(ok, 10);
  // No temporary file is left beside the output.
  for (const auto& e : fs::directory_iterator(tmp_dir()))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(cli, every_dtype_plans_odd_shapes_with_table_and_json) {
  const char* shapes[][3] = {{"1000", "3000", "777"}, {"1", "4096", "4096"}, {"17", "33", "65"}};
  const char* dtypes[] = {"f32", "tf32", "f16", "bf16"};
  const char* layouts[] = {"tn", "nt", "tt", "nn"};
  for (int d = 0; d < 4; ++d) {
    for (auto& s : shapes) {
      const result r = run({"gemm", "--m", s[0], "--n", s[1], "--k", s[2], "--dtype", dtypes[d], "--layout",
                            layouts[d], "--gpu", "a100-sxm-80gb", "--json"});
      ASSERT_EQ(r.code, 0) << dtypes[d] << " " << s[0] << ": " << r.err;
      const auto j = nlohmann::json::parse(r.out);
      EXPECT_FALSE(j["recommendation"].is_null()) << dtypes[d];
      EXPECT_EQ(j["problem"]["dtype"], dtypes[d]);
    }
  }
  const result t = run(gemm({"--m", "1000", "--n", "3000", "--k", "777", "--dtype", "f32", "--layout", "tn", "--top",
                             "3"}));
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("PREDICTED"), std::string::npos);
  EXPECT_NE(t.out.find("recommended:"), std::string::npos);
  EXPECT_NE(t.out.find("simt_"), std::string::npos);
}

TEST(cli, batch_plans_and_writes_json) {
  const fs::path out = tmp_dir() / "batch.json";
  fs::remove(out);
  const result r = run({"batch", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--seq-len", "2048", "--global-batch",
                        "256", "--lora-rank", "16", "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("recommended"), std::string::npos);
  EXPECT_NE(r.out.find("PREDICTED"), std::string::npos);
  const auto j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["schema"], "tiletune.batch/1");
  EXPECT_EQ(j["model"]["parameters"], 8'030'261'248LL);
  EXPECT_EQ(j["recommendation"]["global_batch"], 256);
  EXPECT_EQ(j["hf_training_args"]["gradient_accumulation_steps"].get<int>() *
                j["hf_training_args"]["per_device_train_batch_size"].get<int>(),
            256);
}

TEST(cli, batch_reads_a_config_json) {
  const fs::path config = tmp_dir() / "config.json";
  std::ofstream(config) << R"({"model_type":"gpt2","vocab_size":50257,"n_embd":768,"n_layer":12,"n_head":12,
    "n_positions":1024})";
  const result r = run({"batch", "--model", config.string(), "--gpu", "a100-sxm-80gb", "--seq-len", "1024",
                        "--global-batch", "512", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"]["parameters"], 124'439'808);
}

TEST(cli, batch_bad_input_exits_2_and_writes_nothing) {
  const fs::path bad = tmp_dir() / "bad.json";
  std::ofstream(bad) << "{\n \"model_type\": \"llama\",\n \"hidden_size\": 2048,,\n}";
  const fs::path missing = tmp_dir() / "missing.json";
  std::ofstream(missing) << R"({"model_type": "llama", "vocab_size": 32000})";
  const fs::path unknown = tmp_dir() / "t5.json";
  std::ofstream(unknown) << R"({"model_type": "t5"})";
  const std::vector<std::string> base{"batch", "--gpu", "h100-sxm", "--model"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  expect_usage_error(with({bad.string()}), "line 3");
  expect_usage_error(with({missing.string()}), "hidden_size");
  expect_usage_error(with({unknown.string()}), "t5");
  expect_usage_error(with({"no-such-model"}), "no-such-model");
  expect_usage_error(with({"gpt2", "--seq-len", "4096"}), "--seq-len 4096");
  expect_usage_error(with({"gpt2", "--precision", "fp8"}), "fp8");
  expect_usage_error(with({"gpt2", "--optimizer", "lion"}), "lion");
  expect_usage_error(with({"gpt2", "--zero", "5"}), "--zero 5");
  expect_usage_error(with({"gpt2", "--world-size", "0"}), "--world-size 0");
  expect_usage_error(with({"gpt2", "--checkpointing", "maybe"}), "maybe");
}

namespace {
fs::path write_result(const std::string& name, double ratio, const std::string& device = "NVIDIA H100 80GB HBM3") {
  nlohmann::json j = {{"schema", "tiletune.gemm/1"},
                      {"mode", "measured"},
                      {"device", {{"name", device}, {"arch", "sm_90"}}},
                      {"problem", {{"m", 4096}, {"n", 4096}, {"k", 4096}, {"dtype", "bf16"}, {"layout", "nt"}}},
                      {"recommendation", {{"id", "mma_128x128x32_w2x2_s3"}, {"vs_reference", ratio}, {"median_us", 300.0}}}};
  const fs::path p = tmp_dir() / name;
  std::ofstream(p) << j.dump(2);
  return p;
}
}  // namespace

TEST(cli, compare_exit_codes) {
  const auto base = write_result("base.json", 0.80);
  EXPECT_EQ(run({"compare", base.string(), base.string()}).code, 0);
  const result one = run({"compare", base.string(), write_result("one.json", 0.792).string()});
  EXPECT_EQ(one.code, 0) << one.out;
  EXPECT_NE(one.out.find("SAME"), std::string::npos);
  const fs::path junit = tmp_dir() / "report.xml";
  fs::remove(junit);
  const result ten = run({"compare", base.string(), write_result("ten.json", 0.72).string(), "--junit", junit.string()});
  EXPECT_EQ(ten.code, 1) << ten.out;
  EXPECT_NE(ten.out.find("SLOWER"), std::string::npos);
  EXPECT_NE(slurp(junit).find("<failure"), std::string::npos);
  EXPECT_EQ(run({"compare", base.string(), write_result("ten2.json", 0.72).string(), "--tolerance", "0.2"}).code, 0);
  // Truncated: exit 2 with the place.
  const fs::path cut = tmp_dir() / "cut.json";
  const std::string whole = slurp(base);
  std::ofstream(cut) << whole.substr(0, whole.size() / 2);
  const result t = run({"compare", base.string(), cut.string()});
  EXPECT_EQ(t.code, 2);
  EXPECT_NE(t.err.find("line"), std::string::npos) << t.err;
  EXPECT_EQ(run({"compare", base.string(), (tmp_dir() / "absent.json").string()}).code, 2);
  // Another GPU: exit 3 naming both, unless allowed.
  const auto a100 = write_result("a100.json", 0.80, "NVIDIA A100-SXM4-80GB");
  const result m = run({"compare", base.string(), a100.string()});
  EXPECT_EQ(m.code, 3);
  EXPECT_NE(m.err.find("A100"), std::string::npos);
  EXPECT_NE(m.err.find("H100"), std::string::npos);
  EXPECT_EQ(run({"compare", base.string(), a100.string(), "--allow-device-mismatch"}).code, 0);
  EXPECT_EQ(run({"compare", base.string()}).code, 2);
}

TEST(cli, check_without_a_gpu_points_to_compare) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const result r = run({"check", "--baseline", write_result("b.json", 0.8).string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("compare"), std::string::npos) << r.err;
  EXPECT_EQ(run({"check", "--baseline", (tmp_dir() / "absent.json").string()}).code, 2);
}

TEST(cli, a_suite_plans_every_problem_into_one_file_that_compares_clean) {
  const fs::path suite = tmp_dir() / "suite.json";
  std::ofstream(suite) << R"({"schema": "tiletune.suite/1", "name": "mini", "problems": [
    {"name": "decode", "m": 1, "n": 4096, "k": 4096, "dtype": "bf16", "layout": "nt"},
    {"name": "prefill", "m": 2048, "n": 4096, "k": 4096, "dtype": "bf16", "layout": "nt"}]})";
  const fs::path out = tmp_dir() / "suite-result.json";
  const result r = run({"gemm", "--suite", suite.string(), "--gpu", "h100-sxm", "--dry-run", "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("prefill"), std::string::npos);
  const auto j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["schema"], "tiletune.gemm-suite/1");
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][1]["name"], "prefill");
  EXPECT_FALSE(j["results"][0]["recommendation"].is_null());
  const result c = run({"compare", out.string(), out.string()});
  EXPECT_EQ(c.code, 0) << c.out << c.err;
  expect_usage_error({"gemm", "--suite", suite.string(), "--m", "8", "--gpu", "h100-sxm"}, "--suite");
}

TEST(cli, a_failure_late_in_the_input_leaves_no_partial_or_temporary_file) {
  // The bad value comes after good ones, so work has started when it is found.
  const fs::path dir = tmp_dir() / "partial";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path suite = dir / "suite.json";
  std::ofstream(suite) << R"({"schema": "tiletune.suite/1", "name": "late", "problems": [
    {"name": "good", "m": 64, "n": 64, "k": 64, "dtype": "f16", "layout": "nt"},
    {"name": "bad", "m": 64, "n": -3, "k": 64, "dtype": "f16", "layout": "nt"}]})";
  const fs::path out = dir / "out.json";
  std::ofstream(out) << "previous";  // an older result stays as it was
  result r = run({"gemm", "--gpu", "h100-sxm", "--dry-run", "--suite", suite.string(), "--out", out.string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("-3"), std::string::npos) << r.err;
  const fs::path truncated = dir / "truncated.json";
  std::ofstream(truncated) << R"({"schema": "tiletune.gemm/1", "mode": "measured", "problem": {"m": 4096, )";
  const fs::path junit = dir / "report.xml";
  r = run({"compare", truncated.string(), truncated.string(), "--out", out.string(), "--junit", junit.string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("truncated.json"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(out), "previous");
  EXPECT_FALSE(fs::exists(junit));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_TRUE(e.path() == suite || e.path() == out || e.path() == truncated) << "left behind: " << e.path();
}
