#pragma once
#include <memory>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "core/gemm/group_slices.hpp"
#include "core/gemm/problem.hpp"

namespace tiletune {

// A row-major GEMM of tiletune's problem (any layout, batch, alpha, beta)
// through cuBLASLt, which is column-major: C^T = op(B)^T op(A)^T, so B is
// cuBLASLt's "A" and A its "B", with m = N and n = M.
class cublaslt_gemm {
 public:
  // accurate: fp32 output and pedantic fp32 compute, the verification
  // reference. Otherwise the problem's own types (TF32 compute for tf32), the
  // timing reference.
  cublaslt_gemm(cublasLtHandle_t handle, const gemm_problem& p, bool accurate, std::size_t workspace_bytes);
  ~cublaslt_gemm();
  cublaslt_gemm(const cublaslt_gemm&) = delete;
  cublaslt_gemm& operator=(const cublaslt_gemm&) = delete;

  // fp8 with rowwise or block scales: the device scales of A and B (core/measure/host_data.hpp's
  // layouts; cuBLASLt reads its own, the same count of floats: a timing reference only). Call
  // before algorithms(). False where this cuBLASLt does not know the scale modes.
  bool set_scales(const void* a_scales, const void* b_scales);
  // Up to `count` algorithms from cuBLASLt's heuristic, best guess first.
  int algorithms(int count);
  std::string algorithm_name(int index) const;
  // C = alpha op(A) op(B) + beta C with algorithm `index`.
  void run(int index, const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const;

 private:
  cublasLtHandle_t handle_;
  gemm_problem p_;
  std::size_t workspace_bytes_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> heuristics_;
};

// A grouped problem as a loop of cuBLASLt GEMMs, one per group with rows, each with the first
// algorithm of cuBLASLt's heuristic for its shape: the verification reference (accurate) and the
// speed reference of grouped variants. A plain problem is one GEMM.
class cublaslt_group_loop {
 public:
  cublaslt_group_loop(cublasLtHandle_t handle, const gemm_problem& p, bool accurate, std::size_t workspace_bytes);
  // Whether cuBLASLt has an algorithm for every group's GEMM.
  bool ready() const { return ready_; }
  std::string algorithm_name() const;
  void run(const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const;

 private:
  std::vector<group_slice> slices_;
  std::vector<std::unique_ptr<cublaslt_gemm>> gemms_;
  std::size_t a_bytes_ = 0, b_bytes_ = 0, c_bytes_ = 0;  // per element, C as written
  bool ready_ = true;
};

}  // namespace tiletune
