// Compiles a kernel template's CUDA C++ for the host, so that its own source runs on the CPU
// (tests/compile/simt_host_run_test.cpp): the CUDA keywords mean nothing, threadIdx and
// blockIdx are each host thread's own, __syncthreads is a barrier of the block's threads, and
// extern shared memory is one buffer the harness gives each block in turn. Enough for
// kernels of plain C++ (the simt family); not for the PTX of the tensor-core families.
#pragma once
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__
#define __shared__
#define __align__(n)

struct dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 gridDim, blockDim;
inline std::barrier<>* tt_host_block_barrier = nullptr;
inline void __syncthreads() { tt_host_block_barrier->arrive_and_wait(); }

struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
using std::max;
using std::min;
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
