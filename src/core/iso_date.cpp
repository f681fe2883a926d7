#include "core/iso_date.hpp"

#include <regex>
#include <string_view>

namespace tiletune {

namespace {
const std::regex& date_form() {
  static const std::regex date(R"((\d{4})-(\d{2})-(\d{2})(T(\d{2}):(\d{2})(:(\d{2}))?Z?)?)");
  return date;
}
}  // namespace

std::string iso_date(const std::string& v) {
  const std::regex& date = date_form();
  std::smatch m;
  const std::string form = "a date as YYYY-MM-DD (ISO 8601, optionally THH:MM[:SS][Z]), not " + v;
  if (!std::regex_match(v, m, date)) return form;
  const int year = std::stoi(m[1]), month = std::stoi(m[2]), day = std::stoi(m[3]);
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12) return form + " (month " + m[2].str() + ")";
  if (day < 1 || day > days[month - 1] + (month == 2 && leap ? 1 : 0))
    return form + " (" + m[1].str() + "-" + m[2].str() + " has no day " + m[3].str() + ")";
  if (m[4].matched && (std::stoi(m[5]) > 23 || std::stoi(m[6]) > 59 || (m[8].matched && std::stoi(m[8]) > 59)))
    return form + " (no such time of day)";
  return "";
}

std::string canonical_iso_date(const std::string& v) {
  // Already in the full form (every date tiletune writes, every stored record): no regex, as db merge
  // compares one per row it reads.
  static constexpr std::string_view form = "0000-00-00T00:00:00Z";
  bool full = v.size() == form.size();
  for (std::size_t i = 0; full && i < form.size(); ++i)
    full = form[i] == '0' ? v[i] >= '0' && v[i] <= '9' : v[i] == form[i];
  if (full) return v;
  std::smatch m;
  if (!iso_date(v).empty() || !std::regex_match(v, m, date_form())) return v;
  return m[1].str() + "-" + m[2].str() + "-" + m[3].str() + "T" + (m[4].matched ? m[5].str() : "00") + ":" +
         (m[4].matched ? m[6].str() : "00") + ":" + (m[8].matched ? m[8].str() : "00") + "Z";
}

}  // namespace tiletune
