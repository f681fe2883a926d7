#pragma once
#include <string>

namespace tiletune {

// "" when value is a real date as YYYY-MM-DD (ISO 8601), optionally followed by THH:MM[:SS][Z];
// else why not, in words naming the value (a month 13, a 30 February, a 25th hour). The form
// dates are written and compared in: as strings, in time order (--since, a record's measured_at).
std::string iso_date(const std::string& value);

// A date iso_date accepts in its one full form, YYYY-MM-DDTHH:MM:SSZ (the time 00:00:00 and the
// seconds 00 where it has none), so that two dates compare as strings in time order: "T09:23Z"
// sorts after "T09:23:38Z" as written. Any other value is returned as it is.
std::string canonical_iso_date(const std::string& value);

}  // namespace tiletune
