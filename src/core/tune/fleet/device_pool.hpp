// Dealing a suite's problems to several devices (`gemm --devices`): one
// problem at a time per device, the next one to whichever device frees up
// first; a device that faults or goes silent is retired and its problem dealt
// again to a healthy one, a bounded number of times. Pure C++: the devices are
// runners behind an interface, so the dealing is tested with fake ones.
#pragma once
#include <any>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tiletune {

// How one attempt at a problem ended, as its device's runner reports it.
struct attempt_end {
  bool ok = false;  // false: the device faulted; the problem is dealt again elsewhere
  std::string why;  // a fault: what happened
  std::any result;  // ok: the problem's result, handed back untouched
};

// Runs one problem at a time on one device, off the dealer's thread.
class device_runner {
 public:
  virtual ~device_runner() = default;
  // Starts `problem` (its index in the suite). The runner calls beat() whenever
  // it makes progress and done() exactly once at the end, from any thread.
  virtual void start(std::size_t problem, std::function<void()> beat,
                     std::function<void(attempt_end)> done) = 0;
  // The dealer gave up on this device (it went silent): stop, for good. A
  // done() that still comes is ignored.
  virtual void abandon() = 0;
};

struct pool_device {
  int index = 0;  // the device's own number (CUDA ordinal), for messages and the JSON
  device_runner* runner = nullptr;
};

struct pool_settings {
  int max_attempts = 2;  // a problem that faulted on this many devices ends failed
  // Silence (no beat, no end) after which a busy device counts as hung, for the problem it runs.
  std::function<double(std::size_t problem)> stall_s = [](std::size_t) { return 600.0; };
  // Asked before each new problem is dealt; false: deal no more (a spent --budget-s).
  std::function<bool()> keep_dealing = [] { return true; };
};

struct fault_record {
  int device = 0;
  std::string why;
};

struct problem_outcome {
  enum class state { done, failed, not_run };
  state what = state::not_run;
  int device = -1;                   // done: the device that answered
  std::vector<fault_record> faults;  // the attempts that faulted, in order
  std::string why;                   // failed: why no device answered
  std::any result;                   // done: the runner's result
};

struct pool_device_state {
  int index = 0;
  bool retired = false;
  std::string why;           // retired: the fault or the silence
  std::size_t answered = 0;  // problems it answered
};

// What the dealer reports as it goes, on the thread that called run().
struct pool_events {
  std::function<void(int device, std::size_t problem, int attempt)> started;
  std::function<void(std::size_t problem, const problem_outcome&)> finished;  // done or failed
  std::function<void(int device, const std::string& why)> retired;
};

class device_pool {
 public:
  device_pool(std::vector<pool_device> devices, pool_settings settings);
  // Deals problems 0..count-1 (in that order; a problem dealt again goes
  // first) until each has an outcome. Outcomes are indexed like the problems.
  std::vector<problem_outcome> run(std::size_t count, const pool_events& events = {});
  const std::vector<pool_device_state>& devices() const { return states_; }

 private:
  std::vector<pool_device> devices_;
  pool_settings settings_;
  std::vector<pool_device_state> states_;
};

}  // namespace tiletune
