#pragma once
// K-major copies: a kernel that reads both operands K-major runs a problem that stores one
// MN-major (A as K x M, layout 't'; B as K x N, layout 'n') on copies. A transposing pre-pass
// (tiletune_gemm_transpose, kernels_templates/common/gemm_transpose.cuh, compiled into the same
// cubin) first writes each such operand K-major into a scratch buffer, a launch of the variant's
// kernel_launch::prologue; the GEMM then runs as layout nt on the copies. Both kernels are timed,
// together, as the variant (a family's "_kc" variants: tf32 and fp8 where the hardware transposes
// only 16-bit elements).
//
// The copies' rows are K padded to 16 bytes, the pad zeros: a problem whose rows or matrices start
// off 16-byte boundaries (K = 50257, a vocabulary's backward; an odd N stored K x N), which neither
// TMA nor 16-byte copies can read where it is, runs on copies too, every operand whose rows are
// not aligned copied (a K-major one too: rows padded, not transposed), and the GEMM on them runs
// K padded (the pad's products are zero).
#include <cstdint>
#include <string>
#include <vector>

#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/problem.hpp"

namespace tiletune {

// The layout a GEMM runs on K-major copies: nt (A M x K and B N x K, rows of K elements).
inline layout k_major_layout() { return layout{false, true}; }
// Whether a layout stores an operand MN-major (every layout but nt).
inline bool has_mn_major_operand(layout l) { return l.a_transposed || !l.b_transposed; }

// Whether vector loads and TMA cannot read the operands where they are: a row of A or B (or a
// batch's or a group's matrix) starts off a 16-byte boundary.
bool operands_misaligned(const gemm_problem& p);
// The misaligned strides, in words ("A's rows (K 50257 bf16 elements, 100514 bytes apart)"; both
// operands' where both are, "... and B's rows (...)"), and the dimensions whose padding to 16 bytes of
// elements aligns them all ("K 50264", as options "--k 50264"; "M 1008 and N 1008", "--m 1008 --n
// 1008"); all "" where none is (and the padding "" where the stride is a batch's or the groups').
// option: the flag that plans the padded problem ("--k 8"), empty where that problem is past
// validate's limits (2^31-1 elements a matrix).
struct misaligned_stride {
  std::string what, padded, option;
};
misaligned_stride misaligned_strides(const gemm_problem& p);
// The copies' row length: K rounded up to 16 bytes of elements.
std::int64_t k_major_copy_row(const gemm_problem& p);
// The problem the GEMM runs on the copies: layout nt, K the copies' row (pad products are zero).
gemm_problem problem_on_k_major_copies(const gemm_problem& p);

// One operand's K-major copy ('a' or 'b'): its matrices (a grouped problem's B one per group, its A
// one of every group's rows), each `cols` (M or N) x `row` (K padded), and their bytes; all 0
// where the problem stores the operand K-major in aligned rows. The pre-pass's launch and the
// scratch both size from it.
struct k_major_copy {
  std::int64_t matrices = 0, cols = 0, row = 0, bytes = 0;
  bool transposed = false;  // stored MN-major (a transpose), or K-major in unaligned rows (a padded copy)
};
k_major_copy k_major_copy_of(const gemm_problem& p, char operand);
// Both operands' copies' bytes, and what the pre-pass streams (each copied byte read and written).
std::int64_t k_major_copies_bytes(const gemm_problem& p);
inline double k_major_prologue_bytes(const gemm_problem& p) {
  return 2.0 * static_cast<double>(k_major_copies_bytes(p));
}
int k_major_prologue_launches(const gemm_problem& p);
// Why the pre-pass cannot launch (its grid's y, ceil(row / 32), and z, the matrices, at most
// 65535), or "" where it can.
std::string k_major_prologue_unlaunchable(const gemm_problem& p);

// Every pre-pass launch the problem needs, in the order they run (A's, then B's).
std::vector<kernel_launch> k_major_copy_launches(const gemm_problem& p);
// A pointer-and-stride GEMM launch (tile_grid_launch of the problem in layout nt) made to read the
// copies: each copied operand's pointer parameter becomes its copy ("A_k_major", sized, which the
// worker binds to the buffer the prologue writes), and the prologue is added.
void read_k_major_copies(kernel_launch& gemm, const gemm_problem& p);

}  // namespace tiletune
