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

}  // namespace

bool transformer_engine_covers(const model_spec& m) {
  return m.causal && !m.is_moe() && !m.is_mla() && m.qk_norm_params == 0 && m.norms_per_layer == 2 &&
         !m.embedding_norm && m.final_logit_softcap == 0;
}

void inventory_ops::transformer_engine_layer(const model_spec& m, const dims& d, tally& t) {
  // Attention: linear_qkv (one GEMM), rotary, the fused kernel, linear_proj, bias-dropout-add.
  norm_linear(m, d, t);
  if (m.learned_positions == 0) {
    t.op(d.a * d.q, d.a * d.q);
    t.op(d.a * d.kv, d.a * d.kv);
  }
  t.gemm(1);
  t.saved += d.a * (d.q + d.kv + d.v + d.o) + 4 * d.heads;
  t.gemm(1);
  bias_dropout_add(m, d, t);
  // MLP: linear_fc1 (gate and up in one GEMM when gated), the fused activation, linear_fc2.
  norm_linear(m, d, t);
  const double in = (m.gated_mlp ? 2 : 1) * d.I;
  t.op(d.a * in, d.a * d.I, d.a * in);
  t.saved += d.a * d.I;
  t.gemm(1);
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
