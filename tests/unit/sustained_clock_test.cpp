#include "core/tune/calibration/sustained_clock.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/search/replay_backend.hpp"
#include "shipped_measurements.hpp"

using namespace tiletune;

namespace {
// The H200's 2026-12-04 suite: every stage at one clock, the finalists in the power cap.
std::vector<nlohmann::json> one_clock_results() {
  return shipped::read_results(std::filesystem::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h200-2026-12-04-3/call1/gemm",
                               true);
}
double clock_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

TEST(sustained_clock, short_kernels_run_at_the_boost_and_long_busy_ones_at_the_cap) {
  const sustained_clock m{0.3, 800, 2, 100};
  EXPECT_GT(m.fraction(50, 0.9), 0.99);
  EXPECT_NEAR(m.fraction(1e6, 0.9), std::cbrt(0.3 / 0.9), 1e-3);
  EXPECT_NEAR(m.fraction(800, 0.9), 1 - (1 - std::cbrt(0.3 / 0.9)) / 2, 1e-9);  // half way at burst_us
  EXPECT_EQ(m.fraction(1e6, 0.25), 1.0);  // under the power the cap sustains at the boost clock
  double last = 1;
  for (double us = 10; us < 1e6; us *= 1.5) {  // longer or busier: never a higher clock
    const double f = m.fraction(us, 0.8);
    EXPECT_LE(f, last);
    EXPECT_LE(m.fraction(us, 0.95), f);
    last = f;
  }
  EXPECT_EQ(sustained_clock{}.fraction(1e6, 1.0), 1.0);  // no model: the boost clock
}

TEST(sustained_clock, cuda_core_f32_works_the_card_as_a_share_of_the_tensor_cores) {
  const device_spec& d = find_preset("h100-sxm");
  gemm_problem p;
  p.m = p.n = p.k = 4096;
  p.type = dtype::bf16;
  const double at_peak_us = p.flops() / (d.peak_tflops(p.type) * 1e12) * 1e6;
  EXPECT_NEAR(power_intensity(d, p, at_peak_us), 1.0, 1e-9);
  EXPECT_NEAR(power_intensity(d, p, 2 * at_peak_us), 0.5, 1e-9);
  p.type = dtype::f32;
  const double f32_peak_us = p.flops() / (d.peak_tflops(p.type) * 1e12) * 1e6;
  EXPECT_NEAR(power_intensity(d, p, f32_peak_us), d.peak_tflops_f32 / d.peak_tflops_bf16, 1e-9);
  p.type = dtype::tf32;  // tensor cores at their tf32 peak: as busy as at bf16's
  EXPECT_NEAR(power_intensity(d, p, p.flops() / (d.peak_tflops(p.type) * 1e12) * 1e6), 1.0, 1e-9);
}

TEST(sustained_clock, the_fit_finds_the_model_its_samples_came_from) {
  const sustained_clock truth{0.3, 900, 2.0, 0};
  std::vector<clock_sample> samples;
  for (double us = 20; us < 20000; us *= 1.25)
    for (double intensity = 0.1; intensity <= 1.0; intensity += 0.1)
      samples.push_back({us, intensity, truth.fraction(us, intensity)});
  const sustained_clock fit = fit_sustained_clock(samples);
  ASSERT_TRUE(fit.fitted());
  EXPECT_EQ(fit.samples, samples.size());
  EXPECT_NEAR(fit.power_share, 0.3, 0.03);
  EXPECT_NEAR(fit.burst_us, 900, 90);
  EXPECT_NEAR(fit.exponent, 2.0, 0.2);
  double worst = 0;
  for (const auto& s : samples) worst = std::max(worst, std::abs(fit.fraction(s.boost_us, s.intensity) - s.fraction));
  EXPECT_LT(worst, 0.01);
  // A database's many samples: an even spread of them fits the same model.
  std::vector<clock_sample> many;
  while (many.size() < 3 * max_fit_samples) many.insert(many.end(), samples.begin(), samples.end());
  const sustained_clock from_many = fit_sustained_clock(many);
  EXPECT_EQ(from_many.samples, many.size());
  EXPECT_NEAR(from_many.power_share, 0.3, 0.03);
  EXPECT_NEAR(from_many.burst_us, 900, 90);
  // Kernels that never slowed (or too few that did) fit no model: the boost clock stands.
  std::vector<clock_sample> cool;
  for (const auto& s : samples)
    if (s.fraction > 0.98 || cool.size() < 40) cool.push_back(s.fraction > 0.98 ? s : clock_sample{s.boost_us, s.intensity, 1.0});
  cool.push_back({5000, 0.9, 0.7});
  EXPECT_FALSE(fit_sustained_clock(cool).fitted());
  EXPECT_EQ(sustained_clock_from_json(to_json(fit)).burst_us, fit.burst_us);
}

// The finalists of the H200's suite: long bf16 kernels at 60% of the peak and more ran at 0.69-0.74 of
// the boost clock, kernels under 100 us at the boost, f32 (CUDA cores) at the boost however long.
TEST(sustained_clock, the_recorded_finalists_clocks_are_what_the_fit_gives) {
  std::vector<clock_sample> all, long_busy, short_ones, f32;
  for (const auto& r : one_clock_results()) {
    const gemm_plan plan = plan_from_recording(r);
    for (const auto& s : clock_samples(r, plan.device, plan.problem)) {
      all.push_back(s);
      if (plan.problem.type == dtype::f32) f32.push_back(s);
      else if (s.boost_us > 3000 && s.intensity > 0.6) long_busy.push_back(s);
      else if (s.boost_us < 100) short_ones.push_back(s);
    }
  }
  ASSERT_GE(long_busy.size(), 10u);
  ASSERT_GE(short_ones.size(), 10u);
  ASSERT_GE(f32.size(), 3u);
  const sustained_clock fit = fit_sustained_clock(all);
  ASSERT_TRUE(fit.fitted());
  auto fractions = [&](const std::vector<clock_sample>& v, bool predicted) {
    std::vector<double> out;
    for (const auto& s : v) out.push_back(predicted ? fit.fraction(s.boost_us, s.intensity) : s.fraction);
    return out;
  };
  std::printf("fit: power share %.3f, burst %.0f us, exponent %.2f; long busy bf16 ran at %.3f, predicted %.3f\n",
              fit.power_share, fit.burst_us, fit.exponent, clock_median(fractions(long_busy, false)),
              clock_median(fractions(long_busy, true)));
  EXPECT_LT(clock_median(fractions(long_busy, false)), 0.76);
  EXPECT_NEAR(clock_median(fractions(long_busy, true)), clock_median(fractions(long_busy, false)), 0.03);
  EXPECT_GT(clock_median(fractions(short_ones, true)), 0.98);
  for (double f : fractions(f32, true)) EXPECT_EQ(f, 1.0);
  double err = 0, at_boost = 0;
  for (const auto& s : all) {
    err += std::pow(fit.fraction(s.boost_us, s.intensity) - s.fraction, 2);
    at_boost += std::pow(1 - s.fraction, 2);
  }
  EXPECT_LT(err, at_boost / 4);  // a quarter of the squared error of the boost clock throughout
}

// The 6 ms lm_head GEMM left out of the fit: predicted at the clock it ran at (1,425 MHz), its pick's time
// within 9% (-5.4% before compute and memory joined as a norm, 2026-12-05: -8.4%, the large tiles'
// memory time now hidden whole); the same fit without the clock model put it 1980/1425 fast.
TEST(sustained_clock, the_long_lm_head_left_out_is_predicted_at_the_clock_it_ran) {
  auto results = one_clock_results();
  const auto it = std::find_if(results.begin(), results.end(),
                               [](const nlohmann::json& r) { return r["problem"]["n"].get<int>() == 128256; });
  ASSERT_NE(it, results.end());
  const nlohmann::json lm_head = *it;
  results.erase(it);
  const model_calibration c = fit_calibration(results);
  ASSERT_TRUE(c.clock.fitted());
  auto time_error = [&](const model_calibration& cal) {
    gemm_plan plan = plan_from_recording(lm_head);
    EXPECT_TRUE(apply_calibration(plan, cal));
    return rank_quality(plan, lm_head).top_pick_time_error();
  };
  model_calibration without = c;
  without.clock = {};
  const double with_clock = time_error(c), at_boost = time_error(without);
  std::printf("lm_head left out: time error %+.1f%% at the sustained clock, %+.1f%% at the boost\n", 100 * with_clock,
              100 * at_boost);
  EXPECT_LT(std::abs(with_clock), 0.09);
  EXPECT_LT(at_boost, -0.2);
  gemm_plan plan = plan_from_recording(lm_head);
  apply_calibration(plan, c);
  ASSERT_TRUE(plan.recommended);
  const double mhz = plan.variants[*plan.recommended].predicted.clock_fraction * plan.device.boost_clock_mhz;
  EXPECT_GT(mhz, 1300);
  EXPECT_LT(mhz, 1550);
  note_sustained_clock(plan, c);
  ASSERT_FALSE(plan.notes.empty());
  EXPECT_NE(plan.notes.back().find("not the 1980 MHz boost clock"), std::string::npos) << plan.notes.back();
}

// A calibration file's figures that are missing, negative, not numbers or absurd give the boost clock
// or a clock no lower than least_clock_fraction, never a crawl or a NaN.
TEST(sustained_clock, a_damaged_figure_predicts_no_crawl) {
  for (const char* text : {R"({"power_share": -1, "burst_us": 800, "exponent": 2, "samples": 3})",
                           R"({"power_share": 0.3, "burst_us": "x", "exponent": 2, "samples": 3})",
                           R"({"power_share": 0.3, "burst_us": 800, "samples": 3})", R"([1, 2])",
                           R"({"power_share": 0.3, "burst_us": 800, "exponent": -2, "samples": -3})"}) {
    const sustained_clock c = sustained_clock_from_json(nlohmann::json::parse(text));
    EXPECT_FALSE(c.fitted()) << text;
    EXPECT_EQ(c.fraction(1e6, 1.0), 1.0) << text;
  }
  const sustained_clock tiny = sustained_clock_from_json(
      nlohmann::json::parse(R"({"power_share": 1e-300, "burst_us": 1e-300, "exponent": 1e300, "samples": 3})"));
  for (double us : {1e-9, 1.0, 1e3, 1e12})
    for (double u : {1e-9, 0.5, 1e9}) {
      const double f = tiny.fraction(us, u);
      EXPECT_GE(f, least_clock_fraction) << us << " " << u;
      EXPECT_LE(f, 1.0) << us << " " << u;
    }
}
