#pragma once
#include <cstdint>
#include <functional>
#include <vector>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/compile/compile_cache.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "cuda/nvrtc_compiler.hpp"

namespace tiletune::cli {

// NVRTC behind the disk cache (unless disabled).
class compiler_stack {
 public:
  // no_cache_offered: whether the command has --no-cache (check has not), so that a
  // refusal names only options the command has.
  compiler_stack(const std::string& cache_dir, bool no_cache, bool no_cache_offered = true);
  kernel_compiler& get() {
    if (cached_) return *cached_;
    return nvrtc_;
  }

 private:
  nvrtc_compiler nvrtc_;
  std::unique_ptr<cached_compiler> cached_;
};

// --variant-timeout: seconds above 0 (none: follow each run's estimate); usage_error otherwise.
void check_variant_timeout(const std::optional<double>& seconds);

struct measure_settings {
  std::uint64_t seed = 1;
  std::optional<double> variant_timeout_s;  // none: follow each run's predicted time (request_timeout)
  bool keep_going = false;                  // a family that hangs or faults is not suspended
  double target_spread = 0.01;
  double time_cap_ms = 2000;
  l2_flush_mode l2_flush = l2_flush_mode::write;  // how the L2 is emptied before each timed sample
  bool verify_only = false;
  std::string search = std::string(default_search_strategy);  // the search strategy (gemm: --search)
  // Called after each request the worker answers (gemm --devices: a sign of life; may throw to stop).
  std::function<void()> on_progress;
};

// Runs, verifies and times the plan's variants in a worker process on the local GPU,
// started with worker_argv (host_services::worker_argv).
void measure_on_gpu(gemm_plan& plan, const device_choice& device, const measure_settings& o,
                    const std::vector<std::string>& worker_argv, const std::string& prefix,
                    progress_line& progress);

}  // namespace tiletune::cli
