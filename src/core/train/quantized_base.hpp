// Internal to src/core/train: QLoRA's frozen base in 4-bit NF4 (--quantize nf4), as bitsandbytes
// stores and runs it (quantized_base.cpp has the sources).
#pragma once
#include <cstdint>
#include <string>

#include "core/train/training_plan.hpp"

namespace tiletune {

// Bytes per NF4 weight with double quantization (Dettmers et al. 2023, "QLoRA", section 3): 4 bits,
// plus an fp8 absmax per block of 64 weights and an fp32 constant per 256 of those blocks:
// 8/64 + 32/(64 x 256) = 0.126953125 bits a weight (the paper's 0.127).
inline constexpr double nf4_bytes_per_weight = 0.5 + (8.0 / 64 + 32.0 / (64 * 256)) / 8;

// True where --quantize nf4 stores t in NF4: the linears of the blocks (bitsandbytes replaces the
// blocks' nn.Linear modules; embeddings, norms and the LM head stay 16-bit).
bool nf4_quantizes(const training_setup& s, const weight_tensor& t);
// The parameters stored in NF4, of the routed experts (experts) or the rest, all ranks' (0 without --quantize).
double quantized_parameters(const training_setup& s, bool experts);
// The one 16-bit copy a quantized linear dequantizes its weight into, the largest's (0 without).
std::int64_t dequantized_weight_bytes(const training_setup& s);
// What the dequantizations move per micro-step: each quantized weight read as NF4 and written in 16
// bits, in forward, again in backward and in each recomputed layer.
double dequantize_traffic_bytes(const training_setup& s, int expert_parallel, bool checkpointing);
// Throws usage_error for --quantize without LoRA.
void validate_quantize(const training_setup& s);
// The plan's note ("" without --quantize).
std::string quantize_note(const training_setup& s, const memory_breakdown& m);

}  // namespace tiletune
