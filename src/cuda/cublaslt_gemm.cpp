#include "cuda/cublaslt_gemm.hpp"

#include <stdexcept>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "cuda/cublaslt_library.hpp"
#include "cuda/cuda_check.hpp"

namespace tiletune {

namespace {
// The dtype table names cuBLASLt's types; these are the ones this build knows.
cudaDataType_t cublas_data_type(element_type e) {
  static constexpr std::pair<std::string_view, cudaDataType_t> known[] = {
      {"CUDA_R_32F", CUDA_R_32F},         {"CUDA_R_16F", CUDA_R_16F},         {"CUDA_R_16BF", CUDA_R_16BF},
      {"CUDA_R_8F_E4M3", CUDA_R_8F_E4M3}, {"CUDA_R_8F_E5M2", CUDA_R_8F_E5M2}};
  for (const auto& [name, type] : known)
    if (name == info_of(e).cuda_data_type) return type;
  throw std::invalid_argument(fmt::format("no cudaDataType_t named '{}'", info_of(e).cuda_data_type));
}

cublasComputeType_t compute_type(dtype t) {
  static constexpr std::pair<std::string_view, cublasComputeType_t> known[] = {
      {"CUBLAS_COMPUTE_32F", CUBLAS_COMPUTE_32F}, {"CUBLAS_COMPUTE_32F_FAST_TF32", CUBLAS_COMPUTE_32F_FAST_TF32}};
  for (const auto& [name, type] : known)
    if (name == row_of(t).cublas_compute) return type;
  throw std::invalid_argument(fmt::format("no cublasComputeType_t named '{}'", row_of(t).cublas_compute));
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                              std::int64_t batch) {
  cublasLtMatrixLayout_t l = nullptr;
  TT_CUBLAS(cublaslt().MatrixLayoutCreate(&l, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), ld));
  if (batch > 1) {
    const std::int32_t count = static_cast<std::int32_t>(batch);
    const std::int64_t stride = rows * cols;
    TT_CUBLAS(cublaslt().MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    TT_CUBLAS(cublaslt().MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return l;
}
}  // namespace

cublaslt_gemm::cublaslt_gemm(cublasLtHandle_t handle, const gemm_problem& p, bool accurate, std::size_t workspace)
    : handle_(handle), p_(p), workspace_bytes_(workspace) {
  const operand_types e = p.elements();
  const cublasComputeType_t compute = accurate ? CUBLAS_COMPUTE_32F_PEDANTIC : compute_type(p.type);
  TT_CUBLAS(cublaslt().MatmulDescCreate(&desc_, compute, cublas_data_type(e.accumulator)));
  // cuBLASLt's A is our B: 'n' B (K x N row-major) is an N x K column-major
  // matrix, already B^T; 't' B (N x K row-major) is K x N column-major and
  // needs a transpose. Likewise its B is our A.
  const cublasOperation_t ta = p.layout.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = p.layout.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  TT_CUBLAS(cublaslt().MatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  TT_CUBLAS(cublaslt().MatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  const cudaDataType_t in_a = cublas_data_type(e.b), in_b = cublas_data_type(e.a);  // cuBLASLt's A is our B
  const cudaDataType_t out = accurate ? CUDA_R_32F : cublas_data_type(e.c);
  a_ = p.layout.b_transposed ? make_layout(in_a, p.k, p.n, p.k, p.batch) : make_layout(in_a, p.n, p.k, p.n, p.batch);
  b_ = p.layout.a_transposed ? make_layout(in_b, p.m, p.k, p.m, p.batch) : make_layout(in_b, p.k, p.m, p.k, p.batch);
  c_ = make_layout(out, p.n, p.m, p.n, p.batch);
}

bool cublaslt_gemm::set_scales(const void* a_scales, const void* b_scales) {
  // cuBLASLt's A is our B. Rowwise: a vector each (its A's N, its B's M); block: 128 x 128 blocks
  // of B (the weights), 1 x 128 of A (cuBLAS 12.9 and later, Hopper).
  const bool block = p_.scaling == scaling_mode::block;
  const std::int32_t its_a = block ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
  const std::int32_t its_b = block ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
  auto set = [&](cublasLtMatmulDescAttributes_t what, const void* value, std::size_t bytes) {
    return cublaslt().MatmulDescSetAttribute(desc_, what, value, bytes) == CUBLAS_STATUS_SUCCESS;
  };
  return set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &its_a, sizeof its_a) &&
         set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &its_b, sizeof its_b) &&
         set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &b_scales, sizeof b_scales) &&
         set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &a_scales, sizeof a_scales);
}

cublaslt_gemm::~cublaslt_gemm() {
  if (a_) cublaslt().MatrixLayoutDestroy(a_);
  if (b_) cublaslt().MatrixLayoutDestroy(b_);
  if (c_) cublaslt().MatrixLayoutDestroy(c_);
  if (desc_) cublaslt().MatmulDescDestroy(desc_);
}

int cublaslt_gemm::algorithms(int count) {
  cublasLtMatmulPreference_t pref = nullptr;
  TT_CUBLAS(cublaslt().MatmulPreferenceCreate(&pref));
  const std::uint64_t ws = workspace_bytes_;
  TT_CUBLAS(cublaslt().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  heuristics_.resize(static_cast<std::size_t>(std::max(count, 1)));
  int returned = 0;
  const cublasStatus_t s = cublaslt().MatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, c_, pref, count,
                                                          heuristics_.data(), &returned);
  cublaslt().MatmulPreferenceDestroy(pref);
  TT_CUBLAS(s);
  heuristics_.resize(static_cast<std::size_t>(returned));
  return returned;
}

std::string cublaslt_gemm::algorithm_name(int index) const {
  const auto& algo = heuristics_.at(static_cast<std::size_t>(index)).algo;
  int id = -1, tile = -1, stages = -1, splitk = -1;
  std::size_t written = 0;
  cublaslt().MatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written);
  cublaslt().MatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written);
  cublaslt().MatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &written);
  cublaslt().MatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &written);
  return fmt::format("algo {} tile {} stages {} splitk {}", id, tile, stages, splitk);
}

void cublaslt_gemm::run(int index, const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const {
  const float alpha = static_cast<float>(p_.alpha), beta = static_cast<float>(p_.beta);
  // cuBLASLt's A is our B, its B our A.
  TT_CUBLAS(cublaslt().Matmul(handle_, desc_, &alpha, b, a_, a, b_, &beta, c, c_, c, c_,
                           &heuristics_.at(static_cast<std::size_t>(index)).algo, workspace, workspace_bytes_, stream));
}

cublaslt_group_loop::cublaslt_group_loop(cublasLtHandle_t handle, const gemm_problem& p, bool accurate,
                                         std::size_t workspace_bytes)
    : slices_(group_slices(p)) {
  const operand_types e = p.elements();
  a_bytes_ = static_cast<std::size_t>(element_bytes(e.a));
  b_bytes_ = static_cast<std::size_t>(element_bytes(e.b));
  c_bytes_ = accurate ? 4 : static_cast<std::size_t>(element_bytes(e.c));
  if (slices_.empty()) slices_.push_back(group_slice{0, p, 0, 0, 0, 0});  // a plain problem: one GEMM
  for (const group_slice& s : slices_) {
    gemms_.push_back(std::make_unique<cublaslt_gemm>(handle, s.problem, accurate, workspace_bytes));
    if (gemms_.back()->algorithms(1) < 1) ready_ = false;
  }
}

std::string cublaslt_group_loop::algorithm_name() const {
  if (gemms_.size() == 1) return gemms_[0]->algorithm_name(0);
  return fmt::format("a loop of {} cuBLASLt GEMMs, one per group with rows (first: {})", gemms_.size(),
                     gemms_[0]->algorithm_name(0));
}

void cublaslt_group_loop::run(const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const {
  for (std::size_t i = 0; i < slices_.size(); ++i) {
    const group_slice& s = slices_[i];
    gemms_[i]->run(0, static_cast<const char*>(a) + static_cast<std::size_t>(s.a_offset) * a_bytes_,
                   static_cast<const char*>(b) + static_cast<std::size_t>(s.b_offset) * b_bytes_,
                   static_cast<char*>(c) + static_cast<std::size_t>(s.c_offset) * c_bytes_, workspace, stream);
  }
}

}  // namespace tiletune
