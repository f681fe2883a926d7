#include "core/gemm/families/wgmma/wgmma_tensor_map.hpp"

#include <stdexcept>

#include "core/gemm/families/wgmma/wgmma_family.hpp"

namespace tiletune {

tensor_map_spec wgmma_tensor_map_for(const gemm_problem& stored, const tile_config& c, char operand) {
  // With K-major copies the maps are the copies' (layout nt), at the copies' addresses.
  const gemm_problem p = wgmma_kernel_problem(c, stored);
  if (operand != 'a' && operand != 'b' && operand != 'c')
    throw std::invalid_argument("tensor_map_for: operand must be 'a', 'b' or 'c'");
  tensor_map_spec s;
  // A's and B's element type, or C's for the TMA-store epilogue (bf16 for fp8 inputs).
  const element_type e = operand == 'c' ? p.elements().c : row_of(p.type).a;
  s.type = e == element_type::f16    ? tensor_map_spec::element::f16
           : e == element_type::bf16 ? tensor_map_spec::element::bf16
           : element_bytes(e) == 1   ? tensor_map_spec::element::u8
                                     : tensor_map_spec::element::f32;
  const std::uint64_t eb = static_cast<std::uint64_t>(element_bytes(e));
  if (operand == 'c') {
    // The TMA-store epilogue's C: M x N row-major (ldc), batch after batch; boxes of 64 rows x 128
    // bytes, 128-byte swizzled as the staging buffer holds them.
    const std::uint64_t m = static_cast<std::uint64_t>(p.m), n = static_cast<std::uint64_t>(p.n);
    const std::uint64_t batch = static_cast<std::uint64_t>(p.batch);
    s.dims = {n, m, batch};
    s.strides_bytes[0] = static_cast<std::uint64_t>(p.ldc()) * eb;
    const std::uint64_t matrix_bytes = m * n * eb;
    s.strides_bytes[1] = batch > 1 ? matrix_bytes : (matrix_bytes + 15) / 16 * 16;
    s.box = {static_cast<std::uint32_t>(128 / eb), 64, 1};
    return s;
  }
  const bool is_a = operand == 'a';
  // Stored matrix: rows x cols, cols contiguous (row-major storage, see problem.hpp).
  const bool k_major = is_a ? !p.layout.a_transposed : p.layout.b_transposed;
  const std::uint64_t mn = static_cast<std::uint64_t>(is_a ? p.m : p.n);
  const std::uint64_t k = static_cast<std::uint64_t>(p.k);
  const std::uint64_t cols = k_major ? k : mn, rows = k_major ? mn : k;
  const std::uint64_t ld = static_cast<std::uint64_t>(is_a ? p.lda() : p.ldb());
  // Grouped: A holds every group's rows (one matrix), B one matrix per group.
  const std::uint64_t matrices = static_cast<std::uint64_t>(!is_a && p.grouped() ? p.groups->count() : p.batch);
  s.dims = {cols, rows, matrices};
  s.strides_bytes[0] = ld * eb;
  // One matrix after another; with a single matrix the stride is never used
  // but must still be a multiple of 16 bytes.
  const std::uint64_t matrix_bytes = mn * k * eb;
  s.strides_bytes[1] = matrices > 1 ? matrix_bytes : (matrix_bytes + 15) / 16 * 16;
  const std::uint32_t swizzle_elements = static_cast<std::uint32_t>(128 / eb);
  const std::uint32_t tile_mn = static_cast<std::uint32_t>(is_a ? c.block_m : c.block_n);
  if (k_major) {
    // 2-CTA multicast: each CTA loads half of B's rows (wgmma_tile_math.cuh, tt_multicast_*).
    const std::uint32_t rows = !is_a && c.cluster_m == 2 ? tile_mn / 2 : tile_mn;
    s.box = {static_cast<std::uint32_t>(c.block_k), rows, 1};
  } else {
    s.box = {swizzle_elements, static_cast<std::uint32_t>(c.block_k), 1};
  }
  return s;
}

}  // namespace tiletune
