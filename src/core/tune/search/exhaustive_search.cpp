#include <fmt/format.h>

#include "core/tune/search/search_strategy.hpp"

namespace tiletune {

namespace {

// Every variant timed to the run's own budget: the reference the others are judged by.
class exhaustive_search : public search_strategy {
 public:
  std::string name() const override { return "exhaustive"; }
  void run(std::vector<search_candidate>& candidates, search_context& ctx, search_report& report) const override {
    std::size_t done = 0;
    for (auto& c : candidates) {
      if (ctx.progress) ctx.progress("timing every variant", done, candidates.size());
      ctx.time(c, std::nullopt, search_stage::full, true);
      ++done;
    }
    report.stages.push_back(search_stage_report{search_stage::full, candidates.size(), candidates.size(), candidates.size(), 0, 0});
    report.stop_reason = fmt::format("timed all {} variants", candidates.size());
  }
};

}  // namespace

std::unique_ptr<search_strategy> make_exhaustive_search() { return std::make_unique<exhaustive_search>(); }

}  // namespace tiletune
