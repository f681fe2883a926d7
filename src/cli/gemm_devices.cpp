#include "cli/output.hpp"
#include "cli/gemm_devices.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>

#include "cli/gemm_tuning.hpp"
#include "core/errors.hpp"
#include "core/measure/gemm_measure.hpp"
#include "core/tune/fleet/device_pool.hpp"
#include "cuda/device_query.hpp"
#include "core/plan_mode.hpp"

namespace tiletune::cli {

namespace {

// Each attempt of a problem gets a new worker; this many devices faulting on
// one problem make it a failed problem (and cost at most this many devices).
constexpr int max_attempts_per_problem = 2;
constexpr double worker_start_s =
    300;  // subprocess_backend's limit on a worker's start (CUDA context, cuBLASLt)
constexpr double compile_s = 60;  // one NVRTC compile of a large variant, with margin

// The longest a healthy device goes without a sign of life on problem p: a
// worker's start, the longest request it can be sent (--variant-timeout, the
// limit of one with no estimate, or a kernel as long as the whole --time-cap-ms
// with C checked), and a compile. Past it the device counts as hung.
double stall_limit_s(const gemm_problem& p, const measure_settings& s) {
  request_timeout t;
  t.fixed_s = s.variant_timeout_s;
  worker_setup setup;
  setup.problem = p;
  setup.sampling.time_cap_ms = s.time_cap_ms;
  measure_request slowest;
  slowest.op = measure_op::variant;
  slowest.predicted_us = s.time_cap_ms * 1e3;
  const double request_s =
      std::max(timeout_for(slowest, setup, t), t.fixed_s ? *t.fixed_s : t.unpredicted_s);
  return worker_start_s + request_s + compile_s;
}

// cuBLASLt runs on every healthy GPU: when it crashes or hangs, the device is at fault, not a tile.
std::optional<std::string> device_fault(const gemm_plan& plan) {
  if (!plan.reference) return std::nullopt;
  std::string message = plan.reference->message;  // may end in an empty stderr tail
  while (!message.empty() &&
         (std::isspace(static_cast<unsigned char>(message.back())) || message.back() == ':'))
    message.pop_back();
  if (plan.reference->status == variant_status::launch_error) return "cuBLASLt failed on it: " + message;
  if (plan.reference->status == variant_status::timeout) return "hung: cuBLASLt gave no result: " + message;
  return std::nullopt;
}

struct dealt_answer {
  nlohmann::json result;
  gemm_plan plan;
};

struct abandoned_attempt : std::runtime_error {
  abandoned_attempt() : std::runtime_error("abandoned") {}
};

// One GPU: each problem compiled on the host (NVRTC, the shared compile cache)
// and measured by a worker process on that GPU, in a thread of its own.
class gpu_device_runner : public device_runner {
 public:
  gpu_device_runner(const devices_job& job, device_choice device,
                    const std::vector<gemm_problem>& problems)
      : job_(job), device_(std::move(device)), problems_(problems) {}
  ~gpu_device_runner() override {
    gpu_device_runner::abandon();  // this class's own: no dynamic binding in a destructor
    if (thread_.joinable()) thread_.join();  // an abandoned attempt ends at its next request
  }
  void start(std::size_t k, std::function<void()> beat,
             std::function<void(attempt_end)> done) override {
    if (thread_.joinable()) thread_.join();  // the previous attempt has posted its end
    thread_ = std::thread([this, p = problems_[k], beat = std::move(beat), done = std::move(done)] {
      attempt_end end;
      try {
        plan_options options = job_.options;
        options.jobs = std::max(1, job_.options.jobs / static_cast<int>(job_.devices.size()));
        options.progress = [beat](std::size_t, std::size_t, std::size_t) { beat(); };
        gemm_plan plan = plan_gemm(p, device_.spec, *job_.compiler, options);
        measure_settings settings = job_.settings;
        settings.on_progress = [this, beat] {
          if (abandoned_) throw abandoned_attempt();
          beat();
        };
        progress_line silent(false);
        measure_on_gpu(plan, device_, settings, job_.host->worker_argv(), "", silent);
        if (const auto why = device_fault(plan)) {
          end.why = *why;
        } else {
          auto answer = std::make_shared<dealt_answer>();
          answer->result = to_json(plan, job_.run);
          answer->result["tool"] = job_.tool_now;
          answer->plan = std::move(plan);
          end.ok = true;
          end.result = std::move(answer);
        }
      } catch (const std::exception& e) {
        end.why = e.what();
      }
      done(std::move(end));
    });
  }
  void abandon() override { abandoned_ = true; }

 private:
  const devices_job& job_;
  device_choice device_;
  const std::vector<gemm_problem>& problems_;
  std::thread thread_;
  std::atomic<bool> abandoned_{false};
};

}  // namespace

std::vector<device_choice> choose_devices(const std::string& list, const host_services& host) {
  // The list's words first: a bad one is a usage error (exit 2) on any machine, GPUs or none.
  std::vector<int> picked;
  if (list != "all") {
    for (const auto& item : split_commas(list)) {
      if (item.empty() || item.size() > 6 ||
          !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw usage_error(
            fmt::format("--devices {}: '{}' is not a device number: give all, or distinct numbers "
                        "such as 0,2,5",
                        list, item));
      const int index = std::stoi(item);
      if (std::find(picked.begin(), picked.end(), index) != picked.end())
        throw usage_error(fmt::format("--devices {}: device {} is named twice", list, index));
      picked.push_back(index);
    }
  }
  const local_devices local = host.devices();
  const int count = static_cast<int>(local.devices.size());
  if (local.devices.empty())
    throw environment_error(
        fmt::format("--devices {}: no CUDA GPU is available here: {}", list, local.why_none));
  if (list == "all")
    for (int i = 0; i < count; ++i) picked.push_back(i);
  for (const int index : picked)
    if (index >= count)
      throw usage_error(fmt::format(
          "--devices {}: device {} does not exist: this machine has {} GPU(s), 0 to {}", list,
          index, count, count - 1));
  std::vector<device_choice> chosen;
  for (int i : picked) {
    chosen.push_back(device_choice{local.devices[i], true, i});
    if (device_model_of(chosen.back().spec) != device_model_of(chosen.front().spec))
      throw usage_error(fmt::format(
          "--devices {}: device {} is a {} and device {} a {}: results are filed per GPU "
          "model, so tune one model per run",
          list, chosen.front().index, chosen.front().spec.name, i, chosen.back().spec.name));
  }
  return chosen;
}

namespace {

// One dealt run: the suite's problems, those a device must tune, and what each has answered.
class dealt_run {
 public:
  dealt_run(const devices_job& job, progress_line& progress)
      : job_(job), problems_(job.suite->problems), progress_(progress) {
    out_.results.assign(problems_.size(), nlohmann::json());
    out_.plans.resize(problems_.size());
  }

  devices_outcome run() {
    answer_from_db();
    std::vector<gemm_problem> todo_problems;
    for (std::size_t i : todo_) todo_problems.push_back(problems_[i].problem);
    std::vector<std::unique_ptr<gpu_device_runner>> runners;
    std::vector<pool_device> pool_devices;
    for (const auto& d : job_.devices) {
      runners.push_back(std::make_unique<gpu_device_runner>(job_, d, todo_problems));
      pool_devices.push_back({d.index, runners.back().get()});
    }
    began_.resize(todo_.size());
    progress_.note(
        fmt::format("dealing {} problem(s) to {} device(s) ({} answered from the tuning database)",
                    todo_.size(), job_.devices.size(), problems_.size() - todo_.size()));
    device_pool pool(std::move(pool_devices), settings(todo_problems));
    collect(pool.run(todo_.size(), events()), pool);
    return std::move(out_);
  }

 private:
  std::string label(std::size_t i) const {
    return fmt::format("{}/{} {} ({})", i + 1, problems_.size(), problems_[i].name,
                       problems_[i].problem.describe());
  }

  // A retired device and a failed problem are said even under --quiet.
  void warn(const std::string& text) {
    progress_.finish();
    tell("tiletune: {}\n", text);
  }

  // Fills todo_ with the suite indices, in suite order, that a device must tune.
  void answer_from_db() {
    for (std::size_t i = 0; i < problems_.size(); ++i) {
      if (job_.answer_from_db) {
        if (auto a = look_up(*job_.db, job_.devices[0], problems_[i].problem, true,
                             job_.compiler->version(), *job_.host)) {
          out_.results[i] = result_from_answer(*job_.db, *a, job_.tool_now);
          progress_.note(fmt::format("{}: answered from the tuning database", label(i)));
          continue;
        }
      }
      todo_.push_back(i);
    }
  }

  pool_settings settings(const std::vector<gemm_problem>& todo_problems) {
    pool_settings settings;
    settings.max_attempts = max_attempts_per_problem;
    settings.stall_s = [this, todo_problems](std::size_t k) {
      return stall_limit_s(todo_problems[k], job_.settings);
    };
    settings.keep_dealing = [this, first = true]() mutable {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - job_.started).count();
      const bool go = job_.budget_s <= 0 || first || elapsed < job_.budget_s;
      first = false;
      if (!go)
        progress_.note(fmt::format("--budget-s {:g} spent after {}: no new problem is dealt",
                                   job_.budget_s, format_seconds(elapsed)));
      return go;
    };
    return settings;
  }

  pool_events events() {
    pool_events events;
    events.started = [this](int dev, std::size_t k, int attempt) {
      began_[k] = std::chrono::steady_clock::now();
      progress_.note(fmt::format(
          "[dev {}] {}: started{}", dev, label(todo_[k]),
          attempt > 1 ? fmt::format(" (attempt {} of {})", attempt, max_attempts_per_problem) : ""));
    };
    events.retired = [this](int dev, const std::string& why) {
      warn(fmt::format(
          "[dev {}] RETIRED: {}; its problem is dealt again or, after {} attempts, failed", dev,
          why, max_attempts_per_problem));
    };
    events.finished = [this](std::size_t k, const problem_outcome& o) { finished(k, o); };
    return events;
  }

  static nlohmann::json faults_json(const problem_outcome& o) {
    nlohmann::json faults = nlohmann::json::array();
    for (const auto& f : o.faults) faults.push_back({{"device", f.device}, {"why", f.why}});
    return faults;
  }

  // A problem's end: a failure said, or its result stored and kept with the device it ran on.
  void finished(std::size_t k, const problem_outcome& o) {
    const std::size_t i = todo_[k];
    if (o.what != problem_outcome::state::done) {
      warn(fmt::format("[dev -] {}: FAILED: {}", label(i), o.why));
      return;
    }
    const auto answer = std::any_cast<std::shared_ptr<dealt_answer>>(o.result);
    nlohmann::json r = std::move(answer->result);
    const auto& d = *std::find_if(job_.devices.begin(), job_.devices.end(),
                                  [&](const auto& c) { return c.index == o.device; });
    if (job_.db && is_measured_result(r)) {
      job_.db->store(record_from_result(r, nlohmann::json(), /*allow_predicted=*/false));
      r["tuning_db"] = {{"file", job_.db->file().string()}, {"answered", false}, {"stored", true}};
    }
    r["ran_on"] = {{"device", o.device},
                   {"name", d.spec.name},
                   {"faults", faults_json(o)}};  // this run's, not stored
    note_done(o.device, i, k, r);
    out_.results[i] = std::move(r);
    out_.plans[i] = std::move(answer->plan);
  }

  void note_done(int device, std::size_t i, std::size_t k, const nlohmann::json& r) {
    const auto& rec = r.value("recommendation", nlohmann::json());
    const auto& vs =
        rec.is_object() ? rec.value("vs_reference", nlohmann::json()) : nlohmann::json();
    progress_.note(fmt::format(
        "[dev {}] {}: {} in {}", device, label(i),
        !rec.is_object() ? std::string("done, no variant ran correctly")
        : vs.is_number() ? fmt::format("ok {:.2f}x cuBLAS", vs.get<double>())
                         : std::string("ok"),
        format_seconds(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - began_[k]).count())));
  }

  // The suite's "failed" and "devices" keys and the problems the budget left out.
  void collect(const std::vector<problem_outcome>& outcomes, const device_pool& pool) {
    for (std::size_t k = 0; k < outcomes.size(); ++k) {
      const auto& o = outcomes[k];
      const auto& sp = problems_[todo_[k]];
      if (o.what == problem_outcome::state::not_run) out_.not_run.push_back(sp.name);
      if (o.what != problem_outcome::state::failed) continue;
      out_.failed.push_back({{"name", sp.name},
                             {"problem", to_json(sp.problem)},
                             {"why", o.why},
                             {"faults", faults_json(o)}});
    }
    for (std::size_t s = 0; s < pool.devices().size(); ++s) {
      const auto& st = pool.devices()[s];
      nlohmann::json d = {{"index", st.index},
                          {"name", job_.devices[s].spec.name},
                          {"retired", st.retired},
                          {"answered", st.answered}};
      if (st.retired) d["why"] = st.why;
      out_.devices.push_back(std::move(d));
    }
  }

  const devices_job& job_;
  const std::vector<suite_problem>& problems_;
  progress_line& progress_;
  devices_outcome out_;
  std::vector<std::size_t> todo_;
  std::vector<std::chrono::steady_clock::time_point> began_;
};

}  // namespace

devices_outcome run_on_devices(const devices_job& job, progress_line& progress) {
  return dealt_run(job, progress).run();
}

}  // namespace tiletune::cli
