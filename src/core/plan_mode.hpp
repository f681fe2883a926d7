#pragma once
#include <optional>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/measure/variant_status.hpp"

namespace tiletune {

// Whether a plan's figures were measured on a GPU or predicted by the model
// (the results' "mode").
enum class plan_mode { predicted, measured };

constexpr std::string_view to_string(plan_mode m) { return m == plan_mode::measured ? "measured" : "predicted"; }
std::optional<plan_mode> plan_mode_named(std::string_view name);

// Reading results back (files, the database): a result's mode and a variant's
// status as values; none where the field is missing or names no such value.
std::optional<plan_mode> mode_of(const nlohmann::json& result);
std::optional<variant_status> status_of(const nlohmann::json& variant);
inline bool is_measured_result(const nlohmann::json& result) { return mode_of(result) == plan_mode::measured; }
inline bool is_ok_variant(const nlohmann::json& variant) { return status_of(variant) == variant_status::ok; }
// Incorrect: so marked, or a max_rel_error past the variant's own error_bound (a file edited, or
// written by a broken tiletune, that says ok beside it is incorrect all the same).
bool is_incorrect_variant(const nlohmann::json& variant);

}  // namespace tiletune
