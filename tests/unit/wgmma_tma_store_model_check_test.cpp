// An explicit-state model check of the TMA-store epilogue's staging buffers
// (kernels_templates/wgmma/wgmma_gemm.cu, tt_epilogue_tma): one consumer warpgroup's four warps
// stage chunk after chunk into two buffers that alternate, while every interleaving of the warps
// and every moment at which an issued store reads its buffer are explored.
//
// Per chunk c (buffer c % 2), in program order:
// - the leader thread (warp 0) waits until at most one issued store has not yet read its buffer
//   (cp.async.bulk.wait_group.read 1);
// - every warp: the consumer's named barrier, stmatrix of its 16 rows (generic-proxy writes),
//   fence.proxy.async (the rows become visible to the TMA unit), the barrier again;
// - the leader issues the store: the TMA unit reads the buffer at some later moment.
// At the end the leader waits for every store (wait_group 0) before the CTA exits.
// With beta != 0, after its read wait the leader also issues the TMA load of the chunk's C box into
// the buffer (the TMA unit writes every row at some later moment and completes the buffer's
// mbarrier phase), and every warp, after the first barrier, waits on that mbarrier with the parity
// of the buffer's use (tt_c_load_parity) and reads its rows (ldmatrix) before it writes them.
// Checked: a store reads only its own chunk, every row of it fenced; no warp writes a buffer while
// a store that reads it is pending; a warp reads only C of its own chunk; no load lands in a buffer
// a pending store still reads; no store is pending when the CTA exits; nothing is stuck.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>
#include <vector>

namespace {

enum class defect {
  none, no_read_wait, waits_for_two, no_second_barrier, no_fence, no_final_wait,
  load_before_read_wait, stale_parity, no_load_wait
};

enum class op { wait_read, load, barrier, load_wait, read_c, write, fence, issue, wait_all, exit };

struct step {
  op what;
  int chunk = 0;
};

struct row_state {
  int chunk = -1;       // the chunk whose values the rows hold
  bool c = false;       // C's values, as the load left them (not yet the staged result)
  bool fenced = false;  // visible to the async proxy
  auto operator<=>(const row_state&) const = default;
};

struct state {
  std::array<int, 4> pc{};
  std::array<int, 4> barriers{};        // named-barrier arrivals per warp
  std::array<std::array<row_state, 4>, 2> buffers{};  // [buffer][warp's rows]
  std::vector<int> pending;             // chunks whose stores have not read their buffer yet
  std::vector<int> loading;             // chunks whose C loads have not landed yet
  std::array<int, 2> phases{};          // completed phases of each buffer's C-load mbarrier
  int stored = 0;
  bool exited = false;
  auto operator<=>(const state&) const = default;
};

struct checker {
  int chunks;
  defect d;
  bool beta;
  std::array<std::vector<step>, 4> programs;
  std::set<state> seen;
  std::string error;
  long long states = 0;

  checker(int n, defect dd, bool with_beta = false) : chunks(n), d(dd), beta(with_beta) {
    for (int w = 0; w < 4; ++w) {
      auto& p = programs[static_cast<std::size_t>(w)];
      for (int c = 0; c < chunks; ++c) {
        if (w == 0 && beta && d == defect::load_before_read_wait) p.push_back({op::load, c});
        if (w == 0 && d != defect::no_read_wait) p.push_back({op::wait_read, c});
        if (w == 0 && beta && d != defect::load_before_read_wait) p.push_back({op::load, c});
        p.push_back({op::barrier, c});
        if (beta && d != defect::no_load_wait) p.push_back({op::load_wait, c});
        if (beta) p.push_back({op::read_c, c});
        p.push_back({op::write, c});
        if (d != defect::no_fence) p.push_back({op::fence, c});
        if (d != defect::no_second_barrier) p.push_back({op::barrier, c});
        if (w == 0) p.push_back({op::issue, c});
      }
      if (w == 0 && d != defect::no_final_wait) p.push_back({op::wait_all});
      if (w == 0) p.push_back({op::exit});
    }
  }

  void fail(const std::string& what) {
    if (error.empty()) error = what;
  }

  // The TMA unit reads the buffer of the oldest pending store (they complete in order).
  void read(state& s) {
    const int c = s.pending.front();
    for (int w = 0; w < 4; ++w) {
      const row_state& r = s.buffers[static_cast<std::size_t>(c % 2)][static_cast<std::size_t>(w)];
      if (r.chunk != c || !r.fenced)
        fail(fmt::format("the store of chunk {} reads warp {}'s rows holding chunk {}{}", c, w, r.chunk,
                         r.fenced ? "" : ", not fenced for the async proxy"));
    }
    s.pending.erase(s.pending.begin());
    ++s.stored;
  }

  // The TMA unit lands the i-th pending C load: every row of its buffer, then the mbarrier's phase.
  void land(state& s, std::size_t i) {
    const int c = s.loading[i], b = c % 2;
    for (int p : s.pending)
      if (p % 2 == b)
        fail(fmt::format("the C load of chunk {} lands in buffer {} while the store of chunk {} has not read it", c, b,
                         p));
    for (auto& r : s.buffers[static_cast<std::size_t>(b)]) r = {c, true, false};
    ++s.phases[static_cast<std::size_t>(b)];
    s.loading.erase(s.loading.begin() + static_cast<std::ptrdiff_t>(i));
  }

  // A step other than a barrier.
  bool advance(state& s, int w) {
    const auto& prog = programs[static_cast<std::size_t>(w)];
    int& pc = s.pc[static_cast<std::size_t>(w)];
    if (s.exited || pc >= static_cast<int>(prog.size())) return false;
    const step& st = prog[static_cast<std::size_t>(pc)];
    const int allowed = d == defect::waits_for_two ? 2 : 1;
    switch (st.what) {
      case op::wait_read:
        if (static_cast<int>(s.pending.size()) > allowed) return false;
        break;
      case op::load:
        s.loading.push_back(st.chunk);
        break;
      case op::load_wait: {  // try_wait.parity(P) passes once the phase of parity P has completed
        const unsigned parity = (d == defect::stale_parity ? 1u : 0u) ^ static_cast<unsigned>((st.chunk / 2) & 1);
        if (static_cast<unsigned>(s.phases[static_cast<std::size_t>(st.chunk % 2)] & 1) == parity) return false;
        break;
      }
      case op::read_c: {
        const row_state& r = s.buffers[static_cast<std::size_t>(st.chunk % 2)][static_cast<std::size_t>(w)];
        if (r.chunk != st.chunk || !r.c)
          fail(fmt::format("warp {} reads C of chunk {} from rows holding {} of chunk {}", w, st.chunk,
                           r.c ? "C" : "results", r.chunk));
        break;
      }
      case op::barrier:  // step_warp's
        return false;
      case op::write: {
        const int b = st.chunk % 2;
        for (int c : s.pending)
          if (c % 2 == b)
            fail(fmt::format("warp {} writes chunk {} into buffer {} while the store of chunk {} has not read it", w,
                             st.chunk, b, c));
        s.buffers[static_cast<std::size_t>(b)][static_cast<std::size_t>(w)] = {st.chunk, false, false};
        break;
      }
      case op::fence:
        s.buffers[static_cast<std::size_t>(st.chunk % 2)][static_cast<std::size_t>(w)].fenced = true;
        break;
      case op::issue:
        s.pending.push_back(st.chunk);
        break;
      case op::wait_all:
        if (!s.pending.empty()) return false;
        break;
      case op::exit:
        for (int o = 1; o < 4; ++o)
          if (s.pc[static_cast<std::size_t>(o)] < static_cast<int>(programs[static_cast<std::size_t>(o)].size()))
            return false;  // the warpgroup leaves together
        if (!s.pending.empty())
          fail(fmt::format("the CTA exits while the store of chunk {} has not read its buffer", s.pending.front()));
        s.exited = true;
        break;
    }
    ++pc;
    return true;
  }

  void explore(const state& s) {
    if (!error.empty() || !seen.insert(s).second) return;
    ++states;
    bool moved = false;
    for (int w = 0; w < 4 && error.empty(); ++w) {
      state next = s;
      if (step_warp(next, w)) {
        moved = true;
        explore(next);
      }
    }
    if (!s.pending.empty() && error.empty()) {
      state next = s;
      read(next);
      moved = true;
      explore(next);
    }
    for (std::size_t i = 0; i < s.loading.size() && error.empty(); ++i) {
      state next = s;
      land(next, i);
      moved = true;
      explore(next);
    }
    if (moved || !error.empty()) return;
    if (!s.exited) fail(fmt::format("stuck: warps at steps {}, {}, {}, {}", s.pc[0], s.pc[1], s.pc[2], s.pc[3]));
    else if (s.stored != chunks) fail(fmt::format("exited with {} of {} chunks stored", s.stored, chunks));
  }

  // One step of warp w; barriers as an arrival then a wait.
  bool step_warp(state& s, int w) {
    const auto& prog = programs[static_cast<std::size_t>(w)];
    int& pc = s.pc[static_cast<std::size_t>(w)];
    if (s.exited || pc >= static_cast<int>(prog.size())) return false;
    if (prog[static_cast<std::size_t>(pc)].what != op::barrier) return advance(s, w);
    // The how-many-th barrier of this warp this is.
    int generation = 0;
    for (int i = 0; i < pc; ++i) generation += prog[static_cast<std::size_t>(i)].what == op::barrier;
    int& mine = s.barriers[static_cast<std::size_t>(w)];
    if (mine == generation) {  // arrive
      ++mine;
      return true;
    }
    for (int o = 0; o < 4; ++o)  // wait until every warp has arrived at this generation
      if (s.barriers[static_cast<std::size_t>(o)] <= generation) return false;
    ++pc;
    return true;
  }

  std::string run() {
    explore(state{});
    return error;
  }
};

}  // namespace

TEST(wgmma_tma_store_model, every_interleaving_stores_every_chunk_from_its_own_buffer) {
  for (bool beta : {false, true})
    for (int chunks : {1, 2, 3, 5}) {
      checker c(chunks, defect::none, beta);
      EXPECT_EQ(c.run(), "") << chunks << " chunks" << (beta ? ", beta" : "");
      std::printf("tma store model%s: %d chunks, %lld states\n", beta ? " (beta: C loaded)" : "", chunks, c.states);
    }
}

TEST(wgmma_tma_store_model, planted_defects_are_caught) {
  struct planted {
    defect d;
    const char* name;
    const char* finds;
  };
  const planted all[] = {
      {defect::no_read_wait, "no wait for the store's read before reuse", "has not read it"},
      {defect::waits_for_two, "a wait that lets two stores pend", "has not read it"},
      {defect::no_second_barrier, "a store issued before every warp staged", "store of chunk 0"},
      {defect::no_fence, "no proxy fence", "not fenced"},
      {defect::no_final_wait, "an exit without waiting for the last store", "exits while"},
      {defect::load_before_read_wait, "beta: C loaded before the store's read wait", "lands in buffer"},
      {defect::stale_parity, "beta: the C-load wait with the previous use's parity", "reads C of chunk"},
      {defect::no_load_wait, "beta: C read without waiting for its load", "reads C of chunk"},
  };
  for (const planted& p : all)
    for (bool beta : {false, true}) {
      const bool beta_only =
          p.d == defect::load_before_read_wait || p.d == defect::stale_parity || p.d == defect::no_load_wait;
      if (beta_only && !beta) continue;
      checker c(3, p.d, beta);
      const std::string r = c.run();
      EXPECT_NE(r.find(p.finds), std::string::npos)
          << p.name << (beta ? " (beta)" : "") << ": " << (r.empty() ? "went unnoticed" : r);
      std::printf("%s%s: %s\n", p.name, beta ? " (beta)" : "", r.c_str());
    }
}
