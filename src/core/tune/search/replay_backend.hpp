#pragma once
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/measure/gemm_measure.hpp"

namespace tiletune {

// A recorded measured result (tiletune.gemm/1 JSON) as a plan again: the
// variants that compiled on the GPU with their resources, predicted afresh by
// today's model, no cubins. What the search strategies are tested on.
gemm_plan plan_from_recording(const nlohmann::json& result);

// Answers like the GPU worker did in the recorded run: each request draws
// samples around the recorded median with the recorded noise (a normal whose
// p20-p80 width is the recorded spread, no faster than the recorded minimum),
// under the same stopping rule as the worker (enough_samples) and the
// request's own budget. Deterministic for a seed. Counts the simulated GPU time.
//
// With a thermal_drift, the card also heats as it works, as a GPU does into its power cap: the
// recorded times are the cool card's, and the clock falls by `drop` (a share) over the first
// ramp_ms of kernel time, warm-up included, then stays there; every launch is slower by the fall.
struct thermal_drift {
  double drop = 0;
  double ramp_ms = 500;
};
class replay_backend : public measure_backend {
 public:
  replay_backend(const nlohmann::json& result, sampling_policy full, std::uint64_t seed = 1, thermal_drift drift = {});
  measure_response measure(const measure_request& request, const std::string& cubin) override;
  double simulated_kernel_ms() const { return kernel_ms_; }  // warm-up and timed samples
  std::size_t requests() const { return requests_; }

 private:
  struct recorded {
    variant_status status = variant_status::launch_error;
    timing_stats timing;
  };
  std::map<std::string, recorded> variants_;
  recorded reference_;
  sampling_policy full_;
  std::uint64_t seed_;
  thermal_drift drift_;
  double kernel_ms_ = 0;
  std::size_t requests_ = 0;
};

}  // namespace tiletune
