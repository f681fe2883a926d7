// tiletune_standins: the tiletune CLI with test doubles injected through the
// CLI library (DESIGN.md, Tests), so the cli and schema tests can run commands
// that measure on a machine without a GPU. Built with the tests only; the
// shipped tiletune reads no such setting.
//
//   tiletune_standins [--standin-gpus PRESET,PRESET,...] [--standin-worker PROGRAM] COMMAND ...
//
// --standin-gpus: the local GPUs are these presets (device 0, 1, ... in that
//   order); said on stderr when a command first asks for them.
// --standin-worker: measuring workers are PROGRAM (tests/support/fake_worker)
//   instead of `tiletune_standins __worker`.
// Everything from COMMAND on is tiletune's own command line.
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/gemm_devices.hpp"
#include "cli/host_services.hpp"
#include "cli/run.hpp"
#include "core/device/device_spec.hpp"
#include "core/errors.hpp"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  tiletune::cli::host_services host = tiletune::cli::production_services();
  std::vector<char*> rest{argv[0]};
  int i = 1;
  for (; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag != "--standin-gpus" && flag != "--standin-worker") break;
    if (i + 1 >= argc) {
      fmt::print(stderr, "tiletune_standins: {} needs a value\n", flag);
      return tiletune::exit_usage;
    }
    const std::string value = argv[i + 1];
    if (flag == "--standin-worker") {
      host.worker_argv = [value] { return std::vector<std::string>{value}; };
      continue;
    }
    tiletune::local_devices stand_ins;
    try {
      if (!value.empty())
        for (const auto& name : tiletune::split_commas(value))
          stand_ins.devices.push_back(tiletune::find_preset(name));
    } catch (const std::exception& e) {
      fmt::print(stderr, "tiletune_standins: --standin-gpus {}: {}\n", value, e.what());
      return tiletune::exit_usage;
    }
    if (stand_ins.devices.empty()) stand_ins.why_none = "no stand-in GPU (--standin-gpus is empty)";
    auto said = std::make_shared<std::once_flag>();
    host.devices = [stand_ins, value, said] {
      std::call_once(*said, [&] {
        fmt::print(
            stderr,
            "tiletune: --standin-gpus {}: stand-in devices for tests, not this machine's GPUs\n",
            value);
      });
      return stand_ins;
    };
  }
  for (; i < argc; ++i) rest.push_back(argv[i]);
  rest.push_back(nullptr);
  return tiletune::cli::run(static_cast<int>(rest.size()) - 1, rest.data(), std::move(host));
}
