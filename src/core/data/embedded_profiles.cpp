#include "core/data/embedded_profiles.hpp"

namespace tiletune {

std::optional<std::string_view> embedded_profile_text(std::string_view name) {
  for (const auto& p : embedded_profiles())
    if (p.name == name) return std::string_view(p.text);
  return std::nullopt;
}

}  // namespace tiletune
