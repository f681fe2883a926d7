#pragma once
#include <filesystem>

#include <nlohmann/json.hpp>

namespace tiletune {

// Reads and parses a JSON file. Throws usage_error naming the file when it
// cannot be read, and the line and column where malformed or truncated JSON breaks.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace tiletune
