// An explicit-state model check of fp8 block scales copied by TMA (_ts, kernels_templates/wgmma/
// wgmma_gemm.cu): the producer's bulk copy of a stage's scales against the consumer lanes' plain
// reads of them, at the grain of the lanes. compute-sanitizer's racecheck reported the producer's
// refill racing those reads (H200, 2026-12-04); here every interleaving of a producer, one
// consumer warp of two lanes (standing for 32) and the copies in flight is explored over a ring of
// S stages and T k-tiles, with the kernel's own ring functions (wgmma_tile_math.cuh: the stepping,
// both parities, the release one k-tile behind its commit and at the tile's end).
//
// Per k-tile, each lane: wait full[stage] (the copy landed), read the stage's scales, meet the other
// lane at __syncwarp, then lane 0 releases the previous k-tile's stage (arrive on its empty barrier,
// release semantics: what the lanes did before the __syncwarp happened before it). At the tile's end
// lane 0 releases the last stage. The producer: wait empty[stage] for the previous round's release,
// then issue the stage's copy, which lands (writes the scales, completes full[stage]) at any later
// point. Checked: each lane reads the scales of the k-tile it expects; no state is stuck; everything
// lands. Planted defects show the checks can fail.
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_tile_math.cuh"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace {

enum class scales_defect { none, no_syncwarp, lanes_wait_the_producer_parity, producer_waits_the_consumer_parity };

struct lane_state {
  int kt = 0, step = 0, stage = 0, prev = -1, synced_generation = 0;
  unsigned phase = 0;
  bool done = false;
  auto operator<=>(const lane_state&) const = default;
};

struct scales_state {
  int producer_kt = 0, producer_stage = 0, producer_step = 0;
  unsigned producer_phase = 0;
  std::vector<int> in_flight;      // per stage: the k-tile whose copy has not landed, -1 none
  std::vector<int> scales;         // per stage: the k-tile whose scales the stage holds, -1 none
  std::vector<int> full_done;      // completed phases of full[s]
  std::vector<int> empty_done;     // completed phases of empty[s]
  std::vector<lane_state> lanes;
  int sync_arrived = 0, sync_generation = 0;
  auto operator<=>(const scales_state&) const = default;
};

struct scales_checker {
  int stages, k_tiles;
  scales_defect d;
  std::set<scales_state> seen;
  std::string error;
  long long states = 0;

  void fail(const std::string& what) {
    if (error.empty()) error = what;
  }
  static std::size_t z(int i) { return static_cast<std::size_t>(i); }

  bool producer(scales_state& s) {
    if (s.producer_kt == k_tiles) return false;
    const int st = s.producer_stage;
    if (s.producer_step == 0) {  // wait empty[st]: passes while its phase's parity differs
      const unsigned want = d == scales_defect::producer_waits_the_consumer_parity
                                ? tt_consumer_wait_parity(s.producer_phase)
                                : tt_producer_wait_parity(s.producer_phase);
      if ((static_cast<unsigned>(s.empty_done[z(st)]) & 1u) == want) return false;
      s.producer_step = 1;
      return true;
    }
    if (s.in_flight[z(st)] >= 0) fail(fmt::format("the copy of k-tile {} is issued into stage {} while k-tile {}'s is "
                                                  "in flight", s.producer_kt, st, s.in_flight[z(st)]));
    s.in_flight[z(st)] = s.producer_kt;
    s.producer_step = 0;
    ++s.producer_kt;
    s.producer_phase = tt_ring_advance(s.producer_stage, s.producer_phase, stages);
    return true;
  }

  void release(scales_state& s, int stage) { ++s.empty_done[z(stage)]; }  // one warp: one arrival a phase

  bool lane(scales_state& s, int l) {
    lane_state& n = s.lanes[z(l)];
    if (n.done) return false;
    if (n.kt == k_tiles) {  // the tile's end: lane 0 releases the last stage read
      if (l == 0) {
        const int last = tt_release_at_tile_end(n.prev);
        if (last >= 0) release(s, last);
      }
      n.done = true;
      return true;
    }
    switch (n.step) {
      case 0:  // wait full[stage] for this round's fill
        if ((static_cast<unsigned>(s.full_done[z(n.stage)]) & 1u) ==
            (d == scales_defect::lanes_wait_the_producer_parity ? tt_producer_wait_parity(n.phase)
                                                                : tt_consumer_wait_parity(n.phase)))
          return false;
        n.step = 1;
        return true;
      case 1:  // read the stage's scales
        if (s.scales[z(n.stage)] != n.kt)
          fail(fmt::format("lane {} reads the scales of stage {} at k-tile {} and finds k-tile {}'s", l, n.stage, n.kt,
                           s.scales[z(n.stage)]));
        n.step = d == scales_defect::no_syncwarp ? 4 : 2;
        return true;
      case 2:  // __syncwarp: arrive
        n.synced_generation = s.sync_generation + 1;
        if (++s.sync_arrived == static_cast<int>(s.lanes.size())) {
          s.sync_arrived = 0;
          ++s.sync_generation;
        }
        n.step = 3;
        return true;
      case 3:  // __syncwarp: wait for the other lane
        if (s.sync_generation < n.synced_generation) return false;
        n.step = 4;
        return true;
      default: {  // lane 0 releases the previous k-tile's stage, both move on
        const int released = tt_release_after_commit(n.prev, n.stage);
        if (l == 0 && released >= 0) release(s, released);
        n.step = 0;
        ++n.kt;
        n.phase = tt_ring_advance(n.stage, n.phase, stages);
        return true;
      }
    }
  }

  void explore(const scales_state& s) {
    if (!error.empty() || !seen.insert(s).second) return;
    ++states;
    bool moved = false;
    {
      scales_state next = s;
      if (producer(next)) {
        moved = true;
        explore(next);
      }
    }
    for (int l = 0; l < static_cast<int>(s.lanes.size()) && error.empty(); ++l) {
      scales_state next = s;
      if (lane(next, l)) {
        moved = true;
        explore(next);
      }
    }
    for (int st = 0; st < stages && error.empty(); ++st) {  // a copy in flight lands
      if (s.in_flight[z(st)] < 0) continue;
      scales_state next = s;
      next.scales[z(st)] = next.in_flight[z(st)];
      next.in_flight[z(st)] = -1;
      ++next.full_done[z(st)];
      moved = true;
      explore(next);
    }
    if (moved || !error.empty()) return;
    bool done = s.producer_kt == k_tiles;
    for (const auto& n : s.lanes) done = done && n.done;
    if (!done) {
      std::string where = fmt::format(" producer at k-tile {};", s.producer_kt);
      for (std::size_t l = 0; l < s.lanes.size(); ++l)
        where += fmt::format(" lane {} at k-tile {} step {};", l, s.lanes[l].kt, s.lanes[l].step);
      fail("stuck:" + where);
    }
  }

  std::string run() {
    scales_state s;
    s.in_flight.assign(z(stages), -1);
    s.scales.assign(z(stages), -1);
    s.full_done.assign(z(stages), 0);
    s.empty_done.assign(z(stages), 0);
    s.lanes.assign(2, lane_state{});
    explore(s);
    return error;
  }
};

}  // namespace

TEST(wgmma_stage_scales_model, every_lane_reads_the_scales_of_its_k_tile) {
  for (const auto& [stages, k_tiles] : {std::pair{2, 5}, std::pair{3, 6}, std::pair{4, 6}}) {
    scales_checker c{stages, k_tiles, scales_defect::none, {}, {}, 0};
    EXPECT_EQ(c.run(), "") << stages << " stages, " << k_tiles << " k-tiles";
    std::printf("stage scales model: %d stages x %d k-tiles, %lld states\n", stages, k_tiles, c.states);
    EXPECT_GT(c.states, 100);  // interleavings were explored, not one path
  }
}

TEST(wgmma_stage_scales_model, planted_defects_are_caught) {
  struct planted {
    scales_defect d;
    const char* name;
    const char* finds;
  };
  const planted all[] = {
      // The __syncwarp racecheck's report led to: without it lane 0 hands the stage back before lane 1 read.
      {scales_defect::no_syncwarp, "lane 0 releasing without __syncwarp", "lane 1 reads"},
      {scales_defect::lanes_wait_the_producer_parity, "lanes waiting the producer's parity", "finds"},
      {scales_defect::producer_waits_the_consumer_parity, "the producer waiting the consumers' parity", "stuck"},
  };
  for (const planted& p : all) {
    scales_checker c{2, 5, p.d, {}, {}, 0};
    const std::string r = c.run();
    EXPECT_NE(r.find(p.finds), std::string::npos) << p.name << ": " << (r.empty() ? "went unnoticed" : r);
    std::printf("%s: %s\n", p.name, r.c_str());
  }
}
