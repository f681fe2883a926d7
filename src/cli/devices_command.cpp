#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/results/json_file.hpp"

namespace tiletune::cli {

namespace {
std::string clock_of(const device_spec& d) {
  return d.boost_clock_mhz > 0 ? fmt::format("{:.0f}", d.boost_clock_mhz) : "-";
}
}  // namespace

void add_devices_command(CLI::App& app, run_context& ctx) {
  auto* cmd = app.add_subcommand("devices", "List this machine's GPUs and the presets --gpu accepts");
  cmd->footer(
      "\nExamples:\n  tiletune devices\n  tiletune devices --json\n"
      "\nExits 0 whether or not a GPU is present; without one it says why (the CUDA runtime's "
      "answer)\nand lists the presets that `tiletune gemm --gpu NAME` can plan for offline.\n\n"
      "A local GPU whose name matches a preset takes the preset's peaks (its \"peaks from\"); where\n"
      "the driver reports fewer SMs (a MIG slice) or another clock, they scale by SMs x clock\n"
      "(\"estimated\"). SMs, clock, memory, L2 size and memory bandwidth are always the driver's.");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON instead of tables");
  cmd->callback([&ctx, json] {
    const local_devices local = ctx.host.devices();
    if (*json) {
      nlohmann::json j;
      j["schema"] = "tiletune.devices/1";
      j["driver_version"] = local.driver_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(local.driver_version);
      j["cuda_driver_version"] =
          local.cuda_driver_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(local.cuda_driver_version);
      j["runtime_version"] = local.runtime_version;
      j["devices"] = nlohmann::json::array();
      for (std::size_t i = 0; i < local.devices.size(); ++i) {
        auto d = to_json(local.devices[i]);
        d["index"] = i;
        j["devices"].push_back(d);
      }
      if (local.devices.empty()) j["why_none"] = local.why_none;
      j["presets"] = nlohmann::json::array();
      for (const auto& p : device_presets()) j["presets"].push_back(to_json(p));
      std::fputs((json_text(j) + "\n").c_str(), stdout);
      ctx.exit_code = 0;
      return;
    }
    if (local.devices.empty()) {
      fmt::print("No CUDA GPU on this machine: {}.\n", local.why_none);
      fmt::print("Plan offline with `tiletune gemm --gpu NAME ...`.\n\n");
    } else {
      fmt::print("Local GPUs (driver {}, CUDA {} driver API, runtime {}):\n", local.driver_version,
                 local.cuda_driver_version, local.runtime_version);
      text_table t(
          {"index", "name", "arch", "SMs", "boost MHz", "memory GiB", "bandwidth GB/s", "bf16 TFLOP/s", "preset"});
      for (std::size_t i = 0; i < local.devices.size(); ++i) {
        const auto& d = local.devices[i];
        t.add_row({std::to_string(i), d.name, d.arch(), std::to_string(d.sm_count), clock_of(d),
                   fmt::format("{:.1f}", d.memory_bytes / double(1 << 30)),
                   fmt::format("{:.0f}", d.memory_bandwidth_gbs),
                   fmt::format("{:.0f}{}", d.peak_tflops_bf16, d.peak_source == "estimated" ? " (est.)" : ""),
                   d.preset.empty() ? "-" : d.preset});
      }
      fmt::print("{}\n", t.render());
    }
    fmt::print("Presets for --gpu:\n");
    // The boost clock beside the peaks: a part with fewer SMs but a higher clock (an A10G against an
    // RTX 3090) can be predicted faster on a problem whose blocks do not fill the larger part.
    // Each figure's source: the memory's (the driver's total where a run recorded it or a public log
    // cited it) and the peaks'.
    text_table t({"preset", "name", "arch", "SMs", "boost MHz", "memory GiB", "memory from", "bandwidth GB/s", "f32",
                  "tf32", "bf16 TFLOP/s", "peaks from"});
    for (const auto& d : device_presets()) {
      t.add_row({d.preset, d.name, d.arch(), std::to_string(d.sm_count), clock_of(d),
                 fmt::format("{:.1f}", d.memory_bytes / double(1 << 30)), d.memory_source,
                 fmt::format("{:.0f}", d.memory_bandwidth_gbs), fmt::format("{:.1f}", d.peak_tflops_f32),
                 fmt::format("{:.1f}", d.peak_tflops_tf32), fmt::format("{:.1f}", d.peak_tflops_bf16), d.peak_source});
    }
    fmt::print("{}", t.render());
    fmt::print("\nmemory from: the total CUDA reports to a process (nvidia-smi's memory.total less the driver's "
               "reserve), recorded (on a run in profiles/measured), cited (a public deviceQuery or PyTorch figure) or "
               "inferred (a part with the same memory); nvidia-smi (only its total is citable: 0.4-0.8 GiB above "
               "CUDA's); datasheet (unverified; the planner may think a part has more than it reports). "
               "src/core/device/device_presets.cpp names each source.\n");
    ctx.exit_code = 0;
  });
}

}  // namespace tiletune::cli
