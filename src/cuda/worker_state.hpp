// Internal to the measuring worker: what it holds for one problem (operands,
// the verification reference, the timer) and its device buffers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/measure/host_data.hpp"
#include "core/measure/measure_protocol.hpp"
#include "cuda/cublaslt_gemm.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_timer.hpp"
#include "cuda/l2_read_flush.hpp"

namespace tiletune {

struct device_deleter {
  void operator()(void* p) const noexcept { TT_CUDA_NOEXCEPT(cudaFree(p)); }
};
using device_ptr = std::unique_ptr<void, device_deleter>;

device_ptr device_alloc(std::size_t bytes);

constexpr std::size_t workspace_bytes = 32 << 20;

// Everything one worker holds for one problem.
struct gpu_state {
  worker_setup setup;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  device_ptr a, b, c, c0, reference, flush, workspace;
  device_ptr group_rows;  // a grouped problem: its rows per group, 32-bit ints
  device_ptr scale_a, scale_b;  // fp8 with rowwise or block scales (core/measure/host_data.hpp)
  // The rows of C a variant writes (core/gemm/group_slices.hpp); reference_host holds only
  // those. Masked groups leave the rest, which a check requires untouched: poison, or c0_host.
  std::vector<row_range> written_rows;
  bool writes_every_row = true;
  std::vector<unsigned char> c0_host;
  std::size_t a_count = 0, b_count = 0, c_count = 0, flush_bytes = 0;
  std::unique_ptr<l2_read_flush> read_flush;  // --l2-flush read: the kernel that reads `flush`
  std::vector<float> reference_host;  // of the written rows
  reference_summary reference_sums;   // once per run: every variant is checked against it
  std::vector<unsigned char> result_host;  // C as a variant stored it, reused across variants
  std::unique_ptr<kernel_timer> timer;
  std::string timer_note;
  std::int64_t device_bytes = 0;

  std::size_t c_bytes() const { return c_count * static_cast<std::size_t>(element_bytes(setup.problem.elements().c)); }
};

// Creates the context, stream and cuBLASLt handle, uploads random operands,
// computes the fp32 reference and picks the timer.
void setup_gpu(gpu_state& g);

}  // namespace tiletune
