// The persistent grid's schedule (kernels_templates/wgmma/wgmma_schedule.cuh): data-parallel
// waves and stream-K on the rest. The kernel's own functions are called, never copied.
// - Every plan of up to 4096 tiles, 256 k-tiles and 114/128/132 CTAs: the ranges cut the rest
//   end to end, each within [min(min_unit, k_tiles), k_tiles], and the busiest CTA's load is
//   within one stream-K range and two units of an even split of all k-tiles (a tile-aligned cut
//   is taken up to two units longer than the end-to-end one).
// - Smaller plans walked unit by unit: every (tile, k-tile) done exactly once, one owner per
//   tile at k-tile 0, each owner's peers exactly the other workers of its tile, every worker
//   publishing at most one partial, and that partial its first unit.
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_schedule.cuh"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

constexpr int min_unit = 8;  // k-tiles: CUTLASS's stream-K units are no smaller

std::string plan_name(const tt_schedule& s) {
  return fmt::format("{} tiles x {} k-tiles on {} CTAs: ", s.tiles, s.k_tiles, s.ctas);
}

// The first broken property of a plan, checked from its ranges (no walk): "" when it holds.
std::string check_ranges(const tt_schedule& s) {
  const long long tiles = s.tiles, k_tiles = s.k_tiles, ctas = s.ctas;
  if (s.sk_workers > 0 && s.dp_tiles % ctas != 0) return plan_name(s) + "the whole tiles do not fill whole waves";
  if (s.dp_tiles + s.sk_iters / k_tiles != tiles || s.sk_iters % k_tiles != 0) return plan_name(s) + "tiles lost";
  if (s.sk_workers > ctas) return plan_name(s) + "more workers than CTAs";
  if (tiles % ctas != 0 && s.sk_workers == 0) return plan_name(s) + "a partial wave without stream-K";
  const long long shortest = std::min<long long>(min_unit, k_tiles);
  long long busiest = 0;
  for (int c = 0; c < ctas; ++c) {
    long long load = (s.dp_tiles > c ? (s.dp_tiles - c + ctas - 1) / ctas : 0) * k_tiles;
    if (c < s.sk_workers) {
      const long long b = tt_sk_begin(s, c), e = tt_sk_begin(s, c + 1);
      if (e - b < shortest || e - b > k_tiles) return plan_name(s) + fmt::format("worker {} has {} k-tiles", c, e - b);
      load += e - b;
    }
    busiest = std::max(busiest, load);
  }
  if (s.sk_workers > 0 && (tt_sk_begin(s, 0) != 0 || tt_sk_begin(s, s.sk_workers) != s.sk_iters))
    return plan_name(s) + "the ranges do not span the rest";
  // A range of the end-to-end cut is shorter than two units (ranges = rest / min_unit, floored),
  // and a tile-aligned cut is taken up to two units longer than it: the busiest CTA may carry
  // that much beyond an even split of all k-tiles, never more.
  const long long best = (tiles * k_tiles + ctas - 1) / ctas;
  if (busiest > best + 4 * min_unit - 1)
    return plan_name(s) + fmt::format("the busiest CTA has {} k-tiles, the best split {}", busiest, best);
  return "";
}

using unit_function = tt_work_unit (*)(const tt_schedule&, int, int);

// The first broken property found by running every unit of every CTA: "" when it holds.
std::string check_walk(const tt_schedule& s, unit_function unit_of = tt_unit) {
  const auto at = [&](long long tile) { return static_cast<std::size_t>(tile); };
  std::vector<int> done(at(s.tiles * s.k_tiles), 0), owners(at(s.tiles), 0);
  std::vector<std::vector<int>> partials(at(s.tiles));   // the workers that published into each tile
  std::vector<std::vector<int>> awaited(at(s.tiles));    // the peers its owner waits for
  for (int c = 0; c < s.ctas; ++c) {
    int first_stream_k = -1;
    for (int i = 0; i < tt_units_of(s, c); ++i) {
      const tt_work_unit u = unit_of(s, c, i);
      if (u.tile < 0 || u.tile >= s.tiles || u.k_begin < 0 || u.k_end > s.k_tiles || u.k_begin >= u.k_end)
        return plan_name(s) + fmt::format("CTA {} unit {} is out of range", c, i);
      for (int k = u.k_begin; k < u.k_end; ++k) ++done[at(u.tile * s.k_tiles + k)];
      if (u.worker >= 0 && first_stream_k < 0) first_stream_k = i;
      if (u.owner != (u.k_begin == 0)) return plan_name(s) + fmt::format("tile {}: an owner that does not start it", u.tile);
      if (u.owner) {
        ++owners[at(u.tile)];
        for (int w = u.first_peer; w <= u.last_peer; ++w) awaited[at(u.tile)].push_back(w);
        continue;
      }
      if (i != first_stream_k || u.worker != c)
        return plan_name(s) + fmt::format("CTA {} publishes a partial that is not its first stream-K unit", c);
      partials[at(u.tile)].push_back(u.worker);
    }
  }
  for (long long t = 0; t < s.tiles; ++t) {
    for (int k = 0; k < s.k_tiles; ++k)
      if (done[at(t * s.k_tiles + k)] != 1)
        return plan_name(s) + fmt::format("tile {} k-tile {} done {} times", t, k, done[at(t * s.k_tiles + k)]);
    if (owners[at(t)] != 1) return plan_name(s) + fmt::format("tile {} has {} owners", t, owners[at(t)]);
    if (partials[at(t)] != awaited[at(t)])  // both in worker order
      return plan_name(s) + fmt::format("tile {}: its owner waits for other peers than publish into it", t);
  }
  return "";
}

tt_schedule plan(long long tiles, int k_tiles, int ctas, int stream_k = 1) {
  return tt_make_schedule(tiles, k_tiles, ctas, min_unit, stream_k);
}

}  // namespace

TEST(wgmma_schedule, every_plan_cuts_the_rest_within_one_range_and_two_units_of_an_even_split) {
  long long plans = 0;
  for (int ctas : {114, 128, 132})
    for (long long tiles = 1; tiles <= 4096; ++tiles)
      for (int k_tiles = 1; k_tiles <= 256; ++k_tiles, ++plans) ASSERT_EQ(check_ranges(plan(tiles, k_tiles, ctas)), "");
  EXPECT_EQ(plans, 3LL * 4096 * 256);
}

TEST(wgmma_schedule, walking_every_unit_does_each_k_tile_once_with_one_owner_and_its_peers) {
  for (int ctas : {1, 2, 3, 7, 114, 128, 132})
    for (long long tiles = 1; tiles <= 400; ++tiles)
      for (int k_tiles : {1, 2, 3, 7, 8, 9, 16, 17, 31, 64, 256}) ASSERT_EQ(check_walk(plan(tiles, k_tiles, ctas)), "");
}

TEST(wgmma_schedule, whole_waves_stay_data_parallel_and_stream_k_off_is_the_plain_order) {
  // 1024 tiles on 132 CTAs: 7 whole waves (924 tiles), the 100 left cut end to end (49 k-tiles
  // each; whole, they would be 64, more than a unit longer beside the waves).
  tt_schedule s = plan(1024, 64, 132);
  EXPECT_EQ(s.dp_tiles, 924);
  EXPECT_EQ(s.sk_workers, 132);
  EXPECT_EQ(s.sk_iters, 6400);
  // Decode, 32 tiles of 64 k-tiles on 132 CTAs: split-K across the GPU, each tile cut into 4
  // ranges of 16 k-tiles (128 workers), not 132 ranges of 15 or 16 that straddle two tiles.
  s = plan(32, 64, 132);
  EXPECT_EQ(s.dp_tiles, 0);
  EXPECT_EQ(s.sk_workers, 128);
  EXPECT_EQ(tt_sk_begin(s, 1) - tt_sk_begin(s, 0), 16);
  // 100 tiles and no whole wave: whole tiles of 64 k-tiles against the end-to-end cut's 49 are
  // within two units, so they run whole; of 256 k-tiles (256 against 194) the cut stays.
  s = plan(100, 64, 132);
  EXPECT_EQ(s.sk_workers, 100);
  s = plan(100, 256, 132);
  EXPECT_EQ(s.sk_workers, 132);
  // Tiles of fewer k-tiles than a unit stay whole: 5 tiles of 4 k-tiles, one worker each.
  s = plan(5, 4, 132);
  EXPECT_EQ(s.sk_workers, 5);
  for (int w = 0; w < 5; ++w) EXPECT_EQ(tt_unit(s, w, 0).k_end - tt_unit(s, w, 0).k_begin, 4);
  // Off: CTA c runs tiles c, c + 132, ... whole.
  s = plan(300, 64, 132, 0);
  EXPECT_EQ(s.sk_workers, 0);
  ASSERT_EQ(tt_units_of(s, 35), 3);
  EXPECT_EQ(tt_unit(s, 35, 2).tile, 35 + 2 * 132);
  EXPECT_EQ(tt_units_of(s, 40), 2);
  EXPECT_EQ(check_walk(s), "");
}

// Where cutting each left-over tile into equal ranges makes the longest at most one unit longer
// than cutting the k-iterations end to end (two with no whole wave: decode shapes), the plan is tile-aligned: no range runs into a second tile, so every
// worker starts one unit. 62 tiles of 32 k-tiles on 132 CTAs (256 x 3968 in 128 x 128 fp8 tiles on
// an H200): 124 ranges of 16, where the end-to-end cut's 132 ranges of 15 or 16 straddled and 66
// tiles (N 4224) ran aligned, so more tiles were planned faster than fewer.
TEST(wgmma_schedule, left_over_tiles_are_cut_tile_aligned_unless_straddling_is_shorter_by_a_unit_or_two_at_decode) {
  tt_schedule s = plan(62, 32, 132);
  EXPECT_EQ(s.sk_workers, 124);
  for (int w = 0; w < s.sk_workers; ++w) ASSERT_EQ(tt_units_of(s, w), 1) << w;
  int aligned = 0, cut = 0;
  for (int ctas : {3, 7, 114, 128, 132})
    for (long long tiles = 1; tiles <= 400; ++tiles)
      for (int k_tiles : {1, 7, 8, 9, 16, 17, 31, 32, 64, 256}) {
        s = plan(tiles, k_tiles, ctas);
        if (s.sk_workers == 0) continue;
        const long long rest = s.sk_iters / k_tiles;
        const long long end_to_end = std::min<long long>(ctas, std::max(rest, s.sk_iters / min_unit));
        long long longest = 0, straddles = 0;
        for (int w = 0; w < s.sk_workers; ++w) {
          const long long b = tt_sk_begin(s, w), e = tt_sk_begin(s, w + 1);
          longest = std::max(longest, e - b);
          straddles += b / k_tiles != (e - 1) / k_tiles;
        }
        const long long cut_longest = (s.sk_iters + end_to_end - 1) / end_to_end;
        ASSERT_LE(longest, cut_longest + (s.dp_tiles == 0 ? 2 : 1) * min_unit) << plan_name(s);
        if (s.sk_workers % rest == 0 && s.sk_workers != end_to_end) {
          ++aligned;
          ASSERT_EQ(straddles, 0) << plan_name(s) << "aligned, yet a range straddles";
        } else {
          ++cut;
        }
      }
  EXPECT_GT(aligned, 1000);  // both kinds of plan occur
  EXPECT_GT(cut, 1000);
}

// The kernel addresses a worker's slot as one base, slot(w, t) = index(w, 0, t), plus
// v * threads per value (tt_sk_slot in wgmma_gemm.cu): that holds only while the index is
// linear in the value, which this pins; the emulation reads through the index itself.
TEST(wgmma_schedule, the_workspace_index_is_one_base_per_thread_plus_the_value_times_the_threads) {
  const int slot = 128 * 256, threads = 256;
  for (int w : {0, 1, 7, 131})
    for (int t : {0, 1, 127, 255})
      for (int v : {0, 1, 63, 127})
        EXPECT_EQ(tt_sk_workspace_index(w, v, t, threads, slot),
                  tt_sk_workspace_index(w, 0, t, threads, slot) + static_cast<long long>(v) * threads)
            << w << " " << t << " " << v;
  // Slots do not overlap: a worker's last value ends before the next worker's first.
  EXPECT_LT(tt_sk_workspace_index(0, slot / threads - 1, threads - 1, threads, slot),
            tt_sk_workspace_index(1, 0, 0, threads, slot));
}

namespace {
// Planted defects in the unit function: an owner that forgets its last peer, an owner at the end.
tt_work_unit forgets_last_peer(const tt_schedule& s, int cta, int index) {
  tt_work_unit u = tt_unit(s, cta, index);
  if (u.owner && u.last_peer >= u.first_peer) --u.last_peer;
  return u;
}
tt_work_unit owner_at_the_end(const tt_schedule& s, int cta, int index) {
  tt_work_unit u = tt_unit(s, cta, index);
  u.owner = u.k_end == s.k_tiles;
  return u;
}
tt_work_unit wrong_stride(const tt_schedule& s, int cta, int index) {
  tt_work_unit u = tt_unit(s, cta, index);
  if (u.worker < 0) u.tile = cta + static_cast<long long>(index) * (s.ctas - 1);
  return u;
}
}  // namespace

TEST(wgmma_schedule, the_checks_catch_planted_defects) {
  const tt_schedule s = plan(200, 32, 132);
  ASSERT_EQ(check_ranges(s), "");
  ASSERT_EQ(check_walk(s), "");
  tt_schedule short_rest = s;
  --short_rest.sk_iters;  // the last range stops a k-tile early
  EXPECT_NE(check_ranges(short_rest), "");
  EXPECT_NE(check_walk(short_rest).find("done 0 times"), std::string::npos);
  tt_schedule shifted = s;
  shifted.dp_tiles -= 1;  // whole tiles that stop short of a wave
  shifted.sk_iters += s.k_tiles;
  EXPECT_NE(check_ranges(shifted).find("whole waves"), std::string::npos);
  EXPECT_NE(check_walk(plan(600, 16, 132), wrong_stride).find("times"), std::string::npos);
  // Each remainder tile whole on its own worker: every range legal, the balance is what breaks.
  tt_schedule whole = plan(133, 256, 132);
  whole.sk_workers = 1;
  EXPECT_NE(check_ranges(whole).find("busiest"), std::string::npos);
  EXPECT_NE(check_ranges(plan(133, 256, 132, 0)).find("partial wave"), std::string::npos);
  EXPECT_NE(check_walk(s, forgets_last_peer).find("waits for other peers"), std::string::npos);
  EXPECT_NE(check_walk(s, owner_at_the_end).find("owner"), std::string::npos);
}
