#pragma once
// Reading UTF-8 text that came from files, databases and command lines, where any byte may be: the
// writers that must emit valid text (a JUnit XML report, a Python file of configs) decode it here.
#include <cstddef>
#include <optional>
#include <string_view>

namespace tiletune {

struct utf8_char {
  char32_t code = 0;
  std::size_t length = 0;  // its bytes
};

// The character whose encoding starts at s[i], or none where the bytes there are not valid UTF-8: a
// stray continuation or an unknown lead byte, a sequence cut short, an overlong form, a UTF-16
// surrogate, or a code past U+10FFFF.
inline std::optional<utf8_char> utf8_at(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return utf8_char{lead, 1};
  const std::size_t length = (lead & 0xe0) == 0xc0 ? 2 : (lead & 0xf0) == 0xe0 ? 3 : (lead & 0xf8) == 0xf0 ? 4 : 0;
  if (length == 0 || i + length > s.size()) return std::nullopt;
  char32_t code = length == 2 ? lead & 0x1f : length == 3 ? lead & 0x0f : lead & 0x07;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return std::nullopt;
    code = (code << 6) | (byte(i + k) & 0x3f);
  }
  constexpr char32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < least[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return std::nullopt;
  return utf8_char{code, length};
}

}  // namespace tiletune
