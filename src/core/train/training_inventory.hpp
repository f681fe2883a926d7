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
  // Per token, beside the logits at the loss's forward and backward peaks: torchtitan's fp32
  // accumulator of the hidden states' gradient, filled chunk by chunk.
  double loss_token_bytes = 0;
  // Per token, in a layer's backward beside the gradients in flight: the fp32 gradient of an
  // RMSNorm that upcasts its 16-bit input in Python (transformers', torchtune's, LitGPT's), alive
  // beside its cast back; none where the norm is one fused kernel.
  double norm_fp32_gradient = 0;
};

// How the loss meets the logits. eager: transformers' ForCausalLMLoss, every logit upcast to
// fp32 at once; chunked: the output layer and loss in chunks, as the framework runs them
// (torchtune's LinearCrossEntropyLoss unless the layers are torchtitan's or LitGPT's: 8 token
// chunks, each chunk's fp32 log-probabilities kept to backward, its 16-bit logits freed by the
// upcast); fused: the output layer and cross-entropy in one op over token chunks (Liger's
// FusedLinearCrossEntropy, Cut Cross Entropy), no logit tensor kept.
enum class loss_impl { eager, chunked, fused };
// Whose chunked loss --loss chunked runs. torchtune: LinearCrossEntropyLoss (8 chunks; each chunk's
// cross_entropy on logits.float() keeps its fp32 log-probabilities to backward, the 16-bit logits
// and their fp32 copy are freed with the chunk). torchtitan: ChunkedLossWrapper (8 chunks, each
// chunk's backward run at once, the hidden states' gradient gathered in an fp32 buffer; no logit
// kept past its chunk). litgpt: the LM head and cross_entropy over 128-token chunks, the caller
// holding every 16-bit logit and each chunk keeping its log-probabilities.
enum class chunked_loss { torchtune, torchtitan, litgpt };

// How attention runs: SDPA's flash or memory-efficient kernel (fused: keeps
// only the log-sum-exp), transformers' eager attention, or SDPA's math
// fallback (both materialise the s x s scores).
enum class attention_kernel { fused, eager, math };

// Whose modules run the blocks. transformers: transformers' eager ones (every op its own kernel).
// torchtitan, torchtune, litgpt: the framework's own Llama-style modules (training_inventory_modules.cpp),
// eager too, which differ from transformers' where a tensor is kept or a pass is made: torchtitan's
// torch.nn.RMSNorm (one fused kernel keeping its input and rstd) and complex rotary; torchtune's and
// LitGPT's K and V repeated to every query head before SDPA; LitGPT's fp32 normalised tensor; and each
// one's chunked loss. They cover what framework_modules_cover accepts, with fused attention.
// transformer_engine: Megatron-LM's Transformer Engine layers (training_inventory_te.cpp: norms fused
// before their linears, fused rotary, attention, activation and bias-dropout-add; Megatron's
// MoELayer), which cover the dense and MoE models transformer_engine_covers accepts, with fused
// attention.
enum class layer_impl { transformers, torchtitan, torchtune, litgpt, transformer_engine };
bool framework_modules_cover(const model_spec& m, layer_impl layers);
bool transformer_engine_covers(const model_spec& m);
// torchtune's and LitGPT's modules copy K and V to every query head before SDPA (no enable_gqa), so
// SDPA sees equal head counts; transformers' and torchtitan's pass enable_gqa.
bool repeats_kv_before_sdpa(layer_impl layers);

// compute_bytes: 2 for 16-bit GEMMs, 4 for fp32. autocast: weights and the
// residual stream stay fp32 while linears run in 16 bits.
// frozen_base: LoRA's frozen base, whose linears and norms keep nothing for
// their weights' gradients.
token_inventory inventory(const model_spec& m, std::int64_t seq_len, int compute_bytes, bool autocast,
                          attention_kernel attention, bool frozen_base = false, loss_impl loss = loss_impl::eager,
                          layer_impl layers = layer_impl::transformers,
                          chunked_loss chunks = chunked_loss::torchtune);

}  // namespace tiletune
