// Internal to src/core/train: what a training precision means for the
// memory and step-time models (mixed or not, bytes of an activation).
#pragma once
#include "core/train/training_inventory.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune {

inline bool is_mixed(precision p) { return p == precision::fp16_mixed || p == precision::bf16_mixed; }
// Bytes of one activation element: autocast runs the layers in 16 bits.
inline int activation_bytes(precision p) { return p == precision::fp32 ? 4 : 2; }

// The attention kernel a step runs. With --attention flash (sdpa), transformers
// passes enable_gqa=True to SDPA when the model has fewer key/value heads than
// query heads (sdpa_attention_forward, use_gqa_in_sdpa: torch >= 2.5 and no
// mask), as torchtitan does. In fp32 no fused kernel takes that: flash needs 16
// bits, and the memory-efficient and cuDNN kernels reject unequal head counts, so
// SDPA silently runs its math fallback, which materialises the scores (PyTorch
// PR #181528, "sdp: warn when enable_gqa=True silently falls back to MATH":
// "the most common trigger is fp32 inputs"; seen with torch 2.11 in
// facebookresearch/sapiens2 PR #3). GPT-2 (as many key/value heads as query
// heads) keeps the memory-efficient kernel in fp32, and so do torchtune's and
// LitGPT's modules, which copy K and V to every query head first
// (repeats_kv_before_sdpa; the inventory counts the copies). Defined with
// layers_of (training_framework.cpp).
attention_kernel attention_kernel_of(const training_setup& s);

}  // namespace tiletune
