#include "core/results/json_file.hpp"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace tiletune {

nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& sqlite_advice) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) throw usage_error(fmt::format("{}: no such file", path.string()));
  if (std::filesystem::is_directory(st))
    throw usage_error(fmt::format("{}: is a directory; give a JSON file", path.string()));
  if (!std::filesystem::is_regular_file(st))
    throw usage_error(fmt::format("{}: is not a regular file (a device, FIFO or socket); give a JSON file",
                                  path.string()));
  // nlohmann holds a parsed file in ten or more times its size: a file of gigabytes (a log or a
  // dump given by mistake) would take the machine's memory before it could be named as wrong.
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_json_file_bytes)
    throw usage_error(fmt::format("{}: is {:.1f} MiB; tiletune reads JSON files up to {} MiB (a result of a whole "
                                  "suite is a few MiB)",
                                  path.string(), static_cast<double>(size) / (1 << 20), max_json_file_bytes >> 20));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw usage_error(fmt::format("{}: cannot be read", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  // A UTF-8 byte-order mark nlohmann skips; UTF-16 and UTF-32 text (what some Windows editors save)
  // it would call a bad literal at byte 1.
  const auto starts = [&](std::string_view mark) { return std::string_view(s).substr(0, mark.size()) == mark; };
  using namespace std::string_view_literals;
  for (const auto& [mark, name] : {std::pair{"\xFF\xFE\0\0"sv, "UTF-32"}, std::pair{"\0\0\xFE\xFF"sv, "UTF-32"},
                                    std::pair{"\xFF\xFE"sv, "UTF-16"}, std::pair{"\xFE\xFF"sv, "UTF-16"}})
    if (starts(mark))
      throw usage_error(fmt::format("{}: is {} text (it starts with a byte-order mark); save it as UTF-8", path.string(),
                                    name));
  // An SQLite database (a tuning database given where a JSON file goes): its header's NUL is at byte
  // 16, past where the parser stops at the "S", so it would read as malformed JSON.
  if (starts("SQLite format 3\0"sv))
    throw usage_error(fmt::format("{}: is an SQLite database (a tuning database?), not a JSON file{}", path.string(),
                                  sqlite_advice.empty() ? "" : ": " + sqlite_advice));
  // nlohmann's parser and destructor recurse per level: a file of a few KB of
  // brackets would overflow the stack. Nothing tiletune reads nests past a few levels.
  constexpr int max_depth = 256;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (in_string) {
      if (ch == '\\') ++i;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max_depth)
        throw usage_error(fmt::format("{}: JSON nested deeper than {} levels (byte {})", path.string(), max_depth, i + 1));
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  // A key given twice in one object: nlohmann keeps the last, so a file read by hand and read
  // by tiletune would say different things. Refused, naming the key.
  std::vector<std::set<std::string>> keys;
  const auto once = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using event_t = nlohmann::json::parse_event_t;
    if (event == event_t::object_start) keys.emplace_back();
    else if (event == event_t::object_end && !keys.empty()) keys.pop_back();
    else if (event == event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
      throw usage_error(fmt::format("{}: the key \"{}\" is given twice in one object (JSON would keep only the "
                                    "last); give it once",
                                    path.string(), parsed.get<std::string>()));
    return true;
  };
  if (s.find_first_not_of(" \t\r\n") == std::string::npos)
    throw usage_error(fmt::format("{}: the file is empty{}: no JSON in it", path.string(),
                                  s.empty() ? " (0 bytes)" : " but for white space"));
  try {
    return nlohmann::json::parse(s, once);
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
    // A NUL byte where the parser stopped: a binary file (nlohmann reads NUL as the end of input).
    if (e.byte >= 1 && e.byte <= s.size() && s[e.byte - 1] == '\0')
      throw usage_error(fmt::format("{}: not JSON: a binary file (a NUL byte at line {}, column {}, byte {})",
                                    path.string(), line, col, e.byte));
    const char* what = e.byte > s.size() ? "truncated JSON" : "malformed JSON";
    throw usage_error(fmt::format("{}: {} at line {}, column {} (byte {}): {}", path.string(), what, line, col,
                                  e.byte, json_error_text(e)));
  } catch (const nlohmann::json::exception& e) {  // e.g. a number too large for any type
    throw usage_error(fmt::format("{}: invalid JSON: {}", path.string(), json_error_text(e)));
  }
}

std::string json_error_text(const nlohmann::json::exception& e) {
  std::string s = e.what();
  if (s.rfind("[json.exception.", 0) == 0) {
    const std::size_t tag_end = s.find("] ");
    if (tag_end != std::string::npos) s = s.substr(tag_end + 2);
  }
  if (s.rfind("parse error", 0) == 0) {  // "parse error at line 1, column 2: syntax error while ..."
    const std::size_t at = s.find(": ");
    if (at != std::string::npos) s = s.substr(at + 2);
  }
  // The library quotes what it last read as raw bytes: a binary file's bytes would go to the
  // terminal as they are. Bytes outside printable ASCII are written as \xFF.
  std::string printable;
  for (const unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) printable += static_cast<char>(c);
    else printable += fmt::format("\\x{:02X}", c);
  }
  return printable;
}

}  // namespace tiletune
