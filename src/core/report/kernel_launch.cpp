#include "core/report/kernel_launch.hpp"

#include <fmt/format.h>

#include "core/compile/kernel_templates.hpp"
#include "core/measure/measure_protocol.hpp"

namespace tiletune {

std::string element_c_type(dtype t) { return element_bytes(t) == 4 ? "float" : "unsigned short"; }

std::string stored_as(char matrix, bool transposed, const char* rows, const char* cols) {
  return transposed ? fmt::format("{} stored {} x {} row-major (layout '{}': op({}) is its transpose)", matrix, cols,
                                  rows, 't', matrix)
                    : fmt::format("{} stored {} x {} row-major (layout '{}')", matrix, rows, cols, 'n');
}

kernel_parameter scalar_parameter(std::string name, std::string type, std::string meaning, nlohmann::json value) {
  return kernel_parameter{std::move(name), std::move(type), "scalar", std::move(meaning), std::move(value)};
}

// The parameters of the simt and mma templates (kernels_templates/*.cu), in
// the order gemm_worker.cpp passes them.
std::vector<kernel_parameter> pointer_stride_parameters(const gemm_problem& p) {
  const std::string elem = element_c_type(p.type);
  const std::string bits = element_bytes(p.type) == 2
                               ? fmt::format(" ({} bits: pass a {}*)", to_string(p.type),
                                             p.type == dtype::bf16 ? "__nv_bfloat16" : "__half")
                               : "";
  const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  return {
      {"A", "const " + elem + "*", "pointer",
       "device pointer to " + stored_as('A', p.layout.a_transposed, "M", "K") + bits, nullptr},
      {"B", "const " + elem + "*", "pointer",
       "device pointer to " + stored_as('B', p.layout.b_transposed, "K", "N") + bits, nullptr},
      {"C", elem + "*", "pointer",
       "device pointer to C stored M x N row-major" + bits + "; read only when beta != 0", nullptr},
      scalar_parameter("M", "int", "rows of C and op(A)", p.m),
      scalar_parameter("N", "int", "columns of C and op(B)", p.n),
      scalar_parameter("K", "int", "the reduction dimension", p.k),
      scalar_parameter("lda", "int", "elements between rows of A as stored", p.lda()),
      scalar_parameter("ldb", "int", "elements between rows of B as stored", p.ldb()),
      scalar_parameter("ldc", "int", "elements between rows of C", p.ldc()),
      scalar_parameter("batch_stride_a", "long long", "elements between the batch's A matrices (grid z picks the matrix)",
             p.m * p.k),
      scalar_parameter("batch_stride_b", "long long", "elements between the batch's B matrices", p.k * p.n),
      scalar_parameter("batch_stride_c", "long long", "elements between the batch's C matrices", p.m * p.n),
      scalar_parameter("alpha", "float", "scale of op(A) * op(B)", alpha),
      scalar_parameter("beta", "float", "scale of the old C (0: C is not read)", beta),
      {"workspace", "float*", "pointer",
       "split-K only (else pass nullptr): device buffer of workspace_bytes for the fp32 partial sums", nullptr},
      {"tile_counters", "unsigned*", "pointer",
       "split-K only (else pass nullptr): tile_counters 32-bit counters, zeroed once before the first launch "
       "(the kernel leaves them zero)",
       nullptr},
  };
}

// simt and mma: one block per BM x BN tile of C, the batch on grid z.
kernel_launch tile_grid_launch(const tile_config& c, const gemm_problem& p) {
  const launch_shape s = launch_shape_for(c, p);
  kernel_launch l;
  l.entry = kernel_entry_name;
  l.grid = {s.grid_x, s.grid_y, s.grid_z};
  l.block = {s.threads, 1, 1};
  l.dynamic_smem_bytes = s.dynamic_smem_bytes;
  l.grid_rule = c.split_k > 1 ? fmt::format("(ceil(M / {}), ceil(N / {}), batch * {}): split-K in {} slices of K",
                                            c.block_m, c.block_n, c.split_k, c.split_k)
                              : fmt::format("(ceil(M / {}), ceil(N / {}), batch)", c.block_m, c.block_n);
  l.parameters = pointer_stride_parameters(p);
  l.requirements = {
      "the tile constants are fixed; M, N, K, the strides, alpha and beta are run-time values, so any shape of this "
      "dtype and layout runs (edge tiles are predicated) with the grid given by grid_rule",
      "each matrix must be indexable with 32-bit ints (M*K, K*N, M*N under 2^31 elements)",
      "16-byte aligned pointers and leading dimensions give vector loads; others take a slower element-wise path",
      "above 48 KiB of dynamic shared memory, set cudaFuncAttributeMaxDynamicSharedMemorySize "
      "(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) to dynamic_smem_bytes before the launch",
  };
  if (c.split_k > 1)
    l.requirements.push_back(fmt::format(
        "split-K: workspace_bytes = {} (ceil(M/{}) * ceil(N/{}) * batch * {} * {} * {} * 4) and tile_counters = {} "
        "(one per output tile) for this problem",
        s.workspace_bytes, c.block_m, c.block_n, c.split_k, c.block_m, c.block_n, s.tile_counters));
  return l;
}

}  // namespace tiletune
