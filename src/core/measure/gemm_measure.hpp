#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tune/gemm_tuner.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/tune/search/search_strategy.hpp"
#include "core/measure/worker_process.hpp"

namespace tiletune {

// Where the tuning loop sends a variant to be run, verified and timed.
class measure_backend {
 public:
  virtual ~measure_backend() = default;
  virtual measure_response measure(const measure_request& request, const std::string& cubin) = 0;
};

// How long one request may run before its worker is stopped: a fixed limit
// (the user's --variant-timeout), or a floor plus a generous multiple of what
// the request should take at the model's kernel time (its warm-up and samples,
// bounded by the time cap, and the check of C on the host). A hanging kernel
// of a small problem then costs seconds, not a minute.
struct request_timeout {
  std::optional<double> fixed_s;
  double floor_s = 5;
  double multiple = 4;
  double unpredicted_s = 60;  // requests with no predicted time: cuBLASLt, batch's GEMMs
  static request_timeout fixed(double seconds) {
    request_timeout t;
    t.fixed_s = seconds;
    return t;
  }
};
double timeout_for(const measure_request& r, const worker_setup& setup, const request_timeout& t);

// Runs every measurement in a worker process (`tiletune __worker`). A worker
// that crashes (a sticky CUDA error ends it on purpose) or outlives the
// timeout is stopped, the variant gets launch_error or timeout, and the next
// request starts a fresh worker: one bad variant never poisons the others.
class subprocess_backend : public measure_backend {
 public:
  subprocess_backend(std::vector<std::string> worker_argv, worker_setup setup, std::filesystem::path scratch_dir,
                     request_timeout timeout, double setup_timeout_s = 300);
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
  request_timeout timeout_;
  double setup_timeout_s_;
  std::unique_ptr<worker_process> worker_;
  std::size_t restarts_ = 0;
  bool started_once_ = false;
  std::string ready_line_;
};

using measure_progress = std::function<void(std::size_t done, std::size_t total, const std::string& id)>;

struct measure_options {
  bool verify_only = false;                 // check results without timing them; the model's ranking stands
  const search_strategy* strategy = nullptr;  // which variants are timed and how long (none: exhaustive)
  sampling_policy full;                     // the run's own sampling policy, the deepest budget
  // A variant that times out or fails to launch suspends, for the rest of the
  // plan, its family or the variants with its mechanisms (they are `skipped`,
  // naming the failure), unless keep_going.
  bool keep_going = false;
};

// Times the cuBLASLt reference, then runs, verifies and times every ok
// variant of the plan; re-ranks by measured time and recommends the fastest
// correct variant, or, among those within the measured noise of it, the one
// with the fewest resources.
void measure_plan(gemm_plan& plan, measure_backend& backend, const measure_progress& progress,
                  const measure_options& options);
void measure_plan(gemm_plan& plan, measure_backend& backend, const measure_progress& progress = {},
                  bool verify_only = false, const search_strategy* strategy = nullptr,
                  const sampling_policy& full = {});

}  // namespace tiletune
