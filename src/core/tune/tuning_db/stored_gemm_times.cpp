#include "core/tune/tuning_db/stored_gemm_times.hpp"

#include <algorithm>
#include <vector>

#include "core/tune/perf_model.hpp"

namespace tiletune {

std::optional<double> stored_gemm_times::find(const gemm_problem& p) const {
  const auto it = us.find(tuning_problem_key(p));
  if (it == us.end()) return std::nullopt;
  return it->second;
}

stored_gemm_times load_stored_gemm_times(const tuning_db& db, const std::string& device_model, const device_spec& d) {
  stored_gemm_times out;
  std::vector<double> ratios;
  for (const tuning_record& r : db.list(device_model)) {  // newest first
    if (!is_measured(r)) continue;
    const nlohmann::json* ref = r.result.contains("reference") ? &r.result["reference"] : nullptr;
    if (!ref || !ref->is_object() || !ref->contains("median_us") || !(*ref)["median_us"].is_number()) continue;
    const double us = (*ref)["median_us"].get<double>();
    if (!(us > 0)) continue;
    if (!out.us.emplace(tuning_problem_key(r.key.problem), us).second) continue;  // an older measurement
    const double predicted = predict_library_gemm(d, r.key.problem).time_us;
    if (predicted > 0) ratios.push_back(us / predicted);
  }
  if (!ratios.empty()) {
    std::nth_element(ratios.begin(), ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2), ratios.end());
    out.model_scale = ratios[ratios.size() / 2];
  }
  return out;
}

}  // namespace tiletune
