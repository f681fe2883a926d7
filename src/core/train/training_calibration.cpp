#include "core/train/training_calibration.hpp"

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/data/embedded_profiles.hpp"

namespace tiletune {
namespace {

constexpr const char* file_name = "batch_calibration.json";

// constants.<field>.value of the profile, or an error that names both.
const nlohmann::json& value_of(const nlohmann::json& constants, const char* field) {
  const auto it = constants.find(field);
  if (it == constants.end() || !it->is_object() || !it->contains("value") || !it->at("value").is_number())
    throw std::runtime_error(std::string("profiles/") + file_name + ": constants." + field +
                             ".value is missing or not a number");
  return it->at("value");
}

}  // namespace

batch_calibration parse_batch_calibration(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  if (!j.contains("constants") || !j.at("constants").is_object())
    throw std::runtime_error(std::string("profiles/") + file_name + ": constants is missing");
  const nlohmann::json& c = j.at("constants");
  batch_calibration b;
  b.cuda_context_bytes = value_of(c, "cuda_context_bytes").get<std::int64_t>();
  b.allocator_slack_of_transient = value_of(c, "allocator_slack_of_transient").get<double>();
  b.allocator_slack_ckpt_of_gradients = value_of(c, "allocator_slack_ckpt_of_gradients").get<double>();
  b.library_workspace_bytes = value_of(c, "library_workspace_bytes").get<std::int64_t>();
  b.elementwise_bandwidth_share = value_of(c, "elementwise_bandwidth_share").get<double>();
  b.launch_us = value_of(c, "launch_us").get<double>();
  return b;
}

const batch_calibration& batch_calibration_constants() {
  static const batch_calibration b = [] {
    const auto text = embedded_profile_text(file_name);
    if (!text) throw std::runtime_error(std::string("profiles/") + file_name + " is not embedded in the binary");
    return parse_batch_calibration(*text);
  }();
  return b;
}

}  // namespace tiletune
