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
#include <algorithm>

#include "core/train/training_inventory_ops.hpp"

namespace tiletune::inventory_ops {

void moe_mlp_block(const model_spec& m, const dims& d, tally& t) {
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
