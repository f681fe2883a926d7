// An explicit-state model check of the wgmma kernel's synchronisation
// (kernels_templates/wgmma/wgmma_gemm.cu): the producer thread, the consumer warps,
// the TMA boxes in flight and the full/empty mbarriers of the stage ring, over
// a persistent CTA's tiles. Every interleaving of small configurations is
// explored (breadth first, with a visited set); the ring's stepping, init
// counts, tx bytes and parities are the kernel's own functions (the "stage
// ring" section of wgmma_tile_math.cuh), with planted defects switched in
// around them by this test only.
//
// What is modelled, and why at this grain:
// - mbarrier per the PTX ISA ("Parallel Synchronization and Communication
//   Instructions: mbarrier", its contents and phase completion; try_wait):
//   a current phase with a pending-arrival count (reset to the init count at
//   each phase) and a tx-count; expect-tx adds to the tx-count, complete-tx
//   subtracts, arrive decrements the pending count; the phase completes when
//   both are zero. try_wait.parity(p) passes once the phase of parity p has
//   completed: the current phase's parity != p.
// - The producer (thread 0): wait empty[s] with tt_producer_wait_parity;
//   arrive.expect_tx(full[s], tt_stage_tx_bytes); issue A's boxes; issue B's
//   boxes and tt_ring_advance: four steps.
// - Each TMA box is an asynchronous actor: it writes the stage at some point
//   between its issue and its completion, which credits the whole box (zero
//   fill included) to full[s] (PTX ISA "cp.async.bulk.tensor",
//   .mbarrier::complete_tx::bytes). The boxes of one operand are the same
//   size, so a stage keeps counts of boxes in flight (a symmetry reduction).
// - Each consumer warp is an actor (4 per consumer warpgroup; lane 0 arrives
//   for the warp). Step 1: wait full[s] with tt_consumer_wait_parity, and the
//   warp-local wgmma.fence / mma_async / commit_group after it: from then on
//   the group may read stage s (taken as early as possible). Step 2:
//   wgmma.wait_group 1, which retires the older group (taken as late as
//   possible: every overwrite that could hit a group in flight shows), the
//   arrive on empty[tt_release_after_commit(...)] (the step's one shared
//   effect) and tt_ring_advance. At a tile's end, step 3: wgmma.wait_group 0
//   and the arrive on empty[tt_release_at_tile_end(...)]; the epilogue touches
//   no stage. Warps run free of one another by default, not even in step
//   within a warpgroup (a superset of what the hardware can do, so safety
//   found here holds there), and any two warps are then interchangeable:
//   states are kept with the warps sorted (a symmetry reduction that loses
//   nothing). A second mode couples each warpgroup, as wgmma is collective: a
//   group retires only once the warpgroup's 4 warps issued it. That only adds
//   waits, so it can only add deadlocks, which it is run to look for.
// - The persistent scheduler: a CTA runs `tiles` tiles (tile = blockIdx.x;
//   tile += gridDim.x) of `k_tiles` k-tiles each, and both sides carry stage
//   and phase from one tile to the next.
// Checked in every state: no TMA box issued into or landing in a stage that
// a warp's wgmma group may still read; a warp whose full wait passes finds
// the very (tile, k-tile) it expects there, all boxes landed; a full phase
// never completes with boxes in flight; tx-counts stay within the PTX ISA's
// range. At the end: every warp passed each (tile, k-tile) once, in order,
// no box is in flight, every barrier is back at its init count with a zero
// tx-count. A state without successors that is not the end is a deadlock.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <initializer_list>
#include <string>
#include <unordered_set>
#include <vector>

#define TT_HOST_DEVICE inline
#include "core/device/device_spec.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/tile_config.hpp"
#include "core/gemm/tensor_map_spec.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "wgmma/wgmma_tile_math.cuh"
#include "wgmma/wgmma_fp8.cuh"

using namespace tiletune;

namespace {

constexpr int max_stages = 4;
constexpr int max_warps = 8;

// Planted defects: test-local switches around the kernel's functions.
struct ring_defects {
  // Arrive on empty[stage] right after wait_group 1, while its wgmma may still run.
  bool release_current = false;
  bool producer_parity_phase = false;    // producer waits empty with parity phase, not phase ^ 1
  bool consumer_parity_flipped = false;  // consumers wait full with parity phase ^ 1
  bool empty_count_4 = false;            // empty barriers initialised to 4, not 4 * consumers
  bool no_release_at_tile_end = false;   // the last stage of a tile is never released
  bool expect_in_bounds_only = false;    // expect_tx of the last k-tile counts only in-bounds bytes
  bool no_phase_flip = false;            // the ring wraps without flipping the phase bit
  bool expect_without_scales = false;    // fp8 scales by TMA: expect_tx without the scales' bulk copy
};

struct ring_config {
  int stages = 3, consumers = 1, k_tiles = 2, tiles = 2;
  // The boxes of one fill: A's and B's counts and bytes per box (from tensor_map_for).
  int a_boxes = 1, b_boxes = 1;
  std::uint32_t a_box_bytes = 0, b_box_bytes = 0;
  std::uint32_t expect_bytes = 0;  // what the producer announces (tt_stage_tx_bytes)
  // fp8 block scales by TMA (wgmma_fp8.cuh): the bulk copy of A's scales issued with A's boxes, its
  // bytes (0: none) in expect_bytes.
  std::uint32_t scale_bytes = 0;
  std::uint32_t last_k_in_bounds =
      0;  // in-bounds bytes of the last k-tile (for the planted defect)
  // A warpgroup's wgmma group completes only once its 4 warps all issued it
  // (warps sorted per warpgroup then); off: warps run free of one another.
  bool coupled_warpgroups = false;
  int warps() const { return 4 * consumers; }
  int fills() const { return k_tiles * tiles; }
  std::string describe() const {
    return fmt::format(
        "{} stages, {} consumer warpgroups, {} k-tiles x {} tiles, boxes {}x{} + {}x{} bytes",
        stages, consumers, k_tiles, tiles, a_boxes, a_box_bytes, b_boxes, b_box_bytes);
  }
};

// The kernel's ring functions, with the planted defects switched in.
void advance(int& stage, unsigned& phase, int stages, const ring_defects& d) {
  if (d.no_phase_flip) {
    if (++stage == stages) stage = 0;
    return;
  }
  phase = tt_ring_advance(stage, phase, stages);
}
unsigned producer_parity(unsigned phase, const ring_defects& d) {
  return d.producer_parity_phase ? phase : tt_producer_wait_parity(phase);
}
unsigned consumer_parity(unsigned phase, const ring_defects& d) {
  return d.consumer_parity_flipped ? phase ^ 1u : tt_consumer_wait_parity(phase);
}
int release_after_commit(int& prev, int stage, const ring_defects& d) {
  if (d.release_current) return stage;  // and prev stays -1: nothing left for the tile's end
  return tt_release_after_commit(prev, stage);
}
int release_at_tile_end(int prev, const ring_defects& d) {
  return d.no_release_at_tile_end ? -1 : tt_release_at_tile_end(prev);
}

struct mbarrier {
  std::int8_t parity = 0;   // of the current phase
  std::int8_t pending = 0;  // arrivals still expected in this phase
  std::int32_t tx = 0;      // tx-count of this phase
};

struct stage_state {
  mbarrier full, empty;
  std::int8_t fill = -1;  // the fill (tile * k_tiles + k-tile) last issued into the stage
  std::int8_t a_issued = 0, b_issued = 0;
  std::int8_t a_in_flight = 0, b_in_flight = 0;
  std::int8_t s_in_flight = 0;  // the scales' bulk copy
};

struct warp_state {
  std::int8_t fill = 0;  // the next fill it consumes
  std::int8_t step = 0;  // 0 wait full, 1 wait_group 1 + release, 2 tile end
  std::int8_t stage = 0;
  std::int8_t phase = 0;
  std::int8_t prev = -1;
  // The stages its wgmma groups not yet retired may read, oldest first.
  std::int8_t reading[3] = {-1, -1, -1};
  std::int8_t groups = 0;
};

struct producer_state {
  std::int8_t fill = 0;
  std::int8_t step = 0;  // 0 wait empty, 1 arrive.expect_tx, 2 issue A, 3 issue B
  std::int8_t stage = 0;
  std::int8_t phase = 0;
};

struct model_state {
  producer_state producer;
  std::array<stage_state, max_stages> stages;
  std::array<warp_state, max_warps> warps;
};

// The canonical form of a state, packed into words (a fixed-size key keeps
// the visited set cheap): the consumer warps sorted, since any two are
// interchangeable here (same code, same barriers, same stages; which rows of
// A a warpgroup multiplies does not matter to the ring).
struct state_key {
  std::array<std::uint64_t, 1 + 2 * max_stages + max_warps / 2> w{};
  friend bool operator==(const state_key&, const state_key&) = default;
};
struct state_key_hash {
  std::size_t operator()(const state_key& k) const {
    std::uint64_t h = 0x9E3779B97F4A7C15ull;
    for (const std::uint64_t x : k.w) {
      h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
      h *= 0xBF58476D1CE4E5B9ull;
    }
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
};
std::uint64_t pack_bytes(std::initializer_list<std::int8_t> v) {
  std::uint64_t r = 0;
  for (const std::int8_t b : v) r = (r << 8) | static_cast<std::uint8_t>(b);
  return r;
}
// A warp's local state in 32 bits (fields offset to be non-negative, never 0).
std::uint32_t warp_code(const warp_state& ws) {
  std::uint32_t v = static_cast<std::uint32_t>(ws.fill);
  for (const std::int8_t f : {ws.step, ws.stage, ws.phase, ws.prev, ws.reading[0], ws.reading[1],
                              ws.reading[2], ws.groups})
    v = v * 8 + static_cast<std::uint32_t>(f + 1);
  return v;
}
state_key key_of(const model_state& s, const ring_config& c) {
  state_key k;
  std::size_t at = 0;
  const producer_state& p = s.producer;
  k.w[at++] = pack_bytes({p.fill, p.step, p.stage, p.phase});
  for (int i = 0; i < c.stages; ++i) {
    const stage_state& st = s.stages[static_cast<std::size_t>(i)];
    k.w[at++] = pack_bytes({st.full.parity, st.full.pending, st.empty.parity, st.empty.pending,
                            st.fill, st.a_issued, st.b_issued, st.a_in_flight});
    // empty[s] never sees expect_tx here: its tx-count stays 0 (final_check verifies).
    k.w[at++] = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(st.full.tx)) << 32) |
                (static_cast<std::uint64_t>(static_cast<std::uint8_t>(st.s_in_flight)) << 8) |
                static_cast<std::uint8_t>(st.b_in_flight);
  }
  // Each warp in 32 bits, then sorted.
  std::array<std::uint32_t, max_warps> w{};
  for (int i = 0; i < c.warps(); ++i)
    w[static_cast<std::size_t>(i)] = warp_code(s.warps[static_cast<std::size_t>(i)]);
  if (c.coupled_warpgroups) {
    for (int g = 0; g < c.consumers; ++g) std::sort(w.begin() + 4 * g, w.begin() + 4 * g + 4);
  } else {
    std::sort(w.begin(), w.end());  // the unused entries stay 0
  }
  at = 1 + 2 * max_stages;
  for (int i = 0; i < max_warps; i += 2)
    k.w[at++] = (static_cast<std::uint64_t>(w[static_cast<std::size_t>(i)]) << 32) |
                w[static_cast<std::size_t>(i + 1)];
  return k;
}

struct check_result {
  std::string violation;  // empty: none found
  std::int64_t states = 0;
  std::int64_t final_states = 0;
};

class ring_model {
 public:
  ring_model(const ring_config& c, const ring_defects& d) : c_(c), d_(d) {}

  check_result run(std::int64_t state_limit = 2'000'000) {
    check_result r;
    model_state init;
    for (int s = 0; s < c_.stages; ++s) {
      stage_state& st = init.stages[static_cast<std::size_t>(s)];
      st.full.pending = static_cast<std::int8_t>(tt_full_arrivals());
      st.empty.pending =
          static_cast<std::int8_t>(d_.empty_count_4 ? 4u : tt_empty_arrivals(c_.consumers));
    }
    std::unordered_set<state_key, state_key_hash> seen;
    std::deque<model_state> queue;
    seen.insert(key_of(init, c_));
    queue.push_back(init);
    while (!queue.empty()) {
      const model_state s = queue.front();
      queue.pop_front();
      ++r.states;
      if (r.states > state_limit) {
        r.violation = "state limit reached";
        return r;
      }
      std::vector<model_state>& next = next_;
      next.clear();
      std::string v = successors(s, next);
      if (v.empty() && next.empty()) {
        v = final_check(s);
        if (v.empty()) ++r.final_states;
      }
      if (!v.empty()) {
        r.violation = v;
        return r;
      }
      for (const model_state& n : next)
        if (seen.insert(key_of(n, c_)).second) queue.push_back(n);
    }
    if (r.final_states == 0) r.violation = "no run reaches the end";
    return r;
  }

 private:
  ring_config c_;
  ring_defects d_;
  std::string error_;  // the first violation met while building a successor
  std::vector<model_state> next_;

  int empty_init() const {
    return d_.empty_count_4 ? 4 : static_cast<int>(tt_empty_arrivals(c_.consumers));
  }
  static bool phase_done(const mbarrier& b, unsigned parity) {
    return static_cast<unsigned>(b.parity) != parity;
  }

  // A phase completes when its pending arrivals and its tx-count are both zero.
  void settle(mbarrier& b, int init_count, int stage, bool full, model_state& s) {
    if (b.tx > (1 << 20) - 1 || b.tx < -((1 << 20) - 1))
      fail(fmt::format("tx-count {} out of range", b.tx));
    if (b.pending != 0 || b.tx != 0) return;
    if (full) {
      const stage_state& st = s.stages[static_cast<std::size_t>(stage)];
      if (!st.a_issued || !st.b_issued || st.a_in_flight || st.b_in_flight || st.s_in_flight)
        fail(
            fmt::format("full[{}] completed its phase with boxes of fill {} not landed (A {}/{} in "
                        "flight, B {}/{}, scales {})",
                        stage, st.fill, st.a_issued ? st.a_in_flight : -1, c_.a_boxes,
                        st.b_issued ? st.b_in_flight : -1, c_.b_boxes, st.s_in_flight));
    }
    b.parity ^= 1;
    b.pending = static_cast<std::int8_t>(init_count);
  }
  void arrive(mbarrier& b, int init_count, int stage, bool full, model_state& s) {
    --b.pending;
    settle(b, init_count, stage, full, s);
  }
  void fail(std::string what) {
    if (error_.empty()) error_ = std::move(what);
  }
  // A warp whose not yet retired wgmma may read stage s, or -1.
  int reader_of(const model_state& s, int stage) const {
    for (int w = 0; w < c_.warps(); ++w) {
      const warp_state& ws = s.warps[static_cast<std::size_t>(w)];
      for (int g = 0; g < ws.groups; ++g)
        if (ws.reading[g] == stage) return w;
    }
    return -1;
  }
  std::string describe_warp(const model_state& s, int w) const {
    const warp_state& ws = s.warps[static_cast<std::size_t>(w)];
    return fmt::format("a consumer warp (at fill {}, step {})", ws.fill, ws.step);
  }
  // Whether every warp of w's warpgroup has issued its wgmmas of `fill`.
  bool group_issued(const model_state& s, int w, int fill) const {
    for (int i = w / 4 * 4; i < w / 4 * 4 + 4; ++i) {
      const warp_state& ws = s.warps[static_cast<std::size_t>(i)];
      if (ws.fill + (ws.step == 1 ? 1 : 0) <= fill) return false;
    }
    return true;
  }
  std::uint32_t expect_of(int fill) const {
    if (d_.expect_in_bounds_only && fill % c_.k_tiles == c_.k_tiles - 1) return c_.last_k_in_bounds;
    if (d_.expect_without_scales) return c_.expect_bytes - c_.scale_bytes;
    return c_.expect_bytes;
  }

  std::string successors(const model_state& s, std::vector<model_state>& next) {
    error_.clear();
    // The producer.
    const producer_state& p = s.producer;
    if (p.fill < c_.fills()) {
      model_state n = s;
      producer_state& q = n.producer;
      stage_state& st = n.stages[static_cast<std::size_t>(q.stage)];
      bool enabled = true;
      switch (q.step) {
        case 0:  // mbarrier.try_wait.parity on empty[stage]
          enabled = phase_done(st.empty, producer_parity(static_cast<unsigned>(q.phase), d_));
          q.step = 1;
          break;
        case 1:  // mbarrier.arrive.expect_tx on full[stage]
          st.full.tx += static_cast<std::int32_t>(expect_of(q.fill));
          arrive(st.full, static_cast<int>(tt_full_arrivals()), q.stage, true, n);
          q.step = 2;
          break;
        case 2:
        case 3: {  // the boxes of A, then of B
          const int reader = reader_of(n, q.stage);
          if (reader >= 0)
            fail(fmt::format("TMA issued into stage {} (fill {}) while {} may still read it",
                             q.stage, q.fill, describe_warp(n, reader)));
          if (q.step == 2) {
            if (st.a_in_flight || st.b_in_flight || st.s_in_flight)
              fail(fmt::format("stage {} refilled with boxes of fill {} still in flight", q.stage,
                               st.fill));
            st.fill = q.fill;
            st.a_issued = 1;
            st.b_issued = 0;
            st.a_in_flight = static_cast<std::int8_t>(c_.a_boxes);
            st.s_in_flight = c_.scale_bytes > 0 ? 1 : 0;
            q.step = 3;
          } else {
            st.b_issued = 1;
            st.b_in_flight = static_cast<std::int8_t>(c_.b_boxes);
            int stage = q.stage;
            unsigned phase = static_cast<unsigned>(q.phase);
            advance(stage, phase, c_.stages, d_);
            q.stage = static_cast<std::int8_t>(stage);
            q.phase = static_cast<std::int8_t>(phase);
            ++q.fill;
            q.step = 0;
          }
          break;
        }
      }
      if (!error_.empty()) return error_;
      if (enabled) next.push_back(n);
    }
    // The boxes in flight: each lands (writes its part of the stage) and credits full[s].
    for (int s_i = 0; s_i < c_.stages; ++s_i)
      for (int op = 0; op < 3; ++op) {  // A's boxes, B's, the scales' bulk copy
        const stage_state& st = s.stages[static_cast<std::size_t>(s_i)];
        if ((op == 0 ? st.a_in_flight : op == 1 ? st.b_in_flight : st.s_in_flight) == 0) continue;
        model_state n = s;
        stage_state& ns = n.stages[static_cast<std::size_t>(s_i)];
        const int reader = reader_of(n, s_i);
        if (reader >= 0)
          fail(fmt::format("TMA writes stage {} while {} may still read it", s_i,
                           describe_warp(n, reader)));
        if (op == 0)
          --ns.a_in_flight;
        else if (op == 1)
          --ns.b_in_flight;
        else
          --ns.s_in_flight;
        ns.full.tx -= static_cast<std::int32_t>(op == 0 ? c_.a_box_bytes : op == 1 ? c_.b_box_bytes : c_.scale_bytes);
        settle(ns.full, static_cast<int>(tt_full_arrivals()), s_i, true, n);
        if (!error_.empty()) return error_;
        next.push_back(n);
      }
    // The consumer warps.
    for (int w = 0; w < c_.warps(); ++w) {
      const warp_state& ws = s.warps[static_cast<std::size_t>(w)];
      if (ws.fill >= c_.fills() && ws.step == 0) continue;
      // A warp in the same local state as an interchangeable one before it
      // leads to the same canonical successor.
      bool twin = false;
      for (int v = c_.coupled_warpgroups ? w / 4 * 4 : 0; v < w && !twin; ++v)
        twin = warp_code(s.warps[static_cast<std::size_t>(v)]) == warp_code(ws);
      if (twin) continue;
      model_state n = s;
      warp_state& x = n.warps[static_cast<std::size_t>(w)];
      if (x.step == 0) {
        // mbarrier.try_wait.parity on full[stage]; then the k-tile's wgmmas, one committed group.
        const stage_state& st = n.stages[static_cast<std::size_t>(x.stage)];
        if (!phase_done(st.full, consumer_parity(static_cast<unsigned>(x.phase), d_))) continue;
        if (st.fill != x.fill || !st.a_issued || !st.b_issued || st.a_in_flight || st.b_in_flight || st.s_in_flight)
          fail(
              fmt::format("a consumer warp reads stage {} for fill {} (tile {}, k-tile {}) but it "
                          "holds fill {} with {} + "
                          "{} boxes in flight{}",
                          x.stage, x.fill, x.fill / c_.k_tiles, x.fill % c_.k_tiles, st.fill,
                          st.a_in_flight, st.b_in_flight, st.b_issued ? "" : ", B not issued"));
        if (x.groups == 3)
          fail("more than three wgmma groups pending");
        else
          x.reading[x.groups++] = x.stage;
        x.step = 1;
      } else if (x.step == 1) {
        // wgmma.wait_group 1: all but the newest group retired.
        if (c_.coupled_warpgroups && x.groups > 1 && !group_issued(s, w, x.fill - 1)) continue;
        while (x.groups > 1) {
          for (int g = 0; g + 1 < x.groups; ++g) x.reading[g] = x.reading[g + 1];
          x.reading[--x.groups] = -1;
        }
        int prev = x.prev;
        const int release = release_after_commit(prev, x.stage, d_);
        x.prev = static_cast<std::int8_t>(prev);
        if (release >= 0)
          arrive(n.stages[static_cast<std::size_t>(release)].empty, empty_init(), release, false,
                 n);
        int stage = x.stage;
        unsigned phase = static_cast<unsigned>(x.phase);
        advance(stage, phase, c_.stages, d_);
        x.stage = static_cast<std::int8_t>(stage);
        x.phase = static_cast<std::int8_t>(phase);
        ++x.fill;
        x.step = x.fill % c_.k_tiles == 0 ? 2 : 0;
      } else {
        // End of the tile: wgmma.wait_group 0, release the last stage; the epilogue touches no
        // stage.
        if (c_.coupled_warpgroups && !group_issued(s, w, x.fill - 1)) continue;
        while (x.groups > 0) x.reading[--x.groups] = -1;
        const int release = release_at_tile_end(x.prev, d_);
        if (release >= 0)
          arrive(n.stages[static_cast<std::size_t>(release)].empty, empty_init(), release, false,
                 n);
        x.prev = -1;  // `int prev = -1;` at the top of the next tile
        x.step = 0;
      }
      if (!error_.empty()) return error_;
      next.push_back(n);
    }
    return "";
  }

  std::string final_check(const model_state& s) const {
    std::string where;
    const bool done = s.producer.fill == c_.fills() && s.producer.step == 0;
    bool warps_done = true;
    for (int w = 0; w < c_.warps(); ++w) {
      const warp_state& ws = s.warps[static_cast<std::size_t>(w)];
      if (ws.fill != c_.fills() || ws.step != 0) warps_done = false;
      where += fmt::format(" warp{}:fill {} step {} stage {} phase {}", w, ws.fill, ws.step,
                           ws.stage, ws.phase);
    }
    std::string bars;
    bool balanced = true;
    for (int i = 0; i < c_.stages; ++i) {
      const stage_state& st = s.stages[static_cast<std::size_t>(i)];
      bars += fmt::format(
          " full[{}]:parity {} pending {} tx {} empty[{}]:parity {} pending {} | in flight {}+{}",
          i, st.full.parity, st.full.pending, st.full.tx, i, st.empty.parity, st.empty.pending,
          st.a_in_flight, st.b_in_flight);
      if (st.full.pending != static_cast<int>(tt_full_arrivals()) || st.full.tx != 0 ||
          st.empty.pending != empty_init() || st.empty.tx != 0 || st.a_in_flight || st.b_in_flight ||
          st.s_in_flight)
        balanced = false;
    }
    const std::string state =
        fmt::format("producer fill {} step {} stage {} phase {};{};{}", s.producer.fill,
                    s.producer.step, s.producer.stage, s.producer.phase, where, bars);
    if (!done || !warps_done) return "deadlock: " + state;
    if (!balanced) return "unbalanced barriers at the end: " + state;
    return "";
  }
};

// The boxes the producer issues per fill (tt_load_operand: one [rows][BK] box
// for a K-major operand, rows/64 boxes of [BK][64] for an MN-major one) from
// tensor_map_for's box sizes.
struct fill_boxes {
  int a_boxes, b_boxes;
  std::uint32_t a_box_bytes, b_box_bytes;
};
fill_boxes boxes_of(const gemm_problem& p, const tile_config& c) {
  const std::uint32_t eb = static_cast<std::uint32_t>(element_bytes(p.type));
  const tensor_map_spec a = tensor_map_for(p, c, 'a'), b = tensor_map_for(p, c, 'b');
  const bool a_kmajor = !p.layout.a_transposed, b_kmajor = p.layout.b_transposed;
  return {a_kmajor ? 1 : c.block_m / 64, b_kmajor ? 1 : c.block_n / 64,
          a.box[0] * a.box[1] * a.box[2] * eb, b.box[0] * b.box[1] * b.box[2] * eb};
}

ring_config config_for(const gemm_problem& p, const tile_config& c, int k_tiles, int tiles) {
  ring_config r;
  r.stages = c.stages;
  r.consumers = wgmma_consumers(c);
  r.k_tiles = k_tiles;
  r.tiles = tiles;
  const fill_boxes b = boxes_of(p, c);
  r.a_boxes = b.a_boxes;
  r.b_boxes = b.b_boxes;
  r.a_box_bytes = b.a_box_bytes;
  r.b_box_bytes = b.b_box_bytes;
  const int eb = element_bytes(p.type);
  r.expect_bytes = tt_stage_tx_bytes(c.block_m, c.block_n, c.block_k, eb);
  if (wgmma_tma_scales(c)) {  // the kernel's expect_tx of a tile's first rows (m_tile 0)
    r.scale_bytes = tt_scale_a_copy_bytes(0, c.block_m, static_cast<int>(p.m));
    r.expect_bytes += r.scale_bytes;
  }
  // The last k-tile's in-bounds part, as a wrong expect_tx would count it.
  const std::int64_t k_left = p.k - (p.k - 1) / c.block_k * c.block_k;
  r.last_k_in_bounds = static_cast<std::uint32_t>((c.block_m + c.block_n) * k_left * eb);
  return r;
}

gemm_problem problem(std::int64_t m, std::int64_t n, std::int64_t k, dtype t, const char* l) {
  gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.type = t;
  p.layout = parse_layout(l);
  return p;
}

}  // namespace

TEST(wgmma_ring, expect_tx_is_the_bytes_the_boxes_credit) {
  // TMA credits every box in full (out-of-bounds zero fill included), so the
  // kernel's one expect_tx per fill must be the sum of all its boxes, for
  // every default variant and layout, also where the edge boxes are clipped.
  const device_spec& h100 = find_preset("h100-sxm");
  struct case_layout {
    dtype t;
    const char* layout;
  };
  const case_layout layouts[] = {{dtype::f16, "nn"},  {dtype::f16, "nt"},  {dtype::f16, "tn"},
                                 {dtype::f16, "tt"},  {dtype::bf16, "nn"}, {dtype::bf16, "nt"},
                                 {dtype::bf16, "tn"}, {dtype::bf16, "tt"}, {dtype::tf32, "nt"}};
  int checked = 0;
  for (const auto& cl : layouts)
    for (const auto& shape : {std::array<std::int64_t, 3>{4096, 4096, 4096},
                              std::array<std::int64_t, 3>{200, 136, 72}}) {
      const gemm_problem p = problem(shape[0], shape[1], shape[2], cl.t, cl.layout);
      for (const tile_config& c : default_search_space(family_named("wgmma"), cl.t)) {
        if (check_constraints(c, p, h100)) continue;
        const fill_boxes b = boxes_of(p, c);
        const std::uint32_t credited = b.a_boxes * b.a_box_bytes + b.b_boxes * b.b_box_bytes;
        EXPECT_EQ(credited, tt_stage_tx_bytes(c.block_m, c.block_n, c.block_k, element_bytes(cl.t)))
            << c.id() << " " << p.describe();
        // A fill's boxes also cover exactly its stage's bytes in shared memory.
        EXPECT_EQ(b.a_boxes * b.a_box_bytes, static_cast<std::uint32_t>(tt_smem_a_stage(
                                                 c.block_m, c.block_k, element_bytes(cl.t))));
        ++checked;
      }
    }
  EXPECT_EQ(checked, 2 * 9 * 48);
  // In 200x136x72 the last k-tile has 8 of 64 k in bounds: its boxes are
  // clipped, yet expect_tx stays the whole stage.
  const ring_config r =
      config_for(problem(200, 136, 72, dtype::bf16, "nn"), wgmma_tile(128, 128, 64, 1, 3), 2, 1);
  EXPECT_LT(r.last_k_in_bounds, r.expect_bytes);
  EXPECT_EQ(tt_full_arrivals(), 1u);
  EXPECT_EQ(tt_empty_arrivals(2), 8u);
}

TEST(wgmma_ring, every_interleaving_is_safe_and_live) {
  // STAGES 2..4, one or two consumer warpgroups of 4 warps, 1..3 k-tiles,
  // 1..3 tiles per CTA, the boxes of an nn variant (A: one K-major box, B:
  // two MN-major boxes) and of an nt one (one box each).
  const auto t0 = std::chrono::steady_clock::now();
  std::int64_t total = 0;
  int configs = 0;
  for (int consumers = 1; consumers <= 2; ++consumers)
    for (int stages = 2; stages <= 4; ++stages)
      for (int k_tiles = 1; k_tiles <= 3; ++k_tiles)
        for (int tiles = 1; tiles <= 3; ++tiles) {
          const char* layout = (stages + k_tiles + tiles) % 2 ? "nn" : "nt";
          const tile_config c = wgmma_tile(128, 128, 64, consumers, stages);
          ring_config r = config_for(problem(200, 136, 72, dtype::bf16, layout), c, k_tiles, tiles);
          for (const bool coupled : {false, true}) {
            // Coupled warps only add waits (a subset of the runs): checked for
            // the deadlocks those waits could add, on all but the largest rings.
            if (coupled && consumers == 2 && stages == 4) continue;
            r.coupled_warpgroups = coupled;
            const check_result res = ring_model(r, {}).run();
            EXPECT_EQ(res.violation, "") << r.describe() << (coupled ? ", coupled" : "");
            EXPECT_GT(res.final_states, 0) << r.describe();
            total += res.states;
            ++configs;
          }
        }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("ring model: %d configurations, %lld states, %.2f s\n", configs,
              static_cast<long long>(total), seconds);
}

TEST(wgmma_ring, scales_copied_with_the_operands_land_before_the_consumers_read) {
  // fp8 block scales by TMA (_ts): the producer's bulk copy of A's scales, a third asynchronous
  // write into the stage that expect_tx counts; every interleaving on 2-3 stages, one and two
  // consumers, a tile's scales of all 128 rows (M 200) and of the 72 within M (M 72).
  int configs = 0;
  for (int consumers = 1; consumers <= 2; ++consumers)
    for (int stages = 2; stages <= 3; ++stages)
      for (std::int64_t m : {200, 72}) {
        tile_config c = wgmma_tile(128, 128, 128, consumers, stages);
        set_wgmma_promotion(c, 1);
        set_wgmma_scales(c, scaling_mode::block);
        set_wgmma_tma_scales(c, true);
        ring_config r = config_for(problem(m, 136, 400, dtype::e4m3, "nt"), c, 2, 2);
        ASSERT_EQ(r.scale_bytes, 4u * static_cast<std::uint32_t>(std::min<std::int64_t>(m, 128)));
        const check_result res = ring_model(r, {}).run();
        EXPECT_EQ(res.violation, "") << r.describe();
        EXPECT_GT(res.final_states, 0) << r.describe();
        ++configs;
      }
  EXPECT_EQ(configs, 8);
}

TEST(wgmma_ring, planted_defects_are_found) {
  // Each defect must make the checker report a violation or a deadlock on a
  // small ring: the checker can fail.
  // Each on a 2-stage ring, 2 k-tiles x 2 tiles, with the kind of failure it must show.
  struct planted {
    const char* name;
    ring_defects d;
    int consumers;
    const char* finding;
  };
  std::vector<planted> all;
  all.push_back({"consumer releases the current stage", {}, 1, "may still read it"});
  all.back().d.release_current = true;
  all.push_back({"producer waits with parity phase", {}, 1, "deadlock"});
  all.back().d.producer_parity_phase = true;
  all.push_back({"consumer waits with parity phase ^ 1", {}, 1, "reads stage 0 for fill 0"});
  all.back().d.consumer_parity_flipped = true;
  all.push_back({"empty count 4 with two consumer warpgroups", {}, 2, "but it holds fill 2"});
  all.back().d.empty_count_4 = true;
  all.push_back({"no release at the end of a tile", {}, 1, "deadlock"});
  all.back().d.no_release_at_tile_end = true;
  all.push_back({"expect_tx of a clipped k-tile counts in-bounds bytes", {}, 1, "deadlock"});
  all.back().d.expect_in_bounds_only = true;
  all.push_back({"the ring wraps without flipping the phase", {}, 1, "still in flight"});
  all.back().d.no_phase_flip = true;
  all.push_back({"expect_tx without the scales' bulk copy", {}, 1, "not landed"});
  all.back().d.expect_without_scales = true;
  for (const planted& pl : all)
    for (const bool coupled : {false, true}) {
      tile_config c = wgmma_tile(128, 128, 64, pl.consumers, 2);
      gemm_problem p = problem(200, 136, 72, dtype::bf16, "nn");
      if (pl.d.expect_without_scales) {  // an fp8 block-scaled tile with A's scales by TMA
        c = wgmma_tile(128, 128, 128, pl.consumers, 2);
        set_wgmma_promotion(c, 1);
        set_wgmma_scales(c, scaling_mode::block);
        set_wgmma_tma_scales(c, true);
        p = problem(200, 136, 400, dtype::e4m3, "nt");
      }
      ring_config r = config_for(p, c, 2, 2);
      r.coupled_warpgroups = coupled;
      const check_result res = ring_model(r, pl.d).run();
      EXPECT_NE(res.violation.find(pl.finding), std::string::npos)
          << pl.name << (coupled ? " (coupled)" : "") << ": expected \"" << pl.finding
          << "\", the checker said \"" << res.violation << "\" on " << r.describe();
    }
}
