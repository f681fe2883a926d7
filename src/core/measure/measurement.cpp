#include "core/measure/measurement.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/measure/host_data.hpp"

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

timing_stats combined_timing(const timing_stats& a, const timing_stats& b) {
  timing_stats t;
  t.samples = a.samples + b.samples;
  t.median_us = std::sqrt(a.median_us * b.median_us);
  t.min_us = std::min(a.min_us, b.min_us);
  t.p20_us = std::sqrt(a.p20_us * b.p20_us);
  t.p80_us = std::sqrt(a.p80_us * b.p80_us);
  t.spread = std::max(a.spread, b.spread);
  return t;
}

bool enough_samples(const std::vector<double>& samples, const sampling_policy& p) {
  if (samples.size() >= p.max_samples) return true;
  const double total_ms = std::accumulate(samples.begin(), samples.end(), 0.0) / 1e3;
  if (total_ms >= p.time_cap_ms && !samples.empty()) return true;
  if (samples.size() < p.min_samples) return false;
  return summarize(samples).spread <= p.target_spread;
}

namespace {
// One stretch of the comparison: the sums for [begin, end).
struct partial_errors {
  double diff2 = 0, max_rel = 0;
  std::size_t non_finite = 0;
};
template <typename Load>
partial_errors compare_range(Load&& load, const float* r, std::size_t begin, std::size_t end, double scale) {
  partial_errors e;
  for (std::size_t i = begin; i < end; ++i) {
    const float c = load(i);
    if (!std::isfinite(c)) {
      if (std::isfinite(r[i])) ++e.non_finite;
      continue;
    }
    const double d = static_cast<double>(c) - r[i];
    e.diff2 += d * d;
    e.max_rel = std::max(e.max_rel, std::abs(d) / (std::abs(static_cast<double>(r[i])) + scale + 1e-30));
  }
  return e;
}

// Fixed stretches, combined in index order: the same sums whatever the threads' timing.
template <typename Load>
error_metrics compare_in_stretches(Load&& load, const float* r, std::size_t n, const reference_summary& s,
                                   unsigned threads) {
  constexpr std::size_t stretch = std::size_t{1} << 18;
  const std::size_t stretches = (n + stretch - 1) / stretch;
  std::vector<partial_errors> parts(stretches);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t k; (k = next.fetch_add(1)) < stretches;)
      parts[k] = compare_range(load, r, k * stretch, std::min(n, (k + 1) * stretch), s.rms);
  };
  const unsigned helpers = static_cast<unsigned>(std::min<std::size_t>(std::max(threads, 1u), stretches)) - 1;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < helpers; ++t) pool.emplace_back(work);
  if (stretches) work();
  for (auto& t : pool) t.join();
  error_metrics e;
  double diff2 = 0;
  for (const auto& p : parts) {
    diff2 += p.diff2;
    e.max_rel_error = std::max(e.max_rel_error, p.max_rel);
    e.non_finite += p.non_finite;
  }
  e.rel_frobenius = s.sum_squares > 0 ? std::sqrt(diff2 / s.sum_squares) : std::sqrt(diff2);
  if (e.non_finite) {
    e.rel_frobenius = std::numeric_limits<double>::infinity();
    e.max_rel_error = std::numeric_limits<double>::infinity();
  }
  return e;
}
}  // namespace

reference_summary summarize_reference(const float* r, std::size_t n) {
  reference_summary s;
  for (std::size_t i = 0; i < n; ++i) s.sum_squares += static_cast<double>(r[i]) * r[i];
  s.rms = n ? std::sqrt(s.sum_squares / static_cast<double>(n)) : 0;
  return s;
}

error_metrics compare_outputs(const float* c, const float* r, std::size_t n) {
  return compare_in_stretches([c](std::size_t i) { return c[i]; }, r, n, summarize_reference(r, n), 1);
}

error_metrics compare_stored_output(element_type e, const unsigned char* c, const float* r, std::size_t n,
                                    const reference_summary& summary, unsigned threads) {
  return with_decoder(e, [&](auto decode) {
    return compare_in_stretches([c, decode](std::size_t i) { return decode(c, i); }, r, n, summary, threads);
  });
}

error_metrics compare_stored_output(dtype t, const unsigned char* c, const float* r, std::size_t n,
                                    const reference_summary& summary, unsigned threads) {
  return compare_stored_output(row_of(t).c, c, r, n, summary, threads);
}

double error_bound(dtype t) { return row_of(t).error_bound; }

bool passes(const error_metrics& e, dtype t) { return passes(e, error_bound(t)); }

bool passes(const error_metrics& e, double bound) {
  return e.non_finite == 0 && std::isfinite(e.rel_frobenius) && e.rel_frobenius <= bound;
}

nlohmann::json to_json(const timing_stats& s) {
  return {{"samples", s.samples}, {"median_us", s.median_us}, {"min_us", s.min_us},
          {"p20_us", s.p20_us},   {"p80_us", s.p80_us},       {"spread", s.spread}};
}

}  // namespace tiletune
