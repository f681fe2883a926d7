#pragma once
// Checks of option values for CLI11's ->check(): "" when a value is acceptable, else why (CLI11
// then exits 2 naming the option and the value). Each refuses what would otherwise be taken
// silently: a negative count wrapped to 2^64 - 1, infinity, NaN, a float the kernel cannot hold.
#include <string>

namespace tiletune::cli {

std::string whole_non_negative(const std::string& value);  // 0 or more, within 64 bits (seeds, counts)
std::string whole_number(const std::string& value);        // within 64 bits, either sign (sizes: their own checks follow)
std::string finite_non_negative(const std::string& value);  // a number, 0 or more, finite
std::string finite_float(const std::string& value);         // finite, within a float's range (alpha, beta)
std::string iso_date(const std::string& value);             // YYYY-MM-DD, optionally followed by THH:MM:SS and Z

}  // namespace tiletune::cli
