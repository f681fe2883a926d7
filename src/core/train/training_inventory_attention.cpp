// The attention block of the activation inventory (training_inventory.cpp): the norm and
// projections, rotary, q/k norms, MLA's projections, and what each attention kernel (SDPA's
// fused kernels, its math fallback, transformers' eager attention) keeps and moves per token.
#include <algorithm>
#include <array>

#include "core/train/training_inventory_ops.hpp"

namespace tiletune {

using namespace inventory_ops;

namespace {

void rotary(const model_spec& m, const dims& d, tally& t, attention_kernel kernel) {
  if (framework_rotary(d, t, d.q) && framework_rotary(d, t, d.kv)) return;  // the framework's own (no MLA)
  // q*cos + rotate_half(q)*sin: neg, cat, two muls, add; cos/sin in the
  // residual dtype keep nothing big (they do not require grad).
  const double qe = std::max(d.a, d.r);  // dtype of Q and K after rotary
  // MLA rotates only the rope part: per head of q, and one shared key.
  const double rope = static_cast<double>(m.qk_rope_head_dim);
  const std::array<double, 2> rotated =
      m.is_mla() ? std::array<double, 2>{d.heads * rope, rope} : std::array<double, 2>{d.q, d.kv};
  for (double n : rotated) {
    t.op(d.a * n / 2, d.a * n / 2);
    t.op(d.a * n, d.a * n);
    t.op(d.a * n, qe * n);
    t.op(d.a * n, qe * n);
    t.op(2 * qe * n, qe * n);
  }
  if (qe != d.a && kernel != attention_kernel::eager) {  // (eager: after repeat_kv, eager_attention)
    t.op(qe * d.q, d.a * d.q);  // SDPA's autocast casts Q and K back to 16 bits
    t.op(qe * d.kv, d.a * d.kv);
  }
}

// Qwen3 / OLMoE RMSNorm on q and k (the LlamaRMSNorm ops over q + kv
// elements; torchtune's RMSNorm runs the same): the fp32 input is kept, and
// the normalised tensor where the norm's weight is trained. Qwen3 normalises
// each head (a row a head); OLMo2 and OLMoE the whole of q and of k.
void qk_norm(const model_spec& m, const dims& d, tally& t) {
  const double n = d.q + d.kv;
  const double rows = m.qk_norm_params == m.q_size() + m.kv_size() ? 2 : n / static_cast<double>(m.head_dim);
  if (framework_rms_norm(d, t, n, d.a, rows) > 0) return;  // torchtitan's fused norm, LitGPT's
  t.op(d.a * n, 4 * n, 4 * n);
  t.op(4 * n, 4 * n);
  t.op(4 * n, 8);
  t.op(4 * n + 8, 4 * n);
  t.op(4 * n, d.a * n);
  t.op(d.a * n, d.a * n, d.kept_by_weight(d.a * n));  // weight * x: the rotary keeps neither
}

// DeepSeek MLA: kv_a's output (compressed kv + rope key), its RMSNorm
// (fp32 input and output kept), kv_b's input; the same for q_a with
// q_lora_rank; then q and k assembled by cat from their nope and rope
// parts (copies of q and k).
void mla_projections(const model_spec& m, const dims& d, tally& t) {
  const double c = static_cast<double>(m.kv_lora_rank), ql = static_cast<double>(m.q_lora_rank);
  for (double n : {c, ql}) {
    if (n <= 0) continue;
    t.op(d.a * n, 4 * n, 4 * n);
    t.op(4 * n, 4 * n);
    t.op(4 * n + 8, 4 * n);
    t.op(4 * n, d.a * n, d.a * n);  // normalised, kept by the b projection
  }
  t.gemm(ql > 0 ? 2 : 0);  // q_a, q_b beyond the q/k/v count
  t.op(d.a * d.q, d.a * d.q);
  t.op(d.a * d.kv, d.a * d.kv);
}

// transformers' eager attention, traced op by op with transformers 5.24 and
// torch 2.15 (scripts/calibrate/trace_training_ops.py --attention eager,
// profiles/training_traces/*-eager-*.json and open/). Llama's family
// (eager_attention_forward in modeling_llama.py, and the same function in
// mistral, qwen2, qwen3, gemma, gemma2/3, phi3, olmo2, gpt_neox, mixtral,
// qwen2_moe, qwen3_moe, olmoe, deepseek_v3):
//   k, v = repeat_kv(k), repeat_kv(v)    (GQA: expand + reshape, a copy of each
//                                          at every query head's width; none
//                                          when the heads are equal)
//   w = matmul(q, k^T) * scaling          (matmul copies q contiguous, a
//                                          transposed view, and keeps the copy
//                                          and k; autocast first casts q and the
//                                          repeated k, fp32 after rotary, to 16 bits)
//   w = w + mask                          (a new tensor; the mask is b x 1 x s x s
//                                          in the residual stream's dtype, so
//                                          under autocast the sum is fp32)
//   w = softmax(w, dtype=float32)         (a cast to fp32 unless it is; the fp32
//                                          output kept by softmax's backward)
//       .to(query.dtype)                  (a 16-bit copy, unless q is fp32:
//                                          autocast's rotary output)
//   w = dropout(w)                        (attention_dropout > 0: a bool mask kept)
//   o = matmul(w, v)                      (autocast casts w to 16 bits; keeps w
//                                          and the repeated v)
//   o.transpose(1, 2).contiguous()        (a copy, kept by o_proj)
// GPT-2 (modeling_gpt2.py) and BERT (modeling_bert.py): no repeat, softmax
// in the scores' dtype (fp32 under autocast: the fp32 mask promotes the sum),
// then GPT-2 casts to v's dtype (.type(value.dtype)); BERT leaves that to
// autocast's matmul (same bytes; BERT's eager path was not traced). The
// dropout runs as CUDA runs it (native_dropout: one kernel, a bool mask).
// Kept per token: q, k (repeated) and v (repeated) at every query head's width,
// softmax's output (fp32 in Llama's family) and, unless it is that same tensor,
// the 16-bit probabilities P V reads, and any dropout mask; so where SDPA keeps
// 4 bytes per head, Llama's eager attention keeps 6 per score in bf16 and
// bf16-mixed (4 + 2), 4 in fp32. (Llama's bf16 traces hold one more h-wide
// 16-bit tensor per step at the peak, not located: 0.8% of it.)
void eager_attention(const model_spec& m, const dims& d, tally& t) {
  const double sc = d.heads * d.s;  // scores per token
  // Q and K after rotary (fp32 under autocast: cos/sin are in the residual's dtype).
  const double qe = m.learned_positions == 0 && m.causal ? std::max(d.a, d.r) : d.a;
  const bool bert = m.model_type == "bert" || m.model_type == "roberta";
  const bool fp32_softmax = !bert && m.model_type != "gpt2";
  // Every memory-bound op here moves its bytes about once in backward, not
  // twice (traced, bf16: 28 bytes a score forward and backward; repeat_kv's
  // gradient is a sum over the repeats, the copies' a copy or nothing).
  const double traffic_before = t.traffic, kernels_before = t.kernels;
  if (m.num_kv_heads < m.num_heads) {
    t.op(qe * d.kv, qe * d.q);  // repeat_kv(k)
    t.op(d.a * d.v, d.a * d.o);  // repeat_kv(v)
  }
  if (qe != d.a) {  // autocast's matmul casts q and the repeated k
    t.op(qe * d.q, d.a * d.q);
    t.op(qe * d.q, d.a * d.q);
  }
  t.op(d.a * d.q, d.a * d.q, d.a * d.q);  // q made contiguous for bmm, kept
  t.saved += d.a * d.q;                   // k (repeated), kept by q k^T
  t.gemm(1);
  t.op(d.a * sc, d.a * sc);  // * scaling
  const double masked = std::max(d.a, d.r);
  t.op(d.a * sc + d.r * d.s, masked * sc);  // + mask (b x 1 x s x s: s elements per token)
  const double sm = fp32_softmax ? 4 : masked;  // softmax's dtype
  if (sm != masked) t.op(masked * sc, sm * sc);
  t.op(sm * sc, sm * sc, sm * sc);  // softmax, its output kept
  const double pd = bert ? sm : fp32_softmax ? qe : d.a;  // .to(query.dtype) / .type(value.dtype)
  if (pd != sm) t.op(sm * sc, pd * sc);
  if (m.dropout > 0) t.op(pd * sc, pd * sc + sc, sc);  // native_dropout keeps its bool mask
  if (pd != d.a) t.op(pd * sc, d.a * sc);  // autocast's matmul casts P
  // P V keeps P, unless P is softmax's own output.
  if (m.dropout > 0 || pd != sm || d.a != sm) t.saved += d.a * sc;
  t.saved += d.a * d.o;  // v (repeated), kept by P V
  t.gemm(1);
  t.op(d.a * d.o, d.a * d.o);  // o.transpose(1, 2).contiguous(), kept by o_proj (counted by the caller)
  t.backward_once += t.traffic - traffic_before;
  t.backward_once_kernels += t.kernels - kernels_before - 2;  // (the two GEMMs: two each in backward)
}

void scores_and_values(const model_spec& m, const dims& d, tally& t, attention_kernel kernel) {
  if (kernel == attention_kernel::math) {
    // SDPA's math fallback (aten _scaled_dot_product_attention_math): q and
    // k each scaled by sqrt(scale), k and v repeated to every query head
    // (enable_gqa), the causal mask added in place to the scores, then
    // _safe_softmax, whose output P is kept with v by P V. Kept: the scaled
    // q, the scaled and repeated k, the repeated v, and P (heads x s per
    // token): unlike the fused kernels the s x s probabilities are held.
    // Without enable_gqa (as many key-value heads as query heads) nothing is repeated and v is kept as it is.
    const double sc = d.heads * d.s;
    t.op(d.a * d.q, d.a * d.q, d.a * d.q);    // q * sqrt(scale), kept
    if (d.kv < d.q) {
      t.op(d.a * d.kv, d.a * d.q);            // k repeated
      t.op(d.a * d.v, d.a * d.o, d.a * d.o);  // v repeated, kept
    } else {
      t.saved += d.a * d.v;
    }
    t.op(d.a * d.q, d.a * d.q, d.a * d.q);    // k * sqrt(scale), kept
    t.gemm(1);                                // scores
    t.op(d.a * sc + 4 * d.s, d.a * sc);       // + causal mask, in place
    t.op(d.a * sc, d.a * sc, d.a * sc);       // softmax, its output kept
    t.gemm(1);                                // P V
    t.kernels += 2;                           // the mask: ones(s, s).tril(), where(-inf, 0)
  } else if (kernel == attention_kernel::eager) {
    eager_attention(m, d, t);
  } else if (repeats_kv_for_sdpa(d) && d.kv < d.q) {
    // K and V copied to every query head (their gradients summed back, a pass each), then SDPA keeps
    // q and the copies.
    const double traffic_before = t.traffic;
    t.op(d.a * d.kv, d.a * d.q);
    t.op(d.a * d.v, d.a * d.o);
    t.backward_once += t.traffic - traffic_before;
    t.gemm(1);
    t.saved += d.a * (d.q + d.q + d.o) + 4 * d.heads;
  } else {
    t.gemm(1);  // one fused kernel; its time is counted with the GEMMs
    t.saved += d.a * (d.q + d.kv + d.v) + 4 * d.heads;
  }
}

}  // namespace

void inventory_ops::attention_block(const model_spec& m, const dims& d, tally& t, attention_kernel kernel) {
  const bool one_qkv_linear = m.fused_qkv || d.layers == layer_impl::litgpt;  // LitGPT's qkv
  norm_block(m, d, t, one_qkv_linear ? 1 : 3);
  t.gemm(one_qkv_linear ? 1 : 3);
  if (m.learned_positions == 0 && m.causal) rotary(m, d, t, kernel);
  if (m.qk_norm_params > 0) qk_norm(m, d, t);
  if (m.is_mla()) mla_projections(m, d, t);
  scores_and_values(m, d, t, kernel);
  t.saved += d.kept_by_weight(d.a * d.o);  // the attention output, kept by the output projection
  t.gemm(1);
  if (m.norms_per_layer > 2) norm_block(m, d, t, 0);  // Gemma 2/3's norm after attention
  dropout(m, t, d.a, d.h);
  residual_add(d, t);
}


}  // namespace tiletune
