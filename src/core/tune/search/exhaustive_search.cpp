#include <fmt/format.h>

#include "core/tune/search/search_strategy.hpp"

namespace tiletune {

namespace {

// Every variant timed to the run's own budget: the reference the others are judged by.
class exhaustive_search : public search_strategy {
 public:
  std::string name() const override { return "exhaustive"; }
  void run(std::vector<search_candidate>& candidates, search_context& ctx, search_report& report) const override {
    std::vector<search_candidate*> all;
    for (auto& c : candidates) all.push_back(&c);
    time_in_two_passes(all, ctx, std::nullopt, search_stage::full, true);
    report.stages.push_back(search_stage_report{search_stage::full, candidates.size(), candidates.size(), candidates.size(), 0, 0});
    report.stop_reason = fmt::format("timed all {} variants", candidates.size());
  }
};

}  // namespace

std::unique_ptr<search_strategy> make_exhaustive_search() { return std::make_unique<exhaustive_search>(); }

}  // namespace tiletune
