#pragma once
#include <array>
#include <cstdint>

#include "core/gemm/tensor_map_spec.hpp"

namespace tiletune {

// The driver's CUtensorMap as raw bytes, passed by value as a kernel parameter.
struct alignas(64) encoded_tensor_map {
  std::array<std::uint64_t, 16> opaque{};
};

// Encodes a spec for the operand at `global` with cuTensorMapEncodeTiled,
// reached through cudaGetDriverEntryPointByVersion so that the binary links
// no libcuda. Throws cuda_error naming the spec when the driver refuses it.
encoded_tensor_map encode_tensor_map(const tensor_map_spec& spec, const void* global);

}  // namespace tiletune
