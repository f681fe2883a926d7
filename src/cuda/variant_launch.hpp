// Internal to the measuring worker: a variant's launch on the worker's operands,
// bound from its family's description (core/gemm/kernel_launch.hpp), so that the
// worker launches every family the same way.
#pragma once
#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/measure/measure_protocol.hpp"
#include "cuda/worker_state.hpp"

namespace tiletune {

class variant_launch {
 public:
  // Binds r.launch's parameters: the operands' pointers, their tensor maps (built
  // from r.config by its family), the scalars, and scratch buffers that it
  // allocates and zeroes on g.stream. Throws for a parameter it cannot bind.
  variant_launch(const measure_request& r, cudaKernel_t kernel, const gpu_state& g);
  variant_launch(const variant_launch&) = delete;
  variant_launch& operator=(const variant_launch&) = delete;

  // One launch on the worker's stream.
  void operator()();
  // Device memory of the scratch buffers.
  std::int64_t scratch_bytes() const { return scratch_bytes_; }

 private:
  struct alignas(64) slot {
    unsigned char bytes[128];  // the largest argument: a CUtensorMap
  };
  std::vector<slot> slots_;
  std::vector<void*> args_;
  std::vector<device_ptr> scratch_;
  cudaLaunchAttribute cluster_{};
  cudaLaunchConfig_t config_{};
  cudaKernel_t kernel_ = nullptr;
  std::int64_t scratch_bytes_ = 0;
};

}  // namespace tiletune
