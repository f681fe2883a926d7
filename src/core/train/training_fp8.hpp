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
// rowwise: every one of them e4m3.
std::optional<dtype> fp8_gemm_dtype(const training_setup& s, const std::string& gemm_name);
// How those GEMMs are scaled: per tensor (tensorwise; alpha's) or a scale per row of A and column of
// op(B) (rowwise: torch._scaled_mm's rowwise scales, tiletune's rowwise-scaled GEMMs).
scaling_mode fp8_gemm_scaling(const training_setup& s);

// Bytes the recipe's casts read and write per step, beyond bf16 training: every fp8 linear's input,
// weight and output gradient scaled (an amax pass, 2 bytes an element) and cast (2 read, 1 written),
// and its fp8 input and output gradient transposed for the weight gradient and its fp8 weight for
// the data gradient (1 read, 1 written): 7 bytes an element of each. Recomputed linears cast their
// input and weight again.
// rowwise: each of the three is scaled and cast along both axes its two GEMMs reduce over (the input
// along features for the forward, along tokens for the weight gradient; the weight along its inputs
// and its outputs; the output gradient along features and tokens): two amax passes and two casts, 5
// bytes an element each, and one of the two copies transposed, 2: 12 bytes an element.
double fp8_cast_bytes(const training_setup& s, std::int64_t tokens, bool checkpointing);

// rowwise: bytes a token and layer of the fp8 copies of the converted linears' inputs kept for the
// weight gradient (1 byte an input feature a linear), beside the bf16 inputs as bf16 training keeps
// them. torchtitan's published Llama-3-8B step (8 H100s, rowwise with compile and torchao's FSDP
// workaround, pytorch/torchtitan commit 7a04053) peaked 10.9 GiB above bf16; this term is 9.5 of it.
// The kept copies are our reading of that figure (the compiled graph saving the cast it reads in
// backward), not a traced step.
double fp8_kept_bytes_per_token_per_layer(const training_setup& s);

// --fp8-all-gather: the parameters FSDP gathers in fp8 (one byte each, not the precision's two): the
// converted linears' weights, with --fp8 tensorwise and --zero 3; else 0.
double fp8_all_gather_parameters(const training_setup& s);

// Throws usage_error where the recipe cannot run (or --fp8-all-gather without tensorwise and ZeRO-3,
// torchao's float8 all-gather being tensorwise FSDP's): a precision other than bf16 or bf16-mixed (torchao
// casts from bf16), a GPU without fp8 tensor cores (the preset's fp8 peak is 0), QLoRA or LoRA (the
// frozen base's GEMMs are not converted by this recipe here).
void validate_fp8(const training_setup& s, const device_spec& d);

// The plan's note: what the recipe changes, and what has not been compared with a real step.
std::string fp8_note(const training_setup& s);

}  // namespace tiletune
