#include "core/tune/calibration/model_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/tune/calibration/kernel_revisions.hpp"
#include "core/tune/calibration/shipped_calibration.hpp"
#include "core/tune/search/replay_backend.hpp"
#include "shipped_measurements.hpp"

using namespace tiletune;
namespace fs = std::filesystem;

namespace {
// What the shipped calibration is fitted to: run 4 of 2026-11-23 (this version's
// kernels, wgmma included), one result per problem (shipped_measurements.hpp).
std::vector<nlohmann::json> recorded_h100() { return shipped::h100_2026_11_23(); }
// What db calibrate --gpu PRESET takes a figure none of the timings measures from: the calibration of
// the architecture's other parts (the preset's own shipped file is fitted to the problems held out).
std::optional<model_calibration> other_parts_than(const char* preset) {
  return shipped_calibration_for(find_preset(preset), preset);
}
}  // namespace

TEST(model_calibration, fits_every_family_and_dtype_of_the_recorded_h100_results) {
  const auto c = fit_calibration(recorded_h100());
  EXPECT_EQ(c.device_model, "h100-sxm");
  EXPECT_EQ(c.results, 13u);
  for (const char* k : {"wgmma/bf16", "wgmma/f16", "wgmma/tf32", "wgmma/*", "mma/bf16", "mma/f16", "mma/tf32", "mma/*",
                        "simt/f32", "simt/*"}) {
    ASSERT_TRUE(c.efficiency.count(k)) << k;
    EXPECT_GT(c.efficiency.at(k), 0.04) << k;
    EXPECT_LE(c.efficiency.at(k), 1.0) << k;
    EXPECT_GT(c.time_scale.at(k), 0) << k;
    ASSERT_TRUE(c.overlap_loss.count(k)) << k;
    EXPECT_GE(c.overlap_loss.at(k), 0) << k;
    EXPECT_LE(c.overlap_loss.at(k), 1) << k;
  }
  // A dtype without its own figure falls back to the family's.
  EXPECT_EQ(c.efficiency_for(family_named("mma"), dtype::f32), c.efficiency.at("mma/*"));
  // The shared terms: what the fastest kernels drew and reached, below the datasheet.
  EXPECT_GT(c.dram_share, 0.3);
  EXPECT_LE(c.dram_share, 1.0);
  for (const char* t : {"bf16", "f16", "tf32", "f32"}) {
    ASSERT_TRUE(c.peak_share.count(t)) << t;
    EXPECT_GT(c.peak_share.at(t), 0.2) << t;
    EXPECT_LE(c.peak_share.at(t), 1.0) << t;
  }
}

// The calibrated model orders the H100's variants more like the measurement
// than the physical model; on a problem left out of its fit it is no worse
// than it beyond 0.03 of Spearman's rho.
//
// Issue 21: the physical fixes must not cost ranking quality. The model before
// them (main at ed2c767), on the same 13 problems through `tiletune db
// calibrate`, gave a mean Spearman of 0.448 physical, 0.747 calibrated and
// 0.741 held out, top-pick slowdown 1.125 / 1.122 / 1.122; before DRAM's latency
// term was added to its bandwidth term and the calibration scaled the compute
// time alone (with the fitted overlap loss), 0.723 / 0.796 / 0.788 and 1.123 for all
// three (on the 2026-11-22 results 0.647 / 0.696 / 0.667). These are floors for
// today's model: 0.733 / 0.833 / 0.812, top pick 1.071 / 1.081 / 1.075.
TEST(model_calibration, ranks_the_recorded_h100_variants_better_than_the_assumptions) {
  const auto report = calibration_report(recorded_h100());
  const auto& mean = report["mean"];
  const double assumed = mean["assumed_model"]["spearman"], fitted = mean["calibrated"]["spearman"],
               held_out = mean["calibrated_without_this_problem"]["spearman"];
  std::printf("mean Spearman: assumed %.3f, calibrated %.3f, held out %.3f\n", assumed, fitted, held_out);
  std::printf("mean top pick slowdown: assumed %.3f, calibrated %.3f, held out %.3f\n",
              mean["assumed_model"]["top_pick_slowdown"].get<double>(), mean["calibrated"]["top_pick_slowdown"].get<double>(),
              mean["calibrated_without_this_problem"]["top_pick_slowdown"].get<double>());
  EXPECT_GT(fitted, assumed);
  EXPECT_GE(held_out, assumed - 0.03);
  EXPECT_EQ(report["problems"].size(), 13u);
  // Not below the model before. The latency terms counted per block (a prediction that never
  // falls as the problem grows) moved the calibrated figures up (0.833 -> 0.846, held out 0.812
  // -> 0.825) and the physical model's down (0.733 -> 0.723).
  // Weighting the scale's fit toward each problem's contenders (0.846 -> 0.845, held out
  // 0.825 -> 0.824) cut the pick's held-out time error from 14.5% to 5.9% (median).
  // The loads' latency chain (a three-stage Hopper tile keeps one k-tile in flight,
  // model_stages_test) traded the mean over every variant (assumed 0.722 -> 0.707,
  // calibrated 0.845 -> 0.833, held out 0.824 -> 0.833) for the pick: held out, 5.4% ->
  // 2.9% slower than the best (median; H200 4.8% -> 1.8%), its mean 1.065 -> 1.061.
  // Split-K's reduction tail (the last slice reads every slice's partial tile back after the
  // k-loops) raised all three: 0.707 -> 0.718, 0.833 -> 0.843, held out 0.833 -> 0.841.
  // The simt loop's issue factor (its non-FFMA instructions take issue slots): 0.723, 0.850,
  // 0.846; its reads counted in wavefronts (quarter warps, bank groups): 0.750, 0.877, 0.873.
  // The latency terms over the k-loop's loads alone (not C's stores, which made a one-block problem
  // slower than two blocks of more columns), and no higher for a partial tile than for the whole
  // one: 0.749, 0.875, 0.871, the picks and their held-out times unchanged.
  // The mma loop's rate following the MMAs each scheduler holds (mma_family.cpp): 0.836, 0.894, 0.890;
  // a family the fit did not measure overlapping as the best measured one (f32 held out): 0.891; the
  // split-K reduction's L2 hits waited out in turn: 0.841, 0.908, 0.904.
  // A split's chain of DRAM round trips moving to the whole K's as the whole tile's blocks fill the
  // pipe, and evict-first's DRAM time at its twins' (perf_model.cpp): 0.846, 0.919, 0.919.
  EXPECT_GE(assumed, 0.845);
  EXPECT_GE(fitted, 0.918);
  EXPECT_GE(held_out, 0.918);
  // Top picks: the calibrated ones were no worse than the physical model's while both
  // were 1.123; the physical model's own picks land at 1.075 (the DRAM latency term
  // orders the decode problems' split-K variants: 128x4096x4096 1.550 -> 1.016), the
  // calibrated ones at 1.070 and 1.065 held out. Kept within those, far below 1.123.
  // With the latency chain: 1.061, 1.071 and 1.061; with split-K's tail 1.057, 1.069, 1.060; with
  // the simt issue factor the calibrated f32 pick is the measured best (1.127 -> 1.000): 1.060.
  // Clusters counted in waves of what fits at once, and the fit's rate bound without cuBLASLt's
  // first timing: 1.0576, 1.0599, 1.0599.
  // With the split's chain and evict-first's factors: 1.027, 1.010, 1.010.
  EXPECT_LE(mean["assumed_model"]["top_pick_slowdown"].get<double>(), 1.028);
  EXPECT_LE(mean["calibrated"]["top_pick_slowdown"].get<double>(), 1.011);
  EXPECT_LE(mean["calibrated_without_this_problem"]["top_pick_slowdown"].get<double>(), 1.011);
}

// The same on the 2026-11-22 results (older mma and simt kernels, not fitted by the shipped profile).
TEST(model_calibration, ranking_on_the_2026_11_22_results_did_not_fall) {
  const auto report = calibration_report(shipped::h100_2026_11_22());
  const auto& mean = report["mean"];
  std::printf("2026-11-22 mean Spearman: assumed %.3f, calibrated %.3f, held out %.3f\n",
              mean["assumed_model"]["spearman"].get<double>(), mean["calibrated"]["spearman"].get<double>(),
              mean["calibrated_without_this_problem"]["spearman"].get<double>());
  // 0.579 / 0.666 / 0.564 before issue 21's decode fixes, 0.647 / 0.696 / 0.667 before the
  // DRAM latency term, the compute-only scale and the serial copies of unaligned rows;
  // 0.651 / 0.754 / 0.726 before the latency terms were counted per block; 0.631 / 0.747 /
  // 0.721 before the loads' latency chain, which raised the calibrated two (no wgmma here);
  // 0.627 / 0.766 / 0.746 before the simt loop's issue factor and its reads in wavefronts;
  // 0.665 / 0.805 / 0.786 before the mma loop's rate followed the MMAs a scheduler holds, which
  // raised the three on the current kernels' recordings (2026-11-23 H100 0.749 / 0.878 / 0.873 to
  // 0.836 / 0.894 / 0.890) and lowered the two calibrated ones on these older kernels.
  EXPECT_GE(mean["assumed_model"]["spearman"].get<double>(), 0.715);
  EXPECT_GE(mean["calibrated"]["spearman"].get<double>(), 0.779);
  EXPECT_GE(mean["calibrated_without_this_problem"]["spearman"].get<double>(), 0.767);
}

// Leaving a problem out leaves out every result of it: two results of one
// problem give the same held-out figure as one.
TEST(model_calibration, held_out_figures_leave_out_every_result_of_the_problem) {
  auto results = recorded_h100();
  const auto once = calibration_report(results);
  results.push_back(results[0]);  // the same problem measured twice
  const auto twice = calibration_report(results);
  EXPECT_NEAR(twice["problems"][0]["calibrated_without_this_problem"]["spearman"].get<double>(),
              twice["problems"].back()["calibrated_without_this_problem"]["spearman"].get<double>(), 1e-12);
  // A leak would fit the copy and rank it (nearly) as well as the fit on everything.
  EXPECT_NEAR(twice["problems"][0]["calibrated_without_this_problem"]["spearman"].get<double>(),
              once["problems"][0]["calibrated_without_this_problem"]["spearman"].get<double>(), 0.02);
}

// profiles/calibration/h100-sxm.json is what `tiletune db calibrate` computes from the recorded results today.
// Each shipped profile is db calibrate's fit of its recording, timings of kernels revised since left
// out (kernel_revisions.hpp): both are of this build's kernels, every family fitted.
TEST(model_calibration, the_profile_in_the_repo_matches_the_code) {
  struct profile {
    const char* file;
    const char* preset;
    std::vector<nlohmann::json> results;
  };
  for (profile p : {profile{"profiles/calibration/h100-sxm.json", "h100-sxm", shipped::h100_2026_12_05()},
                    profile{"profiles/calibration/h200.json", "h200", shipped::h200_2026_12_04()}}) {
    std::ifstream in(fs::path(TILETUNE_SOURCE_DIR) / p.file);
    ASSERT_TRUE(in) << p.file << " is missing";
    const auto stored = nlohmann::json::parse(in);
    const superseded_timings old = mark_superseded(p.results);
    EXPECT_EQ(stored["superseded"]["variants"].get<std::size_t>(), old.variants) << p.file;
    // As db calibrate --gpu reports it: a figure no timing measures from the architecture's other parts.
    const auto other = other_parts_than(p.preset);
    const auto now = calibration_report(p.results, {}, other ? &*other : nullptr);
    EXPECT_EQ(stored["other_parts"], now["other_parts"]) << p.file;
    EXPECT_EQ(stored["calibration"]["efficiency"], now["calibration"]["efficiency"]) << p.file;
    EXPECT_NEAR(stored["calibration"]["dram_share"].get<double>(), now["calibration"]["dram_share"].get<double>(), 1e-12);
    for (const char* m : {"time_scale", "overlap_loss"}) {
      EXPECT_EQ(stored["calibration"][m].size(), now["calibration"][m].size()) << p.file << " " << m;
      for (const auto& [k, v] : now["calibration"][m].items())
        EXPECT_NEAR(stored["calibration"][m].value(k, -1.0), v.get<double>(), 1e-9) << p.file << " " << m << " " << k;
    }
    EXPECT_EQ(stored["calibration"]["peak_share"].size(), now["calibration"]["peak_share"].size());
    for (const char* m : {"assumed_model", "calibrated", "calibrated_without_this_problem"})
      EXPECT_NEAR(stored["mean"][m]["spearman"].get<double>(), now["mean"][m]["spearman"].get<double>(), 1e-9)
          << p.file << " " << m;
  }
  // The 2026-12-05 recording timed this build's mma kernel (the 2026-11-23 one's was revised since).
  std::ifstream in(fs::path(TILETUNE_SOURCE_DIR) / "profiles/calibration/h100-sxm.json");
  const auto h100 = nlohmann::json::parse(in);
  EXPECT_TRUE(h100["calibration"]["efficiency"].contains("mma/*"));
  EXPECT_EQ(h100["superseded"]["variants"].get<std::size_t>(), 0u);
}

TEST(model_calibration, applying_it_re_predicts_and_re_ranks_a_plan) {
  const auto results = recorded_h100();
  const auto c = fit_calibration(results);
  gemm_plan plan = plan_from_recording(results[0]);
  const double before = plan.variants[0].predicted.time_us;
  ASSERT_TRUE(apply_calibration(plan, c));
  EXPECT_NE(plan.variants[0].predicted.time_us, before);
  // Best first; equal predictions (within variant_ranking's 1e-6) in either order.
  for (std::size_t i = 1; i < plan.variants.size(); ++i)
    EXPECT_LE(plan.variants[i - 1].predicted.time_us, plan.variants[i].predicted.time_us * (1 + 1e-6));
  EXPECT_EQ(plan.variants[0].rank, 1);
  EXPECT_FALSE(apply_calibration(plan, model_calibration{}));
}

// A family the calibration did not measure is predicted at its assumed efficiency, overlapping
// compute and memory as the measured family of its kind that overlaps them best (the FFMA family's
// warps load their own operands, as the warp-level MMA family's do: not the producer family's
// loss), at the calibration's clock; a calibration that measured no family predicts nothing.
TEST(model_calibration, an_unmeasured_family_overlaps_as_the_best_measured_one_of_its_kind) {
  std::vector<nlohmann::json> without_f32, f32;
  // The 2026-12-05 recording: every family's kernel of this build.
  for (const auto& r : shipped::h100_2026_12_05()) (plan_from_recording(r).problem.type == dtype::f32 ? f32 : without_f32).push_back(r);
  ASSERT_EQ(f32.size(), 1u);
  const auto c = fit_calibration(without_f32);
  ASSERT_FALSE(c.efficiency_for(family_named("simt"), dtype::f32));
  const kernel_family simt = family_named("simt");
  ASSERT_FALSE(simt->producer_warps_load());
  double least = 1e9, least_of_any = 1e9;
  for (const auto& [key, loss] : c.overlap_loss) {
    if (!key.ends_with("/*")) continue;
    least_of_any = std::min(least_of_any, loss);
    if (!family_named(key.substr(0, key.size() - 2))->producer_warps_load()) least = std::min(least, loss);
  }
  ASSERT_GT(least, 0);
  ASSERT_LT(least, 1e9);
  EXPECT_GT(least, least_of_any);  // the producer family hides its memory time better
  const gemm_plan plan = plan_from_recording(f32[0]);
  const auto measured = measured_medians(f32[0]);
  int checked = 0;
  for (const auto& v : plan.variants) {
    if (v.status != variant_status::ok || !measured.count(v.config.id())) continue;
    const auto r = calibrated_prediction(c, plan.device, plan.problem, v.config, v.occupancy);
    ASSERT_TRUE(r) << v.config.id();
    const prediction plain = predict(plan.device, plan.problem, v.config, v.occupancy);
    // The plain terms, compute and memory joined at the least overlap loss (the clock
    // of a 3 ms FFMA loop stays at the boost: f32's power draw is a fraction of bf16's).
    const double compute = pipelined_compute_us(plain.compute_us, plain.latency_us);
    const double longer = std::max(compute, plain.memory_us), shorter = std::min(compute, plain.memory_us);
    const double norm = 1 / std::max(least, 0.02);  // their (1 / loss)-norm, loss >= 0.02 (model_calibration.cpp)
    const double expected =
        longer * std::pow(1 + std::pow(shorter / longer, norm), 1 / norm) + (plain.time_us - longer);
    EXPECT_NEAR(r->time_us, expected, expected * 1e-9) << v.config.id() << " at " << r->clock_fraction;
    EXPECT_GT(r->time_us, plain.time_us) << v.config.id();
    ++checked;
  }
  EXPECT_GT(checked, 10);
  EXPECT_FALSE(calibrated_prediction(model_calibration{}, plan.device, plan.problem, plan.variants[0].config,
                                     plan.variants[0].occupancy));
}

// The calibration built into the binary (the default for an offline H100 plan) is the profile's.
TEST(model_calibration, the_built_in_calibration_is_the_profile) {
  std::ifstream in(fs::path(TILETUNE_SOURCE_DIR) / "profiles/calibration/h100-sxm.json");
  ASSERT_TRUE(in);
  const auto stored = nlohmann::json::parse(in)["calibration"];
  const auto built_in = shipped_calibration("h100-sxm");
  ASSERT_TRUE(built_in);
  auto j = to_json(*built_in);
  EXPECT_EQ(j["efficiency"], stored["efficiency"]);
  EXPECT_EQ(j["variants"], stored["variants"]);
  EXPECT_EQ(j["results"], stored["results"]);
  for (const auto& [k, v] : stored["time_scale"].items()) EXPECT_NEAR(j["time_scale"][k].get<double>(), v.get<double>(), 1e-12) << k;
  ASSERT_EQ(j["overlap_loss"].size(), stored["overlap_loss"].size());
  for (const auto& [k, v] : stored["overlap_loss"].items()) EXPECT_NEAR(j["overlap_loss"][k].get<double>(), v.get<double>(), 1e-12) << k;
  for (const auto& [k, v] : stored["peak_share"].items()) EXPECT_NEAR(j["peak_share"][k].get<double>(), v.get<double>(), 1e-12) << k;
  EXPECT_NEAR(j["dram_share"].get<double>(), stored["dram_share"].get<double>(), 1e-12);
  EXPECT_FALSE(built_in->source.empty());
  // Other GPU models have no shipped measurements: the physical model stands.
  EXPECT_FALSE(shipped_calibration("a100-sxm-80gb"));
}

// Issue 39's figures of the offline pick, leave-one-out (fit on the other
// problems, predict the one left out): how far its predicted time is from what
// it measured, and how much slower it measured than the best measured variant.
// The goals are a median within 5% (worst 12%) and a pick within 2% of the best
// (worst 8%); the figures below are today's, kept as ceilings, and
// docs/model.md states them. The pick is the model's first among the variants
// each search measured (a halving search times part of the space).
namespace {
// One result per problem, the first by file name, as for the H100: 4096^3 bf16 nt was recorded twice
// (4096x4096x4096-bf16-nt and q_proj; counted twice before, 14 "problems"), and the mma-family-alone
// run is a partial one. A tuning database keeps one record per problem too, so `db import` of these
// 13 files and `db calibrate --gpu h200` print the same figures.
std::vector<nlohmann::json> recorded_h200_results() {
  return shipped::read_results(fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h200-2026-11-26/gemm", true);
}
// The H200's 2026-12-04 benchmark suite, searched with the card warmed before each stage and its
// candidates timed in two mirrored passes (each stage at one clock; the finalists in the power cap).
std::vector<nlohmann::json> recorded_h200_one_clock_results() {
  return shipped::read_results(fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h200-2026-12-04-3/call1/gemm", true);
}

void print_offline_pick(const char* what, const nlohmann::json& report) {
  for (const char* m : {"assumed_model", "calibrated", "calibrated_without_this_problem"}) {
    const auto& p = report["offline_pick"][m];
    std::printf("%s %-32s time error median %5.1f%% worst %5.1f%%, slowdown median %5.1f%% worst %5.1f%%\n", what, m,
                100 * p["median_time_error"].get<double>(), 100 * p["worst_time_error"].get<double>(),
                100 * (p["median_slowdown"].get<double>() - 1), 100 * (p["worst_slowdown"].get<double>() - 1));
  }
}
}  // namespace

TEST(model_calibration, offline_pick_figures_left_out_on_the_recorded_gpus) {
  // As db calibrate reports them: a figure none of the other problems measured (a family or dtype the
  // held-out problem has alone) from the architecture's other parts, as a plan takes it.
  const auto h100_others = other_parts_than("h100-sxm"), h200_others = other_parts_than("h200");
  ASSERT_TRUE(h100_others && h200_others);
  const auto h100_results = recorded_h100();
  const auto h100 = calibration_report(h100_results, {}, &*h100_others);
  const auto h200_results = recorded_h200_results();
  ASSERT_EQ(h200_results.size(), 13u);
  const auto h200 = calibration_report(h200_results, {}, &*h200_others);
  const auto one_clock_results = recorded_h200_one_clock_results();
  ASSERT_EQ(one_clock_results.size(), 13u);
  const auto h200_one_clock = calibration_report(one_clock_results, {}, &*h200_others);
  // The same with the timings of kernels revised since left out (db calibrate without --as-recorded):
  // the model's figures for the kernels this build runs. Both 2026-11 recordings timed an mma kernel
  // since made faster; on the H100 three problems were timed only with it and rank nothing.
  auto current = [](std::vector<nlohmann::json> results) {
    mark_superseded(results);
    return results;
  };
  const auto h100_now = calibration_report(current(h100_results), {}, &*h100_others);
  const auto h200_now = calibration_report(current(h200_results), {}, &*h200_others);
  ASSERT_EQ(h100_now["unranked"].size(), 3u);
  print_offline_pick("H100", h100);
  print_offline_pick("H200", h200);
  print_offline_pick("H200 2026-12-04", h200_one_clock);
  print_offline_pick("H100 today's kernels", h100_now);
  print_offline_pick("H200 today's kernels", h200_now);
  // The H100's 2026-12-05 recording, every family's kernel of this build (what h100-sxm.json fits).
  const auto h100_dec05 = calibration_report(shipped::h100_2026_12_05(), {}, &*h100_others);
  print_offline_pick("H100 2026-12-05", h100_dec05);
  // Today's held-out figures as ceilings, and on the H100 with today's kernels the goals (history
  // below; the last paragraph is today's): the time error's median was 14.5% / 14.8% before the scale's
  // fit weighted each problem's contenders; 6.0% / 7.8% with slowdowns of 5.5% / 4.9% before the
  // loads' latency chain, which put three-stage Hopper tiles (one k-tile in flight) behind their
  // four-stage twins; the H200's 6.6% before split-K's reduction tail.
  // The worst are the problems a family or dtype has alone (f32 nn: simt's fit left out, 32.5%
  // fast until the simt loop's issue factor, 12.5% since) and the 128-row decode pick
  // (predicted 24-25% fast, the worst today).
  struct ceiling {
    const nlohmann::json* report;
    double median_error, worst_error, median_slowdown, worst_slowdown;
  };
  // Since clusters count in waves of what fits at once, the fit's rate bound leaves out cuBLASLt's first
  // (cool) timing, and the fit no longer refuses a prediction under the fastest kernel of its problem:
  // H100 7.3% (worst 25.3%), pick 2.9% (19.2%); H200 7.5% (24.0%), 1.6% (16.4%); the H200's one-clock
  // recording of 2026-12-04 (the pick compared at one clock, one_clock.hpp): 9.5% (15.1%), 3.5% (24.6%)
  // until a stream-K range's k-tiles cost what they measured (wgmma_stream_k_tile_cost: three of its
  // picks were stream-K variants 19-25% behind), 4.5% (16.4%), 1.2% (22.0%) since, and 3.2% (16.4%),
  // 1.2% (14.1%) with the variants the floor ties ranked by their own time: both medians within the
  // goals on that recording, which alone has stream-K variants (the worst time was the 6 ms lm_head,
  // timed at 1,365-1,470 MHz; the worst pick the 16-row decode's, 1.14x its best). With the clock the
  // power cap sustains (sustained_clock.hpp; each measured time fitted at the clock it ran at):
  // H100 7.7% (24.2%), 2.4% (19.2%); H200 8.8% (24.2%), 0.5% (10.2%); 2026-12-04 4.3% (12.7%), 1.2%
  // (14.1%): the lm_head 5% off on all three, the picks as good or better, the medians of the
  // 2026-11 recordings' time 0.4-1.3 points worse (their finalists' clocks scatter: 4096x4096x14336's
  // two best on the H100 at 1,440 and 1,965 MHz). With the mma loop's rate following the MMAs each
  // scheduler holds (mma_family.cpp): H100 7.1% (20.4%), 2.1% (19.2%); H200 5.7% (22.1%), 0.5%
  // (10.2%); 2026-12-04 unchanged (its picks and worst are wgmma and simt). Worst now: the 128-row
  // decode (mma, 20-22% fast on the 2026-11 recordings; 16-18% with split-K's reduction waits) and
  // f32 (simt alone, 12.5%). With a family
  // the fit did not measure overlapping as the best measured one (model_calibration.cpp), f32 held
  // out is 10.0%, 11.8% and 10.1% fast: 2026-12-04's worst time 12.7% -> 10.1% (the pick: 14.1%).
  // The split-K reduction's L2 hits waited out in turn (perf_model.cpp): H100 6.3% (17.8%), 2.1% (17.4%);
  // H200 6.8% (16.2%), 0.5% (7.5%: within the worst pick's goal on that recording).
  // The recommended variant compared at the time the search ranked it by, not at the pair's after
  // the search (one_clock.cpp): the H100's pick 0.0% (11.2%: was 4096x4096x14336's 17.4%, the search's
  // own fastest finalist timed again at 1,440 MHz), the H200's 0.0% (7.5%), 2026-12-04 1.1% (14.1%).
  // Compute and memory joined as a norm (model_calibration.cpp, overlapped), and an unmeasured family
  // overlapping as the measured one of its kind: H100 5.5% (12.3%), H200 6.0% (15.0%), 2026-12-04
  // 4.6% (13.1%: its 128-row pick, a split in pairs of a cluster, 10.0% -> 13.1% fast; its large
  // tiles' memory time is now hidden whole), picks 0.0% (11.2%), 0.0% (7.5%), 0.9% (14.1%).
  // With split-K inside a cluster paying the leader's reduction (perf_model.cpp): 2026-12-04 4.5%
  // (8.7%: the 128-row pick 13.1% -> 8.7% fast), the 2026-11 recordings unchanged (no such variant).
  // A figure no other problem measured taken from the architecture's other part, not assumed
  // (take_missing_figures): H100 5.5% (12.3%), H200 5.7% (15.0%), 2026-12-04 2.8% (8.7%), picks
  // unchanged; f32 held out 0.3% off on the H100 (was 12.3% fast), tf32 2.9% (5.4%), f16 0.4% (2.1%).
  // With today's kernels only, the H100 meets all four goals over the 10 problems they timed: 3.8%
  // (10.0%), picks 0.0% (0.0%); its worst as recorded are the old mma kernel's 128-row time (12.3%
  // fast) and 16-row pick (11.2%). The H200's 2026-11-26 misses the time's (5.7%, 13.0%: the long
  // kernels predicted 9-13% slow, recorded before the search timed each stage at one clock), its
  // 2026-12-04 recording the worst pick's (14.1%: the 16-row decode's stream-K pick, tied at the DRAM
  // floor with a whole tile that measured faster).
  // With the H100's calibration refitted to its 2026-12-05 recording (every family of this build; the
  // H200's held-out f16 and f32 problems take those figures from it): H200 2026-11-26 6.0% (15.0%),
  // 2026-12-04 3.1% (8.7%), today's kernels 6.3% (13.0%), picks unchanged. That recording itself: 3.2%
  // (12.8%), picks 1.1% (24.3%): its decode picks are split-K tiles (128 rows: k2, predicted 12.8%
  // fast, 1.24x the whole tile; 16 rows: 1.12x), as on the H200's 2026-12-04 (issue 39).
  // A split's chain of DRAM round trips moving to the whole K's as the whole tile's blocks fill the
  // DRAM pipe, and evict-first's DRAM time at 0.8 of its twin's whole, 0.9 split (perf_model.cpp;
  // model_twins_test): the decode picks are the whole evict-first tiles they measured best. The H100's
  // 2026-12-05 recording meets all four goals: 3.1% (11.8%), picks 0.0% (4.8%); the H200's 2026-12-04
  // 4.1% (16.5%: its 16-row decode held out, predicted at the DRAM floor the other problems' share
  // sets, 15.3 us for 13.2), 0.2% (2.5%); with today's kernels the 2026-11 recordings unchanged. As
  // recorded, their worst time is the mma kernel revised since at 128 and 16 rows (a k4 split
  // predicted 13.1% fast on the H100, a k8 17.6% slow on the H200): H100 5.0% (13.1%), 0.0%
  // (11.2%); H200 6.6% (17.6%), 0.0% (7.5%).
  for (const ceiling& c : {ceiling{&h100, 0.051, 0.132, 1.001, 1.113}, ceiling{&h200, 0.067, 0.177, 1.001, 1.076},
                           ceiling{&h200_one_clock, 0.042, 0.166, 1.003, 1.026},
                           ceiling{&h200_now, 0.063, 0.131, 1.001, 1.052},
                           // Issue 39's goals themselves.
                           ceiling{&h100_dec05, 0.05, 0.12, 1.02, 1.08}, ceiling{&h100_now, 0.05, 0.12, 1.02, 1.08}}) {
    const auto& p = (*c.report)["offline_pick"]["calibrated_without_this_problem"];
    EXPECT_LE(p["median_time_error"].get<double>(), c.median_error);
    EXPECT_LE(p["worst_time_error"].get<double>(), c.worst_error);
    EXPECT_LE(p["median_slowdown"].get<double>(), c.median_slowdown);
    EXPECT_LE(p["worst_slowdown"].get<double>(), c.worst_slowdown);
    // The figures are the problems' own: the worst is one of them, the median between.
    std::vector<double> errors;
    for (const auto& q : (*c.report)["problems"])
      errors.push_back(std::abs(q["calibrated_without_this_problem"]["top_pick_time_error"].get<double>()));
    EXPECT_DOUBLE_EQ(*std::max_element(errors.begin(), errors.end()), p["worst_time_error"].get<double>());
    EXPECT_LE(p["median_time_error"].get<double>(), p["worst_time_error"].get<double>());
  }
  if (std::getenv("TILETUNE_PRINT_PICKS"))
    for (const auto* r : {&h100, &h200, &h200_one_clock, &h100_now, &h200_now, &h100_dec05})
      for (const auto& p : (*r)["problems"])
        std::printf("%-28s a %+6.1f%% c %+6.1f%% l %+6.1f%%  slow %.3f %.3f %.3f  %s\n", p["problem"].get<std::string>().c_str(),
                    100 * p["assumed_model"]["top_pick_time_error"].get<double>(),
                    100 * p["calibrated"]["top_pick_time_error"].get<double>(),
                    100 * p["calibrated_without_this_problem"]["top_pick_time_error"].get<double>(),
                    p["assumed_model"]["top_pick_slowdown"].get<double>(), p["calibrated"]["top_pick_slowdown"].get<double>(),
                    p["calibrated_without_this_problem"]["top_pick_slowdown"].get<double>(),
                    (p["calibrated_without_this_problem"]["top_pick"].get<std::string>() + " / " +
                     p["calibrated_without_this_problem"]["best_measured"].get<std::string>()).c_str());
}

// Held out, a problem whose family or dtype no other problem measured is predicted with the figures
// of another part of its architecture, as a plan would be, not with the assumed ones: the H100's
// f32 4096^3 (simt's only problem) with the H200's simt figures. The report says what it took; its
// calibration is the fit's alone.
TEST(model_calibration, a_held_out_problem_takes_what_no_other_measured_from_another_part) {
  auto results = recorded_h100();
  mark_superseded(results);
  const auto others = other_parts_than("h100-sxm");
  ASSERT_TRUE(others);
  const auto report = calibration_report(results, {}, &*others);
  std::size_t f32 = results.size();
  for (std::size_t i = 0; i < results.size(); ++i)
    if (plan_from_recording(results[i]).problem.type == dtype::f32) f32 = i;
  ASSERT_LT(f32, results.size());
  const std::string name = plan_from_recording(results[f32]).problem.describe();
  const nlohmann::json* held = nullptr;
  for (const auto& p : report["problems"])
    if (p["problem"] == name) held = &p["calibrated_without_this_problem"];
  ASSERT_TRUE(held);
  const auto taken = held->value("figures_from_other_parts", std::vector<std::string>{});
  EXPECT_NE(std::find(taken.begin(), taken.end(), "simt/f32"), taken.end());
  // Its prediction is the other problems' fit completed with the other part's simt figures.
  std::vector<nlohmann::json> rest = results;
  rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(f32));
  model_calibration fit = fit_calibration(rest);
  ASSERT_FALSE(fit.efficiency_for(family_named("simt"), dtype::f32));
  const model_calibration assumed = fit;
  take_missing_figures(fit, *others);
  ASSERT_EQ(fit.efficiency_for(family_named("simt"), dtype::f32), others->efficiency_for(family_named("simt"), dtype::f32));
  auto pick_us = [&](const model_calibration& c) {
    gemm_plan plan = plan_from_recording(results[f32]);
    apply_calibration(plan, c);
    return rank_quality(plan, results[f32]).top_pick_predicted_us;
  };
  EXPECT_DOUBLE_EQ((*held)["top_pick_predicted_us"].get<double>(), pick_us(fit));
  EXPECT_GT(std::abs(pick_us(assumed) / pick_us(fit) - 1), 0.05);  // the assumption differs
  // The calibration written is the fit's: the mma figures every fit took (its timings are of a kernel
  // revised since) are listed, not stored.
  EXPECT_FALSE(report["calibration"]["efficiency"].contains("mma/*"));
  const auto by_fit = report["other_parts"]["figures_taken_by_the_fit"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(by_fit.begin(), by_fit.end(), "mma/*"), by_fit.end());
  EXPECT_EQ(report["other_parts"]["source"], others->source);
}

// The floor under issue 39's pick goal, from the H100's two back-to-back runs of the same 8192^3
// bf16 search (profiles/measured/h100-2026-11-23/gemm/before-pair-run{1,2}-*): the same variant
// measured twice differs by a median 1.7%, and an oracle that picks each run's measured best
// lands 7.2% and 1.9% slower than the best of the other run. A model cannot pick closer than the
// measurements repeat: docs/model.md states these figures beside the goal.
TEST(model_calibration, the_recorded_runs_repeat_no_closer_than_the_pick_goal) {
  const fs::path dir = fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm";
  auto medians = [&](const char* run) {
    std::ifstream in(dir / (std::string("before-pair-") + run + "-8192x8192x8192-bf16-nt.json"));
    EXPECT_TRUE(in) << run;
    return measured_medians(nlohmann::json::parse(in));
  };
  const auto one = medians("run1"), two = medians("run2");
  std::vector<double> ratios;
  for (const auto& [id, us] : one)
    if (two.count(id)) ratios.push_back(two.at(id) / us);
  ASSERT_GE(ratios.size(), 50u);
  std::sort(ratios.begin(), ratios.end());
  const double median_ratio = ratios[ratios.size() / 2];
  std::vector<double> spread;
  for (double r : ratios) spread.push_back(std::abs(r / median_ratio - 1));
  std::sort(spread.begin(), spread.end());
  auto best = [](const std::map<std::string, double>& m) {
    return std::min_element(m.begin(), m.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  };
  const double one_in_two = two.at(best(one)->first) / best(two)->second;
  const double two_in_one = one.at(best(two)->first) / best(one)->second;
  std::printf("8192^3 bf16, two runs: %zu variants, same-variant spread median %.1f%% (worst %.1f%%); each run's best "
              "in the other: %.1f%% and %.1f%% slower than its best\n",
              ratios.size(), 100 * spread[spread.size() / 2], 100 * spread.back(), 100 * (one_in_two - 1),
              100 * (two_in_one - 1));
  EXPECT_GT(spread[spread.size() / 2], 0.01);
  EXPECT_GT(std::max(one_in_two, two_in_one), 1.05);
}

// A database of many problems is fitted max_held_out_fits + 1 times, not once a problem (3,000
// records took over a day): beyond 24 problems each is left out with its fold, the problems
// dealt round-robin in the order of their names, and a problem alone in its fold is held out
// exactly as before.
TEST(model_calibration, many_problems_are_held_out_in_folds) {
  std::vector<nlohmann::json> results = recorded_h100();
  for (auto r : recorded_h100()) {  // 13 problems more: 16 rows more each (the times as recorded)
    r["problem"]["m"] = r["problem"]["m"].get<std::int64_t>() + 16;
    results.push_back(r);
  }
  std::vector<std::pair<std::size_t, std::size_t>> heard;
  const auto report =
      calibration_report(results, [&](std::size_t done, std::size_t fits) { heard.emplace_back(done, fits); });
  EXPECT_EQ(report["held_out"]["problems"], 26);
  EXPECT_EQ(report["held_out"]["folds"], max_held_out_fits);
  ASSERT_EQ(heard.size(), max_held_out_fits + 1);
  EXPECT_EQ(heard.back(), std::make_pair(max_held_out_fits, max_held_out_fits + 1));
  std::vector<std::string> names;
  for (const auto& r : results) names.push_back(gemm_problem_from_json(r["problem"]).describe());
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  // Folds 0 and 1 hold two problems (the 1st and 25th, the 2nd and 26th names); the rest one.
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::size_t at = std::find(sorted.begin(), sorted.end(), names[i]) - sorted.begin();
    std::vector<nlohmann::json> others;
    for (std::size_t k = 0; k < results.size(); ++k) {
      const std::size_t other_at = std::find(sorted.begin(), sorted.end(), names[k]) - sorted.begin();
      if (other_at % max_held_out_fits != at % max_held_out_fits) others.push_back(results[k]);
    }
    EXPECT_EQ(others.size(), at % max_held_out_fits < 2 ? 24u : 25u) << names[i];
    gemm_plan held_out = plan_from_recording(results[i]);
    apply_calibration(held_out, fit_calibration(others));
    EXPECT_EQ(report["problems"][i]["calibrated_without_this_problem"], to_json(rank_quality(held_out, results[i])))
        << names[i];
  }
  // Up to 24 problems, each is its own fold.
  EXPECT_EQ(calibration_report(recorded_h100())["held_out"]["folds"], 13);
}
