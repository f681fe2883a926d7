#include "cli/option_checks.hpp"

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace tiletune::cli {

namespace {
// The value as a double, or NaN when it is not one number (trailing text included).
double number_of(const std::string& v) {
  if (v.empty()) return NAN;
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0') return NAN;
  return d;
}
}  // namespace

std::string whole_non_negative(const std::string& v) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
    return "a whole number, 0 or more, not " + v;
  errno = 0;
  std::strtoull(v.c_str(), nullptr, 10);
  return errno == ERANGE ? v + " is past 18446744073709551615, the largest it takes" : "";
}

std::string not_empty(const std::string& v) { return v.empty() ? "a name or a file, not an empty word" : ""; }

std::string whole_number(const std::string& v) {
  const std::size_t digits = !v.empty() && v[0] == '-' ? 1 : 0;
  if (v.size() == digits || v.find_first_not_of("0123456789", digits) != std::string::npos)
    return "a whole number, not " + v;
  errno = 0;
  std::strtoll(v.c_str(), nullptr, 10);
  return errno == ERANGE ? v + " does not fit in 64 bits, far past what it takes" : "";
}

std::string finite_non_negative(const std::string& v) {
  const double d = number_of(v);
  return std::isfinite(d) && d >= 0 ? "" : "a finite number, 0 or more, not " + v;
}

std::string fraction_below_one(const std::string& v) {
  const double d = number_of(v);
  return std::isfinite(d) && d >= 0 && d < 1 ? "" : "a fraction from 0 up to (not including) 1 (0.05 = 5%), not " + v;
}

std::string finite_float(const std::string& v) {
  const double d = number_of(v);
  if (!std::isfinite(d)) return "a finite number, not " + v;
  return std::fabs(d) <= FLT_MAX ? "" : v + " is past a float's range (the kernel takes it as a 32-bit float)";
}

namespace {
// A numeric option's value in decimal: leading zeros dropped, a base prefix refused.
std::string decimal(std::string& v) {
  const std::size_t sign = !v.empty() && (v[0] == '-' || v[0] == '+') ? 1 : 0;
  if (v.size() < sign + 2 || v[sign] != '0') return "";
  if (std::string_view("xXbB").find(v[sign + 1]) != std::string_view::npos)
    return "a number in decimal, not " + v;
  const std::size_t first = v.find_first_not_of('0', sign);
  if (first == std::string::npos) v.erase(sign + 1);  // 000 is 0
  else if (v[first] >= '1' && v[first] <= '9') v.erase(sign, first - sign);
  return "";
}

// The options whose value CLI11 converts to a number: its type names, and ours for integers.
// (strtod reads leading zeros in decimal already, but hexadecimal floats too: 0x1p4 is 16.)
bool numeric_option(const CLI::Option& o) {
  const std::string type = o.get_type_name();
  const std::string name = type.substr(0, type.find(':'));
  return name == "INT" || name == "UINT" || name == "FLOAT" || name == "G" || name == "K" || name == "N";
}

// The options whose value is a name from a fixed list (and --routing's and --checkpointing's
// forms, zipf:S and every-N): read in lower case.
bool name_option(const CLI::Option& o) {
  static const char* const names[] = {
      "adapter-dtype", "attention", "checkpointing", "dtype",     "format",    "fp8",      "framework",
      "group-layout",  "kernel-debug", "l2-flush", "layout",     "loss",      "offload",   "optimizer", "out-dtype",
      "overlap-comm",  "phase",     "precision",     "quantize",  "routing",   "scaling",  "search",
      "lora-targets"};
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return o.check_lname(n); });
}

// A real number a double holds as written: inf, nan, 1e400 (read as inf) and 1e-400 (read as 0)
// are refused, where each would pass a range check as another value.
std::string within_double(const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0') return "";  // not a number at all: CLI11's conversion names it
  if (errno == ERANGE && std::fabs(d) >= 1) return v + " is too large for a double";
  if (!std::isfinite(d)) return "a finite number, not " + v;
  if (errno == ERANGE) return v + " is too small for a double (it would read as " + (d == 0 ? "0" : "a denormal") + ")";
  return "";
}

std::string has_space(const std::string& v) {
  return std::any_of(v.begin(), v.end(), [](unsigned char c) { return std::isspace(c); })
             ? "a number without spaces, not '" + v + "'"
             : "";
}
}  // namespace

void check_option_values(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    if (o->get_type_size() == 0 && o->get_expected_min() == 0) continue;  // a flag
    const bool numeric = numeric_option(*o), name = name_option(*o);
    const bool real = o->get_type_name().rfind("FLOAT", 0) == 0;
    const bool unsigned_type = o->get_type_name().rfind("UINT", 0) == 0;
    o->transform(
        CLI::Validator(
            [numeric, name, real, unsigned_type](std::string& v) -> std::string {
              if (v.empty()) return "needs a value, not an empty string";
              if (numeric) {
                if (std::string why = has_space(v); !why.empty()) return why;
                if (real) {
                  if (std::string why = within_double(v); !why.empty()) return why;
                } else {
                  // Past 64 bits: CLI11 read it as the largest integer of its type.
                  const std::string why = unsigned_type ? whole_non_negative(v) : whole_number(v);
                  if (why.find(unsigned_type ? "past" : "64 bits") != std::string::npos) return why;
                }
                return decimal(v);
              }
              if (name)
                std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
              return "";
            },
            ""),
        "values");
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_option_values(*sub);
}

namespace {
constexpr std::string_view conversion_prefix = "Could not convert: ";
}  // namespace

std::string option_in_conversion_message(const std::string& what) {
  if (what.rfind(conversion_prefix, 0) != 0) return {};
  const std::size_t eq = what.find(" = ", conversion_prefix.size());
  return eq == std::string::npos ? std::string() : what.substr(conversion_prefix.size(), eq - conversion_prefix.size());
}

std::string conversion_message(const std::string& what, bool flag) {
  const std::string name = option_in_conversion_message(what);
  if (name.empty()) return {};
  const std::string value = what.substr(conversion_prefix.size() + name.size() + 3);
  if (flag) return name + " is a flag: give it alone (or =true, =false), not " + value;
  const std::string not_whole = whole_number(value);
  if (not_whole.empty() || not_whole.find("64 bits") != std::string::npos)  // a whole number its type cannot hold
    return name + " " + value + " is out of the range it takes";
  if (std::isfinite(number_of(value))) return name + ": a whole number, not " + value;
  return name + ": a number, not " + value;
}

}  // namespace tiletune::cli
