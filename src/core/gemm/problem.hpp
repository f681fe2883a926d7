#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/gemm/dtype_table.hpp"

namespace tiletune {

// Layout letters give A then B: 'n' is stored as the math says (A is M x K,
// B is K x N, both row-major), 't' is stored transposed. "nt" is x @ W.T.
struct layout {
  bool a_transposed = false;
  bool b_transposed = false;
  std::string name() const;
  friend bool operator==(const layout&, const layout&) = default;
};

layout parse_layout(std::string_view text);

struct gemm_problem {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
  dtype type = dtype::f32;
  tiletune::layout layout;
  double alpha = 1.0;
  double beta = 0.0;
  scaling_mode scaling = scaling_mode::none;

  // A, B, C and accumulator element types, from the dtype's row.
  operand_types elements() const;

  // 2*M*N*K per GEMM, times batch.
  double flops() const;
  // Device bytes of A, B and C for the whole batch, each at its own element size.
  std::int64_t operand_bytes() const;
  // The fewest bytes any kernel moves through DRAM: A and B read once, C written once (and
  // read once more when beta != 0). Over a time, the bandwidth a memory-bound GEMM drew.
  std::int64_t least_traffic_bytes() const;
  // Leading dimensions as the kernels and cuBLAS see them (row-major storage).
  std::int64_t lda() const;
  std::int64_t ldb() const;
  std::int64_t ldc() const { return n; }
  std::string describe() const;  // "4096x4096x4096 bf16 nt"
};

// Throws usage_error naming the first bad field. Sizes are bounded so that
// every index the kernels compute fits a 32-bit int per matrix.
void validate(const gemm_problem& p);

nlohmann::json to_json(const gemm_problem& p);
gemm_problem gemm_problem_from_json(const nlohmann::json& j);

}  // namespace tiletune
