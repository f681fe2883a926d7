// `tiletune report` pages in a real browser: Chromium headless loads each page
// and dumps the DOM after Vega has drawn (Vega's SVG renderer puts every mark
// in the DOM). A page fails on any script or console error (the page writes
// them into #tiletune-errors), on charts left undrawn, and on a chart with
// fewer drawn marks than rows of data. Label `browser`; skipped without chromium.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace {

const fs::path profiles = fs::path(TILETUNE_SOURCE_DIR) / "profiles";

std::string find_chromium() {
  if (const char* env = std::getenv("TILETUNE_CHROMIUM"); env && *env) return env;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (std::system(fmt::format("command -v {} >/dev/null 2>&1", name).c_str()) == 0) return name;
  return "";
}

// The DOM after the page's scripts ran (--virtual-time-budget lets Vega's async drawing finish first).
std::string rendered_dom(const std::string& chromium, const fs::path& page) {
  const fs::path dom = tmp_dir() / (page.stem().string() + ".dom.html");
  const fs::path profile = tmp_dir() / "chromium-profile";
  const std::string cmd = fmt::format(
      "timeout 120 {} --headless --disable-gpu --no-sandbox --no-first-run --user-data-dir='{}' "
      "--virtual-time-budget=15000 --dump-dom 'file://{}' > '{}' 2>/dev/null",
      chromium, profile.string(), fs::absolute(page).string(), dom.string());
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return slurp(dom);
}

// Drawn items of the data marks (each a path, line or text inside a "role-mark" group) between FROM and TO.
int drawn_marks(const std::string& dom, std::size_t from, std::size_t to) {
  int n = 0;
  for (std::size_t p = dom.find("role-mark\"", from); p != std::string::npos && p < to; p = dom.find("role-mark\"", p + 1)) {
    const std::size_t open = dom.find('>', p), close = dom.find("</g>", p);
    if (open == std::string::npos || close == std::string::npos) break;
    const std::string items = dom.substr(open + 1, close - open - 1);
    for (const char* tag : {"<path", "<line", "<text"})
      for (std::size_t q = items.find(tag); q != std::string::npos; q = items.find(tag, q + 1)) ++n;
  }
  return n;
}

void expect_page_draws(const std::string& chromium, const std::vector<std::string>& inputs, const std::string& name) {
  const fs::path page = tmp_dir() / (name + ".html");
  std::vector<std::string> args{"report"};
  args.insert(args.end(), inputs.begin(), inputs.end());
  args.insert(args.end(), {"--out", page.string()});
  const result r = run(args);
  if (r.code == 3) GTEST_SKIP() << "the chart library is not installed: " << r.err;
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string dom = rendered_dom(chromium, page);
  ASSERT_FALSE(dom.empty()) << "chromium gave no DOM for " << page;

  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex(R"(<pre id="tiletune-errors"[^>]*>([^<]*)</pre>)"))) << name;
  EXPECT_EQ(m[1].str(), "") << name << ": the page reported errors";
  ASSERT_TRUE(std::regex_search(dom, m, std::regex(R"tt(id="tiletune-status" data-state="([a-z]+)" data-charts="(\d+)")tt")))
      << name;
  EXPECT_EQ(m[1].str(), "done") << name << ": not every chart finished drawing";
  const int charts = std::stoi(m[2].str());
  EXPECT_GT(charts, 0) << name;

  // Each chart: drawn, with at least one mark per row of its data.
  const std::regex chart_re(R"tt(<div class="chart-view" id="(chart-\d+)" data-chart="([^"]*)" data-rows="(\d+)"[^>]*>)tt");
  int seen = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), chart_re); it != std::sregex_iterator(); ++it) {
    ++seen;
    const std::size_t from = it->position(0);
    const std::size_t next = dom.find("<div class=\"chart-view\"", from + 1);
    const int rows = std::stoi((*it)[3].str());
    const int marks = drawn_marks(dom, from, next == std::string::npos ? dom.size() : next);
    EXPECT_GE(marks, rows) << name << " " << (*it)[2].str() << ": " << marks << " mark(s) for " << rows << " row(s)";
    EXPECT_GT(marks, 0) << name << " " << (*it)[2].str() << " is empty";
    EXPECT_NE(it->str().find("data-drawn=\"yes\""), std::string::npos) << name << " " << (*it)[2].str() << " not drawn";
  }
  EXPECT_EQ(seen, charts) << name;
}

class report_browser : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    if (chromium_.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium): browser test skipped";
  }
  std::string chromium_;
};

TEST_F(report_browser, gemm_measured) {
  expect_page_draws(chromium_, {(profiles / "measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json").string()}, "gemm");
}

TEST_F(report_browser, gemm_predicted_and_old_format) {
  expect_page_draws(chromium_,
                    {(profiles / "measured/h100-2026-11-23/verify/verify-bf16-nt-127x129x264.json").string(),
                     (profiles / "measured/h100-2026-11-22/gemm/4096x4096x4096-f32-nn.json").string()},
                    "gemm-predicted");
}

TEST_F(report_browser, suite) {
  expect_page_draws(chromium_, {(profiles / "baselines/h100-sxm.json").string()}, "suite");
}

TEST_F(report_browser, batch) {
  expect_page_draws(chromium_,
                    {(profiles / "measured/h100-2026-11-23/batch/batch-gpt2.json").string(),
                     (profiles / "measured/h100-2026-11-22/batch/batch-llama-lora.json").string()},
                    "batch");
}

TEST_F(report_browser, compare) {
  const fs::path cmp = tmp_dir() / "cmp.json";
  const result r = run({"compare", (profiles / "measured/h100-2026-11-22/gemm/4096x4096x4096-bf16-nt.json").string(),
                        (profiles / "measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json").string(), "--out",
                        cmp.string()});
  ASSERT_TRUE(r.code == 0 || r.code == 1) << r.err;
  expect_page_draws(chromium_, {cmp.string()}, "compare");
}

// Issue 39: a suite whose names open an HTML comment and a script drew no charts.
TEST_F(report_browser, names_that_look_like_markup_stay_text_and_the_charts_draw) {
  const std::string name = "a <!-- <script> b";
  const fs::path suite = tmp_dir() / "markup-suite.json";
  std::ofstream(suite) << nlohmann::json{{"schema", "tiletune.suite/1"},
                                         {"name", name + " suite"},
                                         {"problems",
                                          {{{"name", name}, {"m", 256}, {"n", 256}, {"k", 256}, {"dtype", "f16"}},
                                           {{"name", "<b>bold</b> & \"quoted\""}, {"m", 512}, {"n", 128},
                                            {"k", 64}, {"dtype", "f32"}}}}}
                              .dump(2);
  const fs::path result_file = tmp_dir() / "markup-result.json";
  const result r = run({"gemm", "--gpu", "l4", "--dry-run", "--suite", suite.string(), "--out", result_file.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  expect_page_draws(chromium_, {result_file.string()}, "markup");
  // The names are drawn as text: the page's DOM has no element they would have made.
  const std::string dom = slurp(tmp_dir() / "markup.dom.html");
  EXPECT_EQ(dom.find("<b>bold</b>"), std::string::npos);
  EXPECT_NE(dom.find("a &lt;!-- &lt;script&gt; b"), std::string::npos);
}

// The test itself: a page with a broken chart must fail it.
TEST_F(report_browser, a_script_error_is_caught) {
  const fs::path page = tmp_dir() / "broken.html";
  const result r = run({"report", (profiles / "baselines/h100-sxm.json").string(), "--out", page.string()});
  if (r.code == 3) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.code, 0) << r.err;
  std::string html = slurp(page);
  const std::string marker = "\"marks\":[";
  const auto at = html.find(marker);
  ASSERT_NE(at, std::string::npos);
  html.insert(at + marker.size(), R"({"type":"rect","from":{"data":"no-such-data"}},)");
  std::ofstream(page) << html;
  const std::string dom = rendered_dom(chromium_, page);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex(R"(<pre id="tiletune-errors"[^>]*>([^<]*)</pre>)")));
  EXPECT_NE(m[1].str(), "") << "a chart with a broken spec went unnoticed";
}

}  // namespace
