#include "core/gemm/families/wgmma/wgmma_layout.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/gemm/families/wgmma/wgmma_family.hpp"

// The template's own layout code, compiled for the host so the two cannot drift.
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_tile_math.cuh"
#include "wgmma/wgmma_schedule.cuh"
#include "wgmma/wgmma_grouped.cuh"
#include "wgmma/wgmma_fp8.cuh"

namespace tiletune {

namespace {
// The template's shared-memory layout of a variant (wgmma_tile_math.cuh).
tt_smem_layout wgmma_smem_layout(const tile_config& c, dtype t) {
  return {wgmma_kernel_m(c),
          wgmma_kernel_n(c),
          c.block_k,
          element_bytes(t),
          c.stages,
          wgmma_epilogue_staging_consumers(c),
          wgmma_tma_store(c) ? wgmma_consumers(c) : 0,
          std::max(1, c.split_k),
          wgmma_pingpong(c) ? 1 : 0,
          wgmma_tma_scales(c) ? tt_scale_stage_bytes(wgmma_kernel_m(c)) : 0};
}
}  // namespace

std::int64_t wgmma_smem_bytes(const tile_config& c, dtype t) {
  return 1024 + tt_smem_layout_total(wgmma_smem_layout(c, t));
}

int wgmma_instruction_k(dtype t) { return 32 / element_bytes(t); }  // 32 bytes of k: k8 tf32, k16, k32 fp8

std::string wgmma_instruction_source(dtype t, int n, layout l, bool swap_ab) {
  const int regs = n / 2;
  std::string outs;
  for (int i = 0; i < regs; ++i) outs += fmt::format("{}%{}", i ? "," : "", i);
  std::string type;
  std::string immediates;  // scale-a, scale-b, then the 16-bit types' transposes
  // The kernel's A and B: the problem's, or B's and A's with swap-AB (mixed fp8 tells them apart).
  const operand_types e = row_of(t).a == row_of(t).b || !swap_ab
                              ? operand_types{row_of(t).a, row_of(t).b, row_of(t).c, row_of(t).accumulator}
                              : operand_types{row_of(t).b, row_of(t).a, row_of(t).c, row_of(t).accumulator};
  type = fmt::format("{}.{}", to_string(e.a), to_string(e.b));
  if (element_bytes(t) == 2) {
    // A 't' (stored K x M) and B 'n' (stored K x N) are MN-major: transposed.
    immediates = fmt::format("1, 1, {}, {}", l.a_transposed ? 1 : 0, l.b_transposed ? 0 : 1);
  } else {
    immediates = "1, 1";
  }
  std::string s = "__device__ __forceinline__ void tt_wgmma(float* d, unsigned long long desc_a,\n"
                  "                                         unsigned long long desc_b, int scale_d) {\n"
                  "  asm volatile(\n";
  s += "      \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + std::to_string(regs + 2) + ", 0;\\n\"\n";
  s += fmt::format("      \"wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{} {{{}}}, %{}, %{}, p, {};\\n}}\\n\"\n",
                   n, wgmma_instruction_k(t), type, outs, regs, regs + 1, immediates);
  s += "      : ";
  for (int i = 0; i < regs; ++i) s += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
  s += "\n      : \"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d));\n}\n";
  return s;
}

std::int64_t wgmma_output_tiles(const tile_config& c, const gemm_problem& p) {
  const std::int64_t n_tiles = (p.n + c.block_n - 1) / c.block_n;
  if (p.grouped()) {  // the groups' M tiles laid end to end, as the kernel's table counts them
    const gemm_groups& g = *p.groups;
    const int stride = g.layout == group_layout::masked ? static_cast<int>(g.stride) : 0;
    std::int64_t m_tiles = 0;
    for (std::int64_t r : g.rows)
      m_tiles += tt_group_m_tiles(tt_group_valid_rows(static_cast<int>(r), stride), c.block_m);
    return m_tiles * n_tiles;
  }
  return ((p.m + c.block_m - 1) / c.block_m) * n_tiles * p.batch;
}

std::int64_t wgmma_grid_size(const tile_config& c, const gemm_problem& p, int sm_count) {
  const std::int64_t sms = std::max(sm_count, 1);
  if (wgmma_stream_k(c)) return sms;
  if (c.cluster_m == 2) {  // clusters of two CTAs over pairs of M tiles (the kernel's tt_multicast_pairs)
    const std::int64_t pairs = tt_multicast_pairs(static_cast<int>((p.m + c.block_m - 1) / c.block_m),
                                                  static_cast<int>((p.n + c.block_n - 1) / c.block_n),
                                                  static_cast<int>(p.batch));
    return 2 * std::max<std::int64_t>(1, std::min<std::int64_t>(pairs, sms / 2));
  }
  if (c.split_k > 1)  // whole clusters of split_k CTAs, one tile at a time each
    return c.split_k * std::max<std::int64_t>(1, std::min<std::int64_t>(wgmma_output_tiles(c, p), sms / c.split_k));
  return std::max<std::int64_t>(1, std::min<std::int64_t>(wgmma_output_tiles(c, p), sms));
}

namespace {
// The kernel's own schedule (wgmma_schedule.cuh) for a problem on sm_count SMs.
tt_schedule schedule_of(const tile_config& c, const gemm_problem& p, int sm_count) {
  return tt_make_schedule(wgmma_output_tiles(c, p), static_cast<int>((p.k + c.block_k - 1) / c.block_k),
                          static_cast<int>(wgmma_grid_size(c, p, sm_count)), wgmma_stream_k_min_unit,
                          wgmma_stream_k(c) ? 1 : 0);
}
}  // namespace

std::optional<shared_k_schedule> wgmma_shared_k(const tile_config& c, const gemm_problem& p, int sm_count) {
  const tt_schedule s = schedule_of(c, p, sm_count);
  if (s.sk_workers == 0) return std::nullopt;  // not stream-K, or whole waves only
  const int k_tiles = s.k_tiles;
  std::int64_t longest_range = 0, peers = 0;
  int most_peers = 0, most_units = 0;
  for (int w = 0; w < s.sk_workers; ++w) {
    const int units = tt_units_of(s, w);
    most_units = std::max(most_units, units);
    longest_range = std::max<std::int64_t>(longest_range, tt_sk_begin(s, w + 1) - tt_sk_begin(s, w));
    peers += tt_sk_begin(s, w) % k_tiles != 0;  // a range that starts inside a tile publishes a partial
    for (int u = 0; u < units; ++u) {
      const tt_work_unit unit = tt_unit(s, w, u);
      if (unit.owner) most_peers = std::max(most_peers, unit.last_peer - unit.first_peer + 1);
    }
  }
  shared_k_schedule r;
  r.ctas = s.ctas;
  // Every CTA has the same whole tiles (dp_tiles is a multiple of the grid); the ranges differ.
  r.shared_tiles = static_cast<double>(longest_range) / k_tiles;
  r.busiest_cta_tiles = static_cast<double>(s.dp_tiles / s.ctas) + r.shared_tiles;
  r.shared_tile_cost = wgmma_stream_k_tile_cost;
  r.longest_k = (s.dp_tiles > 0 ? k_tiles : longest_range) * c.block_k;
  r.fixup_bytes = 2.0 * static_cast<double>(peers) * c.block_m * c.block_n * 4;
  // A worker publishes its first part (when a peer) and gathers for its second: at most one
  // publish and the most peers any tile has.
  r.owner_fixup_bytes = static_cast<double>(most_peers + 1) * c.block_m * c.block_n * 4;
  r.owner_waits = most_peers;
  r.extra_tile_starts = std::max(0, most_units - static_cast<int>(std::ceil(r.busiest_cta_tiles)));
  return r;
}

std::int64_t wgmma_stream_k_workspace_bytes(const tile_config& c, const gemm_problem& p, int sm_count) {
  return tt_sk_workspace_bytes(schedule_of(c, p, sm_count).sk_workers, c.block_m * c.block_n);
}

}  // namespace tiletune
