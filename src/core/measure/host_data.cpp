#include "core/measure/host_data.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace tiletune {

std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<std::uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504: Inf
  if (abs < 0x33000001u) return static_cast<std::uint16_t>(sign);             // under half the smallest subnormal
  const int exp = static_cast<int>(abs >> 23) - 127;
  std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  if (exp < -14) {
    // Subnormal half: shift the full mantissa into place with rounding.
    const int shift = -exp - 14 + 13;
    const std::uint32_t rounded = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    std::uint32_t h = rounded + ((rem > halfway || (rem == halfway && (rounded & 1))) ? 1 : 0);
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(exp + 15) << 10) | ((mant >> 13) & 0x3ffu);
  const std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // may carry into the exponent: still right
  return static_cast<std::uint16_t>(sign | h);
}

float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>((x + rounding) >> 16);
}

float bf16_bits_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

namespace {
struct fp8_format {
  int mantissa_bits, bias;
  bool ieee;  // e5m2: exponent all ones is infinity or NaN; e4m3: only S.1111.111 is NaN
};
fp8_format format_of(element_type e) {
  if (e == element_type::e4m3) return {3, 7, false};
  if (e == element_type::e5m2) return {2, 15, true};
  throw std::logic_error("an fp8 conversion of a type that is not fp8");
}
// The largest finite code without its sign: e4m3 0x7e (448), e5m2 0x7b (57344).
// splitmix64: fast, and good enough for test data.
struct splitmix64 {
  std::uint64_t state;
  std::uint64_t operator()() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};
std::uint8_t largest_finite(const fp8_format& f) { return f.ieee ? 0x7b : 0x7e; }
std::uint8_t nan_code(const fp8_format& f) { return f.ieee ? 0x7e : 0x7f; }
float decode_magnitude(const fp8_format& f, std::uint8_t code) {  // code < 0x80, finite
  const int exp = code >> f.mantissa_bits, mant = code & ((1 << f.mantissa_bits) - 1);
  if (exp == 0) return std::ldexp(static_cast<float>(mant), 1 - f.bias - f.mantissa_bits);
  return std::ldexp(static_cast<float>((1 << f.mantissa_bits) + mant), exp - f.bias - f.mantissa_bits);
}
}  // namespace

float fp8_bits_to_float(element_type e, std::uint8_t b) {
  const fp8_format f = format_of(e);
  const std::uint8_t code = b & 0x7f;
  const bool negative = (b & 0x80) != 0;
  if (f.ieee && code >= 0x7c) {
    if (code == 0x7c) return negative ? -INFINITY : INFINITY;
    return NAN;
  }
  if (!f.ieee && code == 0x7f) return NAN;
  const float v = decode_magnitude(f, code);
  return negative ? -v : v;
}

std::uint8_t float_to_fp8_bits(element_type e, float x) {
  const fp8_format f = format_of(e);
  if (std::isnan(x)) return nan_code(f);
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float a = std::fabs(x);
  const std::uint8_t top = largest_finite(f);
  if (a >= decode_magnitude(f, top)) return sign | top;  // saturates (infinity too)
  // Codes are monotone in their magnitudes: the two around a, the nearer kept, ties to even.
  std::uint8_t lo = 0, hi = top;
  while (hi - lo > 1) {
    const std::uint8_t mid = static_cast<std::uint8_t>((lo + hi) / 2);
    (decode_magnitude(f, mid) <= a ? lo : hi) = mid;
  }
  const float below = a - decode_magnitude(f, lo), above = decode_magnitude(f, hi) - a;
  const std::uint8_t code = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | code;
}

float store_element(element_type e, float v, unsigned char* out) {
  switch (e) {
    case element_type::f32:
    case element_type::tf32: std::memcpy(out, &v, 4); return v;
    case element_type::f16: {
      const std::uint16_t h = float_to_half_bits(v);
      std::memcpy(out, &h, 2);
      return half_bits_to_float(h);
    }
    case element_type::bf16: {
      const std::uint16_t b = float_to_bf16_bits(v);
      std::memcpy(out, &b, 2);
      return bf16_bits_to_float(b);
    }
    case element_type::e4m3:
    case element_type::e5m2: {
      const std::uint8_t b = float_to_fp8_bits(e, v);
      *out = b;
      return fp8_bits_to_float(e, b);
    }
  }
  throw std::logic_error("store_element: an element type with no encoding");
}

host_matrix random_matrix(element_type e, std::size_t count, std::uint64_t seed) {
  const auto bytes = static_cast<std::size_t>(element_bytes(e));
  host_matrix m;
  m.values.resize(count);
  m.bytes.resize(count * bytes);
  splitmix64 next{seed};
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t r = next();
    const float magnitude = 1.0f / 64 + (63.0f / 64) * static_cast<float>(r >> 40) / static_cast<float>(1 << 24);
    m.values[i] = store_element(e, (r & 1) ? -magnitude : magnitude, &m.bytes[i * bytes]);
  }
  return m;
}

host_matrix random_matrix(dtype t, std::size_t count, std::uint64_t seed) {
  return random_matrix(row_of(t).a, count, seed);
}

problem_scales random_scales(const gemm_problem& p, std::uint64_t seed) {
  const std::int64_t k_blocks = (p.k + 127) / 128, n_blocks = (p.n + 127) / 128;
  std::int64_t a = 0, b = 0;
  if (p.scaling == scaling_mode::rowwise) a = p.m, b = p.n * (p.grouped() ? p.groups->count() : 1);
  if (p.scaling == scaling_mode::block) a = k_blocks * p.m, b = k_blocks * n_blocks * (p.grouped() ? p.groups->count() : 1);
  splitmix64 next{seed};
  problem_scales s;
  for (auto [out, count] : {std::pair{&s.a, a}, std::pair{&s.b, b}}) {
    out->resize(static_cast<std::size_t>(count));
    for (float& v : *out) v = std::ldexp(1.0f, static_cast<int>(next() % 7) - 3);
  }
  return s;
}

std::vector<float> scaled_values(const gemm_problem& p, char operand, const std::vector<float>& values,
                                 const problem_scales& s) {
  const bool is_a = operand == 'a';
  const std::int64_t rows = is_a ? p.m : p.n, k = p.k, n_blocks = (p.n + 127) / 128, k_blocks = (p.k + 127) / 128;
  // K-major (A of 'n', B of 't'): rows of K elements; MN-major: K rows of `rows` elements.
  const bool k_major = is_a ? !p.layout.a_transposed : p.layout.b_transposed;
  std::vector<float> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::int64_t matrix = static_cast<std::int64_t>(i) / (rows * k);
    const std::int64_t in_matrix = static_cast<std::int64_t>(i) % (rows * k);
    const std::int64_t row = k_major ? in_matrix / k : in_matrix % rows;
    const std::int64_t kb = (k_major ? in_matrix % k : in_matrix / rows) / 128;
    float scale = 1.0f;
    if (p.scaling == scaling_mode::rowwise)  // a grouped problem's B: each group's own scales
      scale = is_a ? s.a[static_cast<std::size_t>(row)]
                   : s.b[static_cast<std::size_t>((p.grouped() ? matrix * p.n : 0) + row)];
    if (p.scaling == scaling_mode::block)
      scale = is_a ? s.a[static_cast<std::size_t>(kb * p.m + row)]
                   : s.b[static_cast<std::size_t>(((p.grouped() ? matrix : 0) * k_blocks + kb) * n_blocks + row / 128)];
    out[i] = values[i] * scale;
  }
  return out;
}

std::vector<float> to_floats(element_type e, const unsigned char* bytes, std::size_t count) {
  std::vector<float> out(count);
  with_decoder(e, [&](auto decode) {
    for (std::size_t i = 0; i < count; ++i) out[i] = decode(bytes, i);
  });
  return out;
}

std::vector<float> to_floats(dtype t, const unsigned char* bytes, std::size_t count) {
  return to_floats(row_of(t).c, bytes, count);
}

}  // namespace tiletune
