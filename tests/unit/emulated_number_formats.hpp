#pragma once
// The number formats the kernels' emulations (mma_datapath_emulation_test.cpp,
// wgmma_emulation.hpp) convert with, as the PTX instructions do: f16 and bf16
// are exact in float; cvt.rn.f16.f32 and cvt.rn.bf16.f32 round to nearest
// even. mma_datapath.number_formats_round_like_the_cvt_instructions and
// wgmma_datapath's format test check them.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tiletune_test {

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// bfloat16: the high half of an fp32.
inline float bf16_to_float(std::uint16_t b) { return bits_float(static_cast<std::uint32_t>(b) << 16); }
inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
// IEEE binary16.
inline float f16_to_float(std::uint16_t h) {
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  const int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -24);
  if (exp == 31) return mant ? std::nanf("") : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(1024 + mant), exp - 25);
}
inline std::uint16_t float_to_f16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7E00;
  if (a >= 65520.0f) return sign | 0x7C00;  // rounds to infinity
  if (a < std::ldexp(1.0f, -14)) {
    // Subnormal: units of 2^-24, rounded to nearest even (the default rounding mode).
    return sign | static_cast<std::uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  std::uint32_t h = ((((u >> 23) & 0xFF) - 127 + 15) << 10) | ((u & 0x7FFFFF) >> 13);
  const std::uint32_t rest = u & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry into the exponent is right too
  return sign | static_cast<std::uint16_t>(h);
}
// Every f16 as a float, computed once: the emulations decode billions of them.
inline const std::vector<float>& f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (std::uint32_t h = 0; h < 65536; ++h) t[h] = f16_to_float(static_cast<std::uint16_t>(h));
    return t;
  }();
  return table;
}

}  // namespace tiletune_test
