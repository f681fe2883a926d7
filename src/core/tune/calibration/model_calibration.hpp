#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/tune/gemm_tuner.hpp"

namespace tiletune {

// The analytical model's per-family efficiencies fitted to measured results
// of one GPU model, in place of family_efficiency's fixed assumptions.
// Keys: "mma/bf16" (a family on a dtype) and "mma/*" (the family on any dtype).
struct model_calibration {
  std::string device_model;
  std::map<std::string, double> efficiency;
  std::map<std::string, double> time_scale;     // measured over predicted time, left after the efficiency
  std::map<std::string, std::size_t> variants;  // measured variants behind each figure
  std::size_t results = 0;
  // The dtype's own figure, else the family's, else none (the assumption stands).
  std::optional<double> efficiency_for(kernel_family f, dtype t) const;
  double time_scale_for(kernel_family f, dtype t) const;  // 1 where none was fitted
};

// For each family (and family on a dtype): the efficiency (0.05..1.00) whose
// predictions order each problem's variants most like the measurement, and
// the time scale that then fits the absolute times (geometric mean of
// measured over predicted). Takes measured tiletune.gemm/1 results of one GPU model.
model_calibration fit_calibration(const std::vector<nlohmann::json>& measured_results);

// A variant's prediction under the calibration, or none where it has no
// efficiency for the variant's family (the plain model stands).
std::optional<prediction> calibrated_prediction(const model_calibration& c, const device_spec& d,
                                                const gemm_problem& p, const tile_config& config,
                                                const occupancy_estimate& occ);

// Re-predicts a plan's ok variants with the fitted efficiencies and ranks them
// again (the recommendation follows). Returns false when nothing applied.
bool apply_calibration(gemm_plan& plan, const model_calibration& c);

// How well a plan's predicted order matches the measured one.
struct ranking_quality {
  std::size_t variants = 0;
  double spearman = 0;              // rank correlation of predicted and measured times
  int top_pick_measured_rank = 0;   // where the model's first choice lands when measured (1 = the best)
  double top_pick_slowdown = 0;     // its measured time over the best measured time
  int winner_predicted_rank = 0;    // where the measured best sits in the model's order
};
// `plan` holds predictions for the variants of the measured result (plan_from_recording).
ranking_quality rank_quality(const gemm_plan& plan, const nlohmann::json& measured_result);

nlohmann::json to_json(const model_calibration& c);
nlohmann::json to_json(const ranking_quality& q);

// The calibration and its ranking quality on the results it came from: the
// uncalibrated model, the calibrated one, and calibrated leaving each
// problem's own result out of the fit (the honest figure for a new problem).
nlohmann::json calibration_report(const std::vector<nlohmann::json>& measured_results);

}  // namespace tiletune
