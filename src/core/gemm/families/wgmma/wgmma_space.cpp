#include "core/gemm/families/wgmma/wgmma_space.hpp"

#include <algorithm>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"

namespace tiletune {

std::vector<tile_config> wgmma_space(dtype t) {
  // 128 bytes of k per stage: one 128-byte swizzle row (BK 64 for 16-bit, 32 for tf32, 128 for fp8).
  const int bk = 128 / element_bytes(t);
  struct block {
    int m, n, consumers;
  };
  // Each consumer warpgroup owns BM/consumers rows: 64 or 128 rows, up to 128 accumulators.
  static constexpr block wide[] = {{64, 256, 1},  {128, 128, 1}, {128, 128, 2},
                                   {128, 192, 2}, {128, 256, 2}, {256, 128, 2}};
  // fp8 keeps two accumulator sets (promotion): at most 96 a set, 64 rows a consumer.
  static constexpr block fp8[] = {{64, 128, 1}, {64, 192, 1}, {128, 128, 2}, {128, 192, 2}};
  const std::span<const block> blocks = is_fp8(t) ? std::span<const block>(fp8) : std::span<const block>(wide);
  struct raster {
    int group;
    bool along_n;
  };
  const raster rasters[] = {{8, false}, {8, true}, {16, true}};
  std::vector<tile_config> out;
  for (auto b : blocks)
    for (int stages : {3, 4, 5})
      for (auto r : rasters) {
        out.push_back(wgmma_tile(b.m, b.n, bk, b.consumers, stages, r.group, r.along_n));
        if (is_fp8(t)) set_wgmma_promotion(out.back(), wgmma_promotion_intervals[0]);
      }
  return out;
}

namespace {
// Whether the GPU's shared memory holds the tile (a GPU that gives no figure: yes).
bool fits_shared_memory(const tile_config& c, dtype t, const device_spec& d) {
  return d.smem_per_block_optin_bytes <= 0 || wgmma_smem_bytes(c, t) <= d.smem_per_block_optin_bytes;
}

// The deepest ring of at most `most` stages that fits the GPU's shared memory (0: none).
int deepest_ring(tile_config c, dtype t, const device_spec& d, int most = wgmma_decode_max_stages) {
  for (int stages = most; stages >= 2; --stages) {
    c.stages = stages;
    if (fits_shared_memory(c, t, d)) return stages;
  }
  return 0;
}

// Few rows (decode, small batches): tiles that spend their shared memory on deep rings of the
// weights, which every row shares (wgmma_space.hpp).
void add_decode_tiles(std::vector<tile_config>& out, const gemm_problem& p, const device_spec& d) {
  if (p.grouped() || p.m > wgmma_decode_max_rows) return;
  const int bk = 128 / element_bytes(p.type);
  auto add_rings = [&](tile_config c) {  // c has 4 stages
    out.push_back(c);
    const int deepest = deepest_ring(c, p.type, d);
    if (deepest <= c.stages) return;
    c.stages = deepest;
    out.push_back(c);
    for (int split : {2, 4}) {  // split-K inside a cluster, the reduction in shared memory
      tile_config s = c;
      s.split_k = split;
      s.stages = deepest_ring(s, p.type, d);  // the leader's slots take shared memory too
      if (s.stages < 2) continue;
      out.push_back(s);
      // And with evict-first: on the H200 (2026-12-04) each alone took 9-17% off the weights'
      // read at 1-32 rows (split 2 without evict-first, evict-first without split), never both.
      set_wgmma_evict_first_b(s, true);
      out.push_back(s);
    }
    set_wgmma_evict_first_b(c, true);
    out.push_back(c);
    // Swap-AB's narrow tiles hold a weights' stage in 9-17 KB: a ring of up to 16 keeps twice the
    // bytes in flight (the H200's 1-32-row picks, 8 stages of 8x64 and 32x64, read at 50% of HBM).
    if (!wgmma_swap_ab(c)) return;
    const int deeper = deepest_ring(c, p.type, d, wgmma_decode_deeper_stages);
    if (deeper <= c.stages) return;
    c.stages = deeper;
    out.push_back(c);
    // And split in pairs with a ring that deep (evict-first): on the H200 (2026-12-04, 16x4096x4096)
    // the 16-stage whole tile took 13.2 us, split in pairs at 8 stages 14.1, each on 64 CTAs or 128.
    tile_config s = c;
    s.split_k = 2;
    s.stages = deepest_ring(s, p.type, d, wgmma_decode_deeper_stages);
    if (s.stages > wgmma_decode_max_stages) out.push_back(s);
  };
  add_rings(wgmma_tile(64, 128, bk, 1, 4));
  if (p.m > wgmma_swap_ab_max_rows || p.layout.a_transposed) return;
  int rows = 8;  // the instruction's N: the smallest of 8, 16, 32, 64 that holds M
  while (rows < p.m) rows *= 2;
  struct block {
    int n, consumers;
  };
  for (const block b : {block{64, 1}, block{128, 1}, block{256, 2}}) {
    tile_config c = wgmma_tile(rows, b.n, bk, b.consumers, 4);
    set_wgmma_swap_ab(c, true);
    add_rings(c);
  }
}

// The default tiles in the first raster order: those the search adds copies of.
std::vector<tile_config> first_raster_tiles(dtype t) {
  std::vector<tile_config> out;
  for (const tile_config& c : wgmma_space(t))
    if (c.raster_group == 8 && !c.raster_along_n) out.push_back(c);
  return out;
}

// Whether a problem may take the TMA-store epilogue (16-bit C, plain; tma_alignment is the
// constraints' to name).
bool tma_store_applies(const gemm_problem& p) { return element_bytes(p.elements().c) == 2 && !p.grouped(); }

// The TMA-store copy of each default tile in the first raster order, where the problem allows it.
void add_tma_store_tiles(std::vector<tile_config>& out, const gemm_problem& p) {
  if (!tma_store_applies(p)) return;
  for (tile_config c : first_raster_tiles(p.type)) {
    set_wgmma_tma_store(c, true);
    out.push_back(c);
  }
}

// Ping-pong copies of the tiles one consumer can hold whole (128 accumulators: 128x128, 64x256),
// two consumers alternating, in the first raster order (and with the TMA-store epilogue where the
// problem allows it), for plain problems.
void add_pingpong_tiles(std::vector<tile_config>& out, const gemm_problem& p) {
  if (p.grouped()) return;
  const int bk = 128 / element_bytes(p.type);
  const bool tma = tma_store_applies(p);
  // A consumer holds the whole tile: 128 accumulators, or 96 with fp8's two sets.
  const auto tiles = is_fp8(p.type) ? std::vector<std::pair<int, int>>{{64, 128}, {64, 192}}
                                    : std::vector<std::pair<int, int>>{{128, 128}, {64, 256}};
  for (const auto& [bm, bn] : tiles)
    for (int stages : {3, 4, 5}) {
      tile_config c = wgmma_tile(bm, bn, bk, 2, stages);
      set_wgmma_pingpong(c, true);
      out.push_back(c);
      if (!tma) continue;
      set_wgmma_tma_store(c, true);
      out.push_back(c);
    }
}

// fp8: every tile promotes at the first interval, and the default tiles in the first raster order
// also at each longer one (not with block scales: a k-block's scales apply at its promotion; not
// for grouped rowwise scales, whose 192-column _p2 tiles spilled); each applies the problem's
// scales and writes its C.
bool fp8_promotes_every_k_tile(const gemm_problem& p) {
  return p.scaling == scaling_mode::block || (p.grouped() && p.scaling == scaling_mode::rowwise);
}
void add_fp8_settings(std::vector<tile_config>& out, const gemm_problem& p) {
  if (!is_fp8(p.type)) return;
  if (!fp8_promotes_every_k_tile(p))
    for (int interval : std::span(wgmma_promotion_intervals).subspan(1))
      for (tile_config c : first_raster_tiles(p.type)) {
        set_wgmma_grouped(c, p.grouped());
        set_wgmma_promotion(c, interval);
        out.push_back(c);
      }
  // Fast accumulation (_fa): the default tiles in the first raster order without promotion,
  // where no block scales need it.
  if (p.scaling != scaling_mode::block)
    for (tile_config c : first_raster_tiles(p.type)) {
      set_wgmma_grouped(c, p.grouped());
      set_wgmma_promotion(c, 0);
      set_wgmma_fast_accumulation(c, true);
      out.push_back(c);
    }
  for (tile_config& c : out) {
    if (wgmma_promotion(c) == 0 && !wgmma_fast_accumulation(c)) set_wgmma_promotion(c, wgmma_promotion_intervals[0]);
    set_wgmma_scales(c, p.scaling);
    set_wgmma_out(c, p.out);
  }
}

// The 2x1-cluster copy (TMA multicast of B) of each default tile in the first raster order, for
// plain problems of at least two M tiles.
void add_multicast_tiles(std::vector<tile_config>& out, const gemm_problem& p) {
  if (p.grouped()) return;
  for (tile_config c : first_raster_tiles(p.type)) {
    if ((p.m + c.block_m - 1) / c.block_m < 2) continue;
    c.cluster_m = 2;
    out.push_back(c);
  }
}
}  // namespace

std::vector<tile_config> wgmma_problem_space(const gemm_problem& problem, const device_spec& d) {
  // tf32 or fp8 with an MN-major operand, or rows off 16 bytes: every tile reads K-major copies,
  // so the space is the nt problem's on them, each tile with the copies (_kc).
  const bool copies = wgmma_needs_k_major_copies(problem);
  const gemm_problem p = copies ? problem_on_k_major_copies(problem) : problem;
  std::vector<tile_config> out = wgmma_space(p.type);
  // A grouped problem runs the grouped kernel: every tile (and its stream-K copy) is that copy.
  if (p.grouped())
    for (tile_config& c : out) set_wgmma_grouped(c, true);
  add_decode_tiles(out, p, d);
  add_tma_store_tiles(out, p);
  add_pingpong_tiles(out, p);
  add_multicast_tiles(out, p);
  add_fp8_settings(out, p);
  const std::size_t n = out.size();
  const std::int64_t sms = std::max(d.sm_count, 1);
  for (std::size_t i = 0; i < n; ++i) {
    const tile_config& c = out[i];
    // (fp8's longer promotion intervals stay whole-tile: with stream-K's fixup, rowwise scales and
    // one consumer's two sets of 96, interval 2 spilled 60-64 bytes with ptxas 13.0.)
    if (c.raster_group != 8 || c.raster_along_n || c.split_k > 1 || wgmma_pingpong(c) || c.cluster_m > 1 ||
        wgmma_promotion(c) > 1 || wgmma_fast_accumulation(c))
      continue;
    const std::int64_t tiles = wgmma_output_tiles(c, p);
    const std::int64_t waves = (tiles + sms - 1) / sms;
    const double idle = 1.0 - static_cast<double>(tiles) / static_cast<double>(waves * sms);
    if (idle < wgmma_stream_k_idle_share) continue;
    tile_config sk = c;
    set_wgmma_stream_k(sk, true);
    out.push_back(sk);
  }
  for (tile_config& c : out) {
    if (copies) set_wgmma_k_major_copies(c, true);
    // The _ts copy adds a stage of scales to each pipeline stage: where that takes a tile the GPU's shared
    // memory holds past it, the tile stays as it is (64x128x128 in 5 stages became a _ts copy of 232,800
    // bytes, over the H100's 232,448, and with the tile lost every M a multiple of 4 was planned 4-11% slower).
    tile_config ts = c;
    set_wgmma_tma_scales(ts, wgmma_tma_scales_fit(c, p));
    if (fits_shared_memory(ts, p.type, d) || !fits_shared_memory(c, p.type, d)) c = ts;
  }
  return out;
}

bool wgmma_tma_scales_fit(const tile_config& c, const gemm_problem& p) {
  return is_fp8(p.type) && p.scaling == scaling_mode::block && !p.grouped() && !wgmma_swap_ab(c) && p.m % 4 == 0;
}

namespace {
// A grouped problem takes the grouped kernel and no plain problem does; at most
// wgmma_groups_max groups, and the group table's static shared memory beside the dynamic.
std::optional<constraint_violation> check_wgmma_groups(const tile_config& c, const gemm_problem& p,
                                                       const device_spec& d) {
  if (wgmma_grouped(c) != p.grouped())
    return violation("grouped", p.grouped() ? "a grouped problem needs the grouped kernel (_grp)"
                                            : "the grouped kernel (_grp) runs grouped problems only");
  if (!p.grouped()) return std::nullopt;
  if (p.groups->count() > wgmma_groups_max)
    return violation("groups", fmt::format("{} groups: the wgmma grouped kernel takes at most {} in one launch",
                                           p.groups->count(), wgmma_groups_max));
  const std::int64_t smem = wgmma_smem_bytes(c, p.type) + wgmma_group_table_bytes;
  if (smem > d.smem_per_block_optin_bytes)
    return violation("shared_memory",
                     fmt::format("needs {} bytes of shared memory per block ({} of them the group table), the GPU "
                                 "allows {}",
                                 smem, wgmma_group_table_bytes, d.smem_per_block_optin_bytes));
  return std::nullopt;
}
// Swap-AB serves plain problems whose A is K-major (its few rows are the kernel's N: one TMA box
// of BM rows; an MN-major A would need BM a multiple of 64).
std::optional<constraint_violation> check_wgmma_swap_ab(const tile_config& c, const gemm_problem& p) {
  if (!wgmma_swap_ab(c)) return std::nullopt;
  if (p.grouped()) return violation("swap_ab", "swap-AB (_swab) runs plain problems, not grouped ones");
  if (p.layout.a_transposed)
    return violation("swap_ab", fmt::format("swap-AB (_swab) reads A K-major (layout nn or nt), not {}",
                                            p.layout.name()));
  return std::nullopt;
}

// The TMA-store epilogue: 16-bit C (stmatrix and ldmatrix), a plain problem (a grouped tile's box
// would cross into the next group's rows; swap-AB stores C transposed), and C's row and batch
// strides multiples of 16 bytes (TMA loads C's boxes where beta != 0 and stores them).
std::optional<constraint_violation> check_wgmma_tma_store(const tile_config& c, const gemm_problem& p) {
  if (!wgmma_tma_store(c)) return std::nullopt;
  const element_type out = p.elements().c;
  if (element_bytes(out) != 2)
    return violation("tma_store", fmt::format("the TMA-store epilogue (_tmas) writes 16-bit C (f16, bf16), not {}",
                                              to_string(out)));
  if (p.grouped() || wgmma_swap_ab(c))
    return violation("tma_store", "the TMA-store epilogue (_tmas) serves plain, unswapped tiles");
  const std::int64_t eb = element_bytes(out);
  if ((p.ldc() * eb) % 16 != 0 || (p.batch > 1 && (p.m * p.n * eb) % 16 != 0))
    return violation("tma_alignment", fmt::format("the TMA-store epilogue needs ldc {} (and the batch stride) a "
                                                  "multiple of {} elements (16 bytes)",
                                                  p.ldc(), 16 / eb));
  return std::nullopt;
}

// fp8 promotes its running sums every one of wgmma_promotion_intervals k-tiles, into a second
// accumulator set of at most wgmma_fp8_accumulators_max a thread, and applies the problem's scales
// and writes its C; other dtypes do none of this.
std::optional<constraint_violation> check_wgmma_fp8(const tile_config& c, const gemm_problem& p) {
  const int interval = wgmma_promotion(c);
  const bool fast = wgmma_fast_accumulation(c);
  if (!is_fp8(p.type)) {
    if (interval == 0 && !fast && wgmma_scales(c) == scaling_mode::none && !wgmma_out(c)) return std::nullopt;
    return violation("promotion", fmt::format("promotion, fast accumulation, scales and another C (_p, _fa, _rw, "
                                              "_blk, _o) are fp8's, not {}'s",
                                              to_string(p.type)));
  }
  if (fast && interval != 0)
    return violation("promotion", fmt::format("fast accumulation (_fa) never promotes, the variant every {} k-tiles",
                                              interval));
  if (fast && p.scaling == scaling_mode::block)
    return violation("promotion", "block scales apply at each k-tile's promotion: fast accumulation (_fa) has none");
  if (!fast && std::ranges::find(wgmma_promotion_intervals, interval) == std::end(wgmma_promotion_intervals))
    return violation("promotion", fmt::format("fp8 promotes its running sums every {} k-tiles, not {}",
                                              fmt::join(wgmma_promotion_intervals, " or "), interval));
  if (auto v = out_mismatch(wgmma_out(c), p)) return v;
  const scaling_mode applied = p.scaling == scaling_mode::tensor ? scaling_mode::none : p.scaling;  // alpha's
  if (wgmma_scales(c) != applied)
    return violation("scaling", fmt::format("the variant's scales are {}, the problem's {}", to_string(wgmma_scales(c)),
                                            to_string(p.scaling)));
  if (wgmma_scales(c) == scaling_mode::block && interval != 1)
    return violation("promotion", fmt::format("block scales apply per 128-k block: promotion every k-tile, not {}",
                                              interval));
  if (wgmma_scales(c) == scaling_mode::rowwise && p.grouped() && interval != 1)
    return violation("promotion", fmt::format("grouped tiles with rowwise scales promote every k-tile, not every {} "
                                              "(the 192-column ones spilled 16-52 bytes, ptxas 13.0)",
                                              interval));
  if (wgmma_tma_scales(c) && !wgmma_tma_scales_fit(c, p))
    return violation("tma_scales", fmt::format("scales by TMA (_ts) copy block scales of plain, unswapped tiles "
                                               "whose A scale rows are whole 16-byte units (M a multiple of 4): "
                                               "not for M {}{}{}",
                                               p.m, p.grouped() ? ", grouped" : "", wgmma_swap_ab(c) ? ", swap-AB" : ""));
  if (!fast && wgmma_accumulators_per_thread(c) > wgmma_fp8_accumulators_max)
    return violation("accumulator_registers",
                     fmt::format("{} fp32 accumulators per consumer thread, twice with fp8's promotion: over {} a set",
                                 wgmma_accumulators_per_thread(c), wgmma_fp8_accumulators_max));
  return std::nullopt;
}

// Ping-pong: two consumers taking whole tiles in turn, over the plain schedule of whole tiles.
std::optional<constraint_violation> check_wgmma_pingpong(const tile_config& c, const gemm_problem& p) {
  if (!wgmma_pingpong(c)) return std::nullopt;
  if (wgmma_consumers(c) != 2) return violation("pingpong", "ping-pong (_pp) alternates two consumer warpgroups");
  if (wgmma_stream_k(c) || c.split_k > 1 || p.grouped() || wgmma_swap_ab(c))
    return violation("pingpong", "ping-pong (_pp) runs plain problems in whole tiles: not with stream-K, split-K, "
                                 "swap-AB or groups");
  return std::nullopt;
}

// Clusters of two CTAs along M share B's tile by TMA multicast, each loading half of it: whole
// tiles of a plain problem, B's half a whole box (K-major: BN / 2 rows; MN-major: BN / 128 of the
// 64-column boxes).
std::optional<constraint_violation> check_wgmma_cluster(const tile_config& c, const gemm_problem& p) {
  if (c.cluster_m == 1 && c.cluster_n == 1) return std::nullopt;
  if (c.cluster_m != 2 || c.cluster_n != 1)
    return violation("cluster", fmt::format("cluster {}x{}: the wgmma family runs 1x1 and 2x1 (TMA multicast of B)",
                                            c.cluster_m, c.cluster_n));
  if (wgmma_stream_k(c) || c.split_k > 1 || p.grouped() || wgmma_swap_ab(c) || wgmma_pingpong(c) ||
      wgmma_evict_first_b(c))
    return violation("cluster", "a 2x1 cluster (TMA multicast) runs plain problems in whole tiles: not with stream-K, "
                                "split-K, groups, swap-AB, ping-pong or evict-first");
  if (!p.layout.b_transposed && c.block_n % 128 != 0)
    return violation("cluster", fmt::format("a 2x1 cluster splits B's {} columns into two halves of whole 64-column "
                                            "boxes: BN a multiple of 128",
                                            c.block_n));
  return std::nullopt;
}

// Split-K inside a cluster of 2 or 4 CTAs, a schedule of whole tiles: not with stream-K nor
// grouped, and each CTA at least one k-tile.
std::optional<constraint_violation> check_wgmma_split(const tile_config& c, const gemm_problem& p) {
  if (c.split_k == 1) return std::nullopt;
  if (c.split_k != 2 && c.split_k != 4)
    return violation("split_k", fmt::format("split-K {}: the wgmma family splits K inside a cluster of 2 or 4 CTAs",
                                            c.split_k));
  if (wgmma_stream_k(c))
    return violation("split_k", "split-K inside a cluster and stream-K are two schedules: one at a time");
  if (p.grouped()) return violation("split_k", "a grouped problem runs whole tiles or stream-K, not split-K");
  const std::int64_t k_tiles = (p.k + c.block_k - 1) / c.block_k;
  if (k_tiles < c.split_k)
    return violation("split_k", fmt::format("split-K {} needs as many k-tiles; K {} makes {}", c.split_k, p.k, k_tiles));
  return std::nullopt;
}
}  // namespace

namespace {
// K-major copies (_kc) where the problem needs them and nowhere else; the transposing pre-pass's
// grid (ceil(MN / 32), ceil(K / 32), matrices) within CUDA's 65535 on y and z.
std::optional<constraint_violation> check_wgmma_k_major_copies(const tile_config& c, const gemm_problem& p) {
  const bool needs = wgmma_needs_k_major_copies(p);
  if (!needs && wgmma_k_major_copies(c))
    return violation("k_major_copies",
                     fmt::format("K-major copies (_kc) are for tf32 and fp8 operands stored MN-major and for rows "
                                 "off 16 bytes; {} {} is read where it is",
                                 to_string(p.type), p.layout.name()));
  if (needs && !wgmma_k_major_copies(c) && operands_misaligned(p))
    return violation("tma_alignment",
                     fmt::format("TMA reads rows and matrices that start on 16 bytes: lda {} and ldb {} (and the "
                                 "batch's or groups' strides) must be multiples of {} elements, or the operands "
                                 "copied first into padded rows (_kc)",
                                 p.lda(), p.ldb(), 16 / element_bytes(p.type)));
  if (needs && !wgmma_k_major_copies(c))
    return violation("layout", fmt::format("{} wgmma reads both operands K-major: layout nt (A stored M x K, B stored "
                                           "N x K), or {} through K-major copies made first (_kc)",
                                           to_string(p.type), p.layout.name()));
  if (!needs) return std::nullopt;
  if (std::string why = k_major_prologue_unlaunchable(p); !why.empty()) return violation("k_major_copies", why);
  return std::nullopt;
}
}  // namespace

std::optional<constraint_violation> check_wgmma(const tile_config& c, const gemm_problem& stored,
                                                const device_spec& d) {
  if (!is_tensor_core_dtype(stored.type))
    return violation("dtype", fmt::format("the wgmma family runs tf32, f16, bf16 and fp8, not {}",
                                          to_string(stored.type)));
  // wgmma and TMA exist on sm_90 only, and the kernels are built for sm_90a.
  if (d.compute_capability != 90)
    return violation("architecture",
                     fmt::format("the wgmma family needs sm_90 (H100, H200), the GPU is {}", d.arch()));
  if (auto v = check_wgmma_k_major_copies(c, stored)) return v;
  // Past here, the problem as the GEMM reads it: the copies' layout nt where it makes them.
  const gemm_problem p = wgmma_kernel_problem(c, stored);
  if (auto v = check_wgmma_fp8(c, p)) return v;
  // TMA needs every global stride (rows, batch, groups) to be a multiple of 16 bytes: refused above
  // without copies, and the copies' rows are padded to 16 bytes, so this holds; kept as the guard.
  const std::int64_t eb = element_bytes(p.type);
  if (operands_misaligned(p))
    return violation("tma_alignment", fmt::format("lda {} and ldb {} (and the batch's or groups' strides) must be "
                                                  "multiples of {} elements (16 bytes) for TMA",
                                                  p.lda(), p.ldb(), 16 / eb));
  if (auto v = check_wgmma_groups(c, p, d)) return v;
  if (auto v = check_wgmma_swap_ab(c, p)) return v;
  if (auto v = check_wgmma_pingpong(c, p)) return v;
  const int km = wgmma_kernel_m(c), kn = wgmma_kernel_n(c);
  if (wgmma_consumers(c) < 1 || wgmma_consumers(c) > 2 || km % (64 * (wgmma_pingpong(c) ? 1 : wgmma_consumers(c))) || km > 256 ||
      kn % (wgmma_swap_ab(c) ? 8 : 64) || kn > 256)
    return violation("warpgroup_tile",
                     wgmma_swap_ab(c)
                         ? fmt::format("{}x{} swap-AB with {} consumer warpgroups: BN runs as wgmma's M, whole "
                                       "64-row tiles per consumer up to 256, and BM as its N, a multiple of 8 up to 256",
                                       c.block_m, c.block_n, wgmma_consumers(c))
                         : fmt::format("{}x{} with {} consumer warpgroups: each needs whole 64-row wgmma "
                                       "tiles, BN a multiple of 64 up to 256",
                                       c.block_m, c.block_n, wgmma_consumers(c)));
  if (c.block_k * eb != 128)
    return violation("block_k", fmt::format("BK {} is not one 128-byte swizzle row ({} elements)",
                                            c.block_k, 128 / eb));
  const int accumulators = wgmma_accumulators_per_thread(c);
  if (accumulators > 128)
    return violation("accumulator_registers",
                     fmt::format("{} fp32 accumulators per consumer thread, over 128", accumulators));
  if (auto v = check_wgmma_split(c, p)) return v;
  if (auto v = check_wgmma_tma_store(c, p)) return v;
  if (auto v = check_wgmma_cluster(c, p)) return v;
  if (c.stages < 2)
    return violation("stages", fmt::format("{} stages: the mbarrier ring needs at least 2", c.stages));
  return std::nullopt;
}

}  // namespace tiletune
