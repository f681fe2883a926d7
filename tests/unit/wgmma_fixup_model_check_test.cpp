// An explicit-state model check of the stream-K fixup (kernels_templates/wgmma/wgmma_schedule.cuh):
// the CTAs of a plan run their units (tt_units_of, tt_unit: the kernel's own functions) while
// every interleaving and every order in which their stores become visible is explored.
//
// What is modelled:
// - A peer unit stores its partial tile into its workspace slot, then sets its flag. Each CTA's
//   stores wait in a store buffer until they become visible to the others. Published with a
//   release (st.release.gpu, or a fence.acq_rel.gpu before a relaxed flag store), the slot is
//   visible before the flag; published relaxed with no fence (a planted defect), in either order.
// - An owner unit computes its part, then for each peer in worker order waits until the peer's
//   flag is visible (ld.acquire.gpu in a loop), reads the slot, adds it, and clears the flag for
//   the next launch; then it stores C.
// Checked: a slot is never read before its partial is visible; every tile's C is stored once,
// with the sum of all its k-tiles; the flags are clear at the end; no state is stuck (deadlock).
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_schedule.cuh"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

enum class defect { none, relaxed_publish, skips_last_wait, keeps_flags };

struct store {
  int kind;  // 0 slot, 1 flag, 2 C
  int index;
  long long value;
  auto operator<=>(const store&) const = default;
};

struct cta_state {
  int unit = 0;
  int step = 0;  // owner: 0 compute, 1 + 3p + {0 wait, 1 read, 2 clear} for peer p, then store C
  long long acc = 0;
  std::vector<store> buffer;  // stores not yet visible, oldest first
  auto operator<=>(const cta_state&) const = default;
};

struct state {
  std::vector<cta_state> ctas;
  std::vector<long long> slots, flags, c, stores_of_c;
  auto operator<=>(const state&) const = default;
};

// The value of k-tile k of a tile: distinct, so a lost or doubled k-tile shows in the sum.
long long value(long long tile, int k) { return tile * 1000 + k + 1; }
long long partial(const tt_work_unit& u) {
  long long sum = 0;
  for (int k = u.k_begin; k < u.k_end; ++k) sum += value(u.tile, k);
  return sum;
}

struct checker {
  tt_schedule plan;
  defect planted;
  std::set<std::string> violations;
  std::set<state> seen;
  long long states = 0;

  int peers(const tt_work_unit& u) const { return u.last_peer - u.first_peer + 1; }

  // The successors of s; records every violation met on the way.
  std::vector<state> next(const state& s) {
    std::vector<state> out;
    for (int c = 0; c < plan.ctas; ++c) {
      const cta_state& me = s.ctas[c];
      // A buffered store becomes visible: the oldest, or any when published relaxed.
      for (std::size_t b = 0; b < me.buffer.size(); ++b) {
        if (b > 0 && planted != defect::relaxed_publish) break;
        state t = s;
        const store st = me.buffer[b];
        t.ctas[c].buffer.erase(t.ctas[c].buffer.begin() + static_cast<long>(b));
        (st.kind == 0 ? t.slots : st.kind == 1 ? t.flags : t.c)[st.index] = st.value;
        if (st.kind == 2) ++t.stores_of_c[st.index];
        out.push_back(std::move(t));
      }
      if (me.unit >= tt_units_of(plan, c)) continue;
      const tt_work_unit u = tt_unit(plan, c, me.unit);
      state t = s;
      cta_state& next_me = t.ctas[c];
      if (!u.owner) {  // compute, store the partial, set the flag
        next_me.buffer.push_back({0, c, partial(u)});
        next_me.buffer.push_back({1, c, 1});
        ++next_me.unit;
        out.push_back(std::move(t));
        continue;
      }
      const int last = 1 + 3 * peers(u);
      if (me.step == 0) {
        next_me.acc = partial(u);
        next_me.step = 1;
      } else if (me.step < last) {
        const int p = u.first_peer + (me.step - 1) / 3;
        const int phase = (me.step - 1) % 3;
        if (phase == 0) {
          const bool skip = planted == defect::skips_last_wait && p == u.last_peer;
          if (!skip && s.flags[p] != 1) continue;  // still waiting
        } else if (phase == 1) {
          const tt_work_unit theirs = tt_unit(plan, p, tt_units_of(plan, p) > 0 ? first_stream_k_unit(p) : 0);
          if (s.slots[p] != partial(theirs))
            violations.insert(fmt::format("CTA {} read worker {}'s slot before its partial was visible (tile {})", c, p, u.tile));
          next_me.acc += s.slots[p];
        } else if (planted != defect::keeps_flags) {
          next_me.buffer.push_back({1, p, 0});
        }
        ++next_me.step;
      } else {
        long long whole = 0;
        for (int k = 0; k < plan.k_tiles; ++k) whole += value(u.tile, k);
        if (me.acc != whole) violations.insert(fmt::format("tile {} stored {} instead of {}", u.tile, me.acc, whole));
        next_me.buffer.push_back({2, static_cast<int>(u.tile), me.acc});
        ++next_me.unit;
        next_me.step = 0;
      }
      out.push_back(std::move(t));
    }
    return out;
  }

  int first_stream_k_unit(int cta) const {
    for (int i = 0; i < tt_units_of(plan, cta); ++i)
      if (tt_unit(plan, cta, i).worker >= 0) return i;
    return 0;
  }

  bool finished(const state& s) const {
    for (int c = 0; c < plan.ctas; ++c)
      if (s.ctas[c].unit < tt_units_of(plan, c) || !s.ctas[c].buffer.empty()) return false;
    return true;
  }

  void check_end(const state& s) {
    for (long long t = 0; t < plan.tiles; ++t)
      if (s.stores_of_c[t] != 1) violations.insert(fmt::format("tile {} stored {} times", t, s.stores_of_c[t]));
    for (int w = 0; w < plan.sk_workers; ++w)
      if (s.flags[w] != 0) violations.insert(fmt::format("worker {}'s flag is still set at the end", w));
  }

  // Depth first over every reachable state; returns every violation found, "" when none.
  std::string run() {
    state s;
    s.ctas.resize(plan.ctas);
    s.slots.assign(plan.ctas, -1);  // poison: an early read shows
    s.flags.assign(plan.ctas, 0);
    s.c.assign(plan.tiles, -1);
    s.stores_of_c.assign(plan.tiles, 0);
    std::vector<state> stack{s};
    seen.insert(s);
    while (!stack.empty()) {
      const state cur = std::move(stack.back());
      stack.pop_back();
      ++states;
      auto succ = next(cur);
      if (succ.empty()) {
        if (!finished(cur)) violations.insert("deadlock: no CTA can move and the work is not done");
        else check_end(cur);
      }
      for (auto& t : succ)
        if (seen.insert(t).second) stack.push_back(std::move(t));
    }
    std::string all;
    for (const auto& v : violations) all += (all.empty() ? "" : "; ") + v;
    return all;
  }
};

std::string model_check(long long tiles, int k_tiles, int ctas, int min_unit, defect planted, long long* states = nullptr) {
  checker c{tt_make_schedule(tiles, k_tiles, ctas, min_unit, 1), planted, {}, {}, 0};
  const std::string v = c.run();
  if (states) *states = c.states;
  return v;
}

}  // namespace

TEST(wgmma_fixup, every_interleaving_stores_each_tile_once_with_all_its_k_tiles) {
  // Plans with ranges that cross tiles (3 x 12 on 4 CTAs and 2 x 9 on 3 in units of 1, where the
  // end-to-end cut is shorter than whole tiles by more than two units), an owner of three peers (1 x 12 on 4), and
  // whole tiles (5 x 3 on 3: the 2 left over stay whole, tile-aligned).
  struct shape {
    long long tiles;
    int k_tiles, ctas, min_unit;
  };
  for (const shape p : {shape{3, 12, 4, 1}, shape{1, 12, 4, 2}, shape{5, 3, 3, 2}, shape{2, 9, 3, 1}}) {
    long long states = 0;
    EXPECT_EQ(model_check(p.tiles, p.k_tiles, p.ctas, p.min_unit, defect::none, &states), "")
        << p.tiles << " tiles x " << p.k_tiles;
    EXPECT_GT(states, 20);
    std::printf("fixup model: %lld tiles x %d k-tiles on %d CTAs, %lld states\n", p.tiles, p.k_tiles, p.ctas, states);
  }
}

TEST(wgmma_fixup, planted_defects_are_caught) {
  EXPECT_NE(model_check(2, 9, 3, 1, defect::relaxed_publish).find("before its partial was visible"), std::string::npos);
  const std::string skipped = model_check(1, 12, 4, 2, defect::skips_last_wait);
  EXPECT_NE(skipped.find("before its partial was visible"), std::string::npos) << skipped;
  EXPECT_NE(model_check(2, 9, 3, 1, defect::keeps_flags).find("still set"), std::string::npos);
}
