#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace tiletune {

// "a,b,,c" -> {"a", "b", "", "c"}: empty items kept, for the caller to refuse.
inline std::vector<std::string> split_commas(std::string_view list) {
  std::vector<std::string> items;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    items.emplace_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  return items;
}

}  // namespace tiletune
