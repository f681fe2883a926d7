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
// Each CTA runs T consumer threads (2 here stand for the kernel's 128 or 256): each thread stores
// and reads its own part of a slot, the CTA's threads meet at the consumers' barrier (bar.sync),
// and one thread (ct 0) makes each mbarrier arrival. A release makes visible the arriving thread's
// stores and every store ordered before it through the barrier (cumulativity), no others: the
// pattern compute-sanitizer's racecheck flagged on an H200 (2026-12-04) and this check vouches for.
// Checked: the leader reads each part only once its tile's partial is visible there, every tile
// is reduced, no remote store or arrival reaches a CTA that has exited or a barrier not yet
// initialized, and no state is stuck. Planted defects show each check can fail.
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_schedule.cuh"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace {

enum class defect {
  none,
  missing_arrival,
  relaxed_arrival,
  no_empty_wait,
  early_empty_arrival,
  no_exit_sync,
  no_start_sync,
  no_publish_sync,  // the peer's threads do not meet before ct 0 arrives on `full`
  no_gather_sync,   // the leader's threads do not meet before ct 0 frees the slots
};

enum class op {
  init,
  cluster_arrive,
  cluster_wait,
  wait_empty,
  store,
  bar_arrive,
  bar_wait,
  arrive_full,
  wait_full,
  read,
  arrive_empty,
  exit
};

struct step {
  op what;
  int tile = 0;
  int barrier = 0;  // cluster barrier instance: 0 at the start, 1 at the end
};

struct pending {
  int slot, value;
  auto operator<=>(const pending&) const = default;
};

struct thread_state {
  int pc = 0;
  bool exited = false;
  int bar_generation = 0;       // the consumers' barrier generation this thread waits past
  std::vector<pending> stores;  // its remote stores into the leader's slots, not yet visible
  auto operator<=>(const thread_state&) const = default;
};

struct cta_state {
  bool initialized = false;
  int empty_completed = 0;  // completed phases of this CTA's `empty`
  int bar_arrived = 0, bar_generation = 0;
  std::vector<pending> ordered;  // stores its threads made before a barrier they all passed
  std::vector<thread_state> threads;
  auto operator<=>(const cta_state&) const = default;
};

struct state {
  std::vector<cta_state> ctas;
  std::vector<int> slots;  // the leader's slot parts as the leader sees them (-1: never written)
  int full_arrivals = 0;   // arrivals in the current phase of the leader's `full`
  int full_completed = 0;
  int cluster_arrivals[2] = {0, 0};
  int reads = 0;  // (tile, thread) parts the leader's threads read whole
  auto operator<=>(const state&) const = default;
};

int partial(int tile, int rank, int thread) { return 100 * tile + 10 * rank + thread; }

struct checker {
  int split, threads, tiles;
  defect d;
  std::vector<std::vector<std::vector<step>>> programs;  // [rank][thread]
  std::set<state> seen;
  std::string error;
  long long states = 0;

  checker(int s, int t, int n, defect dd) : split(s), threads(t), tiles(n), d(dd) {
    for (int rank = 0; rank < split; ++rank) {
      programs.emplace_back();
      for (int ct = 0; ct < threads; ++ct) {
        std::vector<step> p;
        if (ct == 0) p.push_back({op::init});
        if (d != defect::no_start_sync) {
          p.push_back({op::cluster_arrive, 0, 0});
          p.push_back({op::cluster_wait, 0, 0});
        }
        const auto consumers_sync = [&] {
          p.push_back({op::bar_arrive});
          p.push_back({op::bar_wait});
        };
        for (int i = 0; i < tiles; ++i) {
          if (rank > 0) {
            if (d != defect::no_empty_wait) p.push_back({op::wait_empty, i});
            p.push_back({op::store, i});
            if (d != defect::no_publish_sync) consumers_sync();
            if (ct == 0 && !(d == defect::missing_arrival && rank == split - 1 && i == 0))
              p.push_back({op::arrive_full, i});
          } else {
            p.push_back({op::wait_full, i});
            if (d == defect::early_empty_arrival && ct == 0) p.push_back({op::arrive_empty, i});
            p.push_back({op::read, i});
            if (d != defect::no_gather_sync) consumers_sync();
            if (d != defect::early_empty_arrival && ct == 0) p.push_back({op::arrive_empty, i});
          }
        }
        if (d != defect::no_exit_sync) {
          p.push_back({op::cluster_arrive, 0, 1});
          p.push_back({op::cluster_wait, 0, 1});
        }
        p.push_back({op::exit});
        programs.back().push_back(std::move(p));
      }
    }
  }

  void fail(const std::string& what) {
    if (error.empty()) error = what;
  }
  static bool all_exited(const cta_state& c) {
    for (const auto& t : c.threads)
      if (!t.exited) return false;
    return true;
  }
  static std::size_t z(int i) { return static_cast<std::size_t>(i); }

  // A remote store becoming visible in the leader's shared memory.
  bool land(state& s, std::vector<pending>& from, std::size_t k, int rank) {
    const pending st = from[k];
    if (all_exited(s.ctas[0])) {
      fail(fmt::format("rank {}'s store lands in the leader's shared memory after it exited", rank));
      return false;
    }
    s.slots[z(st.slot)] = st.value;
    from.erase(from.begin() + static_cast<long>(k));
    return true;
  }
  // A release by thread `ct` of CTA `rank`: its own stores and those ordered before it through the
  // consumers' barrier become visible first.
  bool release(state& s, int rank, int ct) {
    cta_state& c = s.ctas[z(rank)];
    while (!c.threads[z(ct)].stores.empty())
      if (!land(s, c.threads[z(ct)].stores, 0, rank)) return false;
    while (!c.ordered.empty())
      if (!land(s, c.ordered, 0, rank)) return false;
    return true;
  }

  // Runs thread `ct` of CTA `rank` one step if it can; false when it is blocked (or done).
  bool advance(state& s, int rank, int ct) {
    cta_state& c = s.ctas[z(rank)];
    thread_state& t = c.threads[z(ct)];
    const auto& prog = programs[z(rank)][z(ct)];
    if (t.exited || t.pc >= static_cast<int>(prog.size())) return false;
    const step& st = prog[z(t.pc)];
    switch (st.what) {
      case op::init:
        c.initialized = true;
        break;
      case op::cluster_arrive:  // barrier.cluster.arrive.release by every thread
        if (!release(s, rank, ct)) return true;
        ++s.cluster_arrivals[st.barrier];
        break;
      case op::cluster_wait:
        if (s.cluster_arrivals[st.barrier] < split * threads) return false;
        break;
      case op::wait_empty:  // try_wait.parity passes while the current phase has the other parity
        if ((static_cast<unsigned>(c.empty_completed) & 1u) == tt_split_empty_parity(st.tile)) return false;
        break;
      case op::store:
        t.stores.push_back({(rank - 1) * threads + ct, partial(st.tile, rank, ct)});
        break;
      case op::bar_arrive:
        t.bar_generation = c.bar_generation + 1;
        if (++c.bar_arrived == threads) {  // all met: every store made before is ordered before what follows
          c.bar_arrived = 0;
          ++c.bar_generation;
          for (auto& u : c.threads) {
            c.ordered.insert(c.ordered.end(), u.stores.begin(), u.stores.end());
            u.stores.clear();
          }
          std::sort(c.ordered.begin(), c.ordered.end());
        }
        break;
      case op::bar_wait:
        if (c.bar_generation < t.bar_generation) return false;
        break;
      case op::arrive_full:
        if (d != defect::relaxed_arrival && !release(s, rank, ct)) return true;
        if (all_exited(s.ctas[0])) fail(fmt::format("rank {} arrives on the leader's barrier after it exited", rank));
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
        for (int r = 1; r < split; ++r) {
          const int got = s.slots[z((r - 1) * threads + ct)];
          if (got != partial(st.tile, r, ct))
            fail(fmt::format("leader thread {} reads rank {}'s part of tile {} and finds {} (the partial is {})", ct, r,
                             st.tile, got, partial(st.tile, r, ct)));
        }
        ++s.reads;
        break;
      case op::arrive_empty:
        for (int r = 1; r < split; ++r) {
          cta_state& peer = s.ctas[z(r)];
          if (all_exited(peer)) fail(fmt::format("the leader arrives on rank {}'s barrier after it exited", r));
          if (!peer.initialized) fail(fmt::format("the leader arrives on rank {}'s barrier before its init", r));
          ++peer.empty_completed;
        }
        break;
      case op::exit:
        t.exited = true;
        break;
    }
    ++t.pc;
    return true;
  }

  void explore(const state& s) {
    if (!error.empty() || !seen.insert(s).second) return;
    ++states;
    bool moved = false;
    for (int rank = 0; rank < split && error.empty(); ++rank) {
      for (int ct = 0; ct < threads && error.empty(); ++ct) {
        state next = s;
        if (advance(next, rank, ct)) {
          moved = true;
          explore(next);
        }
        // Any one of its pending stores may become visible next.
        for (std::size_t k = 0; k < s.ctas[z(rank)].threads[z(ct)].stores.size() && error.empty(); ++k) {
          state landed = s;
          moved = true;
          if (land(landed, landed.ctas[z(rank)].threads[z(ct)].stores, k, rank)) explore(landed);
        }
      }
      for (std::size_t k = 0; k < s.ctas[z(rank)].ordered.size() && error.empty(); ++k) {
        state landed = s;
        moved = true;
        if (land(landed, landed.ctas[z(rank)].ordered, k, rank)) explore(landed);
      }
    }
    if (moved || !error.empty()) return;
    bool done = true;
    for (const auto& c : s.ctas) done = done && all_exited(c);
    if (!done) {
      std::string where;
      for (int r = 0; r < split; ++r)
        for (int ct = 0; ct < threads; ++ct)
          where += fmt::format(" rank {} thread {} at step {};", r, ct, s.ctas[z(r)].threads[z(ct)].pc);
      fail("stuck:" + where);
    } else if (s.reads != tiles * threads) {
      fail(fmt::format("all exited with {} of {} tile parts read", s.reads, tiles * threads));
    }
  }

  std::string run() {
    state s;
    s.ctas.assign(z(split), cta_state{});
    for (auto& c : s.ctas) c.threads.assign(z(threads), thread_state{});
    s.slots.assign(z((split - 1) * threads), -1);
    explore(s);
    return error;
  }
};

}  // namespace

TEST(wgmma_cluster_split_model, every_interleaving_reduces_every_tile) {
  struct shape {
    int split, threads, tiles;
  };
  for (const shape& sh : {shape{2, 1, 4}, shape{4, 1, 3}, shape{3, 1, 3}, shape{2, 2, 3}, shape{3, 2, 2}}) {
    checker c(sh.split, sh.threads, sh.tiles, defect::none);
    EXPECT_EQ(c.run(), "") << sh.split << " CTAs of " << sh.threads << " threads, " << sh.tiles << " tiles";
    std::printf("cluster split model: %d CTAs of %d threads x %d tiles, %lld states\n", sh.split, sh.threads, sh.tiles,
                c.states);
    EXPECT_GT(c.states, 50);  // interleavings were explored, not one path
  }
}

TEST(wgmma_cluster_split_model, planted_defects_are_caught) {
  struct planted {
    defect d;
    const char* name;
    const char* finds;  // a word of the report
    int split, threads;
  };
  const planted all[] = {
      {defect::missing_arrival, "a peer that never arrives on full", "stuck", 3, 1},
      {defect::relaxed_arrival, "an arrival without release", "finds", 3, 1},
      {defect::no_empty_wait, "a peer that does not wait for its slot", "finds", 2, 1},
      {defect::early_empty_arrival, "a leader that frees the slots before reading", "finds", 2, 1},
      {defect::no_exit_sync, "an exit without the final cluster barrier", "exited", 3, 1},
      {defect::no_start_sync, "no cluster barrier after the barriers' init", "before its init", 3, 1},
      // The two barriers racecheck does not credit: without them the other threads' parts race.
      {defect::no_publish_sync, "a peer's arrival before its other threads stored", "thread 1 reads", 2, 2},
      {defect::no_gather_sync, "a leader that frees the slots before its other threads read", "thread 1 reads", 2, 2},
  };
  for (const planted& p : all) {
    checker c(p.split, p.threads, 2, p.d);
    const std::string r = c.run();
    EXPECT_NE(r.find(p.finds), std::string::npos) << p.name << ": " << (r.empty() ? "went unnoticed" : r);
    std::printf("%s: %s\n", p.name, r.c_str());
  }
}
