#include "core/measurement.hpp"

#include <algorithm>
#include <limits>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

namespace tiletune {

namespace {
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}
}  // namespace

timing_stats summarize(std::vector<double> samples) {
  timing_stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.samples = samples.size();
  s.min_us = samples.front();
  s.median_us = percentile(samples, 0.5);
  s.p20_us = percentile(samples, 0.2);
  s.p80_us = percentile(samples, 0.8);
  s.spread = s.median_us > 0 ? (s.p80_us - s.p20_us) / s.median_us : 0;
  return s;
}

bool enough_samples(const std::vector<double>& samples, const sampling_policy& p) {
  if (samples.size() >= p.max_samples) return true;
  const double total_ms = std::accumulate(samples.begin(), samples.end(), 0.0) / 1e3;
  if (total_ms >= p.time_cap_ms && !samples.empty()) return true;
  if (samples.size() < p.min_samples) return false;
  return summarize(samples).spread <= p.target_spread;
}

error_metrics compare_outputs(const float* c, const float* r, std::size_t n) {
  error_metrics e;
  double diff2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < n; ++i) ref2 += static_cast<double>(r[i]) * r[i];
  const double scale = n ? std::sqrt(ref2 / static_cast<double>(n)) : 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(c[i])) {
      if (std::isfinite(r[i])) ++e.non_finite;
      continue;
    }
    const double d = static_cast<double>(c[i]) - r[i];
    diff2 += d * d;
    const double rel = std::abs(d) / (std::abs(static_cast<double>(r[i])) + scale + 1e-30);
    e.max_rel_error = std::max(e.max_rel_error, rel);
  }
  e.rel_frobenius = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (e.non_finite) {
    e.rel_frobenius = std::numeric_limits<double>::infinity();
    e.max_rel_error = std::numeric_limits<double>::infinity();
  }
  return e;
}

double error_bound(dtype t) {
  // Relative Frobenius error against an fp32-accumulated reference: f32 sees
  // only summation order (~1e-7); tf32 rounds inputs to 10 mantissa bits
  // (unit roundoff 4.9e-4); f16 and bf16 round inputs and the output (bf16's
  // unit roundoff is 3.9e-3).
  switch (t) {
    case dtype::f32: return 2e-6;
    case dtype::tf32: return 2e-3;
    case dtype::f16: return 1e-2;
    case dtype::bf16: return 1e-2;
  }
  return 1e-2;
}

bool passes(const error_metrics& e, dtype t) {
  return e.non_finite == 0 && std::isfinite(e.rel_frobenius) && e.rel_frobenius <= error_bound(t);
}

nlohmann::json to_json(const timing_stats& s) {
  return {{"samples", s.samples}, {"median_us", s.median_us}, {"min_us", s.min_us},
          {"p20_us", s.p20_us},   {"p80_us", s.p80_us},       {"spread", s.spread}};
}

}  // namespace tiletune
