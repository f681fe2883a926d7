#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace tiletune {

// The exit codes of the contract (shared/DESIGN.md).
enum exit_code : int {
  exit_ok = 0,
  exit_check_failed = 1,
  exit_usage = 2,
  exit_environment = 3,
  exit_incomplete = 4,  // --budget-s stopped a suite early: the output is written, "not_run" names the rest
  exit_internal = 70,
};

// Text with every control byte and DEL written \xNN, line breaks and tabs too unless
// keep_line_breaks: what a terminal may be given of a string from a file, a database or an argument.
inline std::string escape_control_bytes(std::string_view s, bool keep_line_breaks) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 0x20 && c != 0x7f) || (keep_line_breaks && (c == '\n' || c == '\t'))) {
      out += ch;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// A message is printed as a C string: a NUL byte in a value it quotes (a dtype "bf16\0x" in a
// JSON file) cut it short there, and an escape sequence would reach the terminal. Every control
// byte but a line break or tab is written \xNN (cli/run.cpp indents the lines after the first).
inline std::string printable_message(const std::string& s) { return escape_control_bytes(s, true); }

// Bad input from the user: the message names the bad value. Exit 2.
struct usage_error : std::runtime_error {
  explicit usage_error(const std::string& what) : std::runtime_error(printable_message(what)) {}
  explicit usage_error(const char* what) : usage_error(std::string(what)) {}
};

// The environment cannot do what was asked (no GPU, library missing). Exit 3.
struct environment_error : std::runtime_error {
  explicit environment_error(const std::string& what) : std::runtime_error(printable_message(what)) {}
  explicit environment_error(const char* what) : environment_error(std::string(what)) {}
};

}  // namespace tiletune
