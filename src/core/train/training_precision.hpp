// Internal to src/core/train: what a training precision means for the
// memory and step-time models (mixed or not, bytes of an activation).
#pragma once
#include "core/train/training_plan.hpp"

namespace tiletune {

inline bool is_mixed(precision p) { return p == precision::fp16_mixed || p == precision::bf16_mixed; }
// Bytes of one activation element: autocast runs the layers in 16 bits.
inline int activation_bytes(precision p) { return p == precision::fp32 ? 4 : 2; }

}  // namespace tiletune
