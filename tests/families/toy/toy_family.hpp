#pragma once
// A family defined outside src/ (tests/families/toy/): one thread per output
// element of each BM x BN tile, f32, no shared memory. It proves a family is a
// folder: registered by one line (family_registration), it plans, compiles,
// exports and is timed like the built-in families, and nothing else changes.
#include "core/gemm/family.hpp"

namespace tiletune {

const gemm_family& toy_family();

}  // namespace tiletune
