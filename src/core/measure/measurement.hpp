#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/gemm/problem.hpp"

namespace tiletune {

// Summary of repeated kernel timings.
struct timing_stats {
  std::size_t samples = 0;
  double median_us = 0, min_us = 0, p20_us = 0, p80_us = 0;
  double spread = 0;  // (p80 - p20) / median: the relative noise
};
// Linear-interpolated percentiles of the samples (any order); empty gives zeros.
timing_stats summarize(std::vector<double> samples_us);
// Two timings of one kernel as one: the geometric mean of their medians and percentiles, all
// their samples, the least minimum, the wider spread. Timed in mirrored orders (A B ... B A), a
// clock that falls at a steady rate between them slows every kernel alike in the means.
timing_stats combined_timing(const timing_stats& a, const timing_stats& b);

// When to stop sampling: at least min_samples, then until the spread is under
// target_spread, or max_samples, or time_cap_ms of kernel time.
struct sampling_policy {
  std::size_t warmup = 3;
  std::size_t min_samples = 10;
  std::size_t max_samples = 200;
  double target_spread = 0.01;
  double time_cap_ms = 2000;
  // Warm-up launches go on for at least this long (host clock, ms): a card worked into its
  // power cap before a stage's finalists, so that none is timed on the cool clock the
  // others lose (search_strategy.cpp, time_in_two_passes).
  double warmup_ms = 0;
};
bool enough_samples(const std::vector<double>& samples_us, const sampling_policy& p);

// How far a result is from the reference.
struct error_metrics {
  double rel_frobenius = 0;  // ||C - R||_F / ||R||_F
  double max_rel_error = 0;  // max |c - r| / (|r| + scale), scale = RMS of R
  std::size_t non_finite = 0;  // NaN or Inf where the reference is finite
};
error_metrics compare_outputs(const float* result, const float* reference, std::size_t count);

// What every comparison against one reference shares: its sum of squares and RMS.
struct reference_summary {
  double sum_squares = 0;
  double rms = 0;
};
reference_summary summarize_reference(const float* reference, std::size_t count);

// compare_outputs for C as the GPU stored it (elements of type e, or the
// dtype's C type), decoded on the fly and split over `threads` threads: a worker
// verifies a 4096^2 C in milliseconds instead of ~200 ms (which made
// verification most of a cold tune).
error_metrics compare_stored_output(element_type e, const unsigned char* result, const float* reference,
                                    std::size_t count, const reference_summary& summary, unsigned threads);
error_metrics compare_stored_output(dtype t, const unsigned char* result, const float* reference, std::size_t count,
                                    const reference_summary& summary, unsigned threads);

// The largest relative Frobenius error a correct variant of a dtype shows.
double error_bound(dtype t);
bool passes(const error_metrics& e, dtype t);
// The same against a bound of the variant's own (gemm_family::error_bound).
bool passes(const error_metrics& e, double bound);

nlohmann::json to_json(const timing_stats& s);

}  // namespace tiletune
