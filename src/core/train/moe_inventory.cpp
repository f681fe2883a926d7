// What one MoE layer's feed-forward keeps and moves per token, op by op, as
// eager PyTorch runs the transformers MoE blocks (MixtralSparseMoeBlock,
// Qwen2MoeSparseMoeBlock, OlmoeSparseMoeBlock, DeepseekV2MoE):
//   router_logits = gate(x)                    (a GEMM, 16 bits under autocast)
//   weights = softmax(router_logits, dtype=float); topk; (Mixtral, OLMoE with
//   norm_topk_prob: renormalise); weights.to(x.dtype)
//   for each expert: rows = x[token_idx]; y = down(act(gate(rows)) * up(rows))
//                    y = y * weights[token_idx, k]; out.index_add_(0, token_idx, y)
//   (+ the shared expert on every token, Qwen2-MoE's behind sigmoid(gate(x)))
// The experts' GEMMs are counted as grouped GEMMs (training_step.cpp): one
// kernel per projection for all the layer's experts, as torch._grouped_mm
// runs them; so are the gather, activation, product and weighting here (one
// kernel each over all routed rows). transformers' eager loop launches these
// once per expert hit instead; the plan's notes say so.
// Per token, the routed rows are top-k (times the capacity factor where the
// config sets one: the experts' buffers are padded to capacity). Under expert
// parallelism a rank computes the rows its experts receive from every rank:
// on average the same top-k per local token, so these per-token figures hold.
//
// torchtitan's own MoE (layer_impl::torchtitan, b5bcd76: models/common/moe.py, token_dispatcher.py
// LocalTokenDispatcher, ops/scatter_add.py; Qwen3-MoE's config in models/qwen3/__init__.py:
// softmax scores, route_norm, make_moe_config's load_balance_coeff 1e-3), read, not traced:
//   scores = softmax(gate(x)) under autocast(float32): x cast to fp32 and kept by the fp32 GEMM
//   ids = topk(scores + expert_bias); s = scores.gather(ids); s = s / (s.sum() + 1e-20) * route_scale
//   routing map: zeros(bool).scatter_(ids), summed per expert (no grad)
//   order = argsort(ids.view(-1), stable); s = s.view(-1)[order]; rows = order // k; xr = x[rows]
//   y = w2(silu(w1(xr.bfloat16())) * w3(xr.bfloat16())).type_as(xr)   (torch._grouped_mm, bf16)
//   out = zeros_like(x).scatter_add(rows expanded, (y.float() * s).to(y.dtype)), deterministic:
//     an expanded index makes it one index_put_ with accumulate (sorted indices, no atomics)
// Kept: the fp32 cast of x, the fp32 scores, the top-k ids and scores, the sort order and rows,
// the routed rows, the experts' activations, and the fp32 expert outputs the score product keeps.
// In fp32 the experts still multiply in bf16: each grouped GEMM's input cast and kept, the
// weights' bf16 casts kept too (training_memory.cpp, add_autocast_copies). Qwen3-MoE has no shared
// expert (framework_modules_cover admits none).
#include <algorithm>

#include "core/train/training_inventory_ops.hpp"

namespace tiletune::inventory_ops {

namespace {

void torchtitan_moe_block(const model_spec& m, const dims& d, tally& t) {
  const double h = d.h, E = static_cast<double>(m.num_experts);
  const double k = static_cast<double>(m.experts_per_token);
  const double x = norm_block(m, d, t, 0);  // the fused RMSNorm keeps its input; x kept below
  // Router: the fp32 cast of x (x itself in fp32) kept by the fp32 gate GEMM; softmax keeps its
  // output; the bias added for the choice; top-k's int64 ids kept; the gather; route_norm's sum,
  // + 1e-20 and division (keeping both inputs); the route_scale product.
  if (x != 4) t.op(x * h, 4 * h, d.kept_by_weight(4 * h));
  else t.saved += d.kept_by_weight(4 * h);
  t.gemm(1);
  t.op(4 * E, 4 * E, 4 * E);
  t.op(4 * E, 4 * E);
  t.op(4 * E, 12 * k, 8 * k);
  t.op(4 * k + 8 * k, 4 * k);
  t.op(4 * k, 4);
  t.op(4, 4);
  t.op(4 * k + 4, 4 * k, 4 * k + 4);
  t.op(4 * k, 4 * k);
  // The routing map (zeros, scatter_, the per-expert sum) and the usage counter's add_.
  t.op(0, E);
  t.op(8 * k, k);
  t.op(E, 0);
  t.op(0, 0);
  // Dispatch: the stable argsort (its order kept by the scores' index), the sorted scores, the
  // rows (order // k, kept by the row index and the scatter_add), the routed rows.
  t.op(8 * k, 8 * k, 8 * k);
  t.op(4 * k + 8 * k, 4 * k);
  t.op(8 * k, 8 * k, 8 * k);
  t.op(0, 0);  // the offsets' cumsum
  if (x == 2) {
    t.op(x * h * k + 8 * k, x * h * k, d.kept_by_weight(x * h * k));  // kept by w1's and w3's GEMMs
  } else {
    t.op(x * h * k + 8 * k, x * h * k);
    for (int i = 0; i < 2; ++i) t.op(x * h * k, 2 * h * k, d.kept_by_weight(2 * h * k));  // .bfloat16()
  }
  dims bf16 = d;
  bf16.a = 2;
  gated_mlp_rows(bf16, t, static_cast<double>(m.expert_intermediate_size), k);
  // Combine: y in fp32 (type_as(xr) in fp32, y.float() in bf16), kept with the sorted scores by
  // their product; the product cast back (bf16), zeros_like(x), the out-of-place scatter_add's
  // copy, its indices sorted, the rows accumulated.
  t.op(2 * h * k, 4 * h * k, 4 * h * k);
  t.saved += 4 * k;
  t.op(4 * h * k + 4 * k, 4 * h * k);
  if (x != 4) t.op(4 * h * k, x * h * k);
  t.op(0, x * h);
  t.op(x * h, x * h);
  t.op(8 * k, 16 * k);
  t.op(x * h * k + 16 * k + x * h, x * h);
  residual_add(d, t);
}

}  // namespace

void moe_mlp_block(const model_spec& m, const dims& d, tally& t) {
  if (d.layers == layer_impl::torchtitan) return torchtitan_moe_block(m, d, t);
  const double a = d.a, h = d.h, E = static_cast<double>(m.num_experts);
  const double k = static_cast<double>(m.experts_per_token) * std::max(1.0, m.capacity_factor);
  // The norm's output feeds the router (cast and kept by it under autocast).
  const double x = norm_block(m, d, t, 1);
  // Router: logits (a), softmax in fp32 (keeps its output), top-k (values and
  // int64 indices), renormalise, cast to the hidden dtype; the expert mask
  // (one_hot over experts and its permute) that picks each expert's rows.
  t.gemm(1);
  t.op(a * E, 4 * E, 4 * E);
  t.op(4 * E, 12 * k);
  t.op(4 * k, 4 * k, 4 * k);
  t.op(4 * k, x * k);
  t.op(8 * k, 8 * E * k);
  t.op(8 * E * k, 8 * E * k);
  // Dispatch: each token's hidden vector gathered once per routed expert.
  t.op(x * h * k, x * h * k);
  if (d.autocast && x == 4) {
    // gate and up each cast the fp32 rows to 16 bits and keep their copy.
    for (int i = 0; i < 2; ++i) t.op(4 * h * k, 2 * h * k, d.kept_by_weight(2 * h * k));
  } else {
    t.saved += d.kept_by_weight(x * h * k);  // the gathered rows, kept by gate and up
  }
  gated_mlp_rows(d, t, static_cast<double>(m.expert_intermediate_size), k);
  // y * weight (bf16 x the hidden dtype: fp32 under autocast) keeps y;
  // index_add_ into a zeroed output of the hidden dtype.
  t.op(a * h * k + x * k, x * h * k, a * h * k + x * k);
  t.op(0, x * h);
  t.op(x * h * k + x * h, x * h);
  if (m.shared_intermediate_size > 0) {
    // The shared expert reads the same norm output: casts as for the routed
    // rows, the gated MLP on every token, and its sum into the output.
    if (d.autocast && x == 4) {
      for (int i = 0; i < 2; ++i) t.op(4 * h, 2 * h, d.kept_by_weight(2 * h));
    }
    gated_mlp_rows(d, t, static_cast<double>(m.shared_intermediate_size), 1);
    if (m.shared_expert_gate) {
      t.gemm(1);
      t.op(a, a, a);                  // sigmoid keeps its output
      t.op(a * h + a, a * h, a * h);  // gate * shared keeps the shared output
    }
    t.op(x * h + a * h, x * h);
  }
  dropout(m, t, a, h);
  residual_add(d, t);
}

}  // namespace tiletune::inventory_ops
