#include "core/train/model_gemms.hpp"

#include <map>
#include <tuple>

#include <fmt/format.h>

#include "core/errors.hpp"
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

model_gemm_suite model_gemms(const model_spec& m, std::int64_t tokens, model_phase phase, dtype t) {
  if (tokens < 1) throw usage_error(fmt::format("--tokens {} is invalid: at least 1", tokens));
  training_setup s;
  s.model = m;
  s.seq_len = tokens;  // one "sequence" of all the step's tokens: the linears see tokens rows either way
  // y = x W^T is nt (W stored out x in), dx = dy W is nn, dW = dy^T x is tn.
  auto layout_of = [](const std::string& name) {
    return name.ends_with(" weight-grad") ? "tn" : name.ends_with(" data-grad") ? "nn" : "nt";
  };
  using key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::string>;
  std::map<key, std::size_t> index;
  model_gemm_suite out;
  out.suite.name = fmt::format("{} {} {} tokens", m.name, to_string(phase), tokens);
  bool experts = false;
  for (const auto& g : step_gemms(s, 1, /*checkpointing=*/false)) {
    if (g.name.starts_with("attention") || g.thin || g.fp32 || g.name.ends_with(" recompute")) continue;
    if (phase != model_phase::train && !g.name.ends_with(" forward")) continue;
    experts = experts || g.batch > 1;
    const std::string lay = layout_of(g.name);
    const key k{g.m, g.n, g.k, g.batch, lay};
    if (auto it = index.find(k); it != index.end()) {
      out.suite.problems[it->second].name += ", " + g.name;
      out.counts[it->second] += g.count;
      continue;
    }
    suite_problem p;
    p.name = g.name;
    p.problem.m = g.m;
    p.problem.n = g.n;
    p.problem.k = g.k;
    p.problem.batch = g.batch;
    p.problem.type = t;
    p.problem.layout = parse_layout(lay);
    validate(p.problem);
    index.emplace(k, out.suite.problems.size());
    out.suite.problems.push_back(std::move(p));
    out.counts.push_back(g.count);
  }
  out.notes.push_back("attention's own GEMMs are left out: a fused attention kernel (flash, SDPA) runs them");
  if (experts)
    out.notes.push_back(
        "routed experts are a batched GEMM of each expert's average rows (uniform routing); a grouped GEMM "
        "with uneven rows per expert is not built yet");
  return out;
}

}  // namespace tiletune
