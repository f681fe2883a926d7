#include <algorithm>

#include <fmt/format.h>

#include "core/tune/search/search_strategy.hpp"

namespace tiletune {

namespace {

// Trusts the analytical model: times only its few best. The fastest strategy,
// and as good as the model's ranking (measured: the winner can sit far down it).
class model_search : public search_strategy {
 public:
  static constexpr std::size_t keep = 4;
  std::string name() const override { return "model"; }
  void run(std::vector<search_candidate>& candidates, search_context& ctx, search_report& report) const override {
    std::vector<search_candidate*> order;
    for (auto& c : candidates) order.push_back(&c);
    std::stable_sort(order.begin(), order.end(),
                     [](const search_candidate* a, const search_candidate* b) { return a->predicted_us < b->predicted_us; });
    const std::size_t n = std::min(keep, order.size());
    for (std::size_t i = n; i < order.size(); ++i)
      order[i]->dropped_because = fmt::format("not timed: the model ranks it {} of {}", i + 1, order.size());
    report.stages.push_back(search_stage_report{search_stage::model, order.size(), 0, n, 0, 0});
    time_in_two_passes({order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n)}, ctx, std::nullopt,
                       search_stage::full, true);
    report.stages.push_back(search_stage_report{search_stage::full, n, n, n, 0, 0});
    report.stop_reason = fmt::format("timed the model's best {} of {}", n, order.size());
  }
};

}  // namespace

std::unique_ptr<search_strategy> make_model_search() { return std::make_unique<model_search>(); }

}  // namespace tiletune
