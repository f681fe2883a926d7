#include "core/tune/search/search_strategy.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"

namespace tiletune {

nlohmann::json to_json(const search_report& r) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : r.stages)
    stages.push_back({{"name", to_string(s.name)},
                      {"candidates", s.candidates},
                      {"timed", s.timed},
                      {"kept", s.kept},
                      {"wall_ms", s.wall_ms},
                      {"kernel_ms", s.kernel_ms}});
  return {{"strategy", r.strategy},      {"variants_eligible", r.eligible}, {"variants_timed", r.timed},
          {"variants_verified", r.verified},
          {"requests", r.requests},      {"wall_ms", r.wall_ms},            {"kernel_ms", r.kernel_ms},
          {"stages", stages},            {"stop_reason", r.stop_reason}};
}

const std::vector<std::string>& search_strategy_names() {
  static const std::vector<std::string> names = {"halving", "exhaustive", "model"};
  return names;
}

std::unique_ptr<search_strategy> make_search_strategy(std::string_view name) {
  if (name == "exhaustive") return make_exhaustive_search();
  if (name == "halving") return make_halving_search();
  if (name == "model") return make_model_search();
  throw usage_error(fmt::format("--search {} is unknown: use {}", name, fmt::join(search_strategy_names(), ", ")));
}

std::vector<search_candidate*> fastest_first(std::vector<search_candidate>& candidates, search_stage stage) {
  std::vector<search_candidate*> out;
  for (auto& c : candidates)
    if (c.runnable() && c.stage == stage) out.push_back(&c);
  std::stable_sort(out.begin(), out.end(), [](const search_candidate* a, const search_candidate* b) {
    return a->timing->timing.median_us < b->timing->timing.median_us;
  });
  return out;
}

}  // namespace tiletune
