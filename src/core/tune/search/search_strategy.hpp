#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/measure/measure_protocol.hpp"
#include "core/measure/measurement.hpp"
#include "core/tune/search/search_stage.hpp"

namespace tiletune {

// One compiled variant as a search strategy sees it.
struct search_candidate {
  std::size_t variant = 0;  // index into gemm_plan::variants
  std::string id;
  double predicted_us = 0;
  std::optional<measure_response> timing;  // the latest answer; none while never run
  search_stage stage = search_stage::not_timed;  // the stage that last timed it
  std::string dropped_because;             // why the search left it behind, when it did
  bool runnable() const { return timing && timing->status == variant_status::ok && timing->timing.samples > 0; }
  bool verified() const { return timing && timing->verified; }
};

// One step of a search: how many it looked at, timed and kept, and what it cost.
struct search_stage_report {
  search_stage name = search_stage::not_timed;
  std::size_t candidates = 0, timed = 0, kept = 0;
  double wall_ms = 0;    // host clock of the stage
  double kernel_ms = 0;  // kernel time of its samples (samples x median): the GPU time it asked for
};

struct search_report {
  std::string strategy;
  std::size_t eligible = 0;  // variants that compiled and fit
  std::size_t timed = 0;     // distinct variants run at least once
  std::size_t verified = 0;  // distinct variants checked against cuBLASLt
  std::size_t requests = 0;  // runs asked of the worker
  double wall_ms = 0, kernel_ms = 0;
  std::vector<search_stage_report> stages;
  std::string stop_reason;
};
nlohmann::json to_json(const search_report& r);

// What a strategy may ask of the measuring loop (measure_plan).
struct search_context {
  // Run one candidate with this budget (none: the run's own policy) and record
  // the answer and the stage in it. With verify, a candidate not yet verified
  // in this run is checked against cuBLASLt first (once); a strategy may time
  // without it only what it then drops or verifies before recommending.
  std::function<void(search_candidate&, const std::optional<sampling_policy>&, search_stage stage, bool verify)>
      time;
  // Run a candidate this stage has timed once more (the stage's second pass, never verifying) and
  // fold the two timings into one (combined_timing).
  std::function<void(search_candidate&, const std::optional<sampling_policy>&, search_stage stage)> time_again;
  sampling_policy full;  // the run's policy (--target-spread, --time-cap-ms)
  std::function<void(std::string_view what, std::size_t done, std::size_t total)> progress;
};

class search_strategy {
 public:
  virtual ~search_strategy() = default;
  virtual std::string name() const = 0;
  // Decides which candidates to time and for how long; fills the stages and stop_reason of the report.
  virtual void run(std::vector<search_candidate>& candidates, search_context& ctx, search_report& report) const = 0;
};

// "exhaustive" | "halving" | "model"; throws usage_error naming an unknown one.
std::unique_ptr<search_strategy> make_search_strategy(std::string_view name);
const std::vector<std::string>& search_strategy_names();
inline constexpr std::string_view default_search_strategy = "halving";

std::unique_ptr<search_strategy> make_exhaustive_search();
std::unique_ptr<search_strategy> make_halving_search();
std::unique_ptr<search_strategy> make_model_search();

// Shared by the strategies: the runnable candidates, fastest measured first.
std::vector<search_candidate*> fastest_first(std::vector<search_candidate>& candidates, search_stage stage);

// Times a stage's candidates so that the card's clock favours none of them. Long sampling heats
// a GPU into its power cap, its SM clock falling by up to a third within about half a second
// (profiles/measured: H100 and H200 finalists at 1,350-1,600 MHz, the variants timed briefly
// before them at 1,980); timed one after the other, the first candidates ran faster for it.
// So: the first request warms the card for as long as the stage is expected to sample (at most
// heat_soak_ms) before its samples; then every candidate is timed twice with half the budget,
// from the last to the first and back, and its two timings folded into one. A clock that settles
// or falls steadily across the stage slows every candidate alike. One candidate: one pass.
inline constexpr double heat_soak_ms = 500;
void time_in_two_passes(const std::vector<search_candidate*>& candidates, search_context& ctx,
                        const std::optional<sampling_policy>& budget, search_stage stage, bool verify);

}  // namespace tiletune
