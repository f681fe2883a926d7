// An explicit-state model check of cluster split-K's reduction (kernels_templates/wgmma/wgmma_gemm.cu,
// tt_split_publish / tt_split_gather, with the parities of wgmma_schedule.cuh): the S CTAs of a
// cluster run T tiles while every interleaving, and every order in which a CTA's remote stores
// become visible, is explored.
//
// What is modelled, per CTA, in program order:
// - start: initialize its barriers, then the cluster barrier (arrive.release, wait.acquire);
// - a peer (rank r > 0), tile i: wait on its own `empty` for the parity of tile i (the leader read
//   tile i - 1's slots), store its partial into the leader's slot r - 1 (a remote store, visible
//   to the leader only later), then arrive on the leader's `full` with release (its stores visible
//   first);
// - the leader, tile i: wait on `full` for the parity of tile i, read every slot, then arrive on
//   each peer's `empty` with release;
// - end: the cluster barrier again, then exit.
// mbarrier phases as the PTX ISA has them: a phase completes with its expected arrivals, and
// try_wait.parity(P) passes while the barrier's current phase has the other parity.
// Checked: the leader reads each slot only once its tile's partial is visible there, every tile
// is reduced, no remote store or arrival reaches a CTA that has exited or a barrier not yet
// initialized, and no state is stuck. Planted defects show each check can fail.
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_schedule.cuh"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace {

enum class defect { none, missing_arrival, relaxed_arrival, no_empty_wait, early_empty_arrival, no_exit_sync, no_start_sync };

enum class op { init, cluster_arrive, cluster_wait, wait_empty, store, arrive_full, wait_full, read, arrive_empty, exit };

struct step {
  op what;
  int tile = 0;
  int barrier = 0;  // cluster barrier instance: 0 at the start, 1 at the end
};

struct pending {
  int slot, value;
  auto operator<=>(const pending&) const = default;
};

struct cta_state {
  int pc = 0;
  bool initialized = false, exited = false;
  int empty_completed = 0;      // completed phases of this CTA's `empty`
  std::vector<pending> stores;  // remote stores into the leader's slots, not yet visible
  auto operator<=>(const cta_state&) const = default;
};

struct state {
  std::vector<cta_state> ctas;
  std::vector<int> slots;  // the leader's slots as the leader sees them (-1: never written)
  int full_arrivals = 0;   // arrivals in the current phase of the leader's `full`
  int full_completed = 0;
  int cluster_arrivals[2] = {0, 0};
  int reduced = 0;  // tiles the leader read whole
  auto operator<=>(const state&) const = default;
};

int partial(int tile, int rank) { return 100 * tile + rank; }

struct checker {
  int split, tiles;
  defect d;
  std::vector<std::vector<step>> programs;
  std::set<state> seen;
  std::string error;
  long long states = 0;

  checker(int s, int t, defect dd) : split(s), tiles(t), d(dd) {
    for (int rank = 0; rank < split; ++rank) {
      std::vector<step> p;
      p.push_back({op::init});
      if (d != defect::no_start_sync) {
        p.push_back({op::cluster_arrive, 0, 0});
        p.push_back({op::cluster_wait, 0, 0});
      }
      for (int i = 0; i < tiles; ++i) {
        if (rank > 0) {
          if (d != defect::no_empty_wait) p.push_back({op::wait_empty, i});
          p.push_back({op::store, i});
          if (!(d == defect::missing_arrival && rank == split - 1 && i == 0)) p.push_back({op::arrive_full, i});
        } else {
          p.push_back({op::wait_full, i});
          if (d == defect::early_empty_arrival) p.push_back({op::arrive_empty, i});
          p.push_back({op::read, i});
          if (d != defect::early_empty_arrival) p.push_back({op::arrive_empty, i});
        }
      }
      if (d != defect::no_exit_sync) {
        p.push_back({op::cluster_arrive, 0, 1});
        p.push_back({op::cluster_wait, 0, 1});
      }
      p.push_back({op::exit});
      programs.push_back(std::move(p));
    }
  }

  void fail(const std::string& what) {
    if (error.empty()) error = what;
  }

  // A remote store becoming visible in the leader's shared memory.
  bool land(state& s, int rank, std::size_t k) {
    const pending st = s.ctas[static_cast<std::size_t>(rank)].stores[k];
    if (s.ctas[0].exited) {
      fail(fmt::format("rank {}'s store lands in the leader's shared memory after it exited", rank));
      return false;
    }
    s.slots[static_cast<std::size_t>(st.slot)] = st.value;
    auto& v = s.ctas[static_cast<std::size_t>(rank)].stores;
    v.erase(v.begin() + static_cast<long>(k));
    return true;
  }
  bool flush(state& s, int rank) {
    while (!s.ctas[static_cast<std::size_t>(rank)].stores.empty())
      if (!land(s, rank, 0)) return false;
    return true;
  }

  // Runs CTA `rank`'s next step if it can; false when it is blocked (or done).
  bool advance(state& s, int rank) {
    cta_state& c = s.ctas[static_cast<std::size_t>(rank)];
    const auto& prog = programs[static_cast<std::size_t>(rank)];
    if (c.exited || c.pc >= static_cast<int>(prog.size())) return false;
    const step& st = prog[static_cast<std::size_t>(c.pc)];
    switch (st.what) {
      case op::init:
        c.initialized = true;
        break;
      case op::cluster_arrive:
        if (!flush(s, rank)) return true;
        ++s.cluster_arrivals[st.barrier];
        break;
      case op::cluster_wait:
        if (s.cluster_arrivals[st.barrier] < split) return false;
        break;
      case op::wait_empty:  // try_wait.parity passes while the current phase has the other parity
        if ((static_cast<unsigned>(c.empty_completed) & 1u) == tt_split_empty_parity(st.tile)) return false;
        break;
      case op::store:
        c.stores.push_back({rank - 1, partial(st.tile, rank)});
        break;
      case op::arrive_full:
        if (d != defect::relaxed_arrival && !flush(s, rank)) return true;
        if (s.ctas[0].exited) fail(fmt::format("rank {} arrives on the leader's barrier after it exited", rank));
        if (!s.ctas[0].initialized) fail(fmt::format("rank {} arrives on the leader's barrier before its init", rank));
        if (++s.full_arrivals == split - 1) {
          s.full_arrivals = 0;
          ++s.full_completed;
        }
        break;
      case op::wait_full:
        if ((static_cast<unsigned>(s.full_completed) & 1u) == tt_split_full_parity(st.tile)) return false;
        break;
      case op::read:
        for (int r = 1; r < split; ++r)
          if (s.slots[static_cast<std::size_t>(r - 1)] != partial(st.tile, r))
            fail(fmt::format("the leader reads slot {} of tile {} and finds {} (tile {}'s partial is {})", r - 1,
                             st.tile, s.slots[static_cast<std::size_t>(r - 1)], st.tile, partial(st.tile, r)));
        ++s.reduced;
        break;
      case op::arrive_empty:
        for (int r = 1; r < split; ++r) {
          cta_state& peer = s.ctas[static_cast<std::size_t>(r)];
          if (peer.exited) fail(fmt::format("the leader arrives on rank {}'s barrier after it exited", r));
          if (!peer.initialized) fail(fmt::format("the leader arrives on rank {}'s barrier before its init", r));
          ++peer.empty_completed;
        }
        break;
      case op::exit:
        c.exited = true;
        break;
    }
    ++c.pc;
    return true;
  }

  void explore(const state& s) {
    if (!error.empty() || !seen.insert(s).second) return;
    ++states;
    bool moved = false;
    for (int rank = 0; rank < split && error.empty(); ++rank) {
      state next = s;
      if (advance(next, rank)) {
        moved = true;
        explore(next);
      }
      // Any one of its pending stores may become visible next.
      for (std::size_t k = 0; k < s.ctas[static_cast<std::size_t>(rank)].stores.size() && error.empty(); ++k) {
        state landed = s;
        moved = true;
        if (land(landed, rank, k)) explore(landed);
      }
    }
    if (moved || !error.empty()) return;
    bool all_exited = true;
    for (const auto& c : s.ctas) all_exited = all_exited && c.exited;
    if (!all_exited) {
      std::string where;
      for (int r = 0; r < split; ++r) where += fmt::format(" rank {} at step {};", r, s.ctas[static_cast<std::size_t>(r)].pc);
      fail("stuck:" + where);
    } else if (s.reduced != tiles) {
      fail(fmt::format("all exited with {} of {} tiles reduced", s.reduced, tiles));
    }
  }

  std::string run() {
    state s;
    s.ctas.assign(static_cast<std::size_t>(split), cta_state{});
    s.slots.assign(static_cast<std::size_t>(split - 1), -1);
    explore(s);
    return error;
  }
};

}  // namespace

TEST(wgmma_cluster_split_model, every_interleaving_reduces_every_tile) {
  for (const auto& [split, tiles] : {std::pair{2, 4}, std::pair{4, 3}, std::pair{3, 3}}) {
    checker c(split, tiles, defect::none);
    EXPECT_EQ(c.run(), "") << split << " CTAs, " << tiles << " tiles";
    std::printf("cluster split model: %d CTAs x %d tiles, %lld states\n", split, tiles, c.states);
    EXPECT_GT(c.states, 50);  // interleavings were explored, not one path
  }
}

TEST(wgmma_cluster_split_model, planted_defects_are_caught) {
  struct planted {
    defect d;
    const char* name;
    const char* finds;  // a word of the report
  };
  const planted all[] = {
      {defect::missing_arrival, "a peer that never arrives on full", "stuck"},
      {defect::relaxed_arrival, "an arrival without release", "finds"},
      {defect::no_empty_wait, "a peer that does not wait for its slot", "finds"},
      {defect::early_empty_arrival, "a leader that frees the slots before reading", "finds"},
      {defect::no_exit_sync, "an exit without the final cluster barrier", "exited"},
      {defect::no_start_sync, "no cluster barrier after the barriers' init", "before its init"},
  };
  for (const planted& p : all) {
    checker c(p.d == defect::no_empty_wait || p.d == defect::early_empty_arrival ? 2 : 3, 2, p.d);
    const std::string r = c.run();
    EXPECT_NE(r.find(p.finds), std::string::npos) << p.name << ": " << (r.empty() ? "went unnoticed" : r);
    std::printf("%s: %s\n", p.name, r.c_str());
  }
}
