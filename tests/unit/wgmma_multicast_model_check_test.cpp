// An explicit-state model check of the 2x1 cluster's shared stage ring (TT_CLUSTER_M 2 in
// kernels_templates/wgmma/wgmma_gemm.cu): two CTAs, each with a producer and a consumer warpgroup
// (its four warps' arrivals taken together), over the same pairs of tiles. A producer fills its
// stage with its own A box and one half of B multicast into both CTAs' stage; so a stage of
// either CTA may be refilled only once both consumers released it. The ring's stepping, parities
// and release points are the kernel's functions (wgmma_tile_math.cuh).
//
// Per CTA and stage: `full` completes with its producer's arrive.expect_tx and the three boxes
// that land there (its A, its half of B, the peer's half); `empty` with eight arrivals (four from
// each CTA's consumer warps, the peer's remote). Boxes land at any moment after their issue.
// Checked: no box lands in a stage whose consumer may still read it; a consumer finds its own
// (unit, k-tile) in all three parts; nothing lands in or arrives at an exited CTA; nothing is stuck.
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_tile_math.cuh"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>
#include <vector>

namespace {

enum class defect { none, local_release, no_exit_sync };

constexpr int max_stages = 3;

struct box {
  int cta, stage, part, value;  // part 0: A, 1 and 2: B's halves
  auto operator<=>(const box&) const = default;
};

struct cta_state {
  int p_pos = 0, c_pos = 0;  // producer's and consumer's ring positions (unit * k_tiles + k-tile)
  int prev = -1;             // the consumer's stage still read by a wgmma group
  int reading = -1;          // the stage the consumer's last group may read (prev), -1 none
  std::array<std::array<int, 3>, max_stages> content{};
  std::array<int, max_stages> full_done{}, full_boxes{}, full_armed{}, empty_done{}, empty_arrivals{};
  bool arrived = false, exited = false;
  auto operator<=>(const cta_state&) const = default;
};

struct state {
  std::array<cta_state, 2> ctas{};
  std::vector<box> in_flight;
  int cluster_arrivals = 0;
  auto operator<=>(const state&) const = default;
};

struct checker {
  int stages, positions, k_tiles;
  defect d;
  std::set<state> seen;
  std::string error;
  long long states = 0;

  checker(int s, int units, int k, defect dd) : stages(s), positions(units * k), k_tiles(k), d(dd) {}

  void fail(const std::string& what) {
    if (error.empty()) error = what;
  }
  static bool passes(int done, unsigned parity) { return (static_cast<unsigned>(done) & 1u) != parity; }
  int empty_count() const { return static_cast<int>(tt_empty_arrivals(1)) * (d == defect::local_release ? 1 : 2); }
  static int stage_of(int pos, int stages) { return pos % stages; }
  static unsigned phase_of(int pos, int stages) { return static_cast<unsigned>(pos / stages) & 1u; }

  void complete_full(cta_state& c, int st) {
    auto& b = c.full_boxes[static_cast<std::size_t>(st)];
    auto& armed = c.full_armed[static_cast<std::size_t>(st)];
    if (armed && b >= 3) {
      b -= 3;
      armed = 0;
      ++c.full_done[static_cast<std::size_t>(st)];
    }
  }

  bool produce(state& s, int r) {
    cta_state& c = s.ctas[static_cast<std::size_t>(r)];
    if (c.p_pos >= positions || c.exited) return false;
    const int st = stage_of(c.p_pos, stages);
    if (!passes(c.empty_done[static_cast<std::size_t>(st)], tt_producer_wait_parity(phase_of(c.p_pos, stages))))
      return false;
    c.full_armed[static_cast<std::size_t>(st)] = 1;  // arrive.expect_tx
    const int value = c.p_pos + 1;
    s.in_flight.push_back({r, st, 0, value});          // its A
    s.in_flight.push_back({r, st, 1 + r, value});      // its half of B, here
    s.in_flight.push_back({1 - r, st, 1 + r, value});  // and in the peer
    complete_full(c, st);
    ++c.p_pos;
    return true;
  }

  void land(state& s, std::size_t i) {
    const box b = s.in_flight[i];
    s.in_flight.erase(s.in_flight.begin() + static_cast<long>(i));
    cta_state& c = s.ctas[static_cast<std::size_t>(b.cta)];
    if (c.exited) fail(fmt::format("a box lands in CTA {} after it exited", b.cta));
    if (c.reading == b.stage)
      fail(fmt::format("part {} of position {} lands in CTA {}'s stage {} while its consumer's wgmma may read it", b.part,
                       b.value - 1, b.cta, b.stage));
    c.content[static_cast<std::size_t>(b.stage)][static_cast<std::size_t>(b.part)] = b.value;
    ++c.full_boxes[static_cast<std::size_t>(b.stage)];
    complete_full(c, b.stage);
  }

  void release(state& s, int r, int st) {
    for (int target : {r, 1 - r}) {
      if (target != r && d == defect::local_release) continue;
      cta_state& t = s.ctas[static_cast<std::size_t>(target)];
      if (t.exited) fail(fmt::format("CTA {} arrives on CTA {}'s barrier after it exited", r, target));
      auto& a = t.empty_arrivals[static_cast<std::size_t>(st)];
      a += 4;
      if (a >= empty_count()) {
        a -= empty_count();
        ++t.empty_done[static_cast<std::size_t>(st)];
      }
    }
  }

  bool consume(state& s, int r) {
    cta_state& c = s.ctas[static_cast<std::size_t>(r)];
    if (c.c_pos >= positions || c.exited) return false;
    const int st = stage_of(c.c_pos, stages);
    if (!passes(c.full_done[static_cast<std::size_t>(st)], tt_consumer_wait_parity(phase_of(c.c_pos, stages))))
      return false;
    for (int part = 0; part < 3; ++part)
      if (c.content[static_cast<std::size_t>(st)][static_cast<std::size_t>(part)] != c.c_pos + 1)
        fail(fmt::format("CTA {}'s consumer waits for position {} in stage {} and finds part {} of position {}", r,
                         c.c_pos, st, part, c.content[static_cast<std::size_t>(st)][static_cast<std::size_t>(part)] - 1));
    const int rel = tt_release_after_commit(c.prev, st);
    if (rel >= 0) release(s, r, rel);
    c.reading = st;
    ++c.c_pos;
    if (c.c_pos % k_tiles == 0) {  // tile end: wait_group 0 and the last release
      const int last = tt_release_at_tile_end(c.prev);
      c.prev = -1;
      c.reading = -1;
      if (last >= 0) release(s, r, last);
    }
    return true;
  }

  bool finish(state& s, int r) {
    cta_state& c = s.ctas[static_cast<std::size_t>(r)];
    if (c.exited || c.c_pos < positions || c.p_pos < positions) return false;
    if (d == defect::no_exit_sync) {
      c.exited = true;
      return true;
    }
    if (!c.arrived) {
      c.arrived = true;
      ++s.cluster_arrivals;
      return true;
    }
    if (s.cluster_arrivals < 2) return false;
    c.exited = true;
    return true;
  }

  void explore(const state& s) {
    if (!error.empty() || !seen.insert(s).second) return;
    ++states;
    bool moved = false;
    for (int r = 0; r < 2 && error.empty(); ++r)
      for (auto step : {&checker::produce, &checker::consume, &checker::finish}) {
        state next = s;
        if ((this->*step)(next, r)) {
          moved = true;
          explore(next);
        }
      }
    for (std::size_t i = 0; i < s.in_flight.size() && error.empty(); ++i) {
      state next = s;
      land(next, i);
      moved = true;
      explore(next);
    }
    if (moved || !error.empty()) return;
    if (!s.ctas[0].exited || !s.ctas[1].exited)
      fail(fmt::format("stuck: producers at {} and {}, consumers at {} and {}", s.ctas[0].p_pos, s.ctas[1].p_pos,
                       s.ctas[0].c_pos, s.ctas[1].c_pos));
  }

  std::string run() {
    explore(state{});
    return error;
  }
};

}  // namespace

TEST(wgmma_multicast_model, both_ctas_read_every_stage_before_either_refills_it) {
  struct config {
    int stages, units, k_tiles;
  };
  for (const config c : {config{2, 2, 2}, config{2, 1, 4}, config{2, 3, 1}}) {  // 3 stages x 2 x 2: 5M states, a minute
    checker m(c.stages, c.units, c.k_tiles, defect::none);
    EXPECT_EQ(m.run(), "") << c.stages << " stages, " << c.units << " units of " << c.k_tiles << " k-tiles";
    std::printf("multicast model: %d stages, %d units x %d k-tiles: %lld states\n", c.stages, c.units, c.k_tiles, m.states);
    EXPECT_GT(m.states, 1000);
  }
}

TEST(wgmma_multicast_model, planted_defects_are_caught) {
  struct planted {
    defect d;
    const char* name;
    const char* finds;
  };
  for (const planted p : {planted{defect::local_release, "a release only local", "while its consumer"},
                          planted{defect::no_exit_sync, "an exit without the final cluster barrier", "exited"}}) {
    checker m(2, 2, 2, p.d);
    const std::string r = m.run();
    EXPECT_NE(r.find(p.finds), std::string::npos) << p.name << ": " << (r.empty() ? "went unnoticed" : r);
    std::printf("%s: %s\n", p.name, r.c_str());
  }
}
