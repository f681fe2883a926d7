#pragma once
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

namespace tiletune {

// Times the kernels launched between begin_sample and end_sample on a stream,
// one figure per sample (all kernels of a sample summed: a library call may
// launch several). Work issued outside a sample (the L2 flush, restoring C)
// is not counted.
class kernel_timer {
 public:
  virtual ~kernel_timer() = default;
  virtual std::string name() const = 0;  // "cupti" | "cuda_events"
  virtual void begin_sample(cudaStream_t stream) = 0;
  virtual void end_sample(cudaStream_t stream) = 0;
  // Waits for the GPU and returns the samples since the last call, in microseconds.
  virtual std::vector<double> collect(cudaStream_t stream) = 0;
};

// Kernel durations from CUPTI activity records (CONCURRENT_KERNEL): the GPU's
// own start and end timestamps, free of launch overhead. nullptr where CUPTI
// cannot be enabled (permissions, containers); the reason goes to `why`.
std::unique_ptr<kernel_timer> make_cupti_timer(std::string& why);
// The fallback: CUDA events around each sample.
std::unique_ptr<kernel_timer> make_event_timer();

}  // namespace tiletune
