#pragma once
// Checks of option values for CLI11's ->check(): "" when a value is acceptable, else why (CLI11
// then exits 2 naming the option and the value). Each refuses what would otherwise be taken
// silently: a negative count wrapped to 2^64 - 1, infinity, NaN, a float the kernel cannot hold.
#include <string>

#include "core/iso_date.hpp"  // iso_date, for --since

namespace CLI {
class App;
}

namespace tiletune::cli {

std::string whole_non_negative(const std::string& value);  // 0 or more, within 64 bits (seeds, counts)
std::string whole_number(const std::string& value);        // within 64 bits, either sign (sizes: their own checks follow)
std::string finite_non_negative(const std::string& value);  // a number, 0 or more, finite
std::string fraction_below_one(const std::string& value);  // 0 up to, not including, 1 (--tolerance)
std::string finite_float(const std::string& value);         // finite, within a float's range (alpha, beta)
std::string not_empty(const std::string& value);            // a name or a path: not an empty word

// The values every option of `app` and of its commands takes, checked before its own checks
// (call it once every option is added):
// - no option takes an empty value (`--db ''` is not the default database, `--jobs ''` not 0);
// - a number is read in decimal, without spaces: CLI11 converts integers in C's base 0, where
//   0256 is octal (174) and 0x40 hexadecimal, and strtod skips leading spaces. Leading zeros are
//   dropped (0256 is 256); a 0x or 0b prefix, or a space, is refused;
// - a name from a fixed list (--dtype F32, --layout NT, --framework HF) is read in any case,
//   as --gpu and --model are.
void check_option_values(CLI::App& app);

// CLI11's own "Could not convert: --top = 1.5x", for options without a check of their own, in words
// that say what the option takes: for a flag, true or false; else, from the value (CLI11 converts
// any finite number to a floating option): a whole number where the value has a fraction, one in
// range where it is a whole number the option's type cannot hold, a number otherwise. `flag`:
// whether the option is a flag. Empty where `what` is not that message.
std::string conversion_message(const std::string& what, bool flag);
// The option name in such a message ("--top"), or empty.
std::string option_in_conversion_message(const std::string& what);

}  // namespace tiletune::cli
