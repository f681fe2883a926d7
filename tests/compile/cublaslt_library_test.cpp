// cuBLASLt is opened on first use (src/cuda/cublaslt_library.cpp): on a machine
// with the toolkit, GPU or not, it opens and every function tiletune calls resolves.
#include <gtest/gtest.h>

#include "cuda/cublaslt_library.hpp"

TEST(cublaslt_library, opens_and_resolves_every_function_tiletune_calls) {
  const auto& l = tiletune::cublaslt();
  const void* fns[] = {reinterpret_cast<const void*>(l.Create),
                       reinterpret_cast<const void*>(l.Matmul),
                       reinterpret_cast<const void*>(l.MatmulAlgoConfigGetAttribute),
                       reinterpret_cast<const void*>(l.MatmulAlgoGetHeuristic),
                       reinterpret_cast<const void*>(l.MatmulDescCreate),
                       reinterpret_cast<const void*>(l.MatmulDescDestroy),
                       reinterpret_cast<const void*>(l.MatmulDescSetAttribute),
                       reinterpret_cast<const void*>(l.MatmulPreferenceCreate),
                       reinterpret_cast<const void*>(l.MatmulPreferenceDestroy),
                       reinterpret_cast<const void*>(l.MatmulPreferenceSetAttribute),
                       reinterpret_cast<const void*>(l.MatrixLayoutCreate),
                       reinterpret_cast<const void*>(l.MatrixLayoutDestroy),
                       reinterpret_cast<const void*>(l.MatrixLayoutSetAttribute)};
  for (const void* f : fns) EXPECT_NE(f, nullptr);
  // A descriptor made and freed through the pointers: the library works without a GPU.
  cublasLtMatrixLayout_t layout = nullptr;
  ASSERT_EQ(l.MatrixLayoutCreate(&layout, CUDA_R_16BF, 64, 32, 64), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(l.MatrixLayoutDestroy(layout), CUBLAS_STATUS_SUCCESS);
}
