// How the mma kernel is launched (kernels_templates/mma/mma_gemm.cu): the tile
// grid of the pointer-and-stride kernels, and for split-K its scratch buffers.
#include <fmt/format.h>

#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/mma/mma_parts.hpp"
#include "core/gemm/kernel_launch.hpp"

namespace tiletune {

mma_split_k_buffers mma_split_k_scratch(const tile_config& c, const gemm_problem& p) {
  if (c.split_k <= 1) return {};
  // Each slice of K (grid z holds batch x split_k) writes its fp32 partial tile to
  // the workspace; the last slice of a tile to arrive (its counter says) sums them,
  // writes C and zeroes the counter for the next launch.
  mma_split_k_buffers b;
  b.tiles = ((p.m + c.block_m - 1) / c.block_m) * ((p.n + c.block_n - 1) / c.block_n) * p.batch;
  b.workspace_bytes = b.tiles * c.split_k * c.block_m * c.block_n * 4;
  b.counter_bytes = b.tiles * 4;
  return b;
}

kernel_launch mma_launch(const tile_config& c, const gemm_problem& p) {
  // On K-major copies the GEMM's strides are the copies' (layout nt, K padded to 16 bytes); its A
  // and B read them.
  kernel_launch l = tile_grid_launch(c, mma_k_major_copies(c) ? problem_on_k_major_copies(p) : p);
  if (mma_k_major_copies(c)) read_k_major_copies(l, p);
  if (mma_rowwise_scales(c)) {  // after tile_counters, as the kernel declares them
    l.parameters.push_back({"scale_a", "const float*", "pointer",
                            "rowwise scales of A: M floats, one per row (C = alpha * scale_a[m] * scale_b[n] * "
                            "sum_k op(A) op(B) + beta * C)",
                            nullptr});
    l.parameters.push_back(
        {"scale_b", "const float*", "pointer", "rowwise scales of B: N floats, one per column of C", nullptr});
  }
  const mma_split_k_buffers b = mma_split_k_scratch(c, p);
  if (b.tiles == 0) return l;
  l.grid_rule = fmt::format("(ceil(M / {}), ceil(N / {}), batch * {}): split-K in {} slices of K", c.block_m,
                            c.block_n, c.split_k, c.split_k);
  kernel_parameter& w = parameter_named(l, "workspace");
  w.buffer_bytes = b.workspace_bytes;
  w.meaning = "split-K: device buffer of buffer_bytes for the slices' fp32 partial sums";
  kernel_parameter& n = parameter_named(l, "tile_counters");
  n.buffer_bytes = b.counter_bytes;
  n.meaning = "split-K: one 32-bit counter per output tile (buffer_bytes), zeroed once before the first launch "
              "(the kernel leaves them zero)";
  l.requirements.push_back(fmt::format(
      "split-K: workspace of {} bytes (ceil(M/{}) * ceil(N/{}) * batch * {} * {} * {} * 4) and tile_counters of {} "
      "bytes (one 32-bit counter per output tile) for this problem",
      b.workspace_bytes, c.block_m, c.block_n, c.split_k, c.block_m, c.block_n, b.counter_bytes));
  return l;
}

}  // namespace tiletune
