#pragma once
#include <cstdint>
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/gemm/dtype_table.hpp"
#include "core/gemm/grouped_rows.hpp"

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

// A grouped GEMM (mixture-of-experts): G GEMMs that share N, K, the types, the layout and one
// kernel launch; group g multiplies its rows[g] rows of A by B's matrix g into the same rows of C.
// A and C hold every group's rows (contiguous: one after another; masked: `stride` rows a group,
// its first rows[g] valid), B holds G matrices.
struct gemm_groups {
  std::vector<std::int64_t> rows;
  group_layout layout = group_layout::contiguous;
  std::int64_t stride = 0;  // masked: rows each group owns (at least its most rows); contiguous: 0
  // How the rows came: tokens routed to experts (routing's name, tokens and top_k set), or given.
  std::string routing = "given";
  std::int64_t tokens = 0;
  int top_k = 0;

  int count() const { return static_cast<int>(rows.size()); }
  // The rows of group g that count: its rows, at most the stride when masked.
  std::int64_t valid(int g) const { return layout == group_layout::masked ? std::min(rows[g], stride) : rows[g]; }
  std::int64_t valid_rows() const;  // the rows every group computes, summed
  std::int64_t held_rows() const;   // the rows A and C hold: valid_rows, or count x stride when masked
  std::int64_t m_tiles(std::int64_t bm) const;  // M tiles of bm rows over the groups, none for an empty one
  int computed() const;  // the groups with a valid row: an empty group has no tile, and its B is not read
  // The rows' distribution class, what the tuning key records beside G, N and K: the routing
  // ("uniform", "zipf:1.2") with its tokens and top-k, or "rows#" and a hash of given rows.
  std::string distribution() const;
  friend bool operator==(const gemm_groups&, const gemm_groups&) = default;
};

// The groups of given rows (masked: the stride is the most rows); of `tokens` tokens each routed to
// top_k of `experts` experts (routed_rows).
gemm_groups groups_of_rows(std::vector<std::int64_t> rows, group_layout l);
gemm_groups groups_of_routing(std::int64_t tokens, int top_k, int experts, const expert_routing& r, group_layout l);

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
  // C's element type where it is not the dtype's (fp8's f16 or f32 C, --out-dtype); unset: the row's.
  std::optional<element_type> out;
  // A grouped GEMM when set: batch is 1, m is groups->held_rows(), B holds groups->count() matrices.
  std::optional<gemm_groups> groups;

  bool grouped() const { return groups.has_value(); }
  // Elements of A, B and C in device memory, the whole batch or every group.
  std::int64_t a_elements() const { return m * k * batch; }
  std::int64_t b_elements() const { return k * n * (groups ? groups->count() : batch); }
  // The B a kernel reads: an empty group's is never loaded (it has no tile).
  std::int64_t b_elements_read() const { return k * n * (groups ? groups->computed() : batch); }
  std::int64_t c_elements() const { return m * n * batch; }
  // The rows whose output counts: m x batch, or the groups' valid rows.
  std::int64_t useful_rows() const { return groups ? groups->valid_rows() : m * batch; }

  // A, B, C and accumulator element types, from the dtype's row (C: `out` where set).
  operand_types elements() const;

  // 2*M*N*K per GEMM, times batch (grouped: 2 x valid rows x N x K).
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
  std::string describe() const;  // "4096x4096x4096 bf16 nt", "8192x14336x4096 in 8 groups (...) bf16 nt"
};

// A problem's `out` for a named C type: unset where it is the dtype's own (one key per problem).
std::optional<element_type> normal_output(dtype t, element_type out);

// A grouped problem of these groups (m from them, batch 1).
gemm_problem grouped_problem(gemm_groups g, std::int64_t n, std::int64_t k, dtype t, tiletune::layout l);

// Throws usage_error naming the first bad field. Sizes are bounded so that
// every index the kernels compute fits a 32-bit int per matrix.
void validate(const gemm_problem& p);

nlohmann::json to_json(const gemm_problem& p);
gemm_problem gemm_problem_from_json(const nlohmann::json& j);

}  // namespace tiletune
