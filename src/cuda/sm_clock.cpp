#include "cuda/sm_clock.hpp"

#include <dlfcn.h>

#include <cuda_runtime_api.h>

namespace tiletune {

namespace {
// The few NVML entry points used, declared here: NVML ships with the driver,
// not the toolkit, so tiletune opens it at run time.
using nvml_device = void*;
using init_fn = int (*)();
using handle_by_pci_fn = int (*)(const char*, nvml_device*);
using clock_fn = int (*)(nvml_device, int, unsigned*);
constexpr int nvml_clock_sm = 1;

struct nvml {
  init_fn init = nullptr;
  handle_by_pci_fn handle_by_pci = nullptr;
  clock_fn clock = nullptr;
  bool ok = false;
  nvml() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    init = reinterpret_cast<init_fn>(dlsym(lib, "nvmlInit_v2"));
    handle_by_pci = reinterpret_cast<handle_by_pci_fn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    clock = reinterpret_cast<clock_fn>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    ok = init && handle_by_pci && clock && init() == 0;
  }
};
}  // namespace

std::optional<double> sm_clock_mhz(int cuda_device) {
  static nvml lib;
  if (!lib.ok) return std::nullopt;
  char pci[32] = {};
  if (cudaDeviceGetPCIBusId(pci, sizeof pci, cuda_device) != cudaSuccess) return std::nullopt;
  nvml_device dev = nullptr;
  unsigned mhz = 0;
  if (lib.handle_by_pci(pci, &dev) != 0 || lib.clock(dev, nvml_clock_sm, &mhz) != 0) return std::nullopt;
  return static_cast<double>(mhz);
}

}  // namespace tiletune
