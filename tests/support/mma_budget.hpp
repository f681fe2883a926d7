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
// 16-bit types hold the 4. tf32 cannot: every fragment register is
// rounded (cvt.rna.tf32.f32, two instructions each: a compare and an add),
// and its operands along m or n are loaded element by element (ldmatrix has
// no transpose for 32-bit elements), so a 32x32 warp tile spends about 6 per
// m16n8k8 on its fragments alone; its budget is what the loop spends today
// (12.5 at worst, tn on sm_90), so that it cannot grow.
inline double mma_main_loop_budget(tiletune::dtype t) { return t == tiletune::dtype::tf32 ? 12.5 : 4.0; }
inline double mma_edge_loop_budget(tiletune::dtype t) { return t == tiletune::dtype::tf32 ? 16.5 : 8.0; }

// mma_main_loop_problems for variant c: one k-tile is (WM/16) x (WN/8) m16n8
// tiles for each k-step of 16 (8 for tf32).
inline std::vector<std::string> mma_budget_problems(const std::string& sass, const tiletune::tile_config& c,
                                                    tiletune::dtype t) {
  const int k_step = t == tiletune::dtype::tf32 ? 8 : 16;
  const int per_k_tile = (tiletune::mma_warp_tile_m(c) / 16) * (tiletune::mma_warp_tile_n(c) / 8) * (c.block_k / k_step);
  return mma_main_loop_problems(sass, per_k_tile, mma_main_loop_budget(t), mma_edge_loop_budget(t));
}

}  // namespace tiletune_test
