#pragma once
#include <cstdint>
#include <vector>

#include "core/gemm/problem.hpp"

namespace tiletune {

// IEEE binary16 and bfloat16 conversions, round to nearest even.
std::uint16_t float_to_half_bits(float f);
float half_bits_to_float(std::uint16_t h);
std::uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(std::uint16_t b);

// `count` elements of a dtype, random, non-zero, in [-1, -1/64] U [1/64, 1]
// (zeros run faster and hide bugs), from a seed: the same seed gives the same
// bytes. Also returns the values as floats after rounding to the dtype.
struct host_matrix {
  std::vector<unsigned char> bytes;
  std::vector<float> values;
};
host_matrix random_matrix(dtype t, std::size_t count, std::uint64_t seed);

// Bytes of a dtype's elements back to floats (tf32 is stored as f32).
std::vector<float> to_floats(dtype t, const unsigned char* bytes, std::size_t count);

}  // namespace tiletune
