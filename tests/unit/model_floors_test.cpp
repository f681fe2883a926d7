// The offline model against the H100 measurements it ships with (issue 21):
// its floors lie below every measured time, no prediction of the default
// (calibrated) model beats the fastest kernel measured on the same problem,
// and its ranking quality did not fall with the physical fixes.
#include <cstdio>
#include <optional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_presets.hpp"
#include "core/gemm/grouped_rows.hpp"
#include "core/gemm/search_space.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/perf_model.hpp"
#include "core/tune/calibration/shipped_calibration.hpp"
#include "core/tune/search/replay_backend.hpp"
#include "shipped_measurements.hpp"

using namespace tiletune;

namespace {
std::vector<nlohmann::json> every_shipped_result() {
  auto all = shipped::h100_2026_11_23();
  for (auto& r : shipped::h100_2026_11_22()) all.push_back(std::move(r));
  return all;
}
}  // namespace

// A tile's memory time (its DRAM bytes at the attainable bandwidth, its L2
// traffic at the L2's) is a floor: no measured variant ran faster than its
// own, and no problem's unique bytes at the attainable DRAM bandwidth took
// longer than cuBLAS did. The model before this fix put 4096^3 and 8192^3 bf16
// floors (219 and 1736 us, L2 at 7.5 TB/s) above cuBLAS's 170 and 1368 us.
TEST(model_floors, lie_below_every_measured_time) {
  for (const auto& result : every_shipped_result()) {
    const gemm_plan plan = plan_from_recording(result);  // the physical model
    const auto measured = measured_medians(result);
    double best_floor = 1e300;
    for (const auto& v : plan.variants) {
      auto it = measured.find(v.config.id());
      if (it == measured.end()) continue;
      EXPECT_LE(v.predicted.memory_us, it->second)
          << plan.problem.describe() << " " << v.config.id() << ": memory floor above its measured time";
      best_floor = std::min(best_floor, v.predicted.memory_us);
    }
    for (double us : reference_times(result)) {
      // The unique bytes alone at the physical attainable DRAM bandwidth (0.9 of the peak).
      EXPECT_LE(static_cast<double>(plan.problem.operand_bytes()) / (plan.device.memory_bandwidth_gbs * 0.9e3), us)
          << plan.problem.describe();
    }
    std::printf("%-26s least tile memory floor %8.1f us, cuBLAS %8.1f us\n", plan.problem.describe().c_str(),
                best_floor, reference_times(result).front());
  }
}

// The model an offline plan for an H100 uses by default (the shipped
// calibration) never predicts a variant faster than the fastest rate any
// kernel reached on the dtype (its floor), and not more than 5% faster than
// the fastest kernel, cuBLASLt or a variant, measured on the same problem.
// (The fit once refused any prediction below the fastest on its problem; that
// held the wgmma overlap loss at 0.465 on the H200's 2026-12-04 recording and
// its held-out time error at 10%. Without it the H100's lm_head, measured at
// 0.7 of 4096^3's rate, is predicted 2% under its fastest.)
//
// Misaligned rows included: 1000x3000x777 bf16 (1554-byte rows) ran at 8% of
// the peak in cuBLASLt (58.9 us) and was predicted at 27.5 us until the model
// counted mma's element-by-element copies of such rows (perf_model.cpp).
TEST(model_floors, no_default_prediction_beats_the_fastest_measured_kernel) {
  const auto shipped = shipped_calibration_for(find_preset("h100-sxm"));
  ASSERT_TRUE(shipped);
  int misaligned = 0;
  for (const auto& result : every_shipped_result()) {
    gemm_plan plan = plan_from_recording(result);
    const auto eb = static_cast<std::int64_t>(element_bytes(plan.problem.type));
    if ((plan.problem.lda() * eb) % 16 != 0 || (plan.problem.ldb() * eb) % 16 != 0) ++misaligned;
    ASSERT_TRUE(apply_calibration(plan, *shipped)) << plan.problem.describe();
    double fastest = 1e300;
    for (double us : reference_times(result)) fastest = std::min(fastest, us);
    for (const auto& [id, us] : measured_medians(result)) fastest = std::min(fastest, us);
    double best_predicted = 1e300;
    const double floor_us = attainable_floor_us(*shipped, plan.device, plan.problem);
    for (const auto& v : plan.variants) {
      if (v.status != variant_status::ok) continue;
      EXPECT_GE(v.predicted.time_us, floor_us * (1 - 1e-9)) << plan.problem.describe() << " " << v.config.id();
      EXPECT_GE(v.predicted.time_us, 0.95 * fastest) << plan.problem.describe() << " " << v.config.id();
      best_predicted = std::min(best_predicted, v.predicted.time_us);
    }
    std::printf("%-26s best predicted %8.1f us (calibrated), fastest measured %8.1f us, cuBLAS %8.1f us\n",
                plan.problem.describe().c_str(), best_predicted, fastest, reference_times(result).front());
  }
  EXPECT_EQ(misaligned, 1);  // 1000x3000x777 bf16 nt, checked like the others
}

// Decode and skinny problems (16 and 128 rows of 4096x4096 bf16 nt): the default
// model's best prediction lies within 25% of the fastest variant measured there
// (either way: predicted over measured from 0.8 to 1.25). One time scale per family
// on the whole time, fitted mostly where mma runs at about half the model's rate,
// carried that gap into their memory time: 16x4096x4096 was predicted at 30.3 us
// (wgmma, never timed there) and its mma variants at 36.9, the best measured 21.2.
// Checked on the H200's 2026-12-04 recording, every family's kernel of this version (the H100's
// of 2026-11-23 timed an mma kernel revised since: kernel_revisions.hpp).
TEST(model_floors, decode_predictions_follow_the_measured_times) {
  const auto shipped = shipped_calibration_for(find_preset("h200"));
  ASSERT_TRUE(shipped);
  int checked = 0;
  for (const auto& result : shipped::h200_2026_12_04()) {
    gemm_plan plan = plan_from_recording(result);
    if (plan.problem.m > 128) continue;
    ASSERT_TRUE(apply_calibration(plan, *shipped)) << plan.problem.describe();
    const auto measured = measured_medians(result);
    double best_measured = 1e300, best_predicted = 1e300;
    for (const auto& [id, us] : measured) best_measured = std::min(best_measured, us);
    for (const auto& v : plan.variants)
      if (v.status == variant_status::ok) best_predicted = std::min(best_predicted, v.predicted.time_us);
    const double ratio = best_predicted / best_measured;
    EXPECT_LE(ratio, 1.25) << plan.problem.describe();
    EXPECT_GE(ratio, 0.8) << plan.problem.describe();
    // The recommendation is a variant that was timed there, or one the model cannot tell from
    // the best timed one (within 2%): no variant never timed there is preferred outright. With
    // split-K's reduction tail (perf_model.cpp), 128x4096x4096's timed mma split-K tiles
    // (28.5 us predicted, 34.1 measured) tie wgmma_128x128x64_c1_s5 (28.3, never timed there);
    // since the latency terms count the k-loop's loads alone, the refit mma's split-K tiles
    // predict 28.7 us (1.4% behind).
    double best_timed = 1e300;
    for (const auto& v : plan.variants)
      if (v.status == variant_status::ok && measured.count(v.config.id()))
        best_timed = std::min(best_timed, v.predicted.time_us);
    if (!measured.count(plan.variants.front().config.id())) {
      EXPECT_GE(plan.variants.front().predicted.time_us, 0.98 * best_timed) << plan.variants.front().config.id();
    }
    std::printf("%-26s best predicted %6.1f us (%s), best measured variant %6.1f us: %.3fx\n",
                plan.problem.describe().c_str(), best_predicted, plan.variants.front().config.id().c_str(),
                best_measured, ratio);
    ++checked;
  }
  EXPECT_EQ(checked, 2);  // 16x4096x4096 and 128x4096x4096 bf16 nt
}

// A calibrated prediction says which term set it: "floor" where the measured floor (the best
// shares of peak and DRAM the recorded kernels drew) is above the tile's own time, with floor_us
// that time; compute or memory otherwise. On the recorded problems the tiles' own terms bind; on
// a grouped GEMM of 8 experts' weights (1024 tokens, top-2: 134 MB of B for 17 GFLOP) the DRAM
// floor binds, whatever the routing's skew.
TEST(model_floors, a_prediction_set_by_the_floor_says_so) {
  const auto shipped = shipped_calibration("h100-sxm");
  ASSERT_TRUE(shipped);
  int above = 0;
  for (const auto& result : shipped::h100_2026_11_23()) {
    gemm_plan plan = plan_from_recording(result);
    ASSERT_TRUE(apply_calibration(plan, *shipped));
    for (const auto& v : plan.variants) {
      if (v.status != variant_status::ok || !shipped->efficiency_for(v.config.family, plan.problem.type)) continue;
      EXPECT_GT(v.predicted.floor_us, 0) << v.config.id();
      EXPECT_GE(v.predicted.time_us, v.predicted.floor_us) << v.config.id();
      if (v.predicted.bound == "floor") {
        EXPECT_DOUBLE_EQ(v.predicted.time_us, v.predicted.floor_us) << v.config.id();
      } else {
        EXPECT_TRUE(v.predicted.bound == "compute" || v.predicted.bound == "memory") << v.predicted.bound;
        ++above;
      }
    }
  }
  EXPECT_GT(above, 0);
  const device_spec& d = find_preset("h100-sxm");
  for (const char* routing : {"uniform", "zipf:3"}) {
    const gemm_problem p = grouped_problem(
        groups_of_routing(1024, 2, 8, parse_routing(routing), group_layout::contiguous), 4096, 2048, dtype::bf16,
        parse_layout("nt"));
    std::optional<prediction> best;
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d)) {
      if (check_constraints(c, p, d)) continue;
      const occupancy_estimate occ = estimate_occupancy(d, c.threads(), 128, c.smem_bytes(p.type, p.layout));
      const auto r = calibrated_prediction(*shipped, d, p, c, occ);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->bound == "floor", r->time_us == r->floor_us) << routing << " " << c.id();
      if (!best || r->time_us < best->time_us) best = r;
    }
    ASSERT_TRUE(best) << routing;
    EXPECT_EQ(best->bound, "floor") << routing;
  }
}

// The calibrated floor bounds the GEMM kernel; the kernels before it (K-major copies, _kc) add to it.
// Under the floor as a whole the copies had vanished: 64x14336x4096 e5m2 tt on the L40S (its copies
// 1.4 us) was predicted exactly as nt, which copies nothing.
TEST(model_floors, the_copies_before_a_gemm_add_to_its_floor) {
  const device_spec& d = find_preset("l40s");
  const auto cal = shipped_calibration_for(d);
  ASSERT_TRUE(cal.has_value());
  gemm_problem p;
  p.m = 64;
  p.n = 14336;
  p.k = 4096;
  p.type = dtype::e5m2;
  p.scaling = default_scaling(p.type);
  p.layout = parse_layout("tt");
  int copied = 0;
  for (kernel_family f : families_for(p.type))
    for (const tile_config& c : problem_search_space(f, p, d)) {
      const auto occ = estimate_occupancy(d, c.threads(), 128, c.smem_bytes(p.type, p.layout));
      const auto r = calibrated_prediction(*cal, d, p, c, occ);
      if (!r || r->prologue_us <= 0) continue;
      ++copied;
      EXPECT_GE(r->time_us, r->floor_us + r->prologue_us - 1e-9) << c.id();
    }
  EXPECT_GT(copied, 0);
}
