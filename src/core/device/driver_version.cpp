#include "core/device/driver_version.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

namespace tiletune {

std::string parse_nvidia_driver_version(std::string_view text) {
  const auto line_end = text.find('\n');
  std::string_view line = text.substr(0, line_end);
  if (line.find("NVRM version") == std::string_view::npos) return "";
  const auto module = line.find("Kernel Module");
  std::size_t at = module == std::string_view::npos ? line.find(':') : module + 13;
  if (at == std::string_view::npos) return "";
  // The first word of digits and dots with at least one dot.
  while (at < line.size()) {
    while (at < line.size() && line[at] == ' ') ++at;
    std::size_t end = at;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    const std::string_view word = line.substr(at, end - at);
    bool digits_and_dots = !word.empty() && std::isdigit(static_cast<unsigned char>(word.front()));
    for (char c : word) digits_and_dots = digits_and_dots && (std::isdigit(static_cast<unsigned char>(c)) || c == '.');
    if (digits_and_dots && word.find('.') != std::string_view::npos) return std::string(word);
    at = end;
  }
  return "";
}

std::string read_nvidia_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  if (!in) return "";
  std::stringstream s;
  s << in.rdbuf();
  return parse_nvidia_driver_version(s.str());
}

}  // namespace tiletune
