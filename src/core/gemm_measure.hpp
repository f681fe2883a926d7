#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/gemm_tuner.hpp"
#include "core/measure_protocol.hpp"
#include "core/search/search_strategy.hpp"
#include "core/worker_process.hpp"

namespace tiletune {

// Where the tuning loop sends a variant to be run, verified and timed.
class measure_backend {
 public:
  virtual ~measure_backend() = default;
  virtual measure_response measure(const measure_request& request, const std::string& cubin) = 0;
};

// Runs every measurement in a worker process (`tiletune __worker`). A worker
// that crashes (a sticky CUDA error ends it on purpose) or outlives the
// timeout is stopped, the variant gets launch_error or timeout, and the next
// request starts a fresh worker: one bad variant never poisons the others.
class subprocess_backend : public measure_backend {
 public:
  subprocess_backend(std::vector<std::string> worker_argv, worker_setup setup, std::filesystem::path scratch_dir,
                     double variant_timeout_s, double setup_timeout_s = 300);
  ~subprocess_backend() override;
  measure_response measure(const measure_request& request, const std::string& cubin) override;
  std::size_t restarts() const { return restarts_; }
  // What the worker said when it became ready (device, timer), for the JSON.
  const std::string& ready_line() const { return ready_line_; }

 private:
  void ensure_worker();
  std::vector<std::string> argv_;
  worker_setup setup_;
  std::filesystem::path scratch_;
  double timeout_s_, setup_timeout_s_;
  std::unique_ptr<worker_process> worker_;
  std::size_t restarts_ = 0;
  bool started_once_ = false;
  std::string ready_line_;
};

using measure_progress = std::function<void(std::size_t done, std::size_t total, const std::string& id)>;

// Times the cuBLASLt reference, then runs, verifies and times every ok
// variant of the plan; re-ranks by measured time and recommends the fastest
// correct variant, or, among those within the measured noise of it, the one
// with the fewest resources.
// With verify_only the worker checks results without timing them, and the
// model's ranking stands.
// The search strategy (none: exhaustive) decides which variants are timed and
// for how long; `full` is the run's own sampling policy, the deepest budget.
void measure_plan(gemm_plan& plan, measure_backend& backend, const measure_progress& progress = {},
                  bool verify_only = false, const search_strategy* strategy = nullptr,
                  const sampling_policy& full = {});

}  // namespace tiletune
