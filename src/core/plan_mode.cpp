#include "core/plan_mode.hpp"

#include <nlohmann/json.hpp>

namespace tiletune {

std::optional<plan_mode> plan_mode_named(std::string_view name) {
  for (plan_mode m : {plan_mode::predicted, plan_mode::measured})
    if (to_string(m) == name) return m;
  return std::nullopt;
}

namespace {
std::string_view string_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return {};
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>()) : std::string_view();
}
}  // namespace

std::optional<plan_mode> mode_of(const nlohmann::json& result) { return plan_mode_named(string_field(result, "mode")); }

std::optional<variant_status> status_of(const nlohmann::json& variant) {
  return variant_status_named(string_field(variant, "status"));
}

bool is_incorrect_variant(const nlohmann::json& variant) {
  if (status_of(variant) == variant_status::incorrect) return true;
  if (!variant.is_object()) return false;
  const auto err = variant.find("max_rel_error"), bound = variant.find("error_bound");
  return err != variant.end() && bound != variant.end() && err->is_number() && bound->is_number() &&
         err->get<double>() > bound->get<double>();
}

}  // namespace tiletune
