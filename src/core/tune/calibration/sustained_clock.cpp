#include "core/tune/calibration/sustained_clock.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

namespace tiletune {

namespace {

double sustained_fraction(double power_share, double intensity) {
  return intensity <= power_share ? 1.0 : std::cbrt(power_share / intensity);
}

double squared_error(const sustained_clock& m, const std::vector<clock_sample>& samples) {
  double err = 0;
  for (const auto& s : samples) {
    const double d = m.fraction(s.boost_us, s.intensity) - s.fraction;
    err += d * d;
  }
  return err;
}

}  // namespace

double sustained_clock::fraction(double boost_us, double intensity) const {
  if (!fitted() || !(boost_us > 0) || !(intensity > 0)) return 1;
  const double sustained = sustained_fraction(power_share, intensity);
  const double f = 1 - (1 - sustained) / (1 + std::pow(burst_us / boost_us, exponent));
  return std::isfinite(f) ? std::clamp(f, least_clock_fraction, 1.0) : 1.0;
}

double power_intensity(const device_spec& d, const gemm_problem& p, double boost_us) {
  const double peak = d.peak_tflops(p.type);
  if (!(boost_us > 0) || !(peak > 0)) return 0;
  const double share = p.flops() / (boost_us * 1e-6) / (peak * 1e12);
  // CUDA-core f32: its units' power against the tensor cores', as their peaks compare.
  if (p.type == dtype::f32 && d.peak_tflops_bf16 > 0) return share * std::min(1.0, peak / d.peak_tflops_bf16);
  return share;
}

double recorded_clock_fraction(const nlohmann::json& variant, const device_spec& d) {
  if (!variant.is_object() || !variant.contains("sm_clock_mhz") || !variant["sm_clock_mhz"].is_number() ||
      !(d.boost_clock_mhz > 0))
    return 1;
  const double mhz = variant["sm_clock_mhz"].get<double>();
  if (!(mhz > 0)) return 1;
  return std::min(1.0, mhz / d.boost_clock_mhz);
}

std::vector<clock_sample> clock_samples(const nlohmann::json& result, const device_spec& d, const gemm_problem& p) {
  std::vector<clock_sample> out;
  if (!result.contains("variants") || !result["variants"].is_array()) return out;
  // The finalists only (the last stage a search timed), as the tuner reports its pick: timed longest,
  // on a card the search has warmed, they ran at lower clocks than the same kernels in a brief stage.
  std::string last_stage;
  if (result.contains("search") && result["search"].is_object() && result["search"].contains("stages") &&
      result["search"]["stages"].is_array())
    for (const auto& s : result["search"]["stages"])
      if (s.is_object() && s.value("timed", 0) > 0) last_stage = s.value("name", "");
  for (const auto& v : result["variants"]) {
    if (!v.is_object() || (!last_stage.empty() && v.value("search_stage", last_stage) != last_stage)) continue;
    if (v.value("status", "") != "ok" || !v.contains("sm_clock_mhz") ||
        !v["sm_clock_mhz"].is_number() || !v.contains("median_us") || !v["median_us"].is_number())
      continue;
    const double us = v["median_us"].get<double>(), fraction = recorded_clock_fraction(v, d);
    if (!(us > 0)) continue;
    // Its time at the boost clock: the measured time less what the lower clock cost it, as if
    // all of it were the SMs' (the kernels that slow down are those busy with math).
    const double boost_us = us * fraction;
    out.push_back({boost_us, power_intensity(d, p, boost_us), fraction});
  }
  return out;
}

sustained_clock fit_sustained_clock(const std::vector<clock_sample>& all) {
  sustained_clock best;
  const auto slowed =
      std::count_if(all.begin(), all.end(), [](const clock_sample& s) { return s.fraction < slowed_clock_fraction; });
  if (static_cast<std::size_t>(slowed) < min_slowed_samples) return best;
  // A database of many records fits an even spread of its samples (the grid below holds 31 figures a
  // sample at once).
  std::vector<clock_sample> spread;
  const std::size_t stride = (all.size() + max_fit_samples - 1) / max_fit_samples;
  if (stride > 1)
    for (std::size_t i = 0; i < all.size(); i += stride) spread.push_back(all[i]);
  const std::vector<clock_sample>& samples = stride > 1 ? spread : all;
  // A coarse grid (power share and burst time on log steps), then a finer one around its best. The
  // sustained fractions by share and the weights by burst and exponent are computed once a sample.
  const std::size_t n = samples.size();
  constexpr int shares = 30, bursts = 25, exponents = 8;
  auto share_at = [](int i) { return 0.02 * std::pow(100.0, i / (shares - 1.0)); };         // 0.02..2
  auto burst_at = [](int i) { return 30.0 * std::pow(1000.0, i / (bursts - 1.0)); };        // 30 us..30 ms
  auto exponent_at = [](int i) { return 0.5 * (i + 1); };                                   // 0.5..4
  std::vector<double> drop(shares * n), weight(n);
  for (int i = 0; i < shares; ++i)
    for (std::size_t s = 0; s < n; ++s)
      drop[i * n + s] = 1 - sustained_fraction(share_at(i), samples[s].intensity);
  double best_err = 1e300;
  for (int b = 0; b < bursts; ++b)
    for (int e = 0; e < exponents; ++e) {
      for (std::size_t s = 0; s < n; ++s)
        weight[s] = 1 / (1 + std::pow(burst_at(b) / samples[s].boost_us, exponent_at(e)));
      for (int i = 0; i < shares; ++i) {
        double err = 0;
        const double* dr = &drop[i * n];
        for (std::size_t s = 0; s < n; ++s) {
          const double d = 1 - dr[s] * weight[s] - samples[s].fraction;
          err += d * d;
        }
        if (err < best_err) {
          best_err = err;
          best = {share_at(i), burst_at(b), exponent_at(e), all.size()};
        }
      }
    }
  const sustained_clock coarse = best;
  for (int i = -4; i <= 4; ++i)
    for (int b = -4; b <= 4; ++b)
      for (int e = -5; e <= 5; ++e) {
        const sustained_clock m{coarse.power_share * std::pow(1.04, i), coarse.burst_us * std::pow(1.04, b),
                                std::max(0.25, coarse.exponent + 0.05 * e), all.size()};
        if (const double err = squared_error(m, samples); err < best_err) {
          best_err = err;
          best = m;
        }
      }
  return best;
}

nlohmann::json to_json(const sustained_clock& c) {
  return {{"power_share", c.power_share}, {"burst_us", c.burst_us}, {"exponent", c.exponent}, {"samples", c.samples}};
}

sustained_clock sustained_clock_from_json(const nlohmann::json& j) {
  sustained_clock c;
  if (!j.is_object()) return c;
  auto number = [&](const char* k) {
    return j.contains(k) && j[k].is_number() && std::isfinite(j[k].get<double>()) ? j[k].get<double>() : 0.0;
  };
  c.power_share = number("power_share");
  c.burst_us = number("burst_us");
  c.exponent = number("exponent");
  c.samples = j.contains("samples") && j["samples"].is_number_unsigned() ? j["samples"].get<std::size_t>() : 0;
  if (!c.fitted()) return {};  // a figure missing, negative or not finite: no model, the boost clock
  return c;
}

}  // namespace tiletune
