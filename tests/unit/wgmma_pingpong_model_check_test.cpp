// An explicit-state model check of the ping-pong schedule's stage ring (TT_PINGPONG in
// kernels_templates/wgmma/wgmma_gemm.cu): one producer fills the ring in the order of the CTA's
// units, two consumer warpgroups take the units in turn (tt_pingpong_mine), each reading only its
// own units' stages and passing the other's k-tiles on the ring without a wait. The ring's
// stepping, parities, release points and arrival counts are the kernel's own functions
// (wgmma_tile_math.cuh); wgmma_ring_model_check_test covers the cooperative ring at warp grain,
// this one the alternation, at warpgroup grain (a warpgroup's four arrivals taken together).
//
// The consumers take turns (tt_pingpong_waits_turn / tt_pingpong_turn_parity): without them a
// consumer that passed the other's k-tiles early waits on a stage two fills ahead, and the parity
// wait passes on the old fill (the planted no_turns finds it).
// Per stage: `full` completes when the producer's boxes land (one arrival with its bytes);
// `empty` when tt_empty_arrivals(readers) arrivals came. try_wait.parity(P) passes while the
// current phase's parity differs from P. Checked: no box lands in a stage a consumer's wgmma may
// still read; a consumer whose wait passes finds its own (unit, k-tile) there; every unit is
// multiplied once, by its consumer; nothing is stuck.
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_tile_math.cuh"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>
#include <vector>

namespace {

enum class defect { none, counts_both_consumers, no_pass_of_the_others_tiles, both_take_every_unit, no_turns };

constexpr int max_stages = 4;

struct consumer_state {
  int unit = 0, kt = 0;  // next (unit, k-tile) on the ring
  int stage = 0;
  unsigned phase = 0;
  int prev = -1;         // the stage whose wgmma group is still in flight (tt_release_after_commit)
  int done = 0;          // units multiplied
  auto operator<=>(const consumer_state&) const = default;
};

struct state {
  int p_unit = 0, p_kt = 0, p_stage = 0;
  unsigned p_phase = 0;
  std::array<int, max_stages> content{};          // (unit * 100 + kt + 1) landed in the stage, 0: none
  std::array<int, max_stages> in_flight{};        // a box issued, not yet landed: its content
  std::array<int, max_stages> full_done{}, empty_done{}, empty_arrivals{};
  std::array<int, max_stages> readers{};          // bit c: consumer c's group may read the stage
  std::array<consumer_state, 2> consumers{};
  std::array<int, 2> turns{};  // completed phases of each consumer's turn mbarrier
  auto operator<=>(const state&) const = default;
};

struct checker {
  int stages, units, k_tiles;
  defect d;
  std::set<state> seen;
  std::string error;
  long long states = 0;

  checker(int s, int u, int k, defect dd) : stages(s), units(u), k_tiles(k), d(dd) {}

  void fail(const std::string& what) {
    if (error.empty()) error = what;
  }
  int empty_count() const { return static_cast<int>(tt_empty_arrivals(d == defect::counts_both_consumers ? 2 : 1)); }
  bool mine(int unit, int c) const { return d == defect::both_take_every_unit || tt_pingpong_mine(unit, c); }
  static bool passes(int done, unsigned parity) { return (static_cast<unsigned>(done) & 1u) != parity; }

  void arrive_empty(state& s, int stage, int c) {
    s.readers[static_cast<std::size_t>(stage)] &= ~(1 << c);  // consumer c's group retired
    s.empty_arrivals[static_cast<std::size_t>(stage)] += 4;  // its four warps
    if (s.empty_arrivals[static_cast<std::size_t>(stage)] >= empty_count()) {
      s.empty_arrivals[static_cast<std::size_t>(stage)] -= empty_count();
      ++s.empty_done[static_cast<std::size_t>(stage)];
    }
  }

  // The producer's next fill: wait for the stage's release, issue the boxes.
  bool produce(state& s) {
    if (s.p_unit >= units) return false;
    const auto st = static_cast<std::size_t>(s.p_stage);
    if (!passes(s.empty_done[st], tt_producer_wait_parity(s.p_phase)) || s.in_flight[st]) return false;
    s.in_flight[st] = s.p_unit * 100 + s.p_kt + 1;
    s.p_phase = tt_ring_advance(s.p_stage, s.p_phase, stages);
    if (++s.p_kt == k_tiles) s.p_kt = 0, ++s.p_unit;
    return true;
  }

  // A box lands: the stage's content changes, its full phase completes.
  void land(state& s, int stage) {
    const auto st = static_cast<std::size_t>(stage);
    if (s.readers[st])
      fail(fmt::format("a box of (unit {}, k-tile {}) lands in stage {} while consumer {}'s wgmma may read it",
                       s.in_flight[st] / 100, s.in_flight[st] % 100 - 1, stage, s.readers[st] == 1 ? 0 : 1));
    s.content[st] = s.in_flight[st];
    s.in_flight[st] = 0;
    ++s.full_done[st];
  }

  bool consume(state& s, int c) {
    consumer_state& k = s.consumers[static_cast<std::size_t>(c)];
    if (k.unit >= units) return false;
    if (!mine(k.unit, c)) {  // the other's unit: pass its k-tiles on the ring
      if (d != defect::no_pass_of_the_others_tiles)
        for (int i = 0; i < k_tiles; ++i) k.phase = tt_ring_advance(k.stage, k.phase, stages);
      ++k.unit;
      return true;
    }
    // Its turn first (tt_pingpong_waits_turn), then the stage's fill.
    if (k.kt == 0 && d != defect::no_turns && tt_pingpong_waits_turn(k.unit) &&
        !passes(s.turns[static_cast<std::size_t>(c)], tt_pingpong_turn_parity(k.unit)))
      return false;
    const auto st = static_cast<std::size_t>(k.stage);
    if (!passes(s.full_done[st], tt_consumer_wait_parity(k.phase))) return false;
    const int expect = k.unit * 100 + k.kt + 1;
    if (s.content[st] != expect)
      fail(fmt::format("consumer {} waits for (unit {}, k-tile {}) in stage {} and finds (unit {}, k-tile {})", c,
                       k.unit, k.kt, k.stage, s.content[st] / 100, s.content[st] % 100 - 1));
    s.readers[st] |= 1 << c;
    const int release = tt_release_after_commit(k.prev, k.stage);
    if (release >= 0) arrive_empty(s, release, c);
    k.phase = tt_ring_advance(k.stage, k.phase, stages);
    if (k.kt + 1 == k_tiles) ++s.turns[static_cast<std::size_t>(1 - c)];  // main loop done: the other's turn
    if (++k.kt == k_tiles) {  // tile end: wait_group 0, release the last stage
      const int last = tt_release_at_tile_end(k.prev);
      if (last >= 0) arrive_empty(s, last, c);
      k.prev = -1;
      k.kt = 0;
      ++k.unit;
      ++k.done;
    }
    return true;
  }

  void explore(const state& s) {
    if (!error.empty() || !seen.insert(s).second) return;
    ++states;
    bool moved = false;
    auto go = [&](state next) {
      moved = true;
      explore(next);
    };
    {
      state next = s;
      if (produce(next)) go(next);
    }
    for (int st = 0; st < stages && error.empty(); ++st)
      if (s.in_flight[static_cast<std::size_t>(st)]) {
        state next = s;
        land(next, st);
        go(next);
      }
    for (int c = 0; c < 2 && error.empty(); ++c) {
      state next = s;
      if (consume(next, c)) go(next);
    }
    if (moved || !error.empty()) return;
    const bool finished = s.p_unit == units && s.consumers[0].unit >= units && s.consumers[1].unit >= units;
    if (!finished) {
      fail(fmt::format("stuck: producer at unit {} k-tile {}, consumers at units {} and {}", s.p_unit, s.p_kt,
                       s.consumers[0].unit, s.consumers[1].unit));
      return;
    }
    const int want0 = (units + 1) / 2, want1 = units / 2;
    if (d == defect::none && (s.consumers[0].done != want0 || s.consumers[1].done != want1))
      fail(fmt::format("units multiplied: {} and {}, not {} and {}", s.consumers[0].done, s.consumers[1].done, want0,
                       want1));
  }

  std::string run() {
    explore(state{});
    return error;
  }
};

}  // namespace

TEST(wgmma_pingpong_model, consumers_take_turns_without_reading_a_refilled_stage) {
  struct config {
    int stages, units, k_tiles;
  };
  for (const config c : {config{2, 3, 1}, config{2, 4, 3}, config{3, 4, 2}, config{4, 3, 5}, config{3, 5, 4}}) {
    checker m(c.stages, c.units, c.k_tiles, defect::none);
    EXPECT_EQ(m.run(), "") << c.stages << " stages, " << c.units << " units of " << c.k_tiles << " k-tiles";
    std::printf("ping-pong model: %d stages, %d units x %d k-tiles: %lld states\n", c.stages, c.units, c.k_tiles,
                m.states);
  }
}

TEST(wgmma_pingpong_model, planted_defects_are_caught) {
  struct planted {
    defect d;
    const char* name;
  };
  for (const planted p : {planted{defect::counts_both_consumers, "empty counting both consumers' warps"},
                          planted{defect::no_pass_of_the_others_tiles, "a consumer that does not pass the other's k-tiles"},
                          planted{defect::both_take_every_unit, "both consumers on every unit, one's count"},
                          planted{defect::no_turns, "skipping without taking turns (a parity wait two fills ahead)"}}) {
    checker m(3, 4, 2, p.d);
    const std::string r = m.run();
    EXPECT_NE(r, "") << p.name << " went unnoticed";
    std::printf("%s: %s\n", p.name, r.c_str());
  }
}
