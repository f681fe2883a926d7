#include "core/train/model_gemms.hpp"

#include <map>
#include <tuple>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/fused_projections.hpp"
#include "core/train/training_fp8.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune {

model_phase parse_model_phase(std::string_view s) {
  if (s == "train") return model_phase::train;
  if (s == "prefill") return model_phase::prefill;
  if (s == "decode") return model_phase::decode;
  throw usage_error(fmt::format("--phase {} is invalid: train, prefill or decode", s));
}

std::string_view to_string(model_phase p) {
  switch (p) {
    case model_phase::train: return "train";
    case model_phase::prefill: return "prefill";
    case model_phase::decode: return "decode";
  }
  return "?";
}

namespace {

// One rank's share of a linear layer under tensor parallelism: its outputs and inputs.
struct rank_share {
  std::int64_t out = 0, in = 0;
};

std::int64_t split(std::int64_t width, int tp, const std::string& what, const model_spec& m) {
  if (width % tp != 0)
    throw usage_error(fmt::format("--tp {} does not divide {} of {} ({})", tp, what, m.name, width));
  return width / tp;
}

// The LM head's rows on one of tp ranks. Training: Megatron-LM's vocabulary, padded to a multiple of
// 128 x tp. Serving: vLLM's ParallelLMHead (model_executor/layers/vocab_parallel_embedding.py), the
// vocabulary padded to a multiple of 64 (DEFAULT_VOCAB_PADDING_SIZE), / tp (a tp that leaves a
// remainder, which vLLM refuses, rounded up).
std::int64_t lm_head_rows(std::int64_t vocab, int tp, model_phase phase) {
  if (phase == model_phase::train) return megatron_vocab_rows_per_rank(vocab, tp);
  const std::int64_t padded = (vocab + 63) / 64 * 64;
  return (padded + tp - 1) / tp;
}

rank_share tensor_parallel_share(const std::string& layer, std::int64_t out, std::int64_t in, int tp,
                                 const model_spec& m, model_phase phase) {
  if (tp == 1) return {out, in};
  const auto ends = [&](std::string_view s) { return layer == s || layer.ends_with(std::string(".") + std::string(s)); };
  const auto heads = [&] { split(m.num_heads, tp, "the attention heads", m); };
  if (ends("q_proj") || ends("q_b_proj") || ends("kv_b_proj")) {
    heads();
    return {out / tp, in};
  }
  if (ends("k_proj") || ends("v_proj")) {
    if (m.num_kv_heads % tp == 0) return {out / tp, in};
    if (tp % m.num_kv_heads == 0) return {out / m.num_kv_heads, in};  // one key/value head a rank, replicated
    throw usage_error(fmt::format("--tp {} does not divide the key/value heads of {} ({}), nor do they divide it",
                                  tp, m.name, m.num_kv_heads));
  }
  if (ends("o_proj")) {
    heads();
    return {out, in / tp};
  }
  if (ends("gate_proj") || ends("up_proj")) return {split(out, tp, "the width of " + layer, m), in};
  if (ends("down_proj")) return {out, split(in, tp, "the width of " + layer, m)};
  if (layer == "lm_head") return {lm_head_rows(out, tp, phase), in};  // vocabulary-parallel
  return {out, in};  // replicated: the low-rank q_a/kv_a projections, the router, a shared expert's gate
}

// A step GEMM as one of tp ranks runs it. forward (nt): tokens x out x in; data-grad (nn):
// tokens x in x out; weight-grad (tn): out x in x tokens.
void split_for_rank(step_gemm& g, const layout& lay, int tp, const model_spec& m, model_phase phase) {
  const std::string layer = step_gemm_layer(g.name);
  if (!lay.a_transposed && lay.b_transposed) {  // nt
    const rank_share r = tensor_parallel_share(layer, g.n, g.k, tp, m, phase);
    g.n = r.out, g.k = r.in;
  } else if (!lay.a_transposed) {  // nn
    const rank_share r = tensor_parallel_share(layer, g.k, g.n, tp, m, phase);
    g.k = r.out, g.n = r.in;
  } else {
    const rank_share r = tensor_parallel_share(layer, g.m, g.n, tp, m, phase);
    g.m = r.out, g.n = r.in;
  }
}

}  // namespace

model_gemm_suite model_gemms(const model_spec& m, std::int64_t tokens, model_phase phase, dtype t,
                             int tensor_parallel, std::optional<expert_routing> routing, fp8_recipe fp8,
                             std::optional<std::int64_t> sequences) {
  if (tokens < 1) throw usage_error(fmt::format("--tokens {} is invalid: at least 1", tokens));
  if (sequences && phase != model_phase::prefill)
    throw usage_error(fmt::format("--sequences {} is for --phase prefill: {}", *sequences,
                                  phase == model_phase::train ? "training takes every token's logits"
                                                              : "decode's --tokens are its sequences, one token each"));
  if (sequences && !m.causal)
    throw usage_error(fmt::format("--sequences {}: {} is an encoder ({}), whose head runs on every token", *sequences,
                                  m.name, m.model_type));
  if (sequences && (*sequences < 1 || *sequences > tokens))
    throw usage_error(fmt::format("--sequences {} is invalid: from 1 to --tokens ({}), each sequence at least a token",
                                  *sequences, tokens));
  // Sequences of varying lengths are a serving batch's, but the longest is at least the mean: past the
  // model's positions no such prefill runs (batch refuses such a --seq-len the same way).
  if (sequences && m.max_positions > 0 && (tokens + *sequences - 1) / *sequences > m.max_positions)
    throw usage_error(fmt::format("--tokens {} in --sequences {}: a sequence of at least {} tokens, longer than {}'s {} "
                                  "positions; pass more --sequences or fewer --tokens",
                                  tokens, *sequences, (tokens + *sequences - 1) / *sequences, m.name,
                                  m.max_positions));
  if (fp8 != fp8_recipe::none && t != dtype::bf16)
    throw usage_error(fmt::format("--fp8 {} converts a bf16 step's linears: --dtype bf16, not {}", to_string(fp8),
                                  to_string(t)));
  if (tensor_parallel < 1) throw usage_error(fmt::format("--tp {} is invalid: at least 1", tensor_parallel));
  if (phase == model_phase::decode && !m.causal)
    throw usage_error(fmt::format("--phase decode: {} is an encoder ({}), which has no decode step: train or prefill",
                                  m.name, m.model_type));
  const int tp = tensor_parallel;
  training_setup s;
  s.model = m;
  s.seq_len = tokens;  // one "sequence" of all the step's tokens: the linears see tokens rows either way
  s.fp8 = fp8;
  using key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::string>;
  std::map<key, std::size_t> index;
  model_gemm_suite out;
  out.suite.name = fmt::format("{} {} {} tokens{}", m.name, to_string(phase), tokens,
                                tp > 1 ? fmt::format(" tp {}", tp) : "");
  bool experts = false;
  std::vector<step_gemm> gemms;
  for (step_gemm g : step_gemms(s, 1, /*checkpointing=*/false)) {
    if (g.name.starts_with("attention") || g.thin || g.fp32 || g.name.ends_with(" recompute")) continue;
    if (phase != model_phase::train && !g.name.ends_with(" forward")) continue;
    // A serving engine's prefill takes the logits of each sequence's last token only.
    if (sequences && g.name.starts_with("lm_head")) g.m = *sequences;
    split_for_rank(g, step_gemm_layout(g.name), tp, m, phase);
    gemms.push_back(std::move(g));
  }
  // Fused projections as one GEMM (each rank's shares summed), GPT-2's Conv1D weights as stored.
  for (step_gemm g : fuse_projections(m, std::move(gemms))) {
    experts = experts || g.batch > 1;
    const layout lay = model_gemm_layout(m, g);
    const bool grouped = routing && g.batch > 1 && !g.name.ends_with(" weight-grad");
    const dtype type = fp8_gemm_dtype(s, g.converted_name()).value_or(t);  // --fp8
    const key k{g.m, g.n, g.k, g.batch, lay.name() + (grouped ? " grouped" : "") + std::string(to_string(type))};
    if (auto it = index.find(k); it != index.end()) {
      out.suite.problems[it->second].name += ", " + g.name;
      out.counts[it->second] += g.count;
      continue;
    }
    suite_problem p;
    p.name = g.name;
    if (grouped) {
      p.problem = grouped_problem(groups_of_routing(tokens, static_cast<int>(m.experts_per_token),
                                                    static_cast<int>(g.batch), *routing, group_layout::contiguous),
                                  g.n, g.k, type, lay);
    } else {
      p.problem.m = g.m;
      p.problem.n = g.n;
      p.problem.k = g.k;
      p.problem.batch = g.batch;
      p.problem.type = type;
      p.problem.scaling = is_fp8(type) ? fp8_gemm_scaling(s) : default_scaling(type);
      p.problem.layout = lay;
    }
    // A GEMM no kernel can take (65536 experts' weight gradients as one batch, a C past 2^31-1 elements
    // at many tokens) is named with what the user gave: the refusal had said "--batch 65536 is too
    // large", a flag --model excludes, and named no GEMM.
    try {
      validate(p.problem);
    } catch (const usage_error& e) {
      std::string why = e.what();
      if (why.rfind("--", 0) == 0) why.erase(0, 2);
      throw usage_error(fmt::format("{}: the step's GEMM {} ({}) at --tokens {} cannot be tuned: {}", m.name, p.name,
                                    p.problem.describe(), tokens, why));
    }
    index.emplace(k, out.suite.problems.size());
    out.suite.problems.push_back(std::move(p));
    out.counts.push_back(g.count);
  }
  if (routing && !experts)
    throw usage_error(fmt::format("--routing {}: {} has no routed experts to route tokens to", routing->name(), m.name));
  out.notes.push_back("attention's own GEMMs are left out: a fused attention kernel (flash, SDPA) runs them");
  if (phase == model_phase::prefill && m.causal)
    out.notes.push_back(
        sequences ? fmt::format("the LM head runs on the last token of each of the {} sequences (--sequences)", *sequences)
                  : fmt::format("the LM head runs on all {} tokens, as a pass that returns every logit (a perplexity "
                                "evaluation); a serving engine's prefill (vLLM, transformers' generate) runs it on each "
                                "sequence's last token: give --sequences",
                                tokens));
  if (tp > 1)
    out.notes.push_back(fmt::format(
        "one of {} tensor-parallel ranks: q, k, v, gate and up keep 1/{} of their outputs, o and down 1/{} of their "
        "inputs{}, lm_head {} of the {} vocabulary rows ({}); the all-reduces between them are communication, not "
        "GEMMs, and are not timed",
        tp, tp, tp, m.num_kv_heads > 0 && m.num_kv_heads % tp != 0 ? " (key/value heads replicated, one a rank)" : "",
        lm_head_rows(m.vocab_size, tp, phase), m.vocab_size,
        phase == model_phase::train ? "Megatron-LM's, padded to a multiple of 128 x the ranks"
                                    : "vLLM's, padded to a multiple of 64, then split"));
  // (Prefill and decode run forward only: their notes name no backward GEMM.)
  const bool train = phase == model_phase::train;
  if (experts && routing)
    out.notes.push_back(fmt::format(
        "routed experts' {} grouped GEMMs of the tokens routed {} to {} experts each (contiguous, no capacity "
        "padding; only a family with a grouped kernel runs them){}",
        train ? "forward and data-grad GEMMs are" : "GEMMs are", routing->name(), m.experts_per_token,
        train ? "; their weight-grad GEMMs are batched over each expert's average rows (rounded up to a whole row)"
              : ""));
  else if (experts)
    out.notes.push_back(fmt::format(
        "routed experts are a batched GEMM of each expert's average rows (uniform routing), rounded up to a whole row "
        "(with fewer routed rows than experts, one row each for as many experts as rows); --routing makes their "
        "{} grouped GEMMs of routed rows",
        train ? "forward and data-grad GEMMs" : "GEMMs"));
  return out;
}

}  // namespace tiletune
