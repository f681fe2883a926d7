#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/tune/calibration/sustained_clock.hpp"
#include "core/tune/gemm_tuner.hpp"

namespace tiletune {

// The analytical model's per-family efficiencies fitted to measured results
// of one GPU model, in place of family_efficiency's fixed assumptions.
// Keys: "<family>/bf16" (a family on a dtype) and "<family>/*" (the family on any dtype).
struct model_calibration {
  std::string device_model;
  std::map<std::string, double> efficiency;
  std::map<std::string, double> time_scale;     // on the compute time: measured over predicted, left after the efficiency
  std::map<std::string, double> overlap_loss;   // share of the shorter of compute and memory time not hidden (0..1)
  std::map<std::string, std::size_t> variants;  // measured variants behind each figure
  std::size_t results = 0;
  // Shared by every family (terms of the GPU and the measuring protocol, not of a kernel):
  // the largest share of the DRAM peak any measured kernel drew (cuBLAS included; 0: the
  // physical model's), and by dtype the largest share of the dtype's peak any reached. No
  // kernel was measured faster than these rates allow: a calibrated prediction is never below them.
  double dram_share = 0;
  std::map<std::string, double> peak_share;
  // The clock the card sustains under its power cap (sustained_clock.hpp), fitted to the clocks
  // the measured variants recorded. The efficiencies, scales and shares above are at the boost
  // clock: each measured time was compared at the clock it ran at.
  sustained_clock clock;
  std::string source;  // where the fit came from (a database file, or the shipped profile)
  // The dtype's own figure, else the family's, else none (the assumption stands).
  std::optional<double> efficiency_for(kernel_family f, dtype t) const;
  double time_scale_for(kernel_family f, dtype t) const;    // 1 where none was fitted
  double overlap_loss_for(kernel_family f, dtype t) const;  // 0 where none was fitted
};

// The measured median of every ok variant of a tiletune.gemm/1 result, by id (not those of a kernel
// revised since: mark_superseded).
std::map<std::string, double> measured_medians(const nlohmann::json& result);
// cuBLASLt's measured times in a result: beside the recommended variant, and (with_first) its first
// timing, before the search (on a cool card).
std::vector<double> reference_times(const nlohmann::json& result, bool with_first = true);

// For each family (and family on a dtype): the efficiency (0.05..1.00) whose
// predictions order each problem's variants most like the measurement, and
// the scale on the compute time and the overlap loss (the share of the shorter of
// compute and memory time not hidden under the longer) that then fit the absolute
// times (least squares of log measured over predicted). Takes measured
// tiletune.gemm/1 results of one GPU model.
model_calibration fit_calibration(const std::vector<nlohmann::json>& measured_results);

// The least time any kernel can take on p under the calibration's shared terms
// (the flops at the fastest rate measured for the dtype, at clock_fraction of the boost clock;
// the unique bytes at the largest DRAM draw measured); 0 where it has none.
double attainable_floor_us(const model_calibration& c, const device_spec& d, const gemm_problem& p,
                           double clock_fraction = 1);

// A variant's prediction under the calibration (never below attainable_floor_us), its compute at
// the clock the calibration's sustained_clock gives a kernel of its time at the boost clock; a
// family it did not measure at its assumed efficiency, overlapping compute and memory as the
// measured family that overlaps them best. None where it measured no family (the plain model stands).
std::optional<prediction> calibrated_prediction(const model_calibration& c, const device_spec& d,
                                                const gemm_problem& p, const tile_config& config,
                                                const occupancy_estimate& occ);

// Re-predicts a plan's ok variants with the fitted efficiencies and ranks them
// again (the recommendation follows). Returns false when nothing applied.
bool apply_calibration(gemm_plan& plan, const model_calibration& c);

// Where the recommended variant is predicted below 0.97 of the boost clock (the power cap through
// a long kernel busy with math): a note of the clock and why.
void note_sustained_clock(gemm_plan& plan, const model_calibration& c);

// How well a plan's predicted order matches the measured one.
struct ranking_quality {
  std::size_t variants = 0;
  double spearman = 0;              // rank correlation of predicted and measured times
  int top_pick_measured_rank = 0;   // where the model's first choice lands when measured (1 = the best)
  // Its measured time over the best measured time, at one clock (one_clock.hpp: a finalist against
  // the fastest finalist, a variant dropped after a stage by its margin behind that stage's leader).
  double top_pick_slowdown = 0;
  int winner_predicted_rank = 0;    // where the measured best sits in the model's order
  double top_pick_predicted_us = 0;  // the model's first choice: its predicted and measured time
  double top_pick_measured_us = 0;
  std::string top_pick, best_measured;  // their variant ids
  double best_measured_us = 0;          // the fastest recorded time (at whatever clock its stage ran)
  double top_pick_time_error() const {  // signed: predicted over measured, less one
    return top_pick_measured_us > 0 ? top_pick_predicted_us / top_pick_measured_us - 1 : 0;
  }
};
// `plan` holds predictions for the variants of the measured result (plan_from_recording).
ranking_quality rank_quality(const gemm_plan& plan, const nlohmann::json& measured_result);

nlohmann::json to_json(const model_calibration& c);
model_calibration calibration_from_json(const nlohmann::json& j);  // to_json's object back
nlohmann::json to_json(const ranking_quality& q);

// The calibration and its ranking quality on the results it came from: the
// uncalibrated model, the calibrated one, and calibrated leaving each
// problem's results (every result of the same problem) out of the fit: the
// honest figure for a new problem. Beyond max_held_out_fits problems, each is
// left out with its fold of them (the report's "held_out" says how many).
// progress, where given, hears each fit begin: (fits done, fits in all). other_parts, where given,
// the calibration of other parts of the GPU's architecture: each fit (the full one and each held-out
// one) predicts with the figures it has no timing of taken from it, as a plan would
// (take_missing_figures; the report's "calibration" is the fit alone, and its "other_parts" and a
// held-out problem's "figures_from_other_parts" say what was taken).
constexpr std::size_t max_held_out_fits = 24;
nlohmann::json calibration_report(const std::vector<nlohmann::json>& measured_results,
                                  const std::function<void(std::size_t, std::size_t)>& progress = {},
                                  const model_calibration* other_parts = nullptr);

}  // namespace tiletune
