// Internal to the measuring worker: a variant's launch on the worker's operands,
// bound from its family's description (core/gemm/kernel_launch.hpp), so that the
// worker launches every family the same way.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/measure/measure_protocol.hpp"
#include "cuda/worker_state.hpp"

namespace tiletune {

class variant_launch {
 public:
  // Binds r.launch's parameters, and those of each kernel of its prologue (found in `library` by
  // entry name): the operands' pointers, their tensor maps (built from r.config by its family),
  // the scalars, scratch buffers that it allocates and zeroes on g.stream, and one buffer per
  // K-major copy that every launch naming it shares. Throws for a parameter it cannot bind.
  variant_launch(const measure_request& r, cudaKernel_t kernel, cudaLibrary_t library, const gpu_state& g);
  variant_launch(const variant_launch&) = delete;
  variant_launch& operator=(const variant_launch&) = delete;

  // The prologue's kernels, then the variant's, on the worker's stream.
  void operator()();
  // Device memory of the scratch buffers (the K-major copies included).
  std::int64_t scratch_bytes() const { return scratch_bytes_; }
  // The variant's clusters the GPU holds at once, where its grid was capped there (0: not asked).
  int clusters_at_once() const { return clusters_at_once_; }

 private:
  struct alignas(64) slot {
    unsigned char bytes[128];  // the largest argument: a CUtensorMap
  };
  // One kernel with its arguments bound; not moved once bound (args point into slots, the
  // configuration at the cluster attribute).
  struct bound_kernel {
    std::vector<slot> slots;
    std::vector<void*> args;
    cudaLaunchAttribute cluster{};
    cudaLaunchConfig_t config{};
    cudaKernel_t kernel = nullptr;
  };
  void bind(bound_kernel& k, const measure_request& r, const kernel_launch& l, const gpu_state& g);
  void* k_major_copy(char operand, std::int64_t bytes, const gpu_state& g);
  void cap_clusters(bound_kernel& k);

  std::vector<std::unique_ptr<bound_kernel>> kernels_;  // the prologue's, then the variant's
  std::vector<device_ptr> scratch_;
  void* copies_[2] = {nullptr, nullptr};  // A's and B's K-major copies
  std::int64_t copy_bytes_[2] = {0, 0};
  std::int64_t scratch_bytes_ = 0;
  int clusters_at_once_ = 0;
};

}  // namespace tiletune
