#pragma once
#include <optional>

namespace tiletune {

// The current SM clock of a CUDA device in MHz, read through NVML (part of
// the driver, opened at run time); nullopt where NVML is not available.
std::optional<double> sm_clock_mhz(int cuda_device);

}  // namespace tiletune
