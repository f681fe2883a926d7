// calibration_report (model_calibration.hpp): the fit and its ranking quality, as
// `tiletune db calibrate` writes it.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gemm/family.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/calibration/shipped_calibration.hpp"
#include "core/tune/search/replay_backend.hpp"

namespace tiletune {

nlohmann::json calibration_report(const std::vector<nlohmann::json>& results,
                                  const std::function<void(std::size_t, std::size_t)>& progress,
                                  const model_calibration* other_parts) {
  nlohmann::json problems = nlohmann::json::array(), unranked = nlohmann::json::array();
  struct sums {
    double spearman = 0, slowdown = 0, top_rank = 0, ranked = 0;
    std::vector<double> time_errors, slowdowns;  // per result: |predicted/measured - 1| of the pick, its slowdown
  } base, fitted, held_out;
  auto add = [](sums& s, const ranking_quality& q) {
    s.ranked += 1;
    s.spearman += q.spearman;
    s.slowdown += q.top_pick_slowdown;
    s.top_rank += q.top_pick_measured_rank;
    s.time_errors.push_back(std::abs(q.top_pick_time_error()));
    s.slowdowns.push_back(q.top_pick_slowdown);
  };
  // Each problem is held out with its fold: one problem a fold up to max_held_out_fits problems,
  // beyond that the problems (in order of their names) dealt round-robin into that many folds, so
  // that a database of thousands of records is fitted max_held_out_fits + 1 times, not once a record.
  std::vector<std::string> problem_of;
  for (const auto& r : results) problem_of.push_back(gemm_problem_from_json(r.at("problem")).describe());
  std::vector<std::string> names = problem_of;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  const std::size_t folds = std::min(names.size(), max_held_out_fits);
  std::vector<std::size_t> fold_of(results.size());
  for (std::size_t i = 0; i < results.size(); ++i)
    fold_of[i] = static_cast<std::size_t>(std::lower_bound(names.begin(), names.end(), problem_of[i]) - names.begin()) %
                 std::max<std::size_t>(folds, 1);
  if (progress) progress(0, folds + 1);
  const model_calibration all = fit_calibration(results);
  // Predictions as a plan makes them: a figure no result measured from another part (other_parts).
  auto completed = [&](model_calibration c, std::vector<std::string>& taken) {
    if (other_parts) taken = take_missing_figures(c, *other_parts);
    return c;
  };
  std::vector<std::string> taken_by_all;
  const model_calibration all_completed = completed(all, taken_by_all);
  std::vector<model_calibration> without_fold(folds);
  std::vector<std::vector<std::string>> taken_without_fold(folds);
  for (std::size_t f = 0; f < folds; ++f) {
    if (progress) progress(f + 1, folds + 1);
    std::vector<nlohmann::json> others;  // without any result of the fold's problems
    for (std::size_t k = 0; k < results.size(); ++k)
      if (fold_of[k] != f) others.push_back(results[k]);
    without_fold[f] = completed(fit_calibration(others), taken_without_fold[f]);
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    const gemm_plan assumed = plan_from_recording(results[i]);
    gemm_plan calibrated = assumed;
    apply_calibration(calibrated, all_completed);
    gemm_plan loo = assumed;
    apply_calibration(loo, without_fold[fold_of[i]]);
    const auto qa = rank_quality(assumed, results[i]), qc = rank_quality(calibrated, results[i]),
               ql = rank_quality(loo, results[i]);
    if (qa.variants == 0) {  // nothing of it to rank: named, counted in no figure
      unranked.push_back(assumed.problem.describe());
      continue;
    }
    add(base, qa);
    add(fitted, qc);
    add(held_out, ql);
    nlohmann::json held = to_json(ql);
    if (!taken_without_fold[fold_of[i]].empty()) held["figures_from_other_parts"] = taken_without_fold[fold_of[i]];
    problems.push_back({{"problem", assumed.problem.describe()},
                        {"assumed_model", to_json(qa)},
                        {"calibrated", to_json(qc)},
                        {"calibrated_without_this_problem", held}});
  }
  auto mean = [&](const sums& s) {
    const double n = std::max(1.0, s.ranked);
    return nlohmann::json{{"spearman", s.spearman / n},
                          {"top_pick_slowdown", s.slowdown / n},
                          {"top_pick_measured_rank", s.top_rank / n}};
  };
  // The offline pick (the model's first choice among the measured variants):
  // how far its predicted time is from its measured one, and how much slower it
  // measured than the best, as a median and the worst over the results.
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
  };
  auto worst = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
  auto pick = [&](const sums& s) {
    return nlohmann::json{{"median_time_error", median(s.time_errors)},
                          {"worst_time_error", worst(s.time_errors)},
                          {"median_slowdown", median(s.slowdowns)},
                          {"worst_slowdown", worst(s.slowdowns)}};
  };
  nlohmann::json assumed_eff = nlohmann::json::object();
  if (!results.empty()) {
    const auto d = plan_from_recording(results[0]).device;
    for (const gemm_family* f : all_families())
      if (f->efficiency_from_measurements())
        assumed_eff[std::string(f->name())] = family_efficiency(kernel_family{f}, d.compute_capability);
  }
  nlohmann::json report = {
      {"schema", "tiletune.calibration/2"},
      {"calibration", to_json(all)},
      {"assumed_efficiency", assumed_eff},
      {"mean",
       {{"assumed_model", mean(base)},
        {"calibrated", mean(fitted)},
        {"calibrated_without_this_problem", mean(held_out)}}},
      {"offline_pick",
       {{"assumed_model", pick(base)},
        {"calibrated", pick(fitted)},
        {"calibrated_without_this_problem", pick(held_out)}}},
      {"held_out", {{"problems", names.size()}, {"folds", folds}}},
      {"problems", problems},
      // Results with no variant to rank (none timed ok, or only kernels revised since: mark_superseded).
      {"unranked", unranked}};
  if (other_parts)
    report["other_parts"] = {{"source", other_parts->source}, {"figures_taken_by_the_fit", taken_by_all}};
  return report;
}

}  // namespace tiletune
