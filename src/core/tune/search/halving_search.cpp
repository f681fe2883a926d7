#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/tune/search/search_strategy.hpp"

namespace tiletune {

namespace {

// The default: the model drops what it puts far behind, every survivor gets a
// brief look, the best third a longer one, the last few the run's full budget,
// and the search stops as soon as the leader is clear of the rest beyond the
// measured noise. Measured on an H100, the model put the winner up to 1.41x
// behind its own best prediction (1000x3000x777), so the model cut is wide.
class halving_search : public search_strategy {
 public:
  static constexpr double model_cut = 1.6;        // keep what the model puts within 1.6x of its best
  static constexpr std::size_t model_keep_min = 8;  // and never fewer than its best 8
  static constexpr std::size_t eta = 3;            // each rung keeps the best third
  static constexpr std::size_t final_size = 3;     // this few get the full budget

  std::string name() const override { return "halving"; }

  void run(std::vector<search_candidate>& candidates, search_context& ctx, search_report& report) const override {
    std::vector<search_candidate*> alive = cut_by_model(candidates, report);
    const sampling_policy brief = brief_budget(ctx.full), longer = longer_budget(ctx.full);
    search_stage stage = search_stage::brief;
    std::optional<sampling_policy> budget = brief;
    if (alive.size() <= final_size) {
      budget = final_budget(ctx.full);
      stage = search_stage::full;
    }
    for (int rung = 0;; ++rung) {
      time_all(alive, ctx, budget, stage);
      auto ranked = fastest_first(candidates, stage);
      report.stages.push_back(search_stage_report{stage, alive.size(), alive.size(), 0, 0, 0});
      if (ranked.empty()) {
        report.stop_reason = "no variant ran correctly";
        return;
      }
      if (stage == search_stage::full) {
        report.stages.back().kept = ranked.size();
        report.stop_reason = fmt::format("timed the last {} to the full budget", ranked.size());
        return;
      }
      const auto why = verified_clear_leader(candidates, ranked, ctx, budget, stage);
      if (ranked.empty()) {
        report.stop_reason = "no variant ran correctly";
        return;
      }
      if (why) {
        report.stages.back().kept = 1;
        for (std::size_t i = 1; i < ranked.size(); ++i) ranked[i]->dropped_because = "behind a clear leader";
        report.stop_reason = *why;
        return;
      }
      const std::size_t next = keep_best_third(ranked, stage);
      report.stages.back().kept = next;
      alive.assign(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(next));
      if (alive.size() <= final_size || stage == search_stage::longer) {
        budget = final_budget(ctx.full);
        stage = search_stage::full;
      } else {
        budget = longer;
        stage = search_stage::longer;
      }
    }
  }

 private:
  // Stage 0: the model's cut.
  static std::vector<search_candidate*> cut_by_model(std::vector<search_candidate>& candidates, search_report& report) {
    std::vector<search_candidate*> alive;
    for (auto& c : candidates) alive.push_back(&c);
    std::stable_sort(alive.begin(), alive.end(),
                     [](const search_candidate* a, const search_candidate* b) { return a->predicted_us < b->predicted_us; });
    const double best_predicted = alive.empty() ? 0 : alive.front()->predicted_us;
    std::size_t keep = 0;
    while (keep < alive.size() &&
           (keep < model_keep_min || !(alive[keep]->predicted_us > best_predicted * model_cut)))
      ++keep;
    for (std::size_t i = keep; i < alive.size(); ++i)
      alive[i]->dropped_because = fmt::format("not timed: the model puts it at {:.2f}x its best prediction",
                                              alive[i]->predicted_us / best_predicted);
    report.stages.push_back(search_stage_report{search_stage::model, alive.size(), 0, keep, 0, 0});
    alive.resize(keep);
    return alive;
  }

  // The brief look times each once; the longer and the full stages heat the card (time_in_two_passes).
  static void time_all(const std::vector<search_candidate*>& alive, search_context& ctx,
                       const std::optional<sampling_policy>& budget, search_stage stage) {
    if (stage != search_stage::brief) return time_in_two_passes(alive, ctx, budget, stage, true);
    for (std::size_t i = 0; i < alive.size(); ++i) {
      if (ctx.progress) ctx.progress(to_string(stage), i, alive.size());
      // The brief look only times: most are dropped after it, and checking a large
      // C on the host costs more than timing it. Whatever goes on is verified.
      ctx.time(*alive[i], budget, stage, false);
    }
  }

  // Why the search can stop here, if the leader is clear and verified; ranked again after verifying.
  static std::optional<std::string> verified_clear_leader(std::vector<search_candidate>& candidates,
                                                          std::vector<search_candidate*>& ranked, search_context& ctx,
                                                          const std::optional<sampling_policy>& budget,
                                                          search_stage stage) {
    auto why = clear_leader(ranked, stage == search_stage::brief);
    if (why && !ranked[0]->verified()) {
      // A leader may be recommended only once verified (a wrong kernel can be fast).
      ctx.time(*ranked[0], budget, stage, true);
      ranked = fastest_first(candidates, stage);
      why = ranked.empty() ? std::nullopt : clear_leader(ranked, stage == search_stage::brief);
      if (why && !ranked[0]->verified()) why.reset();
    }
    return why;
  }

  // Keep the best third, and whatever is within the noise of the leader.
  static std::size_t keep_best_third(const std::vector<search_candidate*>& ranked, search_stage stage) {
    const double lead = ranked[0]->timing->timing.median_us;
    std::size_t next = std::max<std::size_t>(2, (ranked.size() + eta - 1) / eta);
    while (next < ranked.size() &&
           ranked[next]->timing->timing.median_us <= lead * (1 + noise(*ranked[0], *ranked[next])))
      ++next;
    next = std::min(next, ranked.size());
    for (std::size_t i = next; i < ranked.size(); ++i)
      ranked[i]->dropped_because = fmt::format("dropped after the {} stage: {:.1f}% behind the leader", to_string(stage),
                                               100 * (ranked[i]->timing->timing.median_us / lead - 1));
    return next;
  }

  static double noise(const search_candidate& a, const search_candidate& b) {
    return std::max(a.timing->timing.spread, b.timing->timing.spread);
  }

  // The leader is clear when the runner-up is behind by more than the noise
  // allows (a wider margin after a brief look, whose noise is itself uncertain).
  static std::optional<std::string> clear_leader(const std::vector<search_candidate*>& ranked, bool brief) {
    if (ranked.size() < 2) return "one variant left";
    const auto& l = *ranked[0];
    const auto& r = *ranked[1];
    const double gap = r.timing->timing.median_us / l.timing->timing.median_us - 1;
    const double margin = brief ? std::max(0.05, 3 * noise(l, r)) : std::max(0.02, 2 * noise(l, r));
    if (gap <= margin || l.timing->timing.p80_us >= r.timing->timing.p20_us) return std::nullopt;
    return fmt::format("{} leads {} by {:.1f}%, clear of the noise margin of {:.1f}%", l.id, r.id, 100 * gap,
                       100 * margin);
  }

  static sampling_policy brief_budget(const sampling_policy& full) {
    sampling_policy p = full;
    p.warmup = 1;
    p.min_samples = 5;
    p.max_samples = 10;
    p.target_spread = std::max(full.target_spread, 0.03);
    p.time_cap_ms = std::min(full.time_cap_ms, 10.0);
    return p;
  }
  // The run's own budget, with enough samples that the noise the
  // recommendation compares against is itself well measured (few run it).
  static sampling_policy final_budget(const sampling_policy& full) {
    sampling_policy p = full;
    p.min_samples = std::min(std::max<std::size_t>(full.min_samples, 30), std::max<std::size_t>(full.max_samples, 1));
    return p;
  }
  static sampling_policy longer_budget(const sampling_policy& full) {
    sampling_policy p = full;
    p.warmup = 2;
    p.min_samples = 10;
    p.max_samples = 40;
    p.target_spread = std::max(full.target_spread, 0.02);
    p.time_cap_ms = std::min(full.time_cap_ms, 100.0);
    return p;
  }
};

}  // namespace

std::unique_ptr<search_strategy> make_halving_search() { return std::make_unique<halving_search>(); }

}  // namespace tiletune
