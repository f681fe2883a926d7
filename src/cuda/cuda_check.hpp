#pragma once
#include <stdexcept>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace tiletune {

// A failed CUDA, cuBLAS or CUPTI call: the call's text, where, and the library's words.
struct cuda_error : std::runtime_error {
  cuda_error(const std::string& what, int code) : std::runtime_error(what), code(code) {}
  int code;
};

void throw_cuda(cudaError_t e, const char* call, const char* file, int line);
void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line);

#define TT_CUDA(call)                                                             \
  do {                                                                            \
    const cudaError_t tt_e_ = (call);                                             \
    if (tt_e_ != cudaSuccess) ::tiletune::throw_cuda(tt_e_, #call, __FILE__, __LINE__); \
  } while (0)

#define TT_CUBLAS(call)                                                                       \
  do {                                                                                        \
    const cublasStatus_t tt_s_ = (call);                                                      \
    if (tt_s_ != CUBLAS_STATUS_SUCCESS) ::tiletune::throw_cublas(tt_s_, #call, __FILE__, __LINE__); \
  } while (0)

// For destructors: report, never throw.
#define TT_CUDA_NOEXCEPT(call)                                                                    \
  do {                                                                                            \
    const cudaError_t tt_e_ = (call);                                                             \
    if (tt_e_ != cudaSuccess)                                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(tt_e_)); \
  } while (0)

// After an error: true when the context is unusable (illegal address, trap...)
// and the process must end; non-sticky errors are cleared.
bool context_is_broken();

}  // namespace tiletune
