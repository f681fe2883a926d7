#include "cuda/cublaslt_library.hpp"

#include <dlfcn.h>

#include <string>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace tiletune {

namespace {

cublaslt_library open_library() {
  const std::string soname = TILETUNE_CUBLASLT_SONAME;
  const std::string in_toolkit = std::string(TILETUNE_CUDA_LIBRARY_DIR) + "/" + soname;
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string tried = fmt::format("{} ({})", soname, lib ? "" : dlerror());
  if (!lib) {
    lib = dlopen(in_toolkit.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) tried += fmt::format(", {} ({})", in_toolkit, dlerror());
  }
  if (!lib)
    throw environment_error(fmt::format("cannot open cuBLASLt, which times the reference: tried {}; install the CUDA "
                                        "toolkit's cuBLAS or put its folder on LD_LIBRARY_PATH",
                                        tried));
  cublaslt_library l{};
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn) throw environment_error(fmt::format("the cuBLASLt library {} has no {}", soname, name));
  };
  get(l.Create, "cublasLtCreate");
  get(l.Matmul, "cublasLtMatmul");
  get(l.MatmulAlgoConfigGetAttribute, "cublasLtMatmulAlgoConfigGetAttribute");
  get(l.MatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  get(l.MatmulDescCreate, "cublasLtMatmulDescCreate");
  get(l.MatmulDescDestroy, "cublasLtMatmulDescDestroy");
  get(l.MatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  get(l.MatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
  get(l.MatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
  get(l.MatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  get(l.MatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  get(l.MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
  get(l.MatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
  return l;  // the handle stays open for the process's life
}

}  // namespace

const cublaslt_library& cublaslt() {
  static const cublaslt_library library = open_library();
  return library;
}

}  // namespace tiletune
