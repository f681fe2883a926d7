// `tiletune report` end to end: pages written, bad input refused (exit 2, no page), Vega missing (exit 3).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace {

const fs::path profiles = fs::path(TILETUNE_SOURCE_DIR) / "profiles";

bool vega_installed() { return fs::exists("/usr/share/javascript/vega/vega-view.min.js"); }

fs::path write(const std::string& name, const std::string& text) {
  const fs::path p = tmp_dir() / name;
  std::ofstream(p) << text;
  return p;
}

void expect_rejected(const fs::path& input, const std::string& named) {
  const fs::path out = tmp_dir() / "refused.html";
  fs::remove(out);
  const result r = run({"report", input.string(), "--out", out.string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(input.string()), std::string::npos) << "names the file: " << r.err;
  EXPECT_NE(r.err.find(named), std::string::npos) << "names '" << named << "': " << r.err;
  EXPECT_FALSE(fs::exists(out)) << "no page on bad input";
}

}  // namespace

TEST(cli_report, help_teaches_the_kinds_and_the_chart_library) {
  const result r = run({"report", "--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* s : {"tiletune.gemm/1", "tiletune.batch/1", "tiletune.compare/1", "libjs-vega", "Examples", "--out"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

TEST(cli_report, writes_one_page_for_several_kinds_of_result) {
  if (!vega_installed()) GTEST_SKIP() << "libjs-vega is not installed (apt-get install libjs-vega)";
  const fs::path out = tmp_dir() / "several.html";
  fs::remove(out);
  const result r = run({"report", (profiles / "measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json").string(),
                        (profiles / "baselines/h100-sxm.json").string(),
                        (profiles / "measured/h100-2026-11-23/batch/batch-gpt2.json").string(), "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string page = slurp(out);
  EXPECT_NE(page.find("data-kind=\"gemm\""), std::string::npos);
  EXPECT_NE(page.find("data-kind=\"suite\""), std::string::npos);
  EXPECT_NE(page.find("data-kind=\"batch\""), std::string::npos);
  // Self-contained: Vega is inlined, nothing is fetched.
  EXPECT_NE(page.find("vega-view.min.js"), std::string::npos);
  EXPECT_EQ(page.find("<script src="), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
}

TEST(cli_report, damaged_or_foreign_json_exits_2_naming_the_file_and_writes_nothing) {
  const std::string gemm = slurp(profiles / "measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json");
  expect_rejected(write("truncated.json", gemm.substr(0, gemm.size() / 2)), "truncated JSON");
  // A binary file is one (nlohmann reads its NUL byte as the end of the input: "truncated" misled).
  expect_rejected(write("binary.json", std::string("\0\x7f" "ELF", 5) + std::string(2000, '\x01')),
                  "a binary file (a NUL byte at line 1, column 1, byte 1)");
  auto forged = nlohmann::json::parse(gemm);
  forged["recommendation"]["median_us"] = 20.0;  // 4096^3 bf16 in 20 us: 7x the H100's peak
  forged["recommendation"].erase("vs_reference");
  expect_rejected(write("forged.json", forged.dump()), "faster than the GPU's peak");
  expect_rejected(write("foreign.json", R"({"schema": "acme.widget/3", "x": 1})"), "acme.widget/3");
  expect_rejected(write("noschema.json", R"({"variants": []})"), "schema");
  expect_rejected(write("wrongtype.json", R"({"schema": "tiletune.gemm/1", "problem": {}, "variants": 7})"),
                  "variants");
  // A batch plan, a comparison and a database listing with a field of another type: named, not drawn as "?".
  auto plan = nlohmann::json::parse(slurp(profiles / "measured/h100-2026-11-23/batch/batch-gpt2.json"));
  plan["model"]["name"] = nlohmann::json::array({1});
  expect_rejected(write("plan-name.json", plan.dump()), "\"name\" is [1], not a string");
  plan = nlohmann::json::parse(slurp(profiles / "measured/h100-2026-11-23/batch/batch-gpt2.json"));
  plan["setup"]["seq_len"] = "long";
  expect_rejected(write("plan-seq.json", plan.dump()), "\"seq_len\" is \"long\", not a number");
  plan = nlohmann::json::parse(slurp(profiles / "measured/h100-2026-11-23/batch/batch-gpt2.json"));
  plan["candidates"][0]["fits"] = 1;
  expect_rejected(write("plan-fits.json", plan.dump()), "\"fits\" is 1, not true or false");
  expect_rejected(profiles / "suites/llm.json", "tiletune.suite/1");
  expect_rejected(tmp_dir() / "does-not-exist.json", "no such file");
  // One bad file among good ones: still no page.
  const fs::path out = tmp_dir() / "mixed.html";
  fs::remove(out);
  const result r = run({"report", (profiles / "baselines/h100-sxm.json").string(), write("bad.json", "{").string(),
                        "--out", out.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(fs::exists(out));
}

TEST(cli_report, a_missing_chart_library_exits_3_naming_the_file_and_package) {
  const fs::path empty = tmp_dir() / "no-vega";
  fs::create_directories(empty);
  const fs::path out = tmp_dir() / "novega.html";
  fs::remove(out);
  const result r = run({"report", (profiles / "baselines/h100-sxm.json").string(), "--vega-dir", empty.string(), "--out",
                        out.string()});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("libjs-vega"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(empty.string()), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(cli_report, bad_options_exit_2) {
  const fs::path suite = profiles / "baselines/h100-sxm.json";
  EXPECT_EQ(run({"report"}).code, 2);
  EXPECT_EQ(run({"report", suite.string(), "--goal", "0"}).code, 2);
  EXPECT_EQ(run({"report", suite.string(), "--top", "0"}).code, 2);
  EXPECT_EQ(run({"report", suite.string(), "--out", ""}).code, 2);
}

// --goal draws on suite results, --top on a gemm result's resource charts: given where no file
// takes it, the run says so (and still writes the page); where a file takes it, nothing is said.
TEST(cli_report, an_option_no_file_takes_is_said_to_have_no_effect) {
  if (!vega_installed()) GTEST_SKIP() << "libjs-vega is not installed (apt-get install libjs-vega)";
  const fs::path out = tmp_dir() / "unused.html";
  const std::string gemm = (profiles / "measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json").string();
  const std::string suite = (profiles / "baselines/h100-sxm.json").string();
  const result on_gemm = run({"report", gemm, "--goal", "0.9", "--top", "5", "--out", out.string()});
  ASSERT_EQ(on_gemm.code, 0) << on_gemm.err;
  EXPECT_NE(on_gemm.err.find("--goal 0.9 has no effect"), std::string::npos) << on_gemm.err;
  EXPECT_EQ(on_gemm.err.find("--top"), std::string::npos) << on_gemm.err;
  const result on_suite = run({"report", suite, "--goal", "0.9", "--top", "5", "--out", out.string()});
  ASSERT_EQ(on_suite.code, 0) << on_suite.err;
  EXPECT_NE(on_suite.err.find("--top 5 has no effect"), std::string::npos) << on_suite.err;
  EXPECT_EQ(on_suite.err.find("--goal"), std::string::npos) << on_suite.err;
  const result both = run({"report", gemm, suite, "--goal", "0.9", "--top", "5", "--out", out.string()});
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_EQ(both.err.find("no effect"), std::string::npos) << both.err;
  const result defaults = run({"report", gemm, "--out", out.string()});
  EXPECT_EQ(defaults.err.find("no effect"), std::string::npos) << defaults.err;
}
