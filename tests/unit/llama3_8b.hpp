#pragma once
// Llama-3-8B's parameter count as Meta published it: the training tests' arithmetic starts here.
#include <cstdint>

inline constexpr std::int64_t llama3_8b_parameters = 8'030'261'248;
