// The activation inventory of Megatron-LM's Transformer Engine layers (training_inventory.hpp,
// layer_impl::transformer_engine): transformer_impl "transformer_engine", Megatron-LM's default, with
// its training defaults of bias_swiglu_fusion, apply_rope_fusion and bias_dropout_fusion on (the
// --no-*-fusion flags of megatron/training/arguments.py, d98e8a6). Read from Megatron-Core's
// TransformerLayer and Transformer Engine's modules, not traced:
// - TELayerNormColumnParallelLinear (linear_qkv, linear_fc1): TE's LayerNormLinear runs the norm as
//   one kernel (the residual read, the normalised input written) and the GEMM on its output; it keeps
//   the norm's input, the GEMM's input and the per-token rstd (and mean for LayerNorm).
// - Rotary: one fused kernel each for q and k (fused_apply_rotary_pos_emb), nothing kept but the
//   shared frequencies.
// - TEDotProductAttention: one fused kernel (flash or cuDNN) keeping q, k, v, its output and the
//   log-sum-exp; in Megatron's sbhd layout the output is linear_proj's input as it is.
// - bias_swiglu_impl / bias_gelu_impl: one kernel, keeping its input; linear_fc2 keeps its output.
// - bias_dropout_add: one kernel; with dropout, its mask kept. The residual stays in the compute
//   dtype (fp32_residual_connection False).
// The outer layers: the embedding lookup (and dropout), the final norm (TENorm: its input and rstd
// kept) and the output layer, which keeps the normalised input.
// An MoE layer's MLP (MoELayer, its allgather dispatcher and unfused router and permutation, the
// defaults; grouped or sequential experts keep the same; --disable-bias-linear, which MoE runs set):
// a standalone TENorm (its input and stats kept; its output kept by the router GEMM and read by
// the permutation), top-k over bf16 logits (int64 indices kept) and the softmax of the k scores in
// fp32 (kept), the dense probabilities and routing map built by scatters, the tokens permuted by an
// index_select (its sorted indices kept) and the probabilities by a masked_select (a bf16 copy of
// the E probabilities and the bool mask kept); fc1 keeps the permuted rows, the fused SwiGLU that
// also weights by the probabilities keeps fc1's output and the probabilities, fc2 its input; the
// unpermutation is a scatter_add into zeros (nothing kept). Megatron-LM d98e8a6:
// megatron/core/transformer/moe/{moe_layer,router,token_dispatcher,moe_utils,experts}.py,
// megatron/core/fusions/fused_bias_swiglu.py. Shared experts (SharedExpertMLP) read the norm's
// output as well, through their own fused SwiGLU.
#include <algorithm>

#include "core/train/training_inventory_ops.hpp"

namespace tiletune {

using namespace inventory_ops;

namespace {

void norm_linear(const model_spec& m, const dims& d, tally& t) {
  const double stats = m.layernorm_bias ? 8 : 4;  // LayerNorm: mean and rstd; RMSNorm: rstd
  t.op(d.r * d.h, d.a * d.h, d.r * d.h + d.a * d.h + stats);
  t.gemm(1);
}

void bias_dropout_add(const model_spec& m, const dims& d, tally& t) {
  if (m.dropout > 0) t.op((d.a + d.r) * d.h, d.r * d.h + d.h, d.h);  // the mask, a byte an element
  else t.op((d.a + d.r) * d.h, d.r * d.h);
}

// The fused activation of `rows` rows of `inter` columns (gated: fc1 writes gate and up), which
// keeps its input, and fc2, which keeps the activation's output.
void activation_and_fc2(const model_spec& m, const dims& d, tally& t, double inter, double rows) {
  const double in = (m.gated_mlp ? 2 : 1) * inter * rows;
  t.op(d.a * in, d.a * inter * rows, d.a * in);
  t.saved += d.a * inter * rows;
  t.gemm(1);
}

}  // namespace

bool transformer_engine_covers(const model_spec& m) {
  return m.causal && !m.is_mla() && m.qk_norm_params == 0 && m.norms_per_layer == 2 && !m.embedding_norm &&
         m.final_logit_softcap == 0 && (!m.is_moe() || m.gated_mlp);
}

void inventory_ops::transformer_engine_attention(const model_spec& m, const dims& d, tally& t) {
  // linear_qkv (one GEMM), rotary, the fused kernel, linear_proj, bias-dropout-add.
  norm_linear(m, d, t);
  if (m.learned_positions == 0) {
    t.op(d.a * d.q, d.a * d.q);
    t.op(d.a * d.kv, d.a * d.kv);
  }
  t.gemm(1);
  t.saved += d.a * (d.q + d.kv + d.v + d.o) + 4 * d.heads;
  t.gemm(1);
  bias_dropout_add(m, d, t);
}

void inventory_ops::transformer_engine_mlp(const model_spec& m, const dims& d, tally& t) {
  // linear_fc1 (gate and up in one GEMM when gated), the fused activation, linear_fc2.
  norm_linear(m, d, t);
  activation_and_fc2(m, d, t, d.I, 1);
  bias_dropout_add(m, d, t);
}

void inventory_ops::transformer_engine_moe(const model_spec& m, const dims& d, tally& t) {
  const double a = d.a, h = d.h, E = static_cast<double>(m.num_experts);
  const double k = static_cast<double>(m.experts_per_token) * std::max(1.0, m.capacity_factor);
  const double stats = m.layernorm_bias ? 8 : 4;
  t.op(d.r * h, a * h, d.r * h + stats + a * h);  // TENorm; its output kept by the router GEMM
  t.gemm(1);                                       // router logits, bf16
  t.op(a * E, (a + 8) * k, 8 * k);                 // top-k: values and int64 indices, the indices kept
  t.op(a * k, 4 * k, 4 * k);                       // softmax of the k scores in fp32, kept
  t.op(4 * k, a * k);                              // cast to bf16
  t.op(0, a * E);                                  // probabilities: zeros, clone, scatter
  t.op(a * E, a * E);
  t.op(a * k + 8 * k, a * E);
  t.op(0, 4 * E);                                  // routing map: zeros, clone, scatter, to bool
  t.op(4 * E, 4 * E);
  t.op(8 * k, 4 * E);
  t.op(4 * E, E);
  t.op(E, 8);                                      // tokens per expert
  t.op(E, E);                                      // permute: the map transposed, argsorted, % T
  t.op(E, 8 * k);
  t.op(8 * k, 8 * k, 8 * k);                       // sorted indices, kept
  t.op(a * h * k + 8 * k, a * h * k, a * h * k);   // index_select: the permuted rows, kept by fc1
  t.op(a * E, a * E);                              // the probabilities transposed, the mask too
  t.op(E, E);
  t.op(a * E + E, a * k, a * E + E);               // masked_select keeps its input and mask
  t.gemm(1);                                       // fc1 over the routed rows
  activation_and_fc2(m, d, t, static_cast<double>(m.expert_intermediate_size), k);
  t.saved += a * k;                                // the fused SwiGLU keeps the probabilities too
  t.op(0, a * h);                                  // unpermute: zeros, scatter_add
  t.op(a * h * k + 8 * k + a * h, a * h);
  if (m.shared_intermediate_size > 0) {
    // SharedExpertMLP on every token, reading the norm's output (kept above).
    const double shared = static_cast<double>(m.shared_intermediate_size);
    t.gemm(1);
    activation_and_fc2(m, d, t, shared, 1);
    if (m.shared_expert_gate) {
      t.gemm(1);
      t.op(a, a, a);                  // sigmoid keeps its output
      t.op(a * h + a, a * h, a * h);  // gate x shared keeps the shared output
    }
    t.op(2 * a * h, a * h);  // its sum into the routed output
  }
  bias_dropout_add(m, d, t);
}

void inventory_ops::transformer_engine_outer(const model_spec& m, const dims& d, tally& t) {
  const double tables = 1 + (m.learned_positions > 0 ? 1 : 0);
  t.op(tables * d.r * d.h, d.r * d.h);
  if (tables > 1) t.op(tables * d.r * d.h, d.r * d.h);
  dropout(m, t, d.r, d.h);
  const double stats = m.layernorm_bias ? 8 : 4;
  t.op(d.r * d.h, d.a * d.h, d.r * d.h + stats + d.a * d.h);  // the final norm; its output kept by the head
  t.gemm(1);
}

}  // namespace tiletune
