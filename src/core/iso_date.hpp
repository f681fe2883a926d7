#pragma once
#include <string>

namespace tiletune {

// "" when value is a real date as YYYY-MM-DD (ISO 8601), optionally followed by THH:MM[:SS][Z];
// else why not, in words naming the value (a month 13, a 30 February, a 25th hour). The form
// dates are written and compared in: as strings, in time order (--since, a record's measured_at).
std::string iso_date(const std::string& value);

}  // namespace tiletune
