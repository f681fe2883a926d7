// gemm --suite S --devices all|0,2,5: the GPUs named, one worker each, the
// suite's problems dealt to them as they free up (core/tune/fleet/device_pool).
#pragma once
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/gpu_run.hpp"
#include "cli/output.hpp"
#include "core/gemm/gemm_suite.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "core/comma_list.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"

namespace tiletune::cli {

// The local GPUs --devices names: "all", or distinct numbers such as 0,2,5.
// usage_error naming the value for a bad list or GPUs of different models,
// environment_error when there is none. The local GPUs are host.devices().
std::vector<device_choice> choose_devices(const std::string& list, const host_services& host);

// What the dealt run takes from run_gemm.
struct devices_job {
  const gemm_suite* suite = nullptr;
  std::vector<device_choice> devices;
  kernel_compiler* compiler = nullptr;
  plan_options options;  // jobs: the run's compile threads, shared out among the devices
  measure_settings settings;
  tuning_db* db = nullptr;
  bool answer_from_db = false;
  nlohmann::json tool_now;
  run_info run;
  double budget_s = 0;
  std::chrono::steady_clock::time_point started;
  const host_services* host = nullptr;  // the machine's GPUs and measuring worker
};

// Per problem, in suite order: the result (null where no device answered) and
// the plan where tuned now; the problems not started (budget), and the
// suite's "devices" and "failed" keys.
struct devices_outcome {
  std::vector<nlohmann::json> results;
  std::vector<std::optional<gemm_plan>> plans;
  std::vector<std::string> not_run;
  nlohmann::json devices = nlohmann::json::array();
  nlohmann::json failed = nlohmann::json::array();
};
devices_outcome run_on_devices(const devices_job& job, progress_line& progress);

}  // namespace tiletune::cli
