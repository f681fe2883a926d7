#include "toy_family.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/gemm/kernel_launch.hpp"

namespace tiletune {
namespace {

// The kernel: the common #defines (TT_A_T, TT_B_T, TT_BM, TT_BN) come first
// (render_kernel_source); the signature is the plain tile grid's.
constexpr const char* toy_source = R"(
extern "C" __global__ void tiletune_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc,
                                         long long batch_stride_a, long long batch_stride_b,
                                         long long batch_stride_c, float alpha, float beta, float* workspace,
                                         unsigned* tile_counters) {
  A += blockIdx.z * batch_stride_a;
  B += blockIdx.z * batch_stride_b;
  C += blockIdx.z * batch_stride_c;
  const int tiles_n = (N + TT_BN - 1) / TT_BN;
  const int tile = blockIdx.x + blockIdx.y * gridDim.x;
  const int m0 = tile / tiles_n * TT_BM, n0 = tile % tiles_n * TT_BN;
  if (m0 >= M) return;
  for (int i = threadIdx.x; i < TT_BM * TT_BN; i += blockDim.x) {
    const int m = m0 + i / TT_BN, n = n0 + i % TT_BN;
    if (m >= M || n >= N) continue;
    float acc = 0.f;
    for (int k = 0; k < K; ++k)
      acc += A[TT_A_T ? (long long)k * lda + m : (long long)m * lda + k] *
             B[TT_B_T ? (long long)n * ldb + k : (long long)k * ldb + n];
    float* c = C + (long long)m * ldc + n;
    *c = beta != 0.f ? alpha * acc + beta * *c : alpha * acc;
  }
}
)";

class toy : public gemm_family {
 public:
  std::string_view name() const override { return "toy"; }
  std::string_view summary() const override { return "a test's family: one thread per output, f32"; }
  bool serves(dtype t) const override { return t == dtype::f32; }
  std::vector<tile_config> default_space(dtype) const override {
    std::vector<tile_config> out;
    for (int bm : {16, 32}) {
      tile_config c;
      c.family = kernel_family{this};
      c.block_m = bm;
      c.block_n = 32;
      c.block_k = 1;
      c.stages = 1;
      out.push_back(c);
    }
    return out;
  }
  std::optional<constraint_violation> check(const tile_config& c, const gemm_problem& p,
                                            const device_spec&) const override {
    if (p.type != dtype::f32) return constraint_violation{"dtype", "the toy family runs f32"};
    if (c.split_k != 1) return constraint_violation{"split_k", "the toy family has no split-K"};
    return std::nullopt;
  }
  int threads(const tile_config&) const override { return 128; }
  std::int64_t smem_bytes(const tile_config&, dtype) const override { return 0; }
  std::string id_suffix(const tile_config& c) const override { return c.raster_group > 0 ? raster_id_suffix(c) : ""; }
  void to_json(const tile_config&, nlohmann::json&) const override {}
  bool claims_json(const nlohmann::json&) const override { return false; }
  void from_json(const nlohmann::json&, tile_config&) const override {}
  std::string render(const tile_config&, dtype, layout) const override { return toy_source; }
  kernel_launch describe_launch(const tile_config& c, const gemm_problem& p, const device_spec&) const override {
    return tile_grid_launch(c, p);
  }
  double attainable_efficiency(int) const override { return 0.05; }
  bool efficiency_from_measurements() const override { return false; }
  smem_traffic shared_memory_traffic(const tile_config&, dtype) const override { return {2.0, 8.0}; }
  std::string_view cutlass_op_class() const override { return "simt"; }
  std::string cutlass_shape(const tile_config& c, dtype) const override {
    return fmt::format("none (a naive {}x{} tile)", c.block_m, c.block_n);
  }
};

}  // namespace

const gemm_family& toy_family() {
  static const toy family;
  return family;
}

}  // namespace tiletune
