// docs/model.md's table of the offline pick left out (issue 39's figures) is what a user gets from
// `tiletune db import` of the recorded results, one per problem, and `tiletune db calibrate`: the
// summary line's four figures are the table's row. Before, the H200's row counted 4096^3 bf16 nt
// twice (5.8% median) where the database, one record per problem, gave 7.2%.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "cli_json.hpp"

using namespace tiletune_test;

namespace {
// The recorded results of `dir`, one per problem as the table takes them: not the partial
// mma-family-alone (mma-only) run, not the second 4096^3 bf16 nt (q_proj), not the H100's superseded pairs.
// `repeat`: another file of a problem measured twice (the 2026-12-04 suite's q_proj, 08.json, is 4096^3).
std::vector<std::string> one_per_problem(const char* dir, const char* repeat) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(TILETUNE_SOURCE_DIR) / dir)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".json" || name.find("alone") != std::string::npos ||
        name.rfind("q_proj", 0) == 0 || name.rfind("before-pair", 0) == 0 || name.rfind("mma-only", 0) == 0 ||
        name == repeat)
      continue;
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// "off by 7.2% (median; worst 24.0%), measured 1.6% slower than the best (median; worst 16.4%)"
// as the row's "7.2% median, 24.0% worst | 1.6% median, 16.4% worst".
std::string row_of(const std::string& summary) {
  const std::regex line(R"(off by ([0-9.]+%) \(median; worst ([0-9.]+%)\), measured ([0-9.]+%) slower than the best )"
                        R"((?:at one clock )?\(median; worst ([0-9.]+%)\))");
  std::smatch m;
  if (!std::regex_search(summary, m, line)) return "no summary line in: " + summary;
  return m[1].str() + " median, " + m[2].str() + " worst | " + m[3].str() + " median, " + m[4].str() + " worst |";
}
}  // namespace

TEST(calibrate_docs, the_tables_figures_are_what_db_calibrate_prints) {
  const std::string docs = slurp(fs::path(TILETUNE_SOURCE_DIR) / "docs/model.md");
  struct recording {
    const char* dir;
    const char* gpu;
    const char* row;
    const char* repeat;
    const char* current_row;  // the row of db calibrate without --as-recorded: this build's kernels only
  };
  for (const recording& r :
       {recording{"profiles/measured/h100-2026-11-23/gemm", "h100-sxm", "| H100, 13 problems (2026-11-23) | ", "",
                  "| H100, the 10 problems timed with this build's kernels (2026-11-23) | "},
        recording{"profiles/measured/h200-2026-11-26/gemm", "h200", "| H200, 13 problems (2026-11-26) | ", "",
                  "| H200, the 10 problems timed with this build's kernels (2026-11-26) | "},
        recording{"profiles/measured/h200-2026-12-04-3/call1/gemm", "h200",
                  "| H200, 13 problems (2026-12-04, one clock a stage) | ", "08.json", ""},
        recording{"profiles/measured/h100-2026-12-05/call1/gemm", "h100-sxm", "| H100, 13 problems (2026-12-05) | ",
                  "08.json", ""}}) {
    const fs::path db = tmp_dir() / (std::string("calibrate-docs-") + r.gpu + ".sqlite3");
    fs::remove(db);
    std::vector<std::string> args = {"db", "import", "--db", db.string()};
    const std::vector<std::string> files = one_per_problem(r.dir, r.repeat);
    ASSERT_EQ(files.size(), 13u) << r.dir;
    args.insert(args.end(), files.begin(), files.end());
    const result imported = run(args);
    ASSERT_EQ(imported.code, 0) << imported.err;
    const result calibrated = run({"db", "calibrate", "--gpu", r.gpu, "--db", db.string(), "--as-recorded"});
    ASSERT_EQ(calibrated.code, 0) << calibrated.err;
    // Without --as-recorded, this build's kernels only (kernel_revisions.hpp): the 2026-11 recordings'
    // mma timings (a kernel revised on 2026-11-28) fit no figure and rank nothing; the 2026-12-04 one
    // timed today's kernels, and reads the same either way.
    const fs::path out = tmp_dir() / "calibrate-docs-current.json";
    const result current = run({"db", "calibrate", "--gpu", r.gpu, "--db", db.string(), "--out", out.string()});
    ASSERT_EQ(current.code, 0) << current.err;
    if (*r.current_row) {
      const std::string now = std::string(r.current_row) + row_of(current.out);
      EXPECT_NE(docs.find(now), std::string::npos) << "docs/model.md lacks the row: " << now;
    } else {
      EXPECT_EQ(row_of(current.out), row_of(calibrated.out));
    }
    if (std::string(r.dir).find("2026-11-23") != std::string::npos) {
      const auto report = nlohmann::json::parse(slurp(out));
      const int left_out = report["superseded"]["by_family"].value("mma", 0);
      EXPECT_GT(left_out, 0);
      EXPECT_EQ(report["superseded"]["variants"], left_out);
      EXPECT_NE(current.out.find(fmt::format("left out the timings of {} (mma {}) variants", left_out, left_out)),
                std::string::npos)
          << current.out;
      EXPECT_FALSE(report["calibration"]["efficiency"].contains("mma/*"));
      EXPECT_TRUE(report["calibration"]["efficiency"].contains("wgmma/*"));
      EXPECT_EQ(calibrated.out.find("left out the timings"), std::string::npos) << calibrated.out;
      // What no timing here measures comes from the architecture's other part, as a plan takes it, and
      // the summary says so: mma in every fit, simt's only problem's figures when it is held out.
      EXPECT_EQ(report["other_parts"]["figures_taken_by_the_fit"][0], "mma/*");
      EXPECT_NE(current.out.find("from other parts of the architecture (profiles/calibration/h200.json (built in)"),
                std::string::npos)
          << current.out;
      EXPECT_NE(current.out.find("mma (*, bf16, f16, tf32) in every fit; simt (*, f32) with 4096x4096x4096 f32 nn "
                                 "held out"),
                std::string::npos)
          << current.out;
    }
    const std::string row = std::string(r.row) + row_of(calibrated.out);
    EXPECT_NE(docs.find(row), std::string::npos) << "docs/model.md lacks the row: " << row;
    // Every recording had finalists in the power cap: the fit says what it found.
    EXPECT_NE(calibrated.out.find("sustained clock (docs/model.md): fitted to "), std::string::npos) << calibrated.out;
  }
}
