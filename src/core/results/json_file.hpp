#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace tiletune {

// The largest JSON file read: 256 MiB, fifty times the largest result in profiles/.
inline constexpr unsigned long long max_json_file_bytes = 256ull << 20;

// Reads and parses a JSON file. Throws usage_error naming the file when it
// cannot be read or is past max_json_file_bytes, and the line and column where malformed or truncated JSON breaks;
// an SQLite database as one, with sqlite_advice (what the command does with one) if given.
nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& sqlite_advice = "");

// What a JSON library exception says, for a person: its text without the library's
// "[json.exception.type_error.302] " tag (and a parse error's own "parse error at ...: ", where
// the caller names the place).
std::string json_error_text(const nlohmann::json::exception& e);

// JSON text for a file, stdout or the database: a string that is not valid UTF-8 (a Latin-1 file name
// on the command line, which the result's command_line and paths carry) has its bad bytes replaced
// by U+FFFD, where a plain dump threw after the work was done (exit 70, nothing written).
inline std::string json_text(const nlohmann::json& j, int indent = 2) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tiletune
