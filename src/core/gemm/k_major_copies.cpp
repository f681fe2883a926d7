#include "core/gemm/k_major_copies.hpp"

#include <fmt/format.h>

#include "core/compile/kernel_templates.hpp"

namespace tiletune {

k_major_copy k_major_copy_of(const gemm_problem& p, char operand) {
  const bool a = operand == 'a';
  if (a ? !p.layout.a_transposed : p.layout.b_transposed) return {};  // stored K-major already
  // A grouped problem's A is one matrix of every group's rows (M), its B one matrix per group.
  k_major_copy copy;
  copy.matrices = p.grouped() ? (a ? 1 : p.groups->count()) : p.batch;
  copy.cols = a ? p.m : p.n;
  copy.bytes = copy.matrices * copy.cols * p.k * element_bytes(p.type);
  return copy;
}

std::int64_t k_major_copies_bytes(const gemm_problem& p) {
  return k_major_copy_of(p, 'a').bytes + k_major_copy_of(p, 'b').bytes;
}

int k_major_prologue_launches(const gemm_problem& p) {
  return (k_major_copy_of(p, 'a').bytes > 0 ? 1 : 0) + (k_major_copy_of(p, 'b').bytes > 0 ? 1 : 0);
}

namespace {
// The transposing pre-pass of one operand ('a' or 'b', stored MN-major: rows K, columns M or N)
// whose copy is `copy`, kernels_templates/common/gemm_transpose.cuh.
kernel_launch k_major_copy_launch(const gemm_problem& p, char operand, const k_major_copy& copy) {
  const bool a = operand == 'a';
  const char name = a ? 'A' : 'B';
  const std::int64_t cols = copy.cols, matrices = copy.matrices;
  const std::string elem = element_c_type(a ? p.elements().a : p.elements().b);
  kernel_launch l;
  l.entry = fmt::format("{}{}", kernel_entry_name, kernel_prologue_suffix);
  l.grid = {(cols + 31) / 32, (p.k + 31) / 32, matrices};
  l.block = {32, 8, 1};
  l.grid_rule = fmt::format("(ceil({} / 32), ceil(K / 32), {}): one block per 32 x 32 tile of {} as stored",
                            a ? "M" : "N", p.grouped() && !a ? "groups" : "batch", name);
  kernel_parameter dst{fmt::format("{}_k_major", name), elem + "*", "pointer",
                       fmt::format("{}'s K-major copy, {} x K row-major per matrix, one after another: this kernel "
                                   "writes it, the GEMM reads it",
                                   name, a ? "M" : "N"),
                       nullptr};
  dst.buffer_bytes = copy.bytes;
  l.parameters = {
      {std::string(1, name), "const " + elem + "*", "pointer",
       "device pointer to " + (a ? stored_as('A', true, "M", "K") : stored_as('B', false, "K", "N")), nullptr},
      std::move(dst),
      scalar_parameter("rows", "int", fmt::format("rows of {} as stored: K", name), p.k),
      scalar_parameter("cols", "int", fmt::format("columns of {} as stored: {}", name, a ? "M" : "N"), cols),
      scalar_parameter("ld", "long long", fmt::format("elements between {}'s rows as stored", name),
                       a ? p.lda() : p.ldb()),
      scalar_parameter("matrix_stride", "long long", fmt::format("elements between {}'s matrices", name), cols * p.k),
  };
  l.requirements = {"launched before the GEMM, on its stream, every time: the GEMM reads what it writes"};
  return l;
}
}  // namespace

std::vector<kernel_launch> k_major_copy_launches(const gemm_problem& p) {
  std::vector<kernel_launch> out;
  for (const char operand : {'a', 'b'})
    if (const k_major_copy copy = k_major_copy_of(p, operand); copy.bytes > 0)
      out.push_back(k_major_copy_launch(p, operand, copy));
  return out;
}

void read_k_major_copies(kernel_launch& gemm, const gemm_problem& p) {
  for (const char operand : {'a', 'b'}) {
    const k_major_copy copy = k_major_copy_of(p, operand);
    if (copy.bytes == 0) continue;
    const char name = operand == 'a' ? 'A' : 'B';
    kernel_parameter& k = parameter_named(gemm, std::string(1, name));
    k.name = fmt::format("{}_k_major", name);
    k.buffer_bytes = copy.bytes;
    k.meaning = fmt::format("{}'s K-major copy, {} x K row-major per matrix (the prologue's launch writes it from {})",
                            name, operand == 'a' ? "M" : "N", name);
    parameter_named(gemm, operand == 'a' ? "lda" : "ldb").meaning =
        fmt::format("elements between rows of {}'s K-major copy: K", name);
  }
  gemm.prologue = k_major_copy_launches(p);
  gemm.requirements.push_back(
      "K-major copies (_kc): launch each prologue kernel (tiletune_gemm_transpose) before the GEMM, on the same "
      "stream, every time");
}

}  // namespace tiletune
