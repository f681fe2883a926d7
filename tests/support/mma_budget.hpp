#pragma once
// The instruction budget of the mma family's main loop (issue 38), shared by
// the compile tests that read SASS.
#include <string>
#include <vector>

#include "core/device/device_spec.hpp"
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
// loads addressed in shared space), so that it cannot grow; the compile test
// also holds every loop under tensor_clocks_per_hmma of its preset (8 on an
// A100), where 9.19 would have left the tensor pipe waiting on issue.
// fp8's loop (QMMA.16832 on sm_89, K-major operands) is the 16-bit types' instruction for
// instruction, but ptxas puts a never-executed `@!UPT UIADD3 URZ` between most dependent-free
// QMMAs (10 of 16 at 32x32 warp tiles), so it spends 4.56 at worst (64x64x64, against bf16's
// 3.94); a QMMA keeps the tensor pipe 16 clocks (L40S) to 32 (RTX 4090), far above either.
inline double mma_main_loop_budget(tiletune::dtype t) {
  return t == tiletune::dtype::tf32 ? 7.25 : tiletune::is_fp8(t) ? 4.6 : 4.0;
}
inline double mma_edge_loop_budget(tiletune::dtype t) {
  return t == tiletune::dtype::tf32 ? 11.25 : tiletune::is_fp8(t) ? 8.6 : 8.0;
}

// The clocks one HMMA (m16n8k16, tf32 m16n8k8, fp8 m16n8k32) keeps an SM sub-partition's
// tensor pipe busy at the preset's peak: its flops over the peak's flops per
// clock per sub-partition (4 per SM). A sub-partition issues one instruction a
// clock, so a loop that spends fewer instructions per HMMA than this leaves
// the tensor pipe the limit: 8 on an A100 (bf16 312 and tf32 156 TFLOP/s at
// 1410 MHz on 108 SMs), more on the GPUs whose fp32-accumulate rate is lower.
inline double tensor_clocks_per_hmma(const tiletune::device_spec& d, tiletune::dtype t) {
  const double flops = 2.0 * 16 * 8 * (32 / tiletune::element_bytes(t));
  const double per_clock = d.peak_tflops(t) * 1e12 / (d.sm_count * 4.0 * d.boost_clock_mhz * 1e6);
  return per_clock > 0 ? flops / per_clock : 0;
}

// mma_main_loop_problems for variant c: one k-tile is (WM/16) x (WN/8) m16n8
// tiles for each k-step of 32 bytes (16 elements, 8 for tf32, 32 for fp8).
inline std::vector<std::string> mma_budget_problems(const std::string& sass, const tiletune::tile_config& c,
                                                    tiletune::dtype t) {
  const int k_step = 32 / tiletune::element_bytes(t);
  const int per_k_tile = (tiletune::mma_warp_tile_m(c) / 16) * (tiletune::mma_warp_tile_n(c) / 8) * (c.block_k / k_step);
  return mma_main_loop_problems(sass, per_k_tile, mma_main_loop_budget(t), mma_edge_loop_budget(t));
}

}  // namespace tiletune_test
