#include "core/gemm/families/wgmma/wgmma_family.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/compile/kernel_templates.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"
#include "core/gemm/families/wgmma/wgmma_parts.hpp"
#include "core/gemm/families/wgmma/wgmma_space.hpp"
#include "core/gemm/families/wgmma/wgmma_tensor_map.hpp"
#include "core/measure/measure_protocol.hpp"

namespace tiletune {

namespace {
// When the kernel's timings last moved (revised() below), for every tile and by mechanism.
constexpr std::string_view wgmma_first_revision = "2026-11-22T12:48:52Z";
constexpr std::string_view wgmma_stream_k_revision = "2026-12-04T14:34:04Z";
constexpr std::string_view wgmma_tma_store_revision = "2026-12-04T10:45:56Z";
constexpr std::string_view wgmma_tma_scales_revision = "2026-12-04T10:59:20Z";

class wgmma : public gemm_family {
 public:
  std::string_view name() const override { return "wgmma"; }
  std::string_view summary() const override {
    return "warpgroup MMA fed by TMA, persistent; tf32/f16/bf16 and fp8 (e4m3, e5m2, mixed) on sm_90a (H100, H200)";
  }
  bool serves(dtype t) const override { return is_tensor_core_dtype(t); }
  bool runs_grouped() const override { return true; }

  std::vector<tile_config> default_space(dtype t) const override { return wgmma_space(t); }
  std::vector<tile_config> problem_space(const gemm_problem& p, const device_spec& d) const override {
    return wgmma_problem_space(p, d);
  }
  std::optional<constraint_violation> check(const tile_config& c, const gemm_problem& p,
                                            const device_spec& d) const override {
    return check_wgmma(c, p, d);
  }

  int threads(const tile_config& c) const override { return 128 * (1 + wgmma_consumers(c)); }  // producer + consumers
  std::int64_t smem_bytes(const tile_config& c, dtype t) const override { return wgmma_smem_bytes(c, t); }
  // The rasterization is always named; "_sk": stream-K on the tiles past the last whole wave;
  // "_swab": swap-AB; "_efb": evict-first on B; "_tmas": the TMA-store epilogue; "_pp": ping-pong;
  // "_p1": fp8 promoted every k-tile; "_rw", "_blk": fp8 with rowwise or block scales; "_of16",
  // "_of32": fp8 writing f16 or f32 C; "_kc": K-major copies of MN-major operands first; "_fa": fp8
  // fast accumulation (no promotion); "_ts": block scales copied into the stages by TMA.
  std::string id_suffix(const tile_config& c) const override {
    return fmt::format("_c{}_s{}_cl{}x{}", wgmma_consumers(c), c.stages, c.cluster_m, c.cluster_n) + raster_id_suffix(c) +
           split_k_id_suffix(c) + (wgmma_stream_k(c) ? "_sk" : "") + (wgmma_grouped(c) ? "_grp" : "") +
           (wgmma_swap_ab(c) ? "_swab" : "") + (wgmma_evict_first_b(c) ? "_efb" : "") +
           (wgmma_tma_store(c) ? "_tmas" : "") + (wgmma_pingpong(c) ? "_pp" : "") +
           (wgmma_promotion(c) > 0 ? fmt::format("_p{}", wgmma_promotion(c)) : "") +
           (wgmma_fast_accumulation(c) ? "_fa" : "") +
           (wgmma_scales(c) == scaling_mode::rowwise ? "_rw" : wgmma_scales(c) == scaling_mode::block ? "_blk" : "") +
           (wgmma_tma_scales(c) ? "_ts" : "") +
           out_id_suffix(wgmma_out(c)) +
           (wgmma_k_major_copies(c) ? "_kc" : "");
  }
  std::vector<std::string> mechanisms(const tile_config& c) const override {
    std::vector<std::string> m;
    auto add = [&m](bool on, std::string name) {
      if (on) m.push_back(std::move(name));
    };
    add(c.cluster_m * c.cluster_n > 1, fmt::format("cl{}x{}", c.cluster_m, c.cluster_n));  // multicast
    add(c.split_k > 1, fmt::format("k{}", c.split_k));                                       // split-K in a cluster
    add(wgmma_stream_k(c), "sk");
    add(wgmma_grouped(c), "grp");
    add(wgmma_swap_ab(c), "swab");
    add(wgmma_evict_first_b(c), "efb");
    add(wgmma_tma_store(c), "tmas");
    add(wgmma_pingpong(c), "pp");
    add(wgmma_promotion(c) > 0, fmt::format("p{}", wgmma_promotion(c)));
    add(wgmma_fast_accumulation(c), "fa");
    add(wgmma_scales(c) != scaling_mode::none, wgmma_scales(c) == scaling_mode::rowwise ? "rw" : "blk");
    add(wgmma_tma_scales(c), "ts");
    add(wgmma_k_major_copies(c), "kc");
    return m;
  }
  void to_json(const tile_config& c, nlohmann::json& j) const override {
    j["consumers"] = wgmma_consumers(c);
    j["cluster_m"] = c.cluster_m;
    j["cluster_n"] = c.cluster_n;
    j["raster_group"] = c.raster_group;
    j["raster_along_n"] = c.raster_along_n;
    if (wgmma_stream_k(c)) j["stream_k"] = true;  // absent: every tile whole (older records)
    if (wgmma_grouped(c)) j["grouped"] = true;
    if (wgmma_swap_ab(c)) j["swap_ab"] = true;
    if (wgmma_evict_first_b(c)) j["evict_first_b"] = true;
    if (wgmma_tma_store(c)) j["tma_store"] = true;
    if (wgmma_pingpong(c)) j["pingpong"] = true;
    if (wgmma_promotion(c) > 0) j["promote_k_tiles"] = wgmma_promotion(c);
    if (wgmma_scales(c) != scaling_mode::none) j["scales"] = to_string(wgmma_scales(c));
    if (wgmma_out(c)) j["out"] = to_string(*wgmma_out(c));
    if (wgmma_k_major_copies(c)) j["k_major_copies"] = true;
    if (wgmma_fast_accumulation(c)) j["fast_accumulation"] = true;
    if (wgmma_tma_scales(c)) j["tma_scales"] = true;
  }
  bool claims_json(const nlohmann::json&) const override { return false; }  // always named
  void from_json(const nlohmann::json& j, tile_config& c) const override {
    wgmma_consumers(c) = j.at("consumers").get<int>();
    c.cluster_m = j.value("cluster_m", 1);
    c.cluster_n = j.value("cluster_n", 1);
    c.raster_group = j.value("raster_group", 0);
    c.raster_along_n = j.value("raster_along_n", false);
    set_wgmma_stream_k(c, j.value("stream_k", false));
    set_wgmma_grouped(c, j.value("grouped", false));
    set_wgmma_swap_ab(c, j.value("swap_ab", false));
    set_wgmma_evict_first_b(c, j.value("evict_first_b", false));
    set_wgmma_tma_store(c, j.value("tma_store", false));
    set_wgmma_pingpong(c, j.value("pingpong", false));
    set_wgmma_promotion(c, j.value("promote_k_tiles", 0));
    set_wgmma_scales(c, parse_scaling_mode(j.value("scales", "none")));
    set_wgmma_out(c, j.contains("out") ? std::optional(parse_element_type(j.at("out").get<std::string>())) : std::nullopt);
    set_wgmma_k_major_copies(c, j.value("k_major_copies", false));
    set_wgmma_fast_accumulation(c, j.value("fast_accumulation", false));
    set_wgmma_tma_scales(c, j.value("tma_scales", false));
  }

  // Its own raster and stream-K macros, split-K inside a cluster, and its own math and instruction. With swap-AB
  // the kernel's M is the problem's N: its raster order flips so that the tile's keeps its meaning,
  // and its instruction is m64 x BM on the swapped layout.
  std::string render(const tile_config& c, dtype t, layout l) const override {
    const bool raster_n = c.raster_along_n != wgmma_swap_ab(c);
    std::string s = fmt::format("#define TT_STAGES {}\n#define TT_CONSUMERS {}\n#define TT_RASTER_GROUP {}\n"
                                "#define TT_RASTER_N {}\n#define TT_CLUSTER_M {}\n#define TT_CLUSTER_N {}\n",
                                c.stages, wgmma_consumers(c), c.raster_group, raster_n ? 1 : 0, c.cluster_m, c.cluster_n);
    s.reserve(128 * 1024);
    if (wgmma_swap_ab(c)) s += "#define TT_SWAP_AB 1\n";
    if (wgmma_evict_first_b(c)) s += "#define TT_EVICT_FIRST_B 1\n";
    if (wgmma_tma_store(c)) s += "#define TT_TMA_STORE 1\n";
    if (wgmma_pingpong(c)) s += "#define TT_PINGPONG 1\n";
    if (wgmma_promotion(c) > 0) s += fmt::format("#define TT_PROMOTE {}\n", wgmma_promotion(c));
    if (wgmma_fast_accumulation(c)) s += "#define TT_FAST_ACCUMULATION 1\n";
    if (wgmma_scales(c) != scaling_mode::none)
      s += fmt::format("#define TT_SCALING {}\n", wgmma_scales(c) == scaling_mode::rowwise ? 1 : 2);
    s += out_define(wgmma_out(c));
    if (c.split_k > 1) s += fmt::format("#define TT_CLUSTER_SPLIT {}\n", c.split_k);
    if (wgmma_stream_k(c))
      s += fmt::format("#define TT_STREAM_K 1\n#define TT_SK_MIN_UNIT {}\n", wgmma_stream_k_min_unit);
    if (wgmma_grouped(c)) s += fmt::format("#define TT_GROUPED 1\n#define TT_GROUPS_MAX {}\n", wgmma_groups_max);
    if (wgmma_per_thread_consumer(c)) s += "#define TT_PER_THREAD_CONSUMER 1\n";
    if (wgmma_k_major_copies(c)) s += "#define TT_K_MAJOR_COPIES 1\n";
    if (wgmma_tma_scales(c)) s += "#define TT_TMA_SCALES 1\n";
    // What the launch gives: the kernel static_asserts that its own layout fits it exactly.
    s += fmt::format("#define TT_SMEM_BYTES {}\n", wgmma_smem_bytes(c, t));
    for (const char* name : {"common/gemm_common.cuh", "wgmma/wgmma_tile_math.cuh", "wgmma/wgmma_schedule.cuh",
                             "wgmma/wgmma_grouped.cuh", "wgmma/wgmma_fp8.cuh"})
      append_template(s, name);
    s += "// tt_wgmma: this variant's instruction, generated by tiletune\n";
    s += wgmma_instruction_source(t, wgmma_kernel_n(c), wgmma_kernel_layout(c, l), wgmma_swap_ab(c));
    for (const char* name : {"wgmma/wgmma_config.cuh", "wgmma/wgmma_primitives.cuh", "wgmma/wgmma_epilogue.cuh",
                             "wgmma/wgmma_fixup.cuh", "wgmma/wgmma_gemm.cu"})
      append_template(s, name);
    if (wgmma_k_major_copies(c)) append_template(s, "common/gemm_transpose.cuh");
    return s;
  }
  // wgmma, TMA and setmaxnreg need the architecture-specific target.
  std::string compile_arch(const device_spec&) const override { return "sm_90a"; }
  std::vector<std::string> compile_options(const tile_config& c, dtype, layout l) const override {
    if (wgmma_lower_register_usage(c, l)) return {"--ptxas-options=--register-usage-level=3"};
    return {};
  }

  launch_shape launch(const tile_config& c, const gemm_problem& p, int sm_count) const override {
    launch_shape s = launch_shape_for(c, p);
    s.grid_x = wgmma_grid_size(c, p, sm_count);
    s.grid_y = s.grid_z = 1;
    s.cluster_x = c.cluster_m * c.cluster_n * std::max(1, c.split_k);
    return s;
  }
  kernel_launch describe_launch(const tile_config& c, const gemm_problem& p, const device_spec& d) const override {
    return wgmma_launch(c, p, d);
  }
  double error_bound(const tile_config& c, const gemm_problem& p) const override {
    return wgmma_fast_accumulation(c) ? wgmma_fast_accumulation_bound(p.type, p.k) : row_of(p.type).error_bound;
  }
  std::int64_t scratch_bytes(const tile_config& c, const gemm_problem& p, const device_spec& d) const override {
    return wgmma_stream_k_workspace_bytes(c, p, d.sm_count) + (wgmma_k_major_copies(c) ? k_major_copies_bytes(p) : 0);
  }
  double prologue_bytes(const tile_config& c, const gemm_problem& p) const override {
    return wgmma_k_major_copies(c) ? k_major_prologue_bytes(p) : 0;
  }
  int prologue_launches(const tile_config& c, const gemm_problem& p) const override {
    return wgmma_k_major_copies(c) ? k_major_prologue_launches(p) : 0;
  }
  bool uses_tensor_maps() const override { return true; }
  tensor_map_spec tensor_map(const gemm_problem& p, const tile_config& c, char operand) const override {
    return wgmma_tensor_map_for(p, c, operand);
  }
  bool persistent_grid() const override { return true; }
  // The consumers hold two stages: the k-tile whose wgmmas they issue and the one before, released
  // only after wgmma.wait_group 1 (tt_release_after_commit). Three stages leave one k-tile in
  // flight: measured 2-15% slower than four on the 128x256 tiles, 40-60% on 128x128 (H100, H200).
  int tiles_in_flight(const tile_config& c) const override { return std::max(1, c.stages - 2); }
  // Every mechanism ran correct on an H200 (2026-12-04, profiles/measured/h200-2026-12-04-2 and -3:
  // swap-AB, evict-first, split-K in a cluster and with evict-first, 12-16-stage rings, grouped, the
  // TMA-store epilogue, ping-pong, multicast, fp8 with promotion, fast accumulation and each scaling,
  // scales by TMA, the copies and the padded row copy). Untried: split-K in a cluster with a ring
  // deeper than 8 stages (the leader's slots after 9-16 stages; each alone ran).
  std::string untried_on_gpu(const tile_config& c, dtype) const override {
    if (c.split_k > 1 && c.stages > wgmma_decode_max_stages)
      return fmt::format("split-K in a cluster with a {}-stage ring", c.stages);
    return {};
  }

  // The kernel the H100 ran on 2026-11-23, whose timings held since: the same variants measured
  // 0.999-1.026x on the H200 on 2026-12-04 against 2026-11-26 (docs/model.md), across the
  // warp-uniform consumer index and fenced accumulators of 2026-11-27. Revised since: stream-K's
  // cut (tile-aligned, 78e23c3), the TMA-store epilogue's shared memory (fb18f7f, which changed its
  // occupancy) and the block scales' reads by TMA (51acf61).
  std::string_view revised(const tile_config& c) const override {
    std::string_view r = wgmma_first_revision;
    if (wgmma_stream_k(c)) r = std::max(r, wgmma_stream_k_revision);
    if (wgmma_tma_store(c)) r = std::max(r, wgmma_tma_store_revision);
    if (wgmma_tma_scales(c)) r = std::max(r, wgmma_tma_scales_revision);
    return r;
  }
  std::string_view newest_revision() const override {
    return std::max({wgmma_first_revision, wgmma_stream_k_revision, wgmma_tma_store_revision, wgmma_tma_scales_revision});
  }

  // An assumption (cuBLAS's Hopper kernels run near 0.75 of the dense peak on
  // large squares) to calibrate once the family has run on a GPU.
  double attainable_efficiency(int) const override { return 0.75; }
  std::optional<shared_k_schedule> shared_k(const tile_config& c, const gemm_problem& p,
                                            int sm_count) const override {
    return wgmma_shared_k(c, p, sm_count);
  }
  bool efficiency_from_measurements() const override { return false; }
  bool producer_warps_load() const override { return true; }  // the TMA producer warpgroup
  bool reduces_split_k_in_cluster() const override { return true; }  // wgmma_fixup.cuh, tt_split_*
  // Evict-first on B, generated for decode shapes only: faster than its twin without in all 43 pairs
  // the H200 timed on 2026-12-04 (profiles/measured/h200-2026-12-04*: 0.5-21%, median 8%), which the
  // model ties.
  int tie_order(const tile_config& c) const override { return wgmma_evict_first_b(c) ? -1 : 0; }
  bool loads_b_evict_first(const tile_config& c) const override { return wgmma_evict_first_b(c); }
  smem_traffic shared_memory_traffic(const tile_config&, dtype) const override {
    return {};  // no warp tile: none counted
  }

  // Triton counts the compute warps; the producer warpgroup is extra.
  int triton_num_warps(const tile_config& c) const override { return 4 * wgmma_consumers(c); }
  std::string cutlass_shape(const tile_config& c, dtype t) const override {
    // CUTLASS 3: the tile scheduler's raster order and swizzle size are run-time arguments; its
    // swizzle sizes are 1, 2, 4 and 8 (a larger one is taken as 8), so a larger group says so.
    // Swap-AB: the transposed problem's M is this one's N, so the order along it is the other one.
    const int swizzle = std::min(c.raster_group, 8);
    const bool swab = wgmma_swap_ab(c);
    const std::string raster =
        c.raster_group > 0
            ? fmt::format(", RasterOrderOptions::{}, max_swizzle_size {}{}",
                          c.raster_along_n != swab ? "AlongN" : "AlongM",
                          swizzle,
                          swizzle != c.raster_group
                              ? fmt::format(" (CUTLASS's largest; this variant groups {} tiles)", c.raster_group)
                              : std::string())
            : "";
    // CUTLASS 3's kernel schedules: KernelTmaWarpSpecialized{,Cooperative,Pingpong}, and for grouped
    // (ptr-array) GEMMs KernelPtrArrayTmaWarpSpecialized{Cooperative,Pingpong} only. Its StreamKScheduler
    // runs the cooperative kernel alone: the plain and ping-pong kernels static_assert against it, and the
    // grouped ones against any scheduler but their own. A schedule it has not is said, never named as if
    // CUTLASS compiled it (the translation had paired KernelTmaWarpSpecialized with StreamKScheduler).
    const bool grouped = wgmma_grouped(c), stream_k = wgmma_stream_k(c);
    const std::string kind = wgmma_pingpong(c) ? "Pingpong" : wgmma_consumers(c) == 2 ? "Cooperative" : "";
    std::string schedule = std::string(grouped ? "KernelPtrArrayTmaWarpSpecialized" : "KernelTmaWarpSpecialized") +
                           (grouped && kind.empty() ? "Pingpong" : kind);
    if (grouped && kind.empty())
      schedule += " (CUTLASS's grouped kernels have no one-consumer schedule; Pingpong gives each of its two "
                  "consumers a tile of this shape)";
    std::string scheduler;
    if (stream_k)
      scheduler = !grouped && kind == "Cooperative"
                      ? ", TileScheduler StreamKScheduler"
                      : fmt::format(", no CUTLASS stream-K for it (CUTLASS's StreamKScheduler runs its cooperative "
                                    "kernel only{}): this tile without stream-K",
                                    grouped ? ", none of its grouped ones" : ", of 128 rows or more");
    // Swap-AB: CUTLASS runs the transposed problem, whose tile is this one transposed (its M of 8
    // or 16 rows is no tile CUTLASS's wgmma takes): that tile leads, and only it is given.
    return std::string(swab ? "swap-AB: run CUTLASS on the transposed problem (C^T = B^T A^T, A and B exchanged, C's "
                              "layout transposed): "
                            : "") +
           fmt::format("TileShape<{},{},{}>, ClusterShape<{},{},1>, {} (Hopper wgmma), stages {}{}{}",
                       swab ? c.block_n : c.block_m, swab ? c.block_m : c.block_n, c.block_k,
                       swab ? c.cluster_n : c.cluster_m, swab ? c.cluster_m : c.cluster_n, schedule, c.stages, raster,
                       scheduler) +
           (grouped ? ", grouped (GemmUniversalMode::kGrouped, ptr-array tensor maps)" : "") +
           (wgmma_evict_first_b(c) ? ", B loaded with CacheHintSm90::EVICT_FIRST" : "") +
           (wgmma_tma_store(c) ? ", epilogue TmaWarpSpecialized (stmatrix, TMA store), EpilogueTile 64x64" : "") +
           (c.split_k > 1 ? fmt::format(", split_k_slices {} (tiletune reduces the slices inside a cluster of {} "
                                        "through shared memory; CUTLASS's split-K goes through a workspace)",
                                        c.split_k, c.split_k)
                          : std::string()) +
           (wgmma_promotion(c) > 0
                ? fmt::format(", {} operands with the promoting (not FastAccum) schedule, mma_promotion_interval {}",
                              to_string(t), wgmma_promotion(c) * c.block_k / 32)
            : wgmma_fast_accumulation(c)
                ? fmt::format(", {} operands with the FastAccum schedule ({}{}FP8FastAccum)", to_string(t),
                              grouped ? "KernelPtrArrayTmaWarpSpecialized" : "KernelTmaWarpSpecialized",
                              grouped && kind.empty() ? "Pingpong" : kind)
                : std::string()) +
           (wgmma_scales(c) == scaling_mode::block ? ", blockwise scaling (KernelTmaWarpSpecializedCooperativeFP8BlockScaledAccum, "
                                   "ScaleGranularity 1x128 on A, 128x128 on B)"
            : wgmma_scales(c) == scaling_mode::rowwise ? ", rowwise scales applied in the epilogue (EVT: per-row and per-column broadcast)"
                                   : "") +
           // (The 16-bit types take the copies for rows off 16 bytes alone: they read either major.)
           (!wgmma_k_major_copies(c) ? std::string()
            : t == dtype::tf32 || is_fp8(t)
                ? ", on K-major copies made first (each copy transposes an operand stored MN-major, as CUTLASS's tf32 "
                  "and fp8 Hopper kernels read K-major A and B only, and pads rows off 16 bytes with zeros, as TMA "
                  "needs: whichever the problem has)"
                : ", on copies made first that pad rows off 16 bytes with zeros, as TMA needs (K-major, layout TN in "
                  "CUTLASS's terms)");
  }
};

}  // namespace

const gemm_family& wgmma_family() {
  static const wgmma family;
  return family;
}

bool wgmma_lower_register_usage(const tile_config& c, layout l) {
  if (wgmma_k_major_copies(c)) return false;  // the kernel runs nt: no MN-major operand
  return wgmma_stream_k(c) && wgmma_consumers(c) == 2 && wgmma_accumulators_per_thread(c) == 128 &&
         wgmma_mn_major_operand(l);
}

double wgmma_fast_accumulation_bound(dtype t, std::int64_t k) {
  return std::max(row_of(t).error_bound, static_cast<double>((k + 31) / 32) * 0x1p-14);
}

bool wgmma_needs_k_major_copies(const gemm_problem& p) {
  return ((p.type == dtype::tf32 || is_fp8(p.type)) && wgmma_mn_major_operand(p.layout)) || operands_misaligned(p);
}

gemm_problem wgmma_kernel_problem(const tile_config& c, const gemm_problem& p) {
  return wgmma_k_major_copies(c) ? problem_on_k_major_copies(p) : p;
}

bool wgmma_per_thread_consumer(const tile_config& c) {
  return wgmma_stream_k(c) && wgmma_accumulators_per_thread(c) * (wgmma_promotion(c) > 0 ? 2 : 1) >= 128;
}

tile_config wgmma_tile(int block_m, int block_n, int block_k, int consumers, int stages, int raster_group,
                       bool raster_along_n) {
  tile_config c;
  c.family = kernel_family{&wgmma_family()};
  c.block_m = block_m;
  c.block_n = block_n;
  c.block_k = block_k;
  wgmma_consumers(c) = consumers;
  c.stages = stages;
  c.raster_group = raster_group;
  c.raster_along_n = raster_along_n;
  return c;
}

}  // namespace tiletune
