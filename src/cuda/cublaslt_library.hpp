#pragma once
// cuBLASLt, opened on first use (dlopen) rather than linked: loading it runs
// its initializers, about 0.1 s, and every tiletune command paid that at start
// though only a GPU run's worker calls it. The functions tiletune calls, by
// pointer, with cublasLt.h's own types.
#include <cublasLt.h>

namespace tiletune {

struct cublaslt_library {
  decltype(&::cublasLtCreate) Create;
  decltype(&::cublasLtMatmul) Matmul;
  decltype(&::cublasLtMatmulAlgoConfigGetAttribute) MatmulAlgoConfigGetAttribute;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
  decltype(&::cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute;
};

// The library, opened once (thread-safe): the toolkit's soname through the
// usual search (LD_LIBRARY_PATH, the loader's cache), then the toolkit's
// library folder of the build. Throws environment_error naming what it tried.
const cublaslt_library& cublaslt();

}  // namespace tiletune
