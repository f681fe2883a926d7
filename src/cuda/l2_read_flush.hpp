// Internal to the measuring worker: emptying the L2 by reading a buffer (gemm --l2-flush read).
#pragma once
#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

namespace tiletune {

// The read-flush kernel (tt_l2_read_flush) as PTX for compute capability major.minor, from NVRTC;
// throws cuda_error with NVRTC's log where it fails. Needs no GPU.
std::string l2_read_flush_ptx(int major, int minor);

// A kernel that reads a device buffer and keeps nothing of it, so that the L2 is left holding the
// buffer's clean lines (a memset leaves dirty ones). Compiled once, with NVRTC, to PTX for the
// device's architecture; the driver finishes it when it loads.
class l2_read_flush {
 public:
  explicit l2_read_flush(int device);
  ~l2_read_flush();
  l2_read_flush(const l2_read_flush&) = delete;
  l2_read_flush& operator=(const l2_read_flush&) = delete;

  // Reads the first `bytes` of `buffer` (16-byte aligned, as cudaMalloc's are) on `stream`.
  void launch(const void* buffer, std::size_t bytes, cudaStream_t stream) const;

 private:
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
  unsigned* sink_ = nullptr;  // what the kernel would store where its loads summed to a value they never do
  int blocks_ = 0;
};

}  // namespace tiletune
