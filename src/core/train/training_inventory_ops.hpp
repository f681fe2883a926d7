// Internal to src/core/train: the per-token bookkeeping the activation
// inventory (training_inventory.cpp, moe_inventory.cpp) is written in.
#pragma once
#include "core/train/model_spec.hpp"
#include "core/train/training_inventory.hpp"  // attention_kernel

namespace tiletune::inventory_ops {

struct tally {
  double saved = 0, traffic = 0, kernels = 0;
  // Of `traffic`, the bytes whose backward moves them once rather than
  // about twice (eager attention's score-wide ops, traced).
  double backward_once = 0, backward_once_kernels = 0;
  // One memory-bound kernel that reads `read` and writes `write` bytes and
  // keeps `keep` bytes for backward (all per token).
  void op(double read, double write, double keep = 0) {
    traffic += read + write;
    saved += keep;
    kernels += 1;
  }
  void gemm(double n = 1) { kernels += n; }
};

struct dims {
  double h, q, kv, I, heads, s;
  double a;  // compute (GEMM) element bytes
  double r;  // residual-stream element bytes
  bool autocast;
  double v = 0;  // values per token (kv heads x v_head_dim), kv unless MLA
  double o = 0;  // attention output per token (heads x v_head_dim), q unless MLA
  // A frozen base (LoRA): autograd saves a tensor only for a gradient it must
  // compute (derivatives.yaml codegen: should_compute_output), so frozen
  // linears and norm weights keep nothing for their weights' gradients.
  bool frozen = false;
  double kept_by_weight(double bytes) const { return frozen ? 0 : bytes; }
  layer_impl layers = layer_impl::transformers;  // whose modules (training_inventory.hpp)
};

// The framework's own modules where they differ from transformers' (training_inventory_modules.cpp).
// An RMSNorm over `n` values a token of `in` bytes each, in `rows` rows of its own statistics (one
// over the residual stream; a row a head for Qwen3's q/k norms), as d.layers runs it (torchtitan's
// fused kernel, LitGPT's fp32 normalised tensor); returns its output's element bytes, or 0 where
// the layers run transformers' LlamaRMSNorm (norm_block counts that).
double framework_rms_norm(const dims& d, tally& t, double n, double in, double rows = 1);
// Rotary over `n` values a token of q or k, as d.layers runs it; false where transformers' is run.
bool framework_rotary(const dims& d, tally& t, double n);
// torchtune's and LitGPT's K and V copied to every query head before SDPA, which keeps the copies.
bool repeats_kv_for_sdpa(const dims& d);
// The chunked loss of the framework (chunked_loss), per logit and token, over the eager loss's figures.
void framework_chunked_loss(const model_spec& m, const dims& d, chunked_loss chunks, token_inventory& inv);

// A norm over the residual stream followed by `consumers` linear layers;
// returns the element bytes of its output.
double norm_block(const model_spec& m, const dims& d, tally& t, int consumers);
void dropout(const model_spec& m, tally& t, double bytes, double n);
void residual_add(const dims& d, tally& t);
// A gated MLP of width `inter` over `rows` rows per token, whose input
// (`in` bytes per element, the norm's output) is gathered or not: the
// activation, the product and what the three GEMMs keep.
void gated_mlp_rows(const dims& d, tally& t, double inter, double rows);

// The attention block of one layer (training_inventory_attention.cpp): norm, projections,
// rotary, q/k norms, the attention kernel's scores and values, output projection, residual.
void attention_block(const model_spec& m, const dims& d, tally& t, attention_kernel kernel);

// Megatron-LM's Transformer Engine layers (training_inventory_te.cpp): a block's attention and its
// dense or MoE MLP, with their fused norms, rotary, attention, activation and bias-dropout-add; and
// the embedding, final norm and output layer around the blocks.
void transformer_engine_attention(const model_spec& m, const dims& d, tally& t);
void transformer_engine_mlp(const model_spec& m, const dims& d, tally& t);
void transformer_engine_moe(const model_spec& m, const dims& d, tally& t);
void transformer_engine_outer(const model_spec& m, const dims& d, tally& t);

// The MoE block of one layer (moe_inventory.cpp): norm, router, dispatch,
// experts, weighting, combine, shared expert, residual.
void moe_mlp_block(const model_spec& m, const dims& d, tally& t);

}  // namespace tiletune::inventory_ops
