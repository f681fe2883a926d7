#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace tiletune::cli {

std::string preset_list() {
  std::string s;
  for (const auto& d : device_presets()) s += fmt::format("  {:<14} {} ({})\n", d.preset, d.name, d.arch());
  return s;
}

device_choice choose_device(const std::optional<std::string>& gpu, const std::optional<int>& device,
                            const host_services& host) {
  if (gpu && device)
    throw usage_error("--gpu and --device exclude each other: --gpu plans for a preset, --device picks a local GPU");
  if (gpu) return device_choice{find_preset(*gpu), false, -1};
  const local_devices local = host.devices();
  const int index = device.value_or(0);
  if (local.devices.empty()) {
    throw environment_error(fmt::format(
        "no CUDA GPU is available here: {}.\nPlan offline for a GPU with --gpu NAME, for example "
        "--gpu h100-sxm. Presets:\n{}",
        local.why_none, preset_list()));
  }
  if (index < 0 || index >= static_cast<int>(local.devices.size()))
    throw usage_error(fmt::format("--device {} does not exist: this machine has {} GPU(s), 0 to {}", index,
                                  local.devices.size(), local.devices.size() - 1));
  return device_choice{local.devices[index], true, index};
}

}  // namespace tiletune::cli
