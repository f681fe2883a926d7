#include "core/train/training_inventory.hpp"

#include <algorithm>
#include <array>

#include "core/train/training_inventory_ops.hpp"

namespace tiletune {

// Sources, checked against transformers 5.x / PyTorch 2.x:
// - autograd keeps, per op, only the tensors its derivative needs
//   (tools/autograd/derivatives.yaml): mul keeps the other factor, tanh and
//   sigmoid their output, pow and silu their input, layer_norm its input and
//   two per-row statistics, linear/addmm its input and weight.
// - torch.autocast (aten/src/ATen/autocast_mode.cpp): linear/addmm/matmul and
//   scaled_dot_product_attention run in 16 bits; layer_norm, pow, log_softmax,
//   nll_loss in fp32. Only leaf fp32 weights that require grad have their
//   casts cached; every activation is cast anew by each op that consumes it.
// - Type promotion: bf16 + fp32 is fp32, so with fp32 embeddings the residual
//   stream of an autocast model stays fp32 (4 bytes per element).
// - transformers: LlamaRMSNorm is Python (to(fp32), pow, mean, rsqrt, mul,
//   to(input dtype), mul by weight); rotary is q*cos + rotate_half(q)*sin with
//   cos/sin in the hidden states' dtype; GPT-2's "gelu_new" is
//   0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*pow(x,3)))) in Python;
//   sdpa_attention_forward calls SDPA with is_causal and no mask, and with
//   enable_gqa rather than repeating K and V.
// - SDPA's flash and memory-efficient kernels keep Q, K, V, the output and a
//   fp32 log-sum-exp per row and head; no s x s matrix.
// - ForCausalLMLoss (transformers/loss/loss_utils.py) upcasts the logits with
//   logits.float() and calls cross_entropy = log_softmax + nll_loss.
namespace inventory_ops {

// A norm over the residual stream followed by `consumers` linear layers;
// returns the element bytes of its output.
double norm_block(const model_spec& m, const dims& d, tally& t, int consumers) {
  double out = 0;
  if (m.layernorm_bias) {
    // Fused layer_norm keeps its input and mean/rstd; autocast runs it in fp32.
    out = d.autocast ? 4 : d.a;
    t.op(d.r * d.h, out * d.h, d.r * d.h + 8);
  } else if (const double own = framework_rms_norm(d, t, d.h, d.r); own > 0) {
    out = own;
  } else {
    // LlamaRMSNorm: pow keeps the fp32 input (a new cast unless the stream is
    // fp32); the weight multiply keeps the normalised tensor in the input dtype.
    if (d.r != 4) t.op(d.r * d.h, 4 * d.h, 4 * d.h);
    else t.saved += 4 * d.h;
    t.op(4 * d.h, 4 * d.h);      // pow
    t.op(4 * d.h, 4);            // mean
    t.op(8, 8);                  // + eps, rsqrt
    t.op(4 * d.h + 4, 4 * d.h);  // x * rsqrt
    if (d.r != 4) t.op(4 * d.h, d.r * d.h);  // .to(input dtype)
    t.op(d.r * d.h, d.r * d.h, d.kept_by_weight(d.r * d.h));  // weight * x keeps x
    out = d.r;
  }
  if (d.autocast && out == 4) {
    // Each consuming linear casts the fp32 output to 16 bits and keeps its copy.
    for (int i = 0; i < consumers; ++i) t.op(4 * d.h, 2 * d.h, d.kept_by_weight(2 * d.h));
  } else if (consumers > 0) {
    t.saved += d.kept_by_weight(out * d.h);  // one tensor, kept by every consumer
  }
  return out;
}

void dropout(const model_spec& m, tally& t, double bytes, double n) {
  if (m.dropout > 0) t.op(bytes * n, bytes * n + n, n);  // bool mask kept
}

void residual_add(const dims& d, tally& t) { t.op((d.r + d.a) * d.h, d.r * d.h); }

}  // namespace inventory_ops

using namespace inventory_ops;

void inventory_ops::gated_mlp_rows(const dims& d, tally& t, double inter, double rows) {
  const double a = d.a, n = inter * rows;
  t.gemm(2);
  t.op(a * n, a * n, a * n);          // act(gate) keeps gate
  t.op(2 * a * n, a * n, 2 * a * n);  // act * up keeps both
  t.saved += d.kept_by_weight(a * n);  // the product, kept by down_proj
  t.gemm(1);
}

namespace {

void mlp_block(const model_spec& m, const dims& d, tally& t) {
  norm_block(m, d, t, m.gated_mlp ? 2 : 1);
  const double a = d.a, I = d.I;
  if (m.gated_mlp) {
    t.gemm(2);
    t.op(a * I, a * I, a * I);          // act(gate) keeps gate
    t.op(2 * a * I, a * I, 2 * a * I);  // act * up keeps both
    t.saved += d.kept_by_weight(a * I);  // the product, kept by down_proj
  } else if (m.hidden_act == "gelu_new") {
    t.gemm(1);
    // pow runs in fp32 under autocast: a cast of the input, kept by pow.
    const double g = d.autocast ? 4 : a;
    if (d.autocast) t.op(a * I, g * I, g * I);
    else t.saved += g * I;
    t.op(g * I, g * I);          // pow(x, 3)
    t.op(g * I, g * I);          // 0.044715 * .
    t.op((a + g) * I, g * I);    // x + .
    t.op(g * I, g * I);          // sqrt(2/pi) * .
    t.op(g * I, g * I, g * I);   // tanh keeps its output
    t.op(g * I, g * I);          // 1 + .
    t.op(a * I, a * I, a * I);   // 0.5 * x, kept by the last mul
    t.op((a + g) * I, g * I, g * I);  // the last mul keeps 1 + tanh
    if (d.autocast) t.op(g * I, 2 * I, 2 * I);  // c_proj's cast, kept
    else t.saved += d.kept_by_weight(g * I);
  } else {
    t.gemm(1);
    t.op(a * I, a * I, a * I);  // fused gelu/silu keeps its input
    t.saved += d.kept_by_weight(a * I);  // its output, kept by the down projection
  }
  t.gemm(1);
  if (m.norms_per_layer > 2) norm_block(m, d, t, 0);  // Gemma 2/3's norm after the MLP
  dropout(m, t, a, d.h);
  residual_add(d, t);
}

}  // namespace

namespace {

dims dims_of(const model_spec& m, std::int64_t seq_len, int compute_bytes, bool autocast, bool frozen_base,
             layer_impl layers) {
  dims d{};
  d.layers = layers;
  d.h = static_cast<double>(m.hidden_size);
  d.q = static_cast<double>(m.q_size());
  d.kv = static_cast<double>(m.kv_size());
  d.I = static_cast<double>(m.intermediate_size);
  d.heads = static_cast<double>(m.num_heads);
  d.s = static_cast<double>(seq_len);
  d.a = compute_bytes;
  d.autocast = autocast;
  d.r = autocast ? 4 : compute_bytes;
  d.frozen = frozen_base;

  d.v = static_cast<double>(m.num_kv_heads * m.v_dim());
  d.o = static_cast<double>(m.num_heads * m.v_dim());
  return d;
}

// A layer's attention and MLP; in an MoE model, its dense and MoE layers averaged over the layers,
// the largest kept for the one layer recomputed at a time under checkpointing.
void set_layers(const model_spec& m, const dims& d, const tally& attention, const tally& dense, const tally& moe,
                token_inventory& inv) {
  inv.layer_saved = inv.layer_saved_max = attention.saved + dense.saved;
  inv.layer_traffic = attention.traffic + dense.traffic;
  inv.layer_kernels = attention.kernels + dense.kernels;
  if (m.is_moe()) {
    const double L = static_cast<double>(m.num_layers), nd = static_cast<double>(m.dense_layers) / L;
    const double nm = static_cast<double>(m.moe_layers()) / L;
    inv.layer_saved = attention.saved + nd * dense.saved + nm * moe.saved;
    inv.layer_traffic = attention.traffic + nd * dense.traffic + nm * moe.traffic;
    inv.layer_kernels = attention.kernels + nd * dense.kernels + nm * moe.kernels;
    inv.layer_saved_max = attention.saved + std::max(m.dense_layers > 0 ? dense.saved : 0.0, moe.saved);
  }
  inv.layer_backward_once = attention.backward_once;
  inv.layer_backward_once_kernels = attention.backward_once_kernels;
  inv.layer_input = d.r * d.h;
}

void add_layers(const model_spec& m, const dims& d, attention_kernel attention_kind, token_inventory& inv) {
  tally attention, dense, moe;
  attention_block(m, d, attention, attention_kind);
  mlp_block(m, d, dense);
  if (m.is_moe()) moe_mlp_block(m, d, moe);
  set_layers(m, d, attention, dense, moe, inv);
}

// The embeddings before the blocks and the final norm and head after them.
void add_outer(const model_spec& m, const dims& d, attention_kernel kernel, token_inventory& inv) {
  tally outer;
  if (kernel == attention_kernel::eager) {
    // The b x 1 x s x s mask eager attention adds (transformers' masking_utils:
    // aranges, a comparison, where(0, dtype's min)), once per forward, in the
    // residual stream's dtype.
    outer.kernels += 7;
    outer.op(0, d.r * d.s);
    inv.outer_forward_only_kernels = 8;
  }
  // Token (and position / type) lookups and their sum, in the weights' dtype.
  const double tables = 1 + (m.learned_positions > 0 ? 1 : 0) + (m.token_types > 0 ? 1 : 0);
  outer.op(tables * d.r * d.h, d.r * d.h);
  if (tables > 1) outer.op(tables * d.r * d.h, d.r * d.h);
  if (m.embedding_norm) outer.op(d.r * d.h, d.r * d.h, d.r * d.h);
  dropout(m, outer, d.r, d.h);
  if (m.causal) {
    norm_block(m, d, outer, 1);  // final norm, then the LM head
  } else {
    // BERT's MLM head: dense, gelu, LayerNorm, then the decoder.
    outer.op(d.r * d.h, 2 * d.h, d.autocast ? 2 * d.h : 0);
    outer.op(d.a * d.h, d.a * d.h, d.a * d.h);
    norm_block(m, d, outer, 1);
  }
  outer.gemm(1);
  inv.outer_saved = outer.saved;
  inv.outer_traffic = outer.traffic;
  inv.outer_kernels = outer.kernels + 10;  // the loss: cast, log_softmax, nll, their backward
}

// The loss over b x s x V logits. 16-bit logits (2), their fp32 upcast (4)
// and log_softmax's fp32 output (4) are alive together in forward; in
// backward, log_softmax's output (4), nll_loss's dense gradient (4) and
// log_softmax's input gradient (4), beside the 16-bit logits (2) held by the
// model's output object while the caller keeps it. fp32: no upcast copy.
void add_logit_tokens(const model_spec& m, int compute_bytes, token_inventory& inv) {
  if (compute_bytes == 4) {
    inv.logit_forward_bytes = 8;
    inv.logit_backward_bytes = 16;
    inv.logit_traffic = 12 + 4 + 16;
  } else {
    inv.logit_forward_bytes = compute_bytes + 8;
    inv.logit_backward_bytes = compute_bytes + 12;
    // upcast, log_softmax (two reads, a write), nll gradient, log_softmax
    // backward (three reads, a write), the cast back.
    inv.logit_traffic = (compute_bytes + 4) + 12 + 4 + 16 + (4 + compute_bytes);
  }
  if (m.final_logit_softcap > 0) {
    // Gemma 2: logits / cap, tanh (keeps its output), * cap, in the logits'
    // dtype before the loss's upcast: two more logit-wide tensors at the
    // forward peak, tanh's output through backward.
    const double lb = compute_bytes;
    inv.logit_forward_bytes += 2 * lb;
    inv.logit_backward_bytes += lb;
    inv.logit_traffic += 3 * 2 * lb * 2;  // three ops and their gradients
    inv.outer_kernels += 6;
  }
  inv.logit_held_bytes = compute_bytes;
}

// The other losses, from first principles (neither was traced on this machine).
// chunked: each framework's, from its source (framework_chunked_loss, training_inventory_modules.cpp).
// fused (Liger's FusedLinearCrossEntropy): token chunks whose logits total about the hidden
// states' size (chunk = tokens x hidden / vocabulary), the gradient written in place over
// them, the input's gradient computed in forward and held to backward; no logit tensor kept.
void apply_loss(const model_spec& m, const dims& d, int compute_bytes, loss_impl loss, chunked_loss chunks,
                token_inventory& inv) {
  if (loss == loss_impl::chunked) {
    framework_chunked_loss(m, d, chunks, inv);
  } else if (loss == loss_impl::fused) {
    const double per_logit =
        m.vocab_size > 0 ? static_cast<double>(m.hidden_size) / static_cast<double>(m.vocab_size) * compute_bytes : 0;
    inv.logit_forward_bytes = 2 * per_logit;  // the chunk's logits and the input's gradient
    inv.logit_backward_bytes = per_logit;     // the input's gradient
    inv.logit_held_bytes = 0;
    inv.logit_traffic = 3.0 * compute_bytes;  // the chunk's logits written, read, its gradient written over them
  }
}

// Megatron-LM's Transformer Engine blocks and outer layers (training_inventory_te.cpp).
void add_transformer_engine(const model_spec& m, const dims& d, token_inventory& inv) {
  tally attention, dense, moe, outer;
  transformer_engine_attention(m, d, attention);
  transformer_engine_mlp(m, d, dense);
  if (m.is_moe()) transformer_engine_moe(m, d, moe);
  set_layers(m, d, attention, dense, moe, inv);
  transformer_engine_outer(m, d, outer);
  inv.outer_saved = outer.saved;
  inv.outer_traffic = outer.traffic;
  inv.outer_kernels = outer.kernels + 10;  // the loss, as add_outer counts it
}

}  // namespace

token_inventory inventory(const model_spec& m, std::int64_t seq_len, int compute_bytes, bool autocast,
                          attention_kernel attention_kind, bool frozen_base, loss_impl loss, layer_impl layers,
                          chunked_loss chunks) {
  // The framework's modules where they cover the model with SDPA (its fused kernels, or its math
  // fallback: torchtitan's fp32), else transformers'. Transformer Engine's attention is fused only.
  if (attention_kind == attention_kernel::eager || !framework_modules_cover(m, layers) ||
      (attention_kind == attention_kernel::math && layers == layer_impl::transformer_engine))
    layers = layer_impl::transformers;
  const dims d = dims_of(m, seq_len, compute_bytes, autocast, frozen_base, layers);
  token_inventory inv;
  if (layers == layer_impl::transformer_engine) {
    add_transformer_engine(m, d, inv);
  } else {
    add_layers(m, d, attention_kind, inv);
    add_outer(m, d, attention_kind, inv);
  }
  add_logit_tokens(m, compute_bytes, inv);
  apply_loss(m, d, compute_bytes, loss, chunks, inv);
  // A norm written in Python upcasts a 16-bit residual stream: its input's gradient is fp32 until
  // cast back. Fused norms (torchtitan's, Transformer Engine's) and LayerNorm write it in 16 bits.
  const bool python_rms_norm = !m.layernorm_bias && layers != layer_impl::torchtitan &&
                               layers != layer_impl::transformer_engine;
  inv.norm_fp32_gradient = python_rms_norm && d.r < 4 ? 4 * d.h : 0;
  return inv;
}

}  // namespace tiletune
