// Internal to src/core/train: reading a Hugging Face config.json field by
// field, with errors that name the file, the field and what is wrong.
#pragma once
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"

namespace tiletune {

struct config_reader {
  const nlohmann::json& j;
  const std::string& source;
  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  std::int64_t integer(const char* key) const {
    if (!has(key)) throw usage_error(fmt::format("{}: the field \"{}\" is missing", source, key));
    if (!j[key].is_number_integer() || j[key].get<std::int64_t>() < 0)
      throw usage_error(fmt::format("{}: \"{}\" must be a non-negative integer, not {}", source, key, j[key].dump()));
    return j[key].get<std::int64_t>();
  }
  std::int64_t integer_or(const char* key, std::int64_t fallback) const { return has(key) ? integer(key) : fallback; }
  bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean()) throw usage_error(fmt::format("{}: \"{}\" must be true or false", source, key));
    return j[key].get<bool>();
  }
  std::string string_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_string()) throw usage_error(fmt::format("{}: \"{}\" must be a string", source, key));
    return j[key].get<std::string>();
  }
  double number_or(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_number()) throw usage_error(fmt::format("{}: \"{}\" must be a number", source, key));
    return j[key].get<double>();
  }
};

}  // namespace tiletune
