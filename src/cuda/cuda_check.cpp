#include "cuda/cuda_check.hpp"

#include <cstdio>

#include <fmt/format.h>

namespace tiletune {

void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw cuda_error(fmt::format("{}:{}: {}: {} ({})", file, line, call, cudaGetErrorString(e), cudaGetErrorName(e)),
                   static_cast<int>(e));
}

void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  throw cuda_error(fmt::format("{}:{}: {}: cuBLAS status {}", file, line, call, static_cast<int>(s)),
                   static_cast<int>(s));
}

bool context_is_broken() {
  (void)cudaGetLastError();  // clears an error that is not sticky
  return cudaDeviceSynchronize() != cudaSuccess;
}

}  // namespace tiletune
