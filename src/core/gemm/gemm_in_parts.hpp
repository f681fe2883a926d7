#pragma once
#include <functional>
#include <optional>

#include "core/gemm/problem.hpp"

namespace tiletune {

// Times a GEMM with time_whole (microseconds, or nothing where it cannot be
// timed). A shape that cannot be timed whole (too big for the worker's
// 32-bit offsets or 65535 batch entries) is timed as two halves of its
// largest dimension, down to 16 parts; the halves' times add up. `splits`
// counts the shapes that were split. Nothing when even the parts fail.
using gemm_timer = std::function<std::optional<double>(const gemm_problem&)>;
std::optional<double> time_in_parts(const gemm_problem& p, const gemm_timer& time_whole, int* splits = nullptr);

}  // namespace tiletune
