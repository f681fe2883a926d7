#pragma once
#include <array>
#include <cstdint>

#include <nlohmann/json_fwd.hpp>

#include "core/gemm/problem.hpp"
#include "core/gemm/family.hpp"  // tensor_map_for asks the variant's family
#include "core/gemm/tile_config.hpp"

namespace tiletune {

// What cuTensorMapEncodeTiled needs for one operand of a TMA variant, in
// plain values (src/cuda/tensor_map encodes it). Dimensions go innermost
// first: (contiguous elements, rows, batch).
struct tensor_map_spec {
  // tf32 operands are stored and copied as f32 bits, fp8 (e4m3, e5m2) ones as bytes (u8).
  enum class element { f16, bf16, f32, u8 };
  element type = element::f32;
  int rank = 3;
  std::array<std::uint64_t, 3> dims{};           // elements per dimension
  std::array<std::uint64_t, 2> strides_bytes{};  // of dims 1 and 2 (dim 0 is contiguous)
  std::array<std::uint32_t, 3> box{};            // elements per dimension of one copy
  std::array<std::uint32_t, 3> element_strides{1, 1, 1};
  int swizzle_bytes = 128;  // CU_TENSOR_MAP_SWIZZLE_128B
  bool interleave = false;  // CU_TENSOR_MAP_INTERLEAVE_NONE
  bool oob_fill_zero = true;  // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-bounds reads give zeros
  friend bool operator==(const tensor_map_spec&, const tensor_map_spec&) = default;
};

// A's map ('a') or B's ('b') for a variant on a problem, from its family
// (gemm_family::tensor_map; for a family that uses tensor maps).
tensor_map_spec tensor_map_for(const gemm_problem& p, const tile_config& c, char operand);

nlohmann::json to_json(const tensor_map_spec& s);

}  // namespace tiletune
