#include "core/gemm/families/mma/mma_family.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/compile/kernel_templates.hpp"
#include "core/gemm/families/mma/mma_parts.hpp"
#include "core/export/kernel_export.hpp"

namespace tiletune {

namespace {

class mma : public gemm_family {
 public:
  std::string_view name() const override { return "mma"; }
  std::string_view summary() const override {
    return "mma.sync tensor cores, ldmatrix, cp.async pipeline; tf32/f16/bf16 on sm_80 and later, fp8 on sm_89 "
           "(Ada) and sm_120 (layouts other than nt on K-major copies, _kc; rowwise scales, _rw)";
  }
  // fp8: mma.sync m16n8k32 where it is the fp8 path (Ada, GeForce Blackwell); on sm_90 the wgmma
  // family runs fp8 (check_mma says so).
  bool serves(dtype t) const override { return is_tensor_core_dtype(t); }

  std::vector<tile_config> default_space(dtype t) const override { return mma_space(t); }
  std::vector<tile_config> problem_space(const gemm_problem& p, const device_spec& d) const override {
    return mma_problem_space(p, d);
  }
  std::optional<constraint_violation> check(const tile_config& c, const gemm_problem& p,
                                            const device_spec& d) const override {
    return check_mma(c, p, d);
  }

  int threads(const tile_config& c) const override { return mma_warps_m(c) * mma_warps_n(c) * 32; }
  // mma.sync m16n8k16 (f16/bf16), m16n8k8 (tf32) and m16n8k32 (fp8) take A in 4 and B in 2 32-bit registers per
  // thread (PTX ISA, warp-level matrix fragments), which cannot be accumulator registers.
  int operand_registers(const tile_config&) const override { return 6; }
  // kernels_templates/mma/mma_copies.cuh, tt_load_tile: rows that are not 16-byte aligned take a loop
  // (not unrolled) of plain element loads, each stored to shared memory before the next; K-major
  // copies (_kc) are padded to 16 bytes.
  bool copies_unaligned_rows_serially(const tile_config& c) const override { return !mma_k_major_copies(c); }
  bool reduces_split_k_in_global_memory() const override { return true; }  // mma_gemm.cu's last slice
  // The last slice's threads each take items of 16 bytes of C (of the rows inside M) in turn, and for
  // each read the split partial sums one slice after another, each load awaited by the add before
  // the next is issued (mma_gemm.cu: both loops `#pragma unroll 1`; the SASS issues a slice's two
  // 16-byte loads, adds, and branches back).
  double split_k_reduction_round_trips(const tile_config& c, const gemm_problem& p) const override {
    if (c.split_k <= 1 || c.threads() <= 0) return 0;
    const std::int64_t rows = std::min<std::int64_t>(c.block_m, p.m);
    const std::int64_t items = rows * (c.block_n * static_cast<std::int64_t>(element_bytes(p.elements().c)) / 16);
    return static_cast<double>((items + c.threads() - 1) / c.threads()) * c.split_k;
  }
  std::int64_t smem_bytes(const tile_config& c, dtype t) const override {
    // The pipeline, or the epilogue's fp32 staging of warps_m x 16 rows of C when larger.
    const std::int64_t bm = c.block_m, bn = c.block_n, bk = c.block_k;
    const std::int64_t pipeline = c.stages * (bm * bk + bk * bn) * element_bytes(t);
    const std::int64_t staging = static_cast<std::int64_t>(mma_warps_m(c)) * 16 * bn * 4;
    return std::max(pipeline, staging);
  }
  std::string id_suffix(const tile_config& c) const override {
    std::string s = fmt::format("_w{}x{}_s{}", mma_warps_m(c), mma_warps_n(c), c.stages) + split_k_id_suffix(c);
    if (c.raster_group > 0) s += raster_id_suffix(c);
    return s + out_id_suffix(mma_out(c)) + (mma_rowwise_scales(c) ? "_rw" : "") + (mma_k_major_copies(c) ? "_kc" : "");
  }
  std::vector<std::string> mechanisms(const tile_config& c) const override {
    std::vector<std::string> m;
    if (c.split_k > 1) m.push_back(fmt::format("k{}", c.split_k));
    if (mma_rowwise_scales(c)) m.push_back("rw");
    if (mma_k_major_copies(c)) m.push_back("kc");
    return m;
  }
  void to_json(const tile_config& c, nlohmann::json& j) const override {
    j["warps_m"] = mma_warps_m(c);
    j["warps_n"] = mma_warps_n(c);
    j["warp_m"] = mma_warp_tile_m(c);
    j["warp_n"] = mma_warp_tile_n(c);
    if (mma_out(c)) j["out"] = to_string(*mma_out(c));
    if (mma_k_major_copies(c)) j["k_major_copies"] = true;
    if (mma_rowwise_scales(c)) j["scales"] = to_string(scaling_mode::rowwise);
  }
  bool claims_json(const nlohmann::json& j) const override { return j.contains("warps_m"); }
  void from_json(const nlohmann::json& j, tile_config& c) const override {
    mma_warps_m(c) = j.at("warps_m").get<int>();
    mma_warps_n(c) = j.at("warps_n").get<int>();
    set_mma_out(c, j.contains("out") ? std::optional(parse_element_type(j.at("out").get<std::string>())) : std::nullopt);
    set_mma_k_major_copies(c, j.value("k_major_copies", false));
    const std::string scales = j.value("scales", "none");
    if (scales != "none" && scales != to_string(scaling_mode::rowwise))
      throw std::invalid_argument(
          fmt::format("mma tile: scales \"{}\" (the family applies rowwise scales only)", scales));
    set_mma_rowwise_scales(c, scales != "none");
  }

  // On K-major copies the GEMM runs layout nt whatever the problem's layout (render_kernel_source's
  // TT_A_T and TT_B_T, redefined), and the cubin also holds the pre-pass that writes the copies.
  std::string render(const tile_config& c, dtype, layout) const override {
    const bool copies = mma_k_major_copies(c);
    std::string s;
    s.reserve(96 * 1024);
    if (copies)
      s += "// K-major copies: the GEMM reads A M x K and B N x K (layout nt), the copies "
           "tiletune_gemm_transpose writes\n#define TT_K_MAJOR_COPIES 1\n#undef TT_A_T\n"
           "#define TT_A_T 0\n#undef TT_B_T\n#define TT_B_T 1\n";
    s += fmt::format("#define TT_WARPS_M {}\n#define TT_WARPS_N {}\n#define TT_STAGES {}\n", mma_warps_m(c),
                     mma_warps_n(c), c.stages);
    s += fmt::format("#define TT_SPLIT_K {}\n#define TT_RASTER_GROUP {}\n#define TT_RASTER_ALONG_N {}\n", c.split_k,
                     c.raster_group, c.raster_along_n ? 1 : 0);
    s += out_define(mma_out(c));
    if (mma_rowwise_scales(c)) s += "#define TT_SCALING 1\n";
    for (const char* name : {"common/gemm_common.cuh", "common/tile_addressing.cuh", "mma/mma_addressing.cuh",
                             "mma/mma_config.cuh", "mma/mma_primitives.cuh", "mma/mma_copies.cuh",
                             "mma/mma_fragments.cuh", "mma/mma_mainloop.cuh", "mma/mma_gemm.cu"})
      append_template(s, name);
    if (copies) append_template(s, "common/gemm_transpose.cuh");
    return s;
  }

  kernel_launch describe_launch(const tile_config& c, const gemm_problem& p, const device_spec&) const override {
    return mma_launch(c, p);
  }
  std::int64_t scratch_bytes(const tile_config& c, const gemm_problem& p, const device_spec&) const override {
    const mma_split_k_buffers b = mma_split_k_scratch(c, p);
    return b.workspace_bytes + b.counter_bytes + (mma_k_major_copies(c) ? k_major_copies_bytes(p) : 0);
  }
  double prologue_bytes(const tile_config& c, const gemm_problem& p) const override {
    return mma_k_major_copies(c) ? k_major_prologue_bytes(p) : 0;
  }
  int prologue_launches(const tile_config& c, const gemm_problem& p) const override {
    return mma_k_major_copies(c) ? k_major_prologue_launches(p) : 0;
  }

  // The main loop at most 4 instructions per HMMA (ad93b03), split-K's publish between two barriers
  // (a7e7ace), tf32 rounded once in shared memory (aee1ed0, b663e86), fp8 (d70159d, 168d7b6): the
  // same variants measured 1.46x slower on the H200 on 2026-11-26 than on 2026-12-04 (median;
  // docs/model.md), so a timing from before the last of them is another kernel's.
  static constexpr std::string_view revision = "2026-11-28T14:33:33Z";
  std::string_view revised(const tile_config&) const override { return revision; }
  std::string_view newest_revision() const override { return revision; }
  // fp8's m16n8k32 fragments are the 16-bit types' bytes (the emulation runs them), on a GPU no
  // session has had (Ada, GeForce Blackwell). tf32 rounded in shared memory and the copies (_kc) ran
  // correct on an H200 (2026-12-04).
  std::string untried_on_gpu(const tile_config& c, dtype t) const override {
    if (!is_fp8(t)) return {};
    return std::string("fp8 through mma.sync m16n8k32") + (mma_k_major_copies(c) ? " on K-major copies (_kc)" : "") +
           (mma_rowwise_scales(c) ? ", rowwise scales in the epilogue (_rw)" : "");
  }
  double attainable_efficiency(int compute_capability) const override {
    // mma.sync reaches about 63% of Hopper's tensor peak, which needs wgmma; on Ampere, Ada and
    // GeForce Blackwell (sm_120) it is the native path (assumed, as on Ampere: unmeasured there).
    return compute_capability >= 90 && compute_capability < 120 ? 0.63 : 0.85;
  }
  // The loop (ldmatrix into mma.sync, a barrier each k-tile) runs at a rate that grows with the
  // independent MMAs each of the SM's four schedulers holds per k-step, its warps' accumulator
  // tiles (m16n8 each): the tiles here hold up to 64, and at 32 the loop runs at 4/5 of the rate
  // at 64, on the line through (0, 3/5). On the H100 the same 128x128x32 tile of 64x32 warp tiles
  // measured 700 us on 4096^3 bf16 at one block an SM (32 a scheduler, 2026-11-22) and 450 at two
  // (64, 2026-11-23, its registers cut); two blocks of four 64x64 warp tiles (64) took 528. Over
  // the 2,027 mma variants of four Hopper recordings it moved the held-out Spearman from
  // 0.785/0.873/0.847/0.772 to 0.768/0.890/0.878/0.774 (docs/model.md). The attainable efficiency
  // is that of tiles at 64. Measured on Hopper; assumed alike where mma.sync is the native path
  // (Ampere, Ada), which keeps a part slower on every figure from being predicted faster.
  double latency_factor(const tile_config& c, int warps_per_sm, const device_spec&) const override {
    const double per_scheduler = warps_per_sm / 4.0 * (mma_warp_tile_m(c) / 16) * (mma_warp_tile_n(c) / 8);
    return std::min(1.0, (96 + per_scheduler) / 160);
  }
  // A two-stage pipeline exposes part of each load.
  double pipeline_factor(const tile_config& c) const override { return c.stages < 3 ? 0.9 : 1.0; }
  smem_traffic shared_memory_traffic(const tile_config& c, dtype t) const override {
    // Per warp and MMA k-step (32 bytes of k): the warp tile's math against its operand reads.
    const double k = 32.0 / element_bytes(t);
    const int wm = mma_warp_tile_m(c), wn = mma_warp_tile_n(c);
    return {2.0 * wm * wn * k, (wm + wn) * k * element_bytes(t)};
  }

  std::string cutlass_shape(const tile_config& c, dtype t) const override {
    const int k = 32 / element_bytes(t);
    // CUTLASS 2: split-K with the partials reduced by the last block of a tile is
    // the serial split-K mode; grouped rasterization a threadblock swizzle.
    std::string extra;
    if (c.split_k > 1) extra += fmt::format(", SplitKSerial, split_k_slices {}", c.split_k);
    if (c.raster_group > 0)
      extra += fmt::format(", ThreadblockSwizzle GemmIdentityThreadblockSwizzle<{}> (groups along {})",
                           c.raster_group, c.raster_along_n ? "N" : "M");
    // Why the copies are made: fp8's mma.sync reads A and B K-major only; the 16-bit types and tf32
    // take them for rows off 16 bytes alone.
    if (mma_k_major_copies(c))
      extra += is_fp8(t) ? ", on K-major copies made first (each copy transposes an operand stored MN-major, as fp8 "
                           "mma.sync reads A and B K-major only, layout TN in CUTLASS's terms, and pads rows off 16 "
                           "bytes with zeros, for 16-byte alignment: whichever the problem has)"
                         : ", on copies made first that pad rows off 16 bytes with zeros, for 16-byte alignment "
                           "(K-major, layout TN in CUTLASS's terms)";
    if (mma_rowwise_scales(c))
      extra += ", rowwise scales in the epilogue (Sm80EVT: a column broadcast of A's scales, a row broadcast of B's)";
    return fmt::format("ThreadblockShape<{},{},{}>, WarpShape<{},{},{}>, InstructionShape<16,8,{}>, "
                       "stages {}{}",
                       c.block_m, c.block_n, c.block_k, mma_warp_tile_m(c), mma_warp_tile_n(c), c.block_k, k,
                       c.stages, extra);
  }
};

}  // namespace

const gemm_family& mma_family() {
  static const mma family;
  return family;
}

tile_config mma_tile(int block_m, int block_n, int block_k, int warps_m, int warps_n, int stages) {
  tile_config c;
  c.family = kernel_family{&mma_family()};
  c.block_m = block_m;
  c.block_n = block_n;
  c.block_k = block_k;
  mma_warps_m(c) = warps_m;
  mma_warps_n(c) = warps_n;
  c.stages = stages;
  return c;
}

}  // namespace tiletune
