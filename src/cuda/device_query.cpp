#include "cuda/device_query.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "core/device/driver_version.hpp"

namespace tiletune {

namespace {

std::string version_string(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

int attribute(cudaDeviceAttr a, int device) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, a, device) != cudaSuccess) return 0;
  return v;
}

device_spec describe(int index, const cudaDeviceProp& prop) {
  const std::int64_t memory = static_cast<std::int64_t>(prop.totalGlobalMem);
  device_spec d;
  const std::optional<device_spec> preset = preset_for_device_name(prop.name, memory);
  if (preset) d = *preset;
  d.name = prop.name;
  d.compute_capability = prop.major * 10 + prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.max_threads_per_block = prop.maxThreadsPerBlock;
  d.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  d.max_blocks_per_sm = prop.maxBlocksPerMultiProcessor;
  d.registers_per_sm = prop.regsPerMultiprocessor;
  d.smem_per_sm_bytes = static_cast<std::int64_t>(prop.sharedMemPerMultiprocessor);
  d.smem_per_block_optin_bytes = static_cast<std::int64_t>(prop.sharedMemPerBlockOptin);
  d.smem_reserved_per_block_bytes = static_cast<std::int64_t>(prop.reservedSharedMemPerBlock);
  d.l2_bytes = prop.l2CacheSize;
  d.memory_bytes = memory;
  d.memory_source = "driver";
  const double mem_clock_khz = attribute(cudaDevAttrMemoryClockRate, index);
  if (mem_clock_khz > 0 && prop.memoryBusWidth > 0) {
    // Double data rate: two transfers per clock on every bus line.
    d.memory_bandwidth_gbs = 2.0 * mem_clock_khz * 1e3 * (prop.memoryBusWidth / 8.0) / 1e9;
  }
  const double clock_khz = attribute(cudaDevAttrClockRate, index);
  if (clock_khz > 0) d.boost_clock_mhz = clock_khz / 1e3;
  if (preset)
    scale_preset_rates(d, *preset);
  else
    estimate_peaks(d);
  return d;
}

}  // namespace

local_devices query_local_devices() {
  local_devices out;
  int driver = 0, runtime = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
    out.cuda_driver_version = version_string(driver);
    // The kernel module's own version tells drivers of one CUDA release apart.
    out.driver_version = read_nvidia_driver_version();
    if (out.driver_version.empty()) out.driver_version = out.cuda_driver_version;
  }
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) out.runtime_version = version_string(runtime);
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    // The runtime says "driver version is insufficient" also when there is no
    // driver at all: say which it is.
    if (e == cudaErrorInsufficientDriver && driver == 0)
      out.why_none = "no NVIDIA driver is installed (the CUDA runtime found no libcuda)";
    else if (e == cudaErrorInsufficientDriver)
      out.why_none = fmt::format("the NVIDIA driver supports CUDA {}, older than this build's runtime {}; update "
                                 "the driver",
                                 version_string(driver), version_string(runtime));
    else if (e == cudaErrorNoDevice)
      out.why_none = "the NVIDIA driver is installed but sees no GPU";
    else
      out.why_none = fmt::format("{} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) out.devices.push_back(describe(i, prop));
  }
  if (out.devices.empty()) out.why_none = "the CUDA runtime reports no device";
  return out;
}

}  // namespace tiletune
