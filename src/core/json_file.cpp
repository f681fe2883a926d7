#include "core/json_file.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace tiletune {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw usage_error(fmt::format("{}: no such file", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw usage_error(fmt::format("{}: cannot be read", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  try {
    return nlohmann::json::parse(s);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann reports a 1-based byte offset; a person wants a line and column.
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < s.size(); ++i) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    const char* what = e.byte > s.size() ? "truncated JSON" : "malformed JSON";
    throw usage_error(fmt::format("{}: {} at line {}, column {} (byte {}): {}", path.string(), what, line, col,
                                  e.byte, e.what()));
  }
}

}  // namespace tiletune
