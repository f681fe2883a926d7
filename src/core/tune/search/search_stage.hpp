#pragma once
#include <string_view>

namespace tiletune {

// The steps of a measured search, in the order a variant goes deeper: the
// model's cut (times nothing), a brief look, a longer one, the run's full budget.
// not_timed: the variant was never run. The JSON names each by to_string.
enum class search_stage { not_timed, model, brief, longer, full };

constexpr std::string_view to_string(search_stage s) {
  switch (s) {
    case search_stage::model: return "model";
    case search_stage::brief: return "brief";
    case search_stage::longer: return "longer";
    case search_stage::full: return "full";
    case search_stage::not_timed: break;
  }
  return "not_timed";
}

// How deeply a stage times a variant: deeper timings rank first.
constexpr int timing_depth(search_stage s) {
  switch (s) {
    case search_stage::brief: return 1;
    case search_stage::longer: return 2;
    case search_stage::full: return 3;
    default: return 0;
  }
}

}  // namespace tiletune
