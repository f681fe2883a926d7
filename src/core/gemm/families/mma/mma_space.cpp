#include <algorithm>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/mma/mma_parts.hpp"

namespace tiletune {

std::vector<tile_config> mma_space(dtype t) {
  // BK of 64 and 128 bytes: tf32 runs k-steps of 8, the 16-bit types of 16, fp8 of 32 (32 bytes each).
  const std::vector<int> bks{64 / element_bytes(t), 128 / element_bytes(t)};
  const std::pair<int, int> blocks[] = {{64, 64},   {64, 128},  {128, 64},
                                        {128, 128}, {128, 256}, {256, 128}};
  const std::pair<int, int> warps[] = {{2, 2}, {2, 4}, {4, 2}};
  std::vector<tile_config> out;
  for (auto [bm, bn] : blocks)
    for (auto [wm, wn] : warps)
      for (int bk : bks)
        for (int stages : {2, 3, 4}) out.push_back(mma_tile(bm, bn, bk, wm, wn, stages));
  return out;
}

std::vector<tile_config> mma_problem_space(const gemm_problem& p, const device_spec& d) {
  std::vector<tile_config> out = mma_space(p.type);
  // fp8 in a layout with an MN-major operand runs on K-major copies only (ldmatrix does not
  // transpose bytes).
  const bool must_copy = is_fp8(p.type) && has_mn_major_operand(p.layout);
  if (is_fp8(p.type))
    for (tile_config& c : out) {
      set_mma_out(c, p.out);
      set_mma_k_major_copies(c, must_copy);
      set_mma_rowwise_scales(c, p.scaling == scaling_mode::rowwise);
    }
  // Rows off 16 bytes: each tile both ways, copying its rows one element at a time (which a small
  // problem's few blocks afford) and on copies padded to 16 bytes first (_kc), which pay a pass
  // over the operands and run the fast path.
  if (!must_copy && operands_misaligned(p))
    for (std::size_t i = 0, n = out.size(); i < n; ++i) {
      tile_config c = out[i];
      set_mma_k_major_copies(c, true);
      out.push_back(c);
    }
  if (d.sm_count <= 0) return out;
  const std::size_t base = out.size();
  for (std::size_t i = 0; i < base; ++i) {
    const tile_config c = out[i];
    const std::int64_t tiles = ((p.m + c.block_m - 1) / c.block_m) * ((p.n + c.block_n - 1) / c.block_n) * p.batch;
    const std::int64_t k_tiles = (p.k + c.block_k - 1) / c.block_k;
    // Split-K where the tiles fill fewer than all SMs and block_m is not far
    // past M (a 256-row tile of a 16-row problem wastes the split too): the
    // smallest power of two (at most 16) that reaches one block per SM, and
    // half of it; each slice keeps at least two pipelines' worth of k-tiles.
    // Where K is too short for both, the largest split that keeps them: a
    // problem with fewer tiles needs the split more, never less (64 rows on
    // 170 SMs had none, and was planned slower than 128 rows).
    const bool tall_enough_tile = c.block_m <= std::max<std::int64_t>(64, 2 * p.m);
    if (tiles < d.sm_count && tall_enough_tile && c.stages >= 3) {
      int split = 2;
      while (tiles * split < d.sm_count && split < 16) split *= 2;
      std::vector<int> splits;
      for (int s : {split / 2, split})
        if (s >= 2 && k_tiles / s >= 2 * c.stages) splits.push_back(s);
      for (int s = split / 4; splits.empty() && s >= 2; s /= 2)
        if (k_tiles / s >= 2 * c.stages) splits.push_back(s);
      for (int s : splits) {
        tile_config v = c;
        v.split_k = s;
        out.push_back(v);
      }
    }
    // Grouped rasterization: 8 tile rows at a time, where there are many waves of large tiles.
    if (tiles >= 4 * d.sm_count && c.block_m * c.block_n >= 128 * 128 && c.stages >= 3) {
      tile_config v = c;
      v.raster_group = 8;
      out.push_back(v);
    }
  }
  return out;
}

namespace {
std::optional<constraint_violation> check_tile(const tile_config& c, dtype t) {
  const int wm = mma_warp_tile_m(c), wn = mma_warp_tile_n(c);
  // Warp tiles are whole m16 x n16 steps (ldmatrix.x4 loads B for two n8 tiles).
  if (c.block_m % mma_warps_m(c) || c.block_n % mma_warps_n(c) || wm % 16 || wn % 16)
    return violation("warp_tile",
                     fmt::format("warp tile {}x{} is not a multiple of 16x16", wm, wn));
  // Small warp tiles reload the same fragments for too few MMAs.
  if (wm * wn < 32 * 32)
    return violation("warp_tile",
                     fmt::format("warp tile {}x{} is under 32x32: too little fragment reuse", wm, wn));
  // Long thin warp tiles load more fragments per MMA than square ones, and
  // ptxas spills them at BK 64.
  if (wm > 2 * wn || wn > 2 * wm)
    return violation("warp_tile",
                     fmt::format("warp tile {}x{} is longer than 2:1", wm, wn));
  // fp32 accumulators per thread: over 128 leaves no registers for fragments
  // and addresses, and ptxas spills.
  const int accumulators = wm * wn / 32;
  if (accumulators > 128)
    return violation("accumulator_registers",
                     fmt::format("warp tile {}x{} needs {} accumulator registers per thread, "
                                 "over 128",
                                 wm, wn, accumulators));
  // At 128 accumulators, more than two MMA k-steps per tile (BK 64 for the
  // 16-bit types, 32 for tf32, 128 for fp8) leave ptxas too few registers: it spilled on sm_90.
  const int mma_k = 32 / element_bytes(t);
  if (accumulators == 128 && c.block_k > 2 * mma_k)
    return violation("register_pressure",
                     fmt::format("warp tile {}x{} with BK {} needs more than 255 registers per thread", wm, wn,
                                 c.block_k));
  if (c.block_k % mma_k)
    return violation("block_k", fmt::format("BK {} is not a multiple of the MMA k {}", c.block_k,
                                            mma_k));
  return std::nullopt;
}

// fp8 through mma.sync m16n8k32: the PTX needs sm_89. On sm_90 it is the wgmma family's (QGMMA at
// twice the 16-bit rate): ptxas builds mma.sync's fp8 there from two f16 HMMA.16816 per instruction
// on operands unpacked by F2FP.F16.E4M3.UNPACK (read in the SASS), under half of f16's mma.sync
// rate and more registers (128x128 tiles spill), so it is not planned. The
// fragments are read with ldmatrix, which has no transpose for bytes: both operands K-major (layout
// nt), other layouts on K-major copies (_kc). Per-tensor scales are alpha's, rowwise scales the
// epilogue's (_rw); block scales, which apply at every k-block, are not planned.
std::optional<constraint_violation> check_fp8(const tile_config& c, const gemm_problem& p, const device_spec& d) {
  if (d.compute_capability < 89)
    return violation("architecture", fmt::format("fp8 mma.sync needs sm_89 (Ada) or newer, the GPU is {}", d.arch()));
  // TILETUNE_MMA_FP8_ON_SM90=1 (validation only: scripts/validate/gpu_validate.sh fp8mma) lets a Hopper
  // verify this data path, whose PTX it runs as an Ada would; the plan's rates for it are not Hopper's.
  static const bool on_hopper = [] {
    const char* v = std::getenv("TILETUNE_MMA_FP8_ON_SM90");
    return v != nullptr && std::string_view(v) == "1";
  }();
  if (d.compute_capability >= 90 && d.compute_capability < 100 && !on_hopper)
    return violation("architecture", fmt::format("fp8 on {} (Hopper) is the wgmma family's; mma.sync's fp8 there "
                                                 "compiles to f16 HMMAs on unpacked operands: not planned",
                                                 d.arch()));
  if (has_mn_major_operand(p.layout) && !mma_k_major_copies(c))
    return violation("layout", fmt::format("the mma family reads fp8 K-major only: layout nt (A stored M x K, B "
                                           "stored N x K), or {} through K-major copies (_kc)",
                                           p.layout.name()));
  if (!has_mn_major_operand(p.layout) && !operands_misaligned(p) && mma_k_major_copies(c))
    return violation("k_major_copies",
                     "layout nt stores both operands K-major in rows on 16 bytes: nothing to copy (_kc)");
  if (p.scaling == scaling_mode::block)
    return violation("scaling", "the mma family applies per-tensor (alpha) and rowwise fp8 scales, not block scales");
  if (mma_rowwise_scales(c) != (p.scaling == scaling_mode::rowwise))
    return violation("scaling", mma_rowwise_scales(c)
                                    ? fmt::format("the variant applies rowwise scales (_rw), the problem's are {}",
                                                  to_string(p.scaling))
                                    : "the problem has rowwise scales: the variant must apply them (_rw)");
  return out_mismatch(mma_out(c), p);
}
}  // namespace

std::optional<constraint_violation> check_mma(const tile_config& c, const gemm_problem& p, const device_spec& d) {
  if (!is_tensor_core_dtype(p.type))
    return violation("dtype", fmt::format("the mma family runs tf32, f16, bf16 and fp8, not {}",
                                          to_string(p.type)));
  if (is_fp8(p.type)) {
    if (auto v = check_fp8(c, p, d)) return v;
  } else {
    if (mma_k_major_copies(c) && !operands_misaligned(p))
      return violation("k_major_copies", fmt::format("the mma family reads {} in every layout and rows on 16 bytes "
                                                     "where they are: no K-major copies (_kc)",
                                                     to_string(p.type)));
    if (mma_rowwise_scales(c))
      return violation("scaling", fmt::format("rowwise scales (_rw) are fp8's, not {}'s", to_string(p.type)));
  }
  if (mma_k_major_copies(c))
    if (std::string why = k_major_prologue_unlaunchable(p); !why.empty()) return violation("k_major_copies", why);
  if (d.compute_capability < 80)
    return violation("architecture", fmt::format("the mma family needs sm_80 or newer (cp.async, "
                                                 "bf16 mma), the GPU is {}",
                                                 d.arch()));
  // Datacenter Blackwell's tensor cores run tcgen05.mma; mma.sync there is a path whose rate no
  // datasheet gives and no run has measured, so a plan could not rank it against anything.
  if (d.compute_capability >= 100 && d.compute_capability < 120)
    return violation("architecture", fmt::format("mma.sync on {} (datacenter Blackwell, whose tensor cores run "
                                                 "tcgen05.mma) has no known rate: not planned",
                                                 d.arch()));
  if (auto v = check_tile(c, p.type)) return v;
  if (c.split_k < 1 || c.split_k > (p.k + c.block_k - 1) / c.block_k)
    return violation("split_k", fmt::format("split-K {} for {} k-tiles of {}", c.split_k,
                                            (p.k + c.block_k - 1) / c.block_k, c.block_k));
  return std::nullopt;
}

}  // namespace tiletune
