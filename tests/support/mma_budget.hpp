#pragma once
// The instruction budget of the mma family's main loop (issue 38), shared by
// the compile tests that read SASS.
#include <string>
#include <vector>

#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"
#include "sass_reading.hpp"

namespace tiletune_test {

// Instructions per HMMA, the HMMA included, of the loop of the blocks inside
// the matrices (copies without bounds) and of the edge blocks' loop. The
// 16-bit types hold the 4. tf32 cannot: every element of a stage is
// rounded once in the block (tt_tile_copier::round_landed: an ld.shared.v4, a
// compare and an add per element, an st.shared.v4), (BM + BN) x 80 / (BM x BN)
// instructions per HMMA, 2.5 at 64x64 tiles; and B stored [k][n] is loaded
// element by element (ldmatrix has no transpose for 32-bit elements, and a
// pair of n8 tiles' registers is not the register pair the mma wants). Its
// budget is what the loop spends today (7.25 at worst, 64x64x16 nn on sm_80,
// 11.06 its edge loop; 9.19 and 12.44 before A's rows were paired and the
// loads addressed in shared space), so that it cannot grow.
inline double mma_main_loop_budget(tiletune::dtype t) { return t == tiletune::dtype::tf32 ? 7.25 : 4.0; }
inline double mma_edge_loop_budget(tiletune::dtype t) { return t == tiletune::dtype::tf32 ? 11.25 : 8.0; }

// mma_main_loop_problems for variant c: one k-tile is (WM/16) x (WN/8) m16n8
// tiles for each k-step of 16 (8 for tf32).
inline std::vector<std::string> mma_budget_problems(const std::string& sass, const tiletune::tile_config& c,
                                                    tiletune::dtype t) {
  const int k_step = t == tiletune::dtype::tf32 ? 8 : 16;
  const int per_k_tile = (tiletune::mma_warp_tile_m(c) / 16) * (tiletune::mma_warp_tile_n(c) / 8) * (c.block_k / k_step);
  return mma_main_loop_problems(sass, per_k_tile, mma_main_loop_budget(t), mma_edge_loop_budget(t));
}

}  // namespace tiletune_test
