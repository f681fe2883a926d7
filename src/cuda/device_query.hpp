#pragma once
#include <string>
#include <vector>

#include "core/device/device_spec.hpp"

namespace tiletune {

struct local_devices {
  std::vector<device_spec> devices;
  std::string driver_version;       // the kernel driver's ("580.159.04"), else the CUDA driver API's; empty: no driver
  std::string cuda_driver_version;  // the CUDA driver API's ("13.0"), empty when there is no driver
  std::string runtime_version;
  std::string why_none;  // when devices is empty: what the CUDA runtime said
};

// Asks the CUDA runtime which GPUs this machine has. Never throws and never
// needs a GPU: on a machine without one it says why in why_none.
local_devices query_local_devices();

}  // namespace tiletune
