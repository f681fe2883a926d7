#include "core/tune/search/search_strategy.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"

namespace tiletune {

nlohmann::json to_json(const search_report& r) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : r.stages)
    stages.push_back({{"name", to_string(s.name)},
                      {"candidates", s.candidates},
                      {"timed", s.timed},
                      {"kept", s.kept},
                      {"wall_ms", s.wall_ms},
                      {"kernel_ms", s.kernel_ms}});
  return {{"strategy", r.strategy},      {"variants_eligible", r.eligible}, {"variants_timed", r.timed},
          {"variants_verified", r.verified},
          {"requests", r.requests},      {"wall_ms", r.wall_ms},            {"kernel_ms", r.kernel_ms},
          {"stages", stages},            {"stop_reason", r.stop_reason}};
}

const std::vector<std::string>& search_strategy_names() {
  static const std::vector<std::string> names = {"halving", "exhaustive", "model"};
  return names;
}

std::unique_ptr<search_strategy> make_search_strategy(std::string_view name) {
  if (name == "exhaustive") return make_exhaustive_search();
  if (name == "halving") return make_halving_search();
  if (name == "model") return make_model_search();
  throw usage_error(fmt::format("--search {} is unknown: use {}", name, fmt::join(search_strategy_names(), ", ")));
}

std::vector<search_candidate*> fastest_first(std::vector<search_candidate>& candidates, search_stage stage) {
  std::vector<search_candidate*> out;
  for (auto& c : candidates)
    if (c.runnable() && c.stage == stage) out.push_back(&c);
  std::stable_sort(out.begin(), out.end(), [](const search_candidate* a, const search_candidate* b) {
    return a->timing->timing.median_us < b->timing->timing.median_us;
  });
  return out;
}

namespace {
// Half of a budget: a pass of two.
sampling_policy half_of(const sampling_policy& p) {
  sampling_policy h = p;
  h.min_samples = std::max<std::size_t>(1, (p.min_samples + 1) / 2);
  h.max_samples = std::max(h.min_samples, (p.max_samples + 1) / 2);
  h.time_cap_ms = p.time_cap_ms / 2;
  h.warmup_ms = 0;
  return h;
}

// The kernel time the stage is expected to sample at the least: each candidate's last median (the
// model's time where it has none) times the budget's fewest samples.
double expected_sampling_ms(const std::vector<search_candidate*>& candidates, const sampling_policy& p) {
  double us = 0;
  for (const search_candidate* c : candidates) us += c->runnable() ? c->timing->timing.median_us : c->predicted_us;
  return us * static_cast<double>(p.min_samples) / 1e3;
}
}  // namespace

void time_in_two_passes(const std::vector<search_candidate*>& candidates, search_context& ctx,
                        const std::optional<sampling_policy>& budget, search_stage stage, bool verify) {
  const sampling_policy whole = budget.value_or(ctx.full);
  const std::size_t n = candidates.size();
  if (n < 2) {
    for (std::size_t i = 0; i < n; ++i) {
      if (ctx.progress) ctx.progress(to_string(stage), i, n);
      ctx.time(*candidates[i], budget, stage, verify);
    }
    return;
  }
  const sampling_policy half = half_of(whole);
  sampling_policy soaked = half;
  soaked.warmup_ms = std::min(heat_soak_ms, expected_sampling_ms(candidates, whole));
  for (std::size_t i = 0; i < n; ++i) {  // the last first, the first warming the card
    if (ctx.progress) ctx.progress(to_string(stage), i, 2 * n);
    ctx.time(*candidates[n - 1 - i], i == 0 ? soaked : half, stage, verify);
  }
  for (std::size_t i = 0; i < n; ++i) {  // and back
    if (ctx.progress) ctx.progress(to_string(stage), n + i, 2 * n);
    ctx.time_again(*candidates[i], half, stage);
  }
}

}  // namespace tiletune
