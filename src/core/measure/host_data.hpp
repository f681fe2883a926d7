#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/gemm/problem.hpp"

namespace tiletune {

// IEEE binary16 and bfloat16 conversions, round to nearest even.
std::uint16_t float_to_half_bits(float f);
float half_bits_to_float(std::uint16_t h);
std::uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(std::uint16_t b);
// The OCP 8-bit floats (OFP8): e4m3 (bias 7, no infinity, S.1111.111 NaN, largest 448,
// subnormals down to 2^-9) and e5m2 (bias 15, IEEE-like: infinities, NaNs, largest 57344,
// subnormals down to 2^-16). Encoding rounds to nearest even and saturates at the largest finite
// value (as cvt.rn.satfinite does); NaN stays NaN. Decoding is exact.
std::uint8_t float_to_fp8_bits(element_type e, float f);
float fp8_bits_to_float(element_type e, std::uint8_t b);

// `count` elements of a dtype, random, non-zero, in [-1, -1/64] U [1/64, 1]
// (zeros run faster and hide bugs), from a seed: the same seed gives the same
// bytes. Also returns the values as floats after rounding to the dtype.
struct host_matrix {
  std::vector<unsigned char> bytes;
  std::vector<float> values;
};
host_matrix random_matrix(element_type e, std::size_t count, std::uint64_t seed);
// The same for the element type of a dtype's A and B.
host_matrix random_matrix(dtype t, std::size_t count, std::uint64_t seed);

// Stores v as one element at out; returns the value it stores, as a float.
float store_element(element_type e, float v, unsigned char* out);

// Calls f with a decoder for e's stored elements (decoder(bytes, i) is element
// i as a float), chosen once so that loops over millions of elements stay tight.
template <class F>
decltype(auto) with_decoder(element_type e, F&& f) {
  auto bits16 = [](const unsigned char* p, std::size_t i) {
    std::uint16_t b;
    std::memcpy(&b, p + i * 2, 2);
    return b;
  };
  switch (e) {
    case element_type::f32:
    case element_type::tf32:
      return f([](const unsigned char* p, std::size_t i) {
        float v;
        std::memcpy(&v, p + i * 4, 4);
        return v;
      });
    case element_type::f16:
      return f([bits16](const unsigned char* p, std::size_t i) { return half_bits_to_float(bits16(p, i)); });
    case element_type::bf16:
      return f([bits16](const unsigned char* p, std::size_t i) { return bf16_bits_to_float(bits16(p, i)); });
    case element_type::e4m3:
      return f([](const unsigned char* p, std::size_t i) { return fp8_bits_to_float(element_type::e4m3, p[i]); });
    case element_type::e5m2:
      return f([](const unsigned char* p, std::size_t i) { return fp8_bits_to_float(element_type::e5m2, p[i]); });
  }
  throw std::logic_error("with_decoder: an element type with no decoding");
}

// fp8's scales for a problem with rowwise or block scaling, as the kernels read them (every matrix
// of a batch shares them): rowwise, a M floats (one per row of A) and b N (one per column of C;
// a grouped problem's b is G x N, each group's B its own, and with block scales G x the plain b);
// block, a ceil(K / 128) x M (k-block major: a[kb * M + m]) and b ceil(K / 128) x ceil(N / 128)
// (b[kb * ceil(N / 128) + n / 128]). Random powers of two in [1/8, 8] from a seed, so that a
// scaled fp8 value is exact in bf16 (the verification reference multiplies scaled bf16 copies).
struct problem_scales {
  std::vector<float> a, b;
};
problem_scales random_scales(const gemm_problem& p, std::uint64_t seed);
// The values a scaled problem multiplies: A's (operand 'a') or B's ('b') stored values, every one
// times its scale, in the problem's layout (A stored M x K, or K x M under 't'; B N x K under 't',
// or K x N: a family's fp8 variants on K-major copies verify MN-major operands so).
std::vector<float> scaled_values(const gemm_problem& p, char operand, const std::vector<float>& values,
                                 const problem_scales& s);

// Bytes of elements back to floats; the dtype form reads its C element type.
std::vector<float> to_floats(element_type e, const unsigned char* bytes, std::size_t count);
std::vector<float> to_floats(dtype t, const unsigned char* bytes, std::size_t count);

}  // namespace tiletune
