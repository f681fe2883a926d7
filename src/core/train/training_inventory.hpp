#pragma once
#include "core/train/model_spec.hpp"

namespace tiletune {

// What eager PyTorch + transformers keep and move per token, op by op, for
// one training step: the tensors saved for backward, the bytes the
// memory-bound (non-GEMM) kernels read and write, and how many kernels run.
// One op list drives all three, so memory and time agree with each other.
struct token_inventory {
  double layer_saved = 0;    // bytes per token kept for backward by one layer (MoE: the layers' mean)
  double layer_saved_max = 0;  // the same for the layer that keeps the most
  double layer_input = 0;    // bytes per token of a layer's input (what checkpointing keeps)
  double outer_saved = 0;    // embeddings, final norm, LM-head input
  double layer_traffic = 0;  // forward bytes per token through memory-bound kernels, one layer
  double outer_traffic = 0;  // embeddings and final norm
  // Of layer_traffic, the bytes whose backward moves them once, not twice:
  // eager attention's (scale, mask, casts and softmax over the s x s scores,
  // whose gradients are a mul, the casts back and softmax's backward: traced,
  // 28 bytes a score in bf16 against the forward's 28; repeat_kv, whose
  // gradient is a sum over the repeats; the copies, one or none).
  double layer_backward_once = 0;
  double layer_backward_once_kernels = 0;  // those ops' kernels: one gradient kernel each, not two
  double outer_forward_only_kernels = 0;   // of outer_kernels, those with no backward (eager's mask)
  double layer_kernels = 0;  // forward kernel launches per layer (GEMMs included)
  double outer_kernels = 0;
  // Per logit (token x vocabulary entry): the loss's bytes alive at its
  // forward peak and at its backward peak, and the bytes it moves.
  double logit_forward_bytes = 0;
  double logit_backward_bytes = 0;
  double logit_traffic = 0;
  double logit_held_bytes = 0;  // the model output's logits, kept by the caller through backward
};

// How the loss meets the logits. eager: transformers' ForCausalLMLoss, every logit upcast to
// fp32 at once; chunked: the output layer and loss in chunks (torchtune's CEWithChunkedOutputLoss,
// 8 chunks), the 16-bit logits all kept, the fp32 ones a chunk at a time; fused: the output layer
// and cross-entropy in one op over token chunks (Liger's FusedLinearCrossEntropy, Cut Cross
// Entropy), no logit tensor kept.
enum class loss_impl { eager, chunked, fused };

// How attention runs: SDPA's flash or memory-efficient kernel (fused: keeps
// only the log-sum-exp), transformers' eager attention, or SDPA's math
// fallback (both materialise the s x s scores).
enum class attention_kernel { fused, eager, math };

// Whose modules run the blocks: transformers' eager ones (every op its own kernel), or Megatron-LM's
// Transformer Engine layers (training_inventory_te.cpp: norms fused before their linears, fused
// rotary, attention, activation and bias-dropout-add; Megatron's MoELayer), which cover the dense
// and MoE models transformer_engine_covers accepts, with fused attention.
enum class layer_impl { eager, transformer_engine };
bool transformer_engine_covers(const model_spec& m);

// compute_bytes: 2 for 16-bit GEMMs, 4 for fp32. autocast: weights and the
// residual stream stay fp32 while linears run in 16 bits.
// frozen_base: LoRA's frozen base, whose linears and norms keep nothing for
// their weights' gradients.
token_inventory inventory(const model_spec& m, std::int64_t seq_len, int compute_bytes, bool autocast,
                          attention_kernel attention, bool frozen_base = false, loss_impl loss = loss_impl::eager,
                          layer_impl layers = layer_impl::eager);

}  // namespace tiletune
