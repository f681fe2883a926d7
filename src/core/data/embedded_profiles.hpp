#pragma once
#include <optional>
#include <span>
#include <string_view>

// The files of profiles/ that the binary answers with offline, compiled into it
// (CMakeLists.txt embeds them with cmake/embed_files.cmake): the file in the
// repository is the only copy.
namespace tiletune {

struct embedded_profile {
  const char* name;  // path under profiles/: "calibration/h100-sxm.json"
  const char* text;
};

std::span<const embedded_profile> embedded_profiles();

// The text of an embedded profile, by its path under profiles/.
std::optional<std::string_view> embedded_profile_text(std::string_view name);

}  // namespace tiletune
