#include "core/gemm/k_major_copies.hpp"

#include <fmt/format.h>

#include "core/compile/kernel_templates.hpp"
#include "core/errors.hpp"

namespace tiletune {

namespace {
bool misaligned(const gemm_problem& p, std::int64_t elements) {
  return (elements * static_cast<std::int64_t>(element_bytes(p.type))) % 16 != 0;
}
// `elements` rounded up to a multiple of 16 bytes of the problem's elements.
std::int64_t padded_to_16_bytes(const gemm_problem& p, std::int64_t elements) {
  const std::int64_t per16 = 16 / static_cast<std::int64_t>(element_bytes(p.type));
  return (elements + per16 - 1) / per16 * per16;
}
}  // namespace

bool operands_misaligned(const gemm_problem& p) {
  if (misaligned(p, p.lda()) || misaligned(p, p.ldb())) return true;
  if (p.grouped()) return p.groups->count() > 1 && misaligned(p, p.k * p.n);
  return p.batch > 1 && (misaligned(p, p.m * p.k) || misaligned(p, p.k * p.n));
}

misaligned_stride misaligned_strides(const gemm_problem& p) {
  const auto eb = static_cast<std::int64_t>(element_bytes(p.type));
  auto rows = [&](const char* op, char dim, std::int64_t ld) {
    const std::int64_t padded = padded_to_16_bytes(p, ld);
    // The padded problem is one a plan takes only within the limits validate holds every problem
    // to (2^31-1 elements a matrix): past them no option is offered.
    gemm_problem q = p;
    (dim == 'K' ? q.k : dim == 'M' ? q.m : q.n) = padded;
    bool plannable = true;
    try {
      validate(q);
    } catch (const usage_error&) {
      plannable = false;
    }
    return misaligned_stride{fmt::format("{}'s rows ({} {} {} elements, {} bytes apart)", op, dim, ld, to_string(p.type),
                                         ld * eb),
                             fmt::format("{} {}", dim, padded),
                             plannable ? fmt::format("--{} {}", static_cast<char>(dim - 'A' + 'a'), padded) : ""};
  };
  const char a_dim = p.layout.a_transposed ? 'M' : 'K', b_dim = p.layout.b_transposed ? 'K' : 'N';
  const bool a = misaligned(p, p.lda()), b = misaligned(p, p.ldb());
  // Both: each named, and the padding that reads both in place (one dimension where they share it).
  if (a && b && a_dim == b_dim) {
    misaligned_stride s = rows("A", a_dim, p.lda());
    s.what = "A's and B's rows" + s.what.substr(s.what.find(" ("));
    return s;
  }
  if (a && b) {
    const misaligned_stride sa = rows("A", a_dim, p.lda()), sb = rows("B", b_dim, p.ldb());
    return {sa.what + " and " + sb.what, sa.padded + " and " + sb.padded,
            sa.option.empty() || sb.option.empty() ? "" : sa.option + " " + sb.option};
  }
  if (a) return rows("A", a_dim, p.lda());
  if (b) return rows("B", b_dim, p.ldb());
  if (operands_misaligned(p))
    return {fmt::format("the {}' matrices (their strides not multiples of 16 bytes)", p.grouped() ? "groups" : "batch"),
            "", ""};
  return {};
}

std::int64_t k_major_copy_row(const gemm_problem& p) { return padded_to_16_bytes(p, p.k); }

gemm_problem problem_on_k_major_copies(const gemm_problem& p) {
  gemm_problem k = p;
  k.layout = k_major_layout();
  k.k = k_major_copy_row(p);
  return k;
}

k_major_copy k_major_copy_of(const gemm_problem& p, char operand) {
  const bool a = operand == 'a';
  const bool transposed = a ? p.layout.a_transposed : !p.layout.b_transposed;
  // Stored K-major in rows that start on 16 bytes (K itself padded nothing): read where it is.
  if (!transposed && k_major_copy_row(p) == p.k) return {};
  // A grouped problem's A is one matrix of every group's rows (M), its B one matrix per group.
  k_major_copy copy;
  copy.matrices = p.grouped() ? (a ? 1 : p.groups->count()) : p.batch;
  copy.cols = a ? p.m : p.n;
  copy.row = k_major_copy_row(p);
  copy.transposed = transposed;
  copy.bytes = copy.matrices * copy.cols * copy.row * element_bytes(p.type);
  return copy;
}

std::int64_t k_major_copies_bytes(const gemm_problem& p) {
  return k_major_copy_of(p, 'a').bytes + k_major_copy_of(p, 'b').bytes;
}

int k_major_prologue_launches(const gemm_problem& p) {
  return (k_major_copy_of(p, 'a').bytes > 0 ? 1 : 0) + (k_major_copy_of(p, 'b').bytes > 0 ? 1 : 0);
}

std::string k_major_prologue_unlaunchable(const gemm_problem& p) {
  const std::int64_t matrices = p.grouped() ? p.groups->count() : p.batch;
  if (matrices <= 65535 && (k_major_copy_row(p) + 31) / 32 <= 65535) return {};
  return fmt::format("the pre-pass that makes the K-major copies runs a grid of ceil(K / 32) x matrices blocks, each "
                     "at most 65535: K {} and {} matrices",
                     p.k, matrices);
}

namespace {
// The pre-pass of one operand ('a' or 'b') whose copy is `copy`, kernels_templates/common/gemm_transpose.cuh:
// a transpose of an operand stored MN-major (rows K, columns M or N), or a padded copy of one
// stored K-major in unaligned rows.
kernel_launch k_major_copy_launch(const gemm_problem& p, char operand, const k_major_copy& copy) {
  const bool a = operand == 'a';
  const char name = a ? 'A' : 'B';
  const char* mn = a ? "M" : "N";
  const std::int64_t cols = copy.cols, matrices = copy.matrices;
  const std::string elem = element_c_type(a ? p.elements().a : p.elements().b);
  kernel_launch l;
  l.entry = fmt::format("{}{}", kernel_entry_name, kernel_prologue_suffix);
  l.block = {32, 8, 1};
  const char* const count = p.grouped() && !a ? "groups" : "batch";
  if (copy.transposed) {
    l.grid = {(cols + 31) / 32, (copy.row + 31) / 32, matrices};
    l.grid_rule = fmt::format("(ceil({} / 32), ceil({} / 32), {}): one block per 32 x 32 tile of {}'s copy", mn,
                              copy.row == p.k ? "K" : "K padded to 16 bytes", count, name);
  } else {  // a padded row copy: 16 bytes a thread, 256 threads a block
    const std::int64_t chunks = cols * copy.row * static_cast<std::int64_t>(element_bytes(p.type)) / 16;
    l.grid = {(chunks + 255) / 256, 1, matrices};
    l.grid_rule = fmt::format("(ceil({} x K padded to 16 bytes x {} bytes / 16 / 256), 1, {}): one thread per 16 "
                              "bytes of {}'s copy",
                              mn, element_bytes(p.type), count, name);
  }
  kernel_parameter dst{fmt::format("{}_k_major", name), elem + "*", "pointer",
                       fmt::format("{}'s K-major copy, {} rows of {} elements (K{}) per matrix, one after another: "
                                   "this kernel writes it, the GEMM reads it",
                                   name, mn, copy.row, copy.row == p.k ? "" : ", then zeros to 16 bytes"),
                       nullptr};
  dst.buffer_bytes = copy.bytes;
  const std::string stored = a ? stored_as('A', copy.transposed, "M", "K") : stored_as('B', !copy.transposed, "K", "N");
  l.parameters = {
      {std::string(1, name), "const " + elem + "*", "pointer", "device pointer to " + stored, nullptr},
      std::move(dst),
      scalar_parameter("rows", "int", "K", p.k),
      scalar_parameter("cols", "int", mn, cols),
      scalar_parameter("ld", "long long",
                       fmt::format("elements between {}'s rows as stored ({})", name, copy.transposed ? mn : "K"),
                       a ? p.lda() : p.ldb()),
      scalar_parameter("matrix_stride", "long long", fmt::format("elements between {}'s matrices", name), cols * p.k),
      scalar_parameter("row", "int", "elements in a row of the copy: K padded to 16 bytes, the pad written zero",
                       copy.row),
      scalar_parameter("k_major", "int",
                       fmt::format("1: {} is stored K-major (rows padded, not transposed); 0: MN-major", name),
                       copy.transposed ? 0 : 1),
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
    k.meaning = fmt::format("{}'s K-major copy, {} rows of {} elements per matrix (the prologue's launch writes it "
                            "from {})",
                            name, operand == 'a' ? "M" : "N", copy.row, name);
    parameter_named(gemm, operand == 'a' ? "lda" : "ldb").meaning =
        fmt::format("elements between rows of {}'s K-major copy: K{}", name,
                    copy.row == p.k ? "" : " padded to 16 bytes (the GEMM's K too)");
  }
  gemm.prologue = k_major_copy_launches(p);
  gemm.requirements.push_back(
      "K-major copies (_kc): launch each prologue kernel (tiletune_gemm_transpose) before the GEMM, on the same "
      "stream, every time");
}

}  // namespace tiletune
