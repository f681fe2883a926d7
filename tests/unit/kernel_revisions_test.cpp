// Calibration fits the kernels this build runs: a timing measured by a build whose kernel the family
// has revised since is left out of every family figure and every ranking (kernel_revisions.hpp).
// The 2026-11-23 H100 recording timed an mma kernel 1.46x slower than today's (docs/model.md); fitted,
// it rated today's mma by the old one's speed.
#include "core/tune/calibration/kernel_revisions.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_presets.hpp"
#include "core/gemm/family.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/tile_config.hpp"
#include "core/iso_date.hpp"
#include "core/plan_mode.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"
#include "shipped_measurements.hpp"

using namespace tiletune;

namespace {
const nlohmann::json& problem_named(const std::vector<nlohmann::json>& results, const std::string& name) {
  for (const auto& r : results)
    if (gemm_problem_from_json(r.at("problem")).describe() == name) return r;
  throw std::runtime_error("no result of " + name);
}

std::string family_of(const nlohmann::json& v) { return v.value("family", v["tile"].value("family", "")); }

std::size_t marked(const nlohmann::json& r, const std::string& family) {
  std::size_t n = 0;
  for (const auto& v : r["variants"])
    if (v.value("superseded", false) && family_of(v) == family) ++n;
  return n;
}

std::size_t timed_of(const nlohmann::json& r, const std::string& family) {  // what the database keeps
  std::size_t n = 0;
  for (const auto& v : r["variants"])
    if (v.value("status", "") == "ok" && v.contains("median_us") && v["median_us"].is_number() && family_of(v) == family)
      ++n;
  return n;
}

}  // namespace

TEST(kernel_revisions, a_timing_of_a_kernel_revised_since_is_left_out_and_no_other) {
  std::vector<nlohmann::json> results = {problem_named(shipped::h100_2026_11_23(), "4096x4096x4096 bf16 nt")};
  ASSERT_GT(timed_of(results[0], "mma"), 0u);
  ASSERT_GT(timed_of(results[0], "wgmma"), 0u);
  const superseded_timings found = mark_superseded(results);
  // Measured 2026-11-23, before the mma main loop of 2026-11-28: every mma timing, no wgmma one.
  EXPECT_EQ(marked(results[0], "mma"), timed_of(results[0], "mma"));
  EXPECT_EQ(marked(results[0], "wgmma"), 0u);
  EXPECT_EQ(found.variants, timed_of(results[0], "mma"));
  EXPECT_EQ(found.by_family.at("mma"), found.variants);
  EXPECT_EQ(found.results, 0u);
  // Nothing marked is measured for calibration or ranking.
  for (const auto& v : results[0]["variants"])
    if (v.value("superseded", false)) EXPECT_FALSE(measured_medians(results[0]).contains(v["id"].get<std::string>()));
}

TEST(kernel_revisions, a_result_is_judged_by_the_kernels_its_build_ran_not_by_its_date) {
  const nlohmann::json base = problem_named(shipped::h100_2026_11_23(), "4096x4096x4096 bf16 nt");
  // This build's results say its kernels: nothing of them is old.
  std::vector<nlohmann::json> current = {base};
  current[0]["tool"]["date"] = "2026-11-23T08:43:40Z";  // (a build's own date is never before its kernels;
  current[0]["tool"]["kernels_as_of"] = kernels_as_of();  //  the field wins where both are given)
  EXPECT_EQ(mark_superseded(current).variants, 0u);
  // An older build run after the revision timed its own, older kernel.
  std::vector<nlohmann::json> late = {base};
  late[0]["tool"]["date"] = "2026-12-20T00:00:00Z";
  late[0]["tool"]["kernels_as_of"] = "2026-11-23T00:00:00Z";
  EXPECT_EQ(mark_superseded(late).variants, timed_of(base, "mma"));
  // No date at all: nothing says the result is old.
  std::vector<nlohmann::json> undated = {base};
  undated[0]["tool"].erase("date");
  EXPECT_EQ(mark_superseded(undated).variants, 0u);
}

TEST(kernel_revisions, a_mechanism_revised_since_leaves_the_familys_other_tiles_in) {
  nlohmann::json r = problem_named(shipped::h100_2026_11_23(), "4096x4096x4096 bf16 nt");
  r["tool"]["date"] = "2026-12-01T00:00:00Z";  // after the mma revision, before stream-K's cut changed
  nlohmann::json plain, streamed;
  for (const auto& v : r["variants"])
    if (v.value("status", "") == "ok" && v["median_us"].is_number() && family_of(v) == "wgmma") {
      plain = v;
      break;
    }
  ASSERT_TRUE(plain.is_object());
  streamed = plain;
  streamed["tile"]["stream_k"] = true;
  streamed["id"] = tile_from_json(streamed["tile"]).id();
  ASSERT_NE(streamed["id"], plain["id"]);
  r["variants"] = nlohmann::json::array({plain, streamed});
  std::vector<nlohmann::json> results = {r};
  const superseded_timings found = mark_superseded(results);
  EXPECT_EQ(found.variants, 1u);
  EXPECT_FALSE(results[0]["variants"][0].value("superseded", false)) << plain["id"];
  EXPECT_TRUE(results[0]["variants"][1].value("superseded", false)) << streamed["id"];
}

TEST(kernel_revisions, every_revision_is_a_date_no_later_than_the_builds_kernels) {
  const std::string newest_of_all = kernels_as_of();
  ASSERT_TRUE(iso_date(newest_of_all).empty()) << newest_of_all;
  for (const gemm_family* f : all_families()) {
    const std::string newest(f->newest_revision());
    if (!newest.empty()) {
      EXPECT_TRUE(iso_date(newest).empty()) << f->name() << ": " << newest;
      EXPECT_EQ(canonical_iso_date(newest), newest) << f->name();
    }
    EXPECT_LE(newest, newest_of_all) << f->name();
    for (dtype t : {dtype::f32, dtype::tf32, dtype::f16, dtype::bf16, dtype::e4m3, dtype::e5m2}) {
      if (!f->serves(t)) continue;
      for (const tile_config& c : f->default_space(t)) {
        const std::string r(f->revised(c));
        EXPECT_LE(r, newest) << c.id();
        if (!r.empty()) EXPECT_EQ(canonical_iso_date(r), r) << c.id();
      }
    }
  }
}

TEST(kernel_revisions, results_record_the_kernels_they_time) {
  const nlohmann::json header = result_header("tiletune.gemm/1", find_preset("h100-sxm"), plan_mode::measured, "13.0",
                                              run_info{"tiletune gemm", "2026-12-05T00:00:00Z"});
  ASSERT_TRUE(header["tool"].contains("kernels_as_of"));
  EXPECT_EQ(header["tool"]["kernels_as_of"], kernels_as_of());
  EXPECT_EQ(kernels_as_of(header), kernels_as_of());
}

TEST(kernel_revisions, the_tuning_databases_records_keep_what_says_their_kernels) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tiletune-revisions-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto shipped_results = shipped::h100_2026_11_23();
  const nlohmann::json& r = problem_named(shipped_results, "4096x4096x4096 bf16 nt");
  {
    tuning_db db(dir / "t.sqlite3");
    db.store(record_from_result(r, nlohmann::json()));
    std::vector<nlohmann::json> inputs = db.calibration_inputs("h100-sxm");
    ASSERT_EQ(inputs.size(), 1u);
    ASSERT_GT(timed_of(r, "mma"), 0u);
    EXPECT_EQ(mark_superseded(inputs).variants, timed_of(r, "mma"));
  }
  fs::remove_all(dir);
}

TEST(kernel_revisions, calibration_fits_no_family_figure_to_a_superseded_timing_and_ranks_none) {
  const auto all = shipped::h100_2026_11_23();
  std::vector<nlohmann::json> results = {problem_named(all, "4096x4096x4096 bf16 nt"),
                                         problem_named(all, "16x4096x4096 bf16 nt"),
                                         problem_named(all, "4096x4096x4096 f32 nn")};
  EXPECT_TRUE(fit_calibration(results).efficiency.contains("mma/*"));
  const superseded_timings found = mark_superseded(results);
  EXPECT_EQ(found.results, 1u);  // 16x4096x4096: mma alone timed (its wgmma tiles not timed)
  const model_calibration fitted = fit_calibration(results);
  EXPECT_FALSE(fitted.efficiency.contains("mma/*"));
  EXPECT_TRUE(fitted.efficiency.contains("wgmma/*"));
  // The problem with nothing left to rank is named and counts in no mean or median.
  const nlohmann::json report = calibration_report(results, {});
  EXPECT_EQ(report["problems"].size(), 2u);
  EXPECT_EQ(report["unranked"], nlohmann::json::array({"16x4096x4096 bf16 nt"}));
  for (const char* m : {"assumed_model", "calibrated", "calibrated_without_this_problem"})
    EXPECT_GE(report["mean"][m]["top_pick_slowdown"].get<double>(), 1.0) << m;
  EXPECT_GE(report["offline_pick"]["calibrated"]["median_slowdown"].get<double>(), 1.0);
}
