#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace tiletune {

// Reads and parses a JSON file. Throws usage_error naming the file when it
// cannot be read, and the line and column where malformed or truncated JSON breaks;
// an SQLite database as one, with sqlite_advice (what the command does with one) if given.
nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& sqlite_advice = "");

// What a JSON library exception says, for a person: its text without the library's
// "[json.exception.type_error.302] " tag (and a parse error's own "parse error at ...: ", where
// the caller names the place).
std::string json_error_text(const nlohmann::json::exception& e);

}  // namespace tiletune
