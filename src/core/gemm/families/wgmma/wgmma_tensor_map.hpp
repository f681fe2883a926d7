#pragma once
#include "core/gemm/problem.hpp"
#include "core/gemm/tensor_map_spec.hpp"
#include "core/gemm/tile_config.hpp"

namespace tiletune {

// A's map ('a') or B's ('b') for a wgmma variant on a problem. K-major
// operands (A 'n', B 't') copy a [BM or BN rows][BK] box; MN-major ones
// (A 't', B 'n') copy [BK rows][64 elements] boxes, BM/64 or BN/64 per stage.
tensor_map_spec wgmma_tensor_map_for(const gemm_problem& p, const tile_config& c, char operand);

}  // namespace tiletune
