// Internal to src/core/train: fp8 training of the blocks' linears (--fp8 tensorwise), as torchao's
// float8 training runs it (convert_to_float8_training, its default TENSORWISE recipe; torchtitan's
// --model.converters quantize.linear.float8): each linear's three GEMMs in fp8 with dynamic
// per-tensor scales, e4m3 inputs and weights and e5m2 output gradients, the outputs in bf16.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/gemm/dtype_table.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune {

// The dtype a step GEMM runs in under the recipe, or none where it stays in the precision's: the
// blocks' linears (not the LM head, which torchtitan's filter keeps in bf16, nor routed experts,
// nor LoRA's adapters): forward and recompute e4m3 (A the input, B the weight), data-grad and
// weight-grad e5m2_e4m3 (A the output gradient, or its transpose; B the weight, or the input).
std::optional<dtype> fp8_gemm_dtype(const training_setup& s, const std::string& gemm_name);

// Bytes the recipe's casts read and write per step, beyond bf16 training: every fp8 linear's input,
// weight and output gradient scaled (an amax pass, 2 bytes an element) and cast (2 read, 1 written),
// and its fp8 input and output gradient transposed for the weight gradient and its fp8 weight for
// the data gradient (1 read, 1 written): 7 bytes an element of each. Recomputed linears cast their
// input and weight again.
double fp8_cast_bytes(const training_setup& s, std::int64_t tokens, bool checkpointing);

// Throws usage_error where the recipe cannot run: a precision other than bf16 or bf16-mixed (torchao
// casts from bf16), a GPU without fp8 tensor cores (the preset's fp8 peak is 0), QLoRA or LoRA (the
// frozen base's GEMMs are not converted by this recipe here).
void validate_fp8(const training_setup& s, const device_spec& d);

// The plan's note: what the recipe changes, and what has not been compared with a real step.
std::string fp8_note(const training_setup& s);

}  // namespace tiletune
