#pragma once
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/host_services.hpp"
#include "core/device/device_spec.hpp"

namespace tiletune::cli {

// What every command shares: the command line, the exit code its callback sets,
// and the machine's GPUs and measuring worker (production_services() but in tests).
struct run_context {
  std::string command_line;
  int exit_code = 0;
  host_services host;
};

void add_devices_command(CLI::App& app, run_context& ctx);
void add_gemm_command(CLI::App& app, run_context& ctx);
void add_batch_command(CLI::App& app, run_context& ctx);
void add_compare_command(CLI::App& app, run_context& ctx);
void add_check_command(CLI::App& app, run_context& ctx);
void add_db_command(CLI::App& app, run_context& ctx);
void add_report_command(CLI::App& app, run_context& ctx);

// The GPU a command plans for: a preset (--gpu), a local GPU (--device), or
// local device 0. `live` says whether it is a GPU on this machine.
struct device_choice {
  device_spec spec;
  bool live = false;
  int index = -1;
};
// Throws usage_error for an unknown preset or device index, and
// environment_error when no GPU is present and no preset was named.
device_choice choose_device(const std::optional<std::string>& gpu, const std::optional<int>& device,
                            const host_services& host);

// The presets as one line each, for messages and --help.
std::string preset_list();

}  // namespace tiletune::cli
