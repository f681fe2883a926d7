#include "core/tune/perf_model.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/gemm/family.hpp"
#include "core/gemm/group_slices.hpp"
#include "core/measure/measure_protocol.hpp"

namespace tiletune {

namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
constexpr double launch_overhead_us = 3.0;
// DRAM round-trip latency, for Little's law: a level fed through a window of
// W bytes in flight takes B/BW + B*L/W for B bytes (see predict). The largest
// value that keeps every measured decode floor below its time (docs/model.md,
// "The model's constants").
constexpr double dram_latency_us = 0.75;
// L2 hit latency under load, the same law for the loads L2 serves (every
// block's panels, re-read by each block): about half the DRAM latency. A block
// of a skinny problem streams its whole K panel through few loads in flight,
// which is why split-K pays there.
constexpr double l2_latency_us = 0.5;
// An L2 hit a thread waits for before it issues its next load. An element copied from a row that
// is not 16-byte aligned, by a family that copies such rows one element at a time
// (gemm_family::copies_unaligned_rows_serially): its load is an L2 hit (the panels are re-read by
// every block), and the thread waits for it before it stores the element to shared memory and
// loads the next; the least per-element time measured, so that no floor rises above a measured
// time. The same wait paces a split-K reduction that reads its partials back one slice after
// another (gemm_family::split_k_reduction_round_trips).
constexpr double l2_hit_wait_us = 0.15;
// A variant whose B loads are hinted evict-first (gemm_family::loads_b_evict_first): its DRAM time
// against its twin's without, whole tiles and split ones (split-K or stream-K). The model predicts
// times as the default flush leaves the L2 (full of dirty lines: docs/gemm.md), under which every
// such twin measured faster: on the H100 (2026-12-05) whole tiles 0.79-0.89x their twins' time
// (median 0.82), splits 0.89-1.01x (0.91); on the H200 (2026-12-04) 0.83-0.95x (0.85) and
// 0.88-0.99x (0.92). These factors put the calibrated model's twins at the same medians within
// 0.03 (model_twins_test). After a flush by reads evict-first gained
// nothing (profiles/measured/h100-2026-12-05/call1/flush-summary.txt); the factors are the write
// flush's.
constexpr double evict_first_dram_whole = 0.8;
constexpr double evict_first_dram_split = 0.9;
}  // namespace

// A 2 GiB device-to-device copy by tiletune's worker drew 3.0 TB/s of the
// H100's 3.35 TB/s (profiles/measured/h100-2026-11-23/README.md, "copy
// bandwidth"): DRAM refresh, page switches and read/write turnarounds keep
// the rest. A kernel that streams its operands draws no more than that.
constexpr double dram_attainable_share = 0.9;

namespace {
// The time the element-by-element copies of the unaligned operands take (0 where none):
// a_rows and b_rows rows of A and B read, row_bytes each (a block's K slice).
double serial_copy_us(const gemm_problem& p, const tile_config& c, double a_rows, double b_rows, double row_bytes,
                      double concurrent_blocks) {
  if (!c.family->copies_unaligned_rows_serially(c) || concurrent_blocks <= 0) return 0;
  const auto eb = static_cast<std::int64_t>(element_bytes(p.type));
  auto unaligned = [&](std::int64_t ld) { return (ld * eb) % 16 != 0; };
  const double bytes = ((unaligned(p.lda()) ? a_rows : 0.0) + (unaligned(p.ldb()) ? b_rows : 0.0)) * row_bytes;
  const double in_flight = concurrent_blocks * c.threads() * static_cast<double>(eb);
  return bytes * l2_hit_wait_us / in_flight;
}
}  // namespace

double shared_memory_factor(const device_spec& d, dtype t, const tile_config& c, double rate_per_sm) {
  // Shared memory serves 128 bytes per clock per SM. A thread's or a warp's
  // tile reads its A and B slices from it for every k-step; a small tile
  // reads more bytes per flop and waits on shared memory, not the ALUs.
  constexpr double smem_bytes_per_clock = 128;
  const double clock_hz = d.boost_clock_mhz * 1e6;
  if (clock_hz <= 0 || rate_per_sm <= 0) return 1;
  const double flops_per_clock = rate_per_sm / clock_hz;
  const smem_traffic traffic = c.family->shared_memory_traffic(c, t);
  const double flops = traffic.flops, bytes = traffic.bytes;
  if (bytes <= 0) return 1;
  return std::min(1.0, (flops / flops_per_clock) / (bytes / smem_bytes_per_clock));
}

occupancy_estimate estimate_occupancy(const device_spec& d, int threads, int registers,
                                      std::int64_t smem_bytes) {
  occupancy_estimate o;
  if (threads <= 0) return o;
  const int warps = (threads + 31) / 32;
  const int regs_per_warp =
      static_cast<int>(ceil_div(std::max(registers, 1) * 32, d.register_alloc_unit)) *
      d.register_alloc_unit;
  const int by_regs = registers > d.max_registers_per_thread
                          ? 0
                          : (d.registers_per_sm / regs_per_warp) / warps;
  const int by_smem = smem_bytes > d.smem_per_block_optin_bytes
                          ? 0
                          : static_cast<int>(d.smem_per_sm_bytes /
                                             (smem_bytes + d.smem_reserved_per_block_bytes));
  const int by_threads = d.max_threads_per_sm / threads;
  const int by_blocks = d.max_blocks_per_sm;
  o.blocks_per_sm = by_blocks;
  o.limited_by = "blocks";
  auto take = [&](int v, const char* why) {
    if (v < o.blocks_per_sm) {
      o.blocks_per_sm = v;
      o.limited_by = why;
    }
  };
  take(by_threads, "threads");
  take(by_smem, "shared_memory");
  take(by_regs, "registers");
  o.warps_per_sm = o.blocks_per_sm * warps;
  return o;
}

double family_efficiency(kernel_family f, int compute_capability) {
  return f->attainable_efficiency(compute_capability);
}

prediction predict(const device_spec& d, const gemm_problem& p, const tile_config& c,
                   const occupancy_estimate& occ, double efficiency) {
  return predict(d, p, c, occ, efficiency, 0);
}

namespace {

// How a problem is cut into blocks: tiles, split-K and each block's share of K; with
// stream-K (sk), the persistent CTAs that share k-loops out instead.
struct block_grid {
  std::int64_t tiles_m = 0, tiles_n = 0, k_padded = 0, split = 1, k_per_block = 0;
  std::optional<shared_k_schedule> sk;
};

block_grid grid_of(const gemm_problem& p, const tile_config& c, const device_spec& d) {
  block_grid g;
  // Grouped: the groups' M tiles (a tile never holds two groups).
  g.tiles_m = p.grouped() ? p.groups->m_tiles(c.block_m) : ceil_div(p.m, c.block_m);
  g.tiles_n = ceil_div(p.n, c.block_n);
  g.k_padded = ceil_div(p.k, c.block_k) * c.block_k;
  // Split-K: split_k blocks per tile, each over its share of the k-tiles.
  g.split = std::max(1, c.split_k);
  g.k_per_block = ceil_div(ceil_div(p.k, c.block_k), g.split) * c.block_k;
  g.sk = c.family->shared_k(c, p, d.sm_count);
  return g;
}

// The blocks the busiest SM runs: whole waves of `resident` blocks (per_sm an SM, or fewer where a
// launch's clusters do not fill the SMs), and its share of the last.
double blocks_on_busiest_sm(const device_spec& d, std::int64_t resident, std::int64_t blocks) {
  resident = std::max<std::int64_t>(resident, 1);
  return static_cast<double>(blocks / resident * ceil_div(resident, d.sm_count) +
                             ceil_div(blocks % resident, d.sm_count));
}

// The blocks resident on the whole device at once: per_sm an SM, and no more clusters than fit
// (clusters_at_once: a cluster sits inside one GPC).
std::int64_t resident_blocks(const device_spec& d, const gemm_problem& p, const tile_config& c, int per_sm) {
  const std::int64_t slots = static_cast<std::int64_t>(per_sm) * d.sm_count;
  const launch_shape l = launch_shape_for(c, p, d.sm_count);
  const int size = l.cluster_x * l.cluster_y * l.cluster_z;
  return size > 1 ? std::min<std::int64_t>(slots, size * clusters_at_once(d, size, per_sm)) : slots;
}

// Fills the compute time and waves; returns the blocks resident on the whole device at once.
std::int64_t add_compute_time(const device_spec& d, const gemm_problem& p, const tile_config& c,
                              const occupancy_estimate& occ, double efficiency, const block_grid& g, prediction& r) {
  const std::int64_t k_per_block = g.k_per_block;
  // Compute: each SM runs its share of blocks at the family's attainable rate, lowered for a
  // two-stage pipeline that exposes part of each load, and when too few warps are resident to
  // hide the loop's latency.
  double rate_per_sm = d.peak_tflops(p.type) * 1e12 / d.sm_count *
                       (efficiency > 0 ? efficiency : family_efficiency(c.family, d.compute_capability));
  rate_per_sm *= c.family->pipeline_factor(c);
  // The loop's issue first: shared memory is asked for its bytes at the rate the loop attains.
  rate_per_sm *= c.family->issue_factor(c, p.type, d);
  rate_per_sm *= shared_memory_factor(d, p.type, c, rate_per_sm);
  // Latency last: too few warps leave the loop's whole rate, math or shared memory, idle.
  rate_per_sm *= c.family->latency_factor(c, occ.warps_per_sm, d);
  const double flops_per_block = 2.0 * c.block_m * c.block_n * static_cast<double>(k_per_block);
  // The loads' latency chain of `chains` blocks run one after another: each block's k-tiles wait
  // out an L2 round trip per tiles_in_flight of them (Little's law per block).
  auto chain_us = [&](double chains) {
    return chains * static_cast<double>(k_per_block) / c.block_k * l2_latency_us / c.family->tiles_in_flight(c);
  };
  const std::int64_t resident = resident_blocks(d, p, c, occ.blocks_per_sm);
  if (g.sk) {
    const double tiles = static_cast<double>(g.tiles_m * g.tiles_n * p.batch);
    // Stream-K: one CTA per SM, the busiest one's whole tiles and longest range, whose k-tiles
    // cost shared_tile_cost each.
    const double tile_work = g.sk->busiest_cta_tiles + (g.sk->shared_tile_cost - 1) * g.sk->shared_tiles;
    r.compute_us = tile_work * flops_per_block / rate_per_sm * 1e6;
    r.latency_us = chain_us(g.sk->busiest_cta_tiles);
    r.waves = tiles / static_cast<double>(d.sm_count);
    r.wave_efficiency = tiles / (g.sk->busiest_cta_tiles * d.sm_count);
    return resident;
  }
  const double busiest = blocks_on_busiest_sm(d, resident, r.blocks);
  r.compute_us = busiest * flops_per_block / rate_per_sm * 1e6;
  // The busiest SM's blocks, occ.blocks_per_sm at a time.
  r.latency_us = chain_us(std::ceil(busiest / occ.blocks_per_sm));
  r.waves = static_cast<double>(r.blocks) / resident;
  r.wave_efficiency = static_cast<double>(r.blocks) / (busiest * d.sm_count);
  return resident;
}

// Memory: DRAM moves each operand once (C twice when beta reads it); L2
// serves every block its A and B panels. A larger tile reads less per flop:
// that is its arithmetic intensity against the memory roof. Split-K writes
// and reads back fp32 partials of every tile.
struct memory_traffic {
  double eb = 0, dram_bytes = 0, l2_bytes = 0, concurrent_blocks = 0, in_flight = 0;
  // Of dram_bytes and l2_bytes, what the k-loops load through the bytes in flight (A and B; not C's
  // stores or loads and the partials after the loop): the latency terms' bytes.
  double dram_loop_bytes = 0, l2_loop_bytes = 0;
  double busiest_sm_bytes = 0;  // what L2 serves the SM with the most blocks, each block whole
};

memory_traffic traffic_of(const device_spec& d, const gemm_problem& p, const tile_config& c, const block_grid& g,
                          std::int64_t blocks, std::int64_t resident) {
  const std::int64_t tiles_m = g.tiles_m, tiles_n = g.tiles_n, split = g.split, k_per_block = g.k_per_block;
  const double eb = element_bytes(p.type), ceb = element_bytes(p.elements().c);  // A's and B's; C's (bf16 for fp8)
  const double c_passes = p.beta != 0.0 ? 2.0 : 1.0;
  // (rows past M are neither written nor read).
  // (Stream-K: the fixup's partial tiles, written by peers and read back by owners.)
  const double partial_bytes =
      split > 1 ? 2.0 * static_cast<double>(p.m * tiles_n * p.batch * split) * c.block_n * 4
                : (g.sk ? g.sk->fixup_bytes : 0.0);
  // A workspace that fits in half the L2 is written and read back there, not in DRAM
  // (16x4096x4096 split 4: 2 MB of the H100's 50 MB).
  const double partials_in_dram = partial_bytes > 0.5 * static_cast<double>(d.l2_bytes) ? partial_bytes : 0.0;
  // The rows of A and C that count (grouped: the groups' valid rows), and B whole (grouped: the
  // B of every group with rows; an empty group has no tile).
  const double useful_rows = static_cast<double>(p.useful_rows());
  const double dram_loop_bytes = (useful_rows * p.k + static_cast<double>(p.b_elements_read())) * eb;
  const double dram_bytes = dram_loop_bytes + c_passes * useful_rows * p.n * ceb + partials_in_dram;
  // What the tiles really move: a block reads only the rows of A and B that
  // lie inside the problem (TMA and cp.async zero-fill the rest without a
  // load), so each of the tiles_n block columns reads A's M rows once per
  // k-slice and each block row B's N rows.
  // (A grouped tile loads all its rows: those past its group's end are the next group's.)
  const std::int64_t a_rows_per_column = p.grouped() ? tiles_m * c.block_m : p.m;
  const double rows_read = static_cast<double>(tiles_n * a_rows_per_column + tiles_m * p.n) * split * p.batch;
  const double l2_loop_bytes = rows_read * static_cast<double>(k_per_block) * eb;
  const double l2_bytes = l2_loop_bytes + c_passes * useful_rows * p.n * ceb + partial_bytes;
  // Loads in flight: each block has its pipeline's stages - 1 tiles in flight,
  // of the rows inside the problem (a 64-row tile of a 16-row problem loads 16).
  // Grouped: of the rows that count, as many as a tile of the groups holds on average (its
  // group's valid rows, not every group's: each group's rows are tiles of their own), so that
  // they grow with the rows the latency terms' bytes count, and reach block_m where every tile
  // is whole (the groups grown to whole tiles, whole_tiles).
  const double tile_rows = p.grouped() && tiles_m > 0
                               ? useful_rows / static_cast<double>(tiles_m)
                               : static_cast<double>(std::min<std::int64_t>(c.block_m, p.m));
  const double in_flight_per_block = static_cast<double>(std::max(1, c.stages - 1)) *
                                     (tile_rows + static_cast<double>(std::min<std::int64_t>(c.block_n, p.n))) *
                                     c.block_k * eb;
  const double concurrent_blocks = static_cast<double>(std::min<std::int64_t>(blocks, resident));
  const double in_flight = concurrent_blocks * in_flight_per_block;
  // The busiest SM's blocks, counted whole (a block at the problem's edge reads less, but the SM
  // with the most blocks holds whole ones): its share of L2 bounds it, as the sum bounds them all.
  const std::int64_t rows = std::min<std::int64_t>(c.block_m, p.m), cols = std::min<std::int64_t>(c.block_n, p.n);
  const double block_bytes = static_cast<double>(rows + cols) * static_cast<double>(k_per_block) * eb +
                             c_passes * static_cast<double>(rows * cols) * ceb +
                             (split > 1 ? 2.0 * static_cast<double>(rows * cols) * 4 : 0.0);
  const double busiest_blocks =
      g.sk ? g.sk->busiest_cta_tiles : blocks_on_busiest_sm(d, resident, blocks);
  return {eb, dram_bytes, l2_bytes, concurrent_blocks, in_flight, dram_loop_bytes, l2_loop_bytes,
          busiest_blocks * block_bytes};
}

// The problem grown to whole tiles (M and N to the tiles' edges, K to whole k-tiles), where that
// keeps its grid and the way its rows are copied; nullopt where it is already whole or would not.
// Grouped: each group's valid rows to its tiles' edge (an empty group stays empty, a masked
// stride grows to whole tiles with them), M the rows the groups then hold; rows_only: those
// alone, N and K as they are.
std::optional<gemm_problem> whole_tiles(const gemm_problem& p, const tile_config& c, bool rows_only = false) {
  if (c.block_m <= 0 || c.block_n <= 0 || c.block_k <= 0) return std::nullopt;
  gemm_problem w = p;
  bool rows_grown = false;
  if (p.grouped()) {
    gemm_groups& g = *w.groups;
    for (int i = 0; i < g.count(); ++i) {
      const std::int64_t whole = ceil_div(p.groups->valid(i), c.block_m) * c.block_m;
      rows_grown = rows_grown || whole != g.rows[i];
      g.rows[i] = whole;
    }
    if (g.layout == group_layout::masked) g.stride = ceil_div(g.stride, c.block_m) * c.block_m;
    w.m = g.held_rows();
  } else {
    w.m = ceil_div(p.m, c.block_m) * c.block_m;
  }
  if (!rows_only) {
    w.n = ceil_div(p.n, c.block_n) * c.block_n;
    w.k = ceil_div(p.k, c.block_k) * c.block_k;
  }
  if (!rows_grown && w.m == p.m && w.n == p.n && w.k == p.k) return std::nullopt;
  const auto eb = static_cast<std::int64_t>(element_bytes(p.type));
  const auto ceb = static_cast<std::int64_t>(element_bytes(p.elements().c));
  auto aligned = [](std::int64_t ld, std::int64_t bytes) { return ld * bytes % 16 == 0; };
  if (aligned(w.lda(), eb) != aligned(p.lda(), eb) || aligned(w.ldb(), eb) != aligned(p.ldb(), eb) ||
      aligned(w.ldc(), ceb) != aligned(p.ldc(), ceb))
    return std::nullopt;
  return w;
}

// t: the problem's traffic; whole: the same kernel's on the problem grown to whole tiles, where its
// last tiles are partial (grouped: also on its groups grown to whole M tiles alone). A latency
// term is bytes over bytes in flight: a partial tile holds fewer rows in flight for the same
// panels of the other operand, so the term would rise as the tile empties (48x4096x4096 on the
// H200 was predicted 13.10 us, 64 rows 12.95). The partial tiles wait no longer than whole ones
// in the same grid: each latency term is the least of them.
void add_memory_time(const device_spec& d, const gemm_problem& p, const tile_config& c, const block_grid& g,
                     const memory_traffic& t, const std::vector<memory_traffic>& whole, double dram_share,
                     double rounds, prediction& r) {
  auto least = [&](double memory_traffic::*bytes, double latency_us) {
    double term = t.*bytes * latency_us / t.in_flight;
    for (const memory_traffic& w : whole) term = std::min(term, w.*bytes * latency_us / w.in_flight);
    return term;
  };
  const std::int64_t tiles_m = g.tiles_m, tiles_n = g.tiles_n, split = g.split, k_per_block = g.k_per_block;
  const double eb = t.eb, dram_bytes = t.dram_bytes, l2_bytes = t.l2_bytes;
  const double concurrent_blocks = t.concurrent_blocks;
  // DRAM as a pipe of bandwidth BW and latency L fed through the W bytes in
  // flight: each window's round trip is L + W/BW, so its B bytes take B/BW +
  // B*L/W, the bandwidth term plus the latency term (while a window waits out
  // the latency the pipe carries none of its bytes). The larger of the two, as
  // the model had it, put every decode variant at the bandwidth (16x4096x4096:
  // 11.2 us for tiles measured from 21 to 42 us, in the order of their bytes in flight).
  // Per block, that is at least one DRAM round trip per window of its k-loop: every block of the
  // first wave waits for its own fills, however many blocks share them. That floor keeps more
  // blocks of the same kernel from shortening the term (the unique bytes over more windows).
  // (Stream-K: the longest k-extent a CTA streams unbroken.) A split's extra blocks shorten that
  // chain only while the pipe has room for their bytes: as the whole tile's blocks fill it with B
  // (the operand each block reads from DRAM), the chain a split's slice waits out moves from its own
  // k-loop to the whole K's, where more bytes in flight only queue. Over the 46 pairs of a split-K
  // or stream-K decode tile and its whole twin that the H100 timed on 2026-12-05, the deep rings'
  // splits (8-16 stages) measured 0.96-1.43x the whole tile's time, the shallow rings' (4-5 stages)
  // 0.80-0.96x, where a chain over each slice's own k-loop put them all at 0.64-0.94x
  // (model_twins_test). The pipe's room: twice the bytes the attainable bandwidth moves in one idle
  // round trip (at once its size, a warp-level kernel's measured splits at 128 rows, a 4-stage ring
  // that gained 1.43x, were predicted to gain nothing). Times the rounds of clusters.
  const double tiles = static_cast<double>(tiles_m * tiles_n) * p.batch;
  const double b_in_flight = static_cast<double>(std::max(1, c.stages - 1)) * std::min<std::int64_t>(c.block_n, p.n) *
                             c.block_k * eb * std::min(tiles, t.concurrent_blocks);
  const double attainable_gbs = d.memory_bandwidth_gbs * (dram_share > 0 ? dram_share : dram_attainable_share);
  const double pipe_bytes = 2 * d.memory_bandwidth_gbs * dram_attainable_share * 1e3 * dram_latency_us;
  const double fill = std::min(1.0, b_in_flight / pipe_bytes);
  const double slice_k = static_cast<double>(g.sk ? g.sk->longest_k : k_per_block);
  const double chain_k = slice_k + (static_cast<double>(g.k_padded) - slice_k) * fill;
  const double windows = rounds * chain_k / c.block_k / std::max(1, c.stages - 1);
  double dram_us =
      dram_bytes / (attainable_gbs * 1e3) + std::max(least(&memory_traffic::dram_loop_bytes, dram_latency_us), windows * dram_latency_us);
  if (c.family->loads_b_evict_first(c)) dram_us *= split > 1 || g.sk ? evict_first_dram_split : evict_first_dram_whole;
  // L2 serves each SM its share of its bandwidth (SMs without a block draw none): the busiest
  // SM's whole blocks bound the time, as all the bytes bound it at the full bandwidth.
  // The larger of its bandwidth and latency terms, not their sum: measured variants
  // drew up to 90% of L2's bandwidth, which leaves no room for a latency term
  // beside it (docs/model.md, "The model's constants").
  double l2_us = std::max({l2_bytes / (d.l2_bandwidth_gbs * 1e3),
                           t.busiest_sm_bytes / (d.l2_bandwidth_gbs / d.sm_count * 1e3),
                           std::max(least(&memory_traffic::l2_loop_bytes, l2_latency_us), windows * l2_latency_us)});
  // Rows that are not 16-byte aligned: no 16-byte copies (cp.async, TMA); a family
  // that copies them one element at a time keeps one element per thread in flight,
  // so the operand's panels take its bytes * latency / (threads * element bytes).
  const double serial_us = serial_copy_us(p, c, static_cast<double>(tiles_n * split * p.batch) * p.m,
                                          static_cast<double>(tiles_m * split * p.batch) * p.n,
                                          static_cast<double>(k_per_block) * eb, concurrent_blocks);
  l2_us = std::max(l2_us, serial_us);
  r.dram_us = dram_us;
  r.l2_us = l2_us;
  r.memory_us = std::max(dram_us, l2_us);
  r.dram_bytes = dram_bytes;
  r.l2_bytes = l2_bytes;
}

}  // namespace

prediction predict(const device_spec& d, const gemm_problem& p, const tile_config& c,
                   const occupancy_estimate& occ, double efficiency, double dram_share) {
  prediction r;
  if (occ.blocks_per_sm <= 0 || d.sm_count <= 0) return r;
  const block_grid g = grid_of(p, c, d);
  const std::int64_t tiles_m = g.tiles_m, tiles_n = g.tiles_n, k_padded = g.k_padded, split = g.split;
  r.blocks = g.sk ? g.sk->ctas : tiles_m * tiles_n * p.batch * split;
  r.tile_efficiency = static_cast<double>(p.useful_rows()) / static_cast<double>(p.batch) * p.n * p.k /
                      (static_cast<double>(tiles_m * c.block_m) * (tiles_n * c.block_n) * k_padded);
  const std::int64_t resident = add_compute_time(d, p, c, occ, efficiency, g, r);
  std::vector<memory_traffic> whole;
  if (const auto w = whole_tiles(p, c)) whole.push_back(traffic_of(d, *w, c, g, r.blocks, resident));
  // Grouped: the groups' rows grown alone too. Where N's last tile is partial, the problem grown to
  // whole tiles reads more of every group's B than the groups' rows do when they fill their tiles,
  // and the G panels of B make a latency term fall steeply as rows fill the tiles: against the whole
  // problem alone, 8 groups of 127 rows of 14336x4096 on the H100 were predicted 392.99 us for a
  // 128x192x64 tile of 3 stages, of 128 rows 392.88. (A plain problem keeps the one comparison,
  // and its predictions.)
  if (p.grouped())
    if (const auto w = whole_tiles(p, c, true)) whole.push_back(traffic_of(d, *w, c, g, r.blocks, resident));
  // Clusters past those that fit at once run in rounds on the SMs the first ones free, each round's
  // blocks waiting out their own fills: the DRAM and L2 round trips per window count once a round.
  // (32 split-K clusters of 4 on the H200, 31 at once, measured 21.9 us where 16 took 16.1; the
  // calibrated model fitted to the 2026-12-04 recording put 16x4096x4096's k4 tiles, 32 clusters,
  // first at 13.2 us, which measured 21.9-23.0 us.) Counted where the clusters cut the grid only: for
  // every launch of more blocks than slots it moved the held-out figures of the 2026-11 recordings
  // in opposite directions (the H100's median time error 7.3% -> 5.8%, the H200's worst 24.0% -> 32.5%).
  // (resident_blocks holds fewer blocks than the SMs' slots only where clusters cut the grid.)
  const bool clusters_cut = resident < static_cast<std::int64_t>(occ.blocks_per_sm) * d.sm_count;
  const double rounds =
      !g.sk && clusters_cut ? std::ceil(blocks_on_busiest_sm(d, resident, r.blocks) / occ.blocks_per_sm) : 1.0;
  add_memory_time(d, p, c, g, traffic_of(d, p, c, g, r.blocks, resident), whole, dram_share, rounds, r);

  const double sm_l2_gbs = d.l2_bandwidth_gbs / d.sm_count;  // an SM's share of L2 bandwidth
  if (g.sk) {
    // The owner's fixup follows its k-loop: its partial tiles through its SM's share of L2
    // bandwidth, and one L2 round trip per peer it waits on; each unit the busiest CTA starts
    // beyond its tiles' worth adds a pipeline fill (a DRAM round trip) and an epilogue's store.
    const double tile_store_bytes = static_cast<double>(c.block_m) * c.block_n * element_bytes(p.elements().c);
    r.fixup_us = g.sk->owner_fixup_bytes / (sm_l2_gbs * 1e3) + g.sk->owner_waits * l2_latency_us +
                 g.sk->extra_tile_starts * (dram_latency_us + tile_store_bytes / (sm_l2_gbs * 1e3));
  }
  if (!g.sk && split > 1 && c.family->reduces_split_k_in_global_memory()) {
    // Split-K through a workspace: the last slice of each tile to finish counts in (a fence, an
    // atomic and a fence: an L2 round trip), reads the split partial tiles of its rows inside M
    // back through its SM's share of L2 bandwidth (as stream-K's owner reads its fixup) and
    // only then writes C, after every k-loop of the tile. The busiest SM runs the tail of about
    // one in split of its blocks.
    const double partials = static_cast<double>(split) * std::min<std::int64_t>(c.block_m, p.m) * c.block_n * 4;
    const double tails = std::ceil(blocks_on_busiest_sm(d, resident, r.blocks) / static_cast<double>(split));
    // Its threads read them back at the larger of that bandwidth and the L2 hits they wait out in
    // turn: 128x4096x4096's tiles split 2, 4 and 8 ways through a workspace measured 10%, 25% and
    // 42% slower than the bandwidth alone predicted (H100 2026-11-23, median), whole ones as
    // predicted; with the waits the held-out picks' worst time error 20.4% -> 17.8% (H200
    // 2026-11-26: 22.1% -> 16.2%, its worst pick 10.2% -> 7.5%).
    const double waits_us = c.family->split_k_reduction_round_trips(c, p) * l2_hit_wait_us;
    r.fixup_us = tails * (std::max(partials / (sm_l2_gbs * 1e3), waits_us) + l2_latency_us);
  }
  if (!g.sk && split > 1 && c.family->reduces_split_k_in_cluster()) {
    // Split-K inside a cluster: after its k-loop each of the split - 1 peers stores its whole fp32
    // partial tile (every accumulator, rows past M too) into the leader's shared memory and arrives
    // on the leader's barrier; the leader waits, adds them, and only then runs the epilogue: per
    // tile, the partials through the leader's port (taken as its SM's share of L2 bandwidth: the
    // SM-to-SM network shares the GPC's crossbar, and its own figure is not published) and one
    // round trip (the remote arrival, as an L2 hit's). The busiest SM runs that many tiles.
    // (2026-12-04, H200: with no such term, 128x4096x4096's pick, a 64x128 tile split in pairs,
    // measured 15% slower than predicted, its twin whole 14% faster; held out, the recording's
    // worst time error 13.1% -> 8.7%.)
    const double partials = static_cast<double>(split - 1) * c.block_m * c.block_n * 4;
    r.fixup_us = blocks_on_busiest_sm(d, resident, r.blocks) * (partials / (sm_l2_gbs * 1e3) + l2_latency_us);
  }
  // Kernels before the GEMM (K-major copies): a stream of their bytes through DRAM, and a ramp
  // (one DRAM round trip) each; timed with the GEMM, so part of its time.
  if (const double bytes = c.family->prologue_bytes(c, p); bytes > 0)
    r.prologue_us = bytes / (d.memory_bandwidth_gbs * dram_attainable_share * 1e3) +
                    c.family->prologue_launches(c, p) * dram_latency_us;
  r.bound = r.compute_us >= r.memory_us ? "compute" : "memory";
  r.time_us = std::max(pipelined_compute_us(r.compute_us, r.latency_us), r.memory_us) + r.fixup_us + r.prologue_us +
              launch_overhead_us;
  r.tflops = p.flops() / (r.time_us * 1e-6) / 1e12;
  return r;
}

// A k-tile waits for whichever is later, its math or its loads' round trip; the two vary from
// tile to tile, so near each other the wait exceeds either. The 4-norm: on the H100 and H200
// (profiles/measured), Hopper tiles of 128x256 with one k-tile in flight measured 2-15% slower
// than with two, 128x128 ones 40-60%; from the L2 latency above (their k-tiles' math 0.67 and
// 0.33 us at 84% of the bf16 peak) it gives 7% and 57%, the 2-norm 25% and 80%.
double pipelined_compute_us(double compute_us, double latency_us) {
  if (latency_us <= 0) return compute_us;
  return std::pow(std::pow(compute_us, 4) + std::pow(latency_us, 4), 0.25);
}

namespace {
// A grouped problem on a library: one GEMM per group with rows, one after the other (the loop
// of cuBLASLt calls the measured reference runs).
prediction predict_library_loop(const device_spec& d, const gemm_problem& p, double efficiency) {
  prediction sum;
  for (const group_slice& s : group_slices(p)) {
    const prediction r = predict_library_gemm(d, s.problem, efficiency);
    sum.blocks += r.blocks;
    sum.compute_us += r.compute_us;
    sum.memory_us += r.memory_us;
    sum.dram_bytes += r.dram_bytes;
    sum.l2_bytes += r.l2_bytes;
    sum.time_us += r.time_us;
  }
  sum.waves = static_cast<double>(sum.blocks) / d.sm_count;
  sum.bound = sum.compute_us >= sum.memory_us ? "compute" : "memory";
  sum.tflops = p.flops() / (sum.time_us * 1e-6) / 1e12;
  return sum;
}
}  // namespace

prediction predict_library_gemm(const device_spec& d, const gemm_problem& p, double efficiency) {
  prediction r;
  if (d.sm_count <= 0) return r;
  if (p.grouped()) return predict_library_loop(d, p, efficiency);
  // Libraries pick smaller tiles for thin problems; 64 rows or columns at the least.
  const std::int64_t tile_m = p.m >= 128 ? 128 : 64, tile_n = p.n >= 128 ? 128 : 64;
  const std::int64_t tiles = ceil_div(p.m, tile_m) * ceil_div(p.n, tile_n) * p.batch;
  const double waves = std::ceil(static_cast<double>(tiles) / d.sm_count);
  const double tile_flops = 2.0 * tile_m * tile_n * static_cast<double>(p.k);
  const double rate_per_sm = d.peak_tflops(p.type) * 1e12 * efficiency / d.sm_count;
  r.blocks = tiles;
  r.waves = static_cast<double>(tiles) / d.sm_count;
  r.wave_efficiency = static_cast<double>(tiles) / (waves * d.sm_count);
  r.compute_us = waves * tile_flops / rate_per_sm * 1e6;
  const double c_passes = p.beta != 0.0 ? 2.0 : 1.0;
  const double bytes = ((static_cast<double>(p.m) * p.k + static_cast<double>(p.k) * p.n) * element_bytes(p.type) +
                        c_passes * static_cast<double>(p.m) * p.n * element_bytes(p.elements().c)) * p.batch;
  r.memory_us = bytes / (d.memory_bandwidth_gbs * 1e9) * 1e6;
  r.dram_bytes = bytes;
  r.l2_bytes = static_cast<double>(tiles) * (tile_m + tile_n) * p.k * element_bytes(p.type) +
               c_passes * static_cast<double>(p.m) * p.n * element_bytes(p.elements().c) * p.batch;
  r.bound = r.compute_us >= r.memory_us ? "compute" : "memory";
  r.time_us = std::max(r.compute_us, r.memory_us) + launch_overhead_us;
  r.tflops = p.flops() / (r.time_us * 1e-6) / 1e12;
  return r;
}

}  // namespace tiletune
