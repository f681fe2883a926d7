#pragma once
#include <string_view>

namespace tiletune {

// Whether a plan's figures were measured on a GPU or predicted by the model
// (the results' "mode").
enum class plan_mode { predicted, measured };

constexpr std::string_view to_string(plan_mode m) { return m == plan_mode::measured ? "measured" : "predicted"; }

}  // namespace tiletune
