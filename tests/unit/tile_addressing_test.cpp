// The kernels' shared-memory address math (kernels_templates/common/tile_addressing.cuh)
// replayed on the host: every warp phase of every variant of the default search
// spaces, in every layout, counted against 32 banks of 4 bytes.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/simt/simt_family.hpp"

#define TT_HOST_DEVICE inline
#include "common/tile_addressing.cuh"
#include "mma/mma_addressing.cuh"
#include "simt/simt_addressing.cuh"

using namespace tiletune;

namespace {

struct smem_access {
  int byte = 0;  // shared-memory byte offset
  int size = 0;  // 4, 8 or 16
};

// Extra wavefronts of one phase: the most distinct 4-byte words any bank
// serves, minus one (threads reading the same word share it).
int conflicts(const std::vector<smem_access>& phase) {
  std::map<int, std::set<int>> words_by_bank;
  for (const smem_access& a : phase)
    for (int w = a.byte / 4; w < (a.byte + a.size) / 4; ++w) words_by_bank[w % 32].insert(w);
  std::size_t most = 0;
  for (const auto& [bank, words] : words_by_bank) most = std::max(most, words.size());
  return most == 0 ? 0 : static_cast<int>(most) - 1;
}

// A warp's 32 accesses split into the phases the hardware serves together:
// 128 bytes of 16-byte accesses (8 threads), of 8-byte accesses (16 threads), or 32 threads.
int warp_conflicts(const std::vector<smem_access>& lanes) {
  const std::size_t per_phase = lanes.empty() ? 32 : 128 / std::max(lanes[0].size, 4);
  int total = 0;
  for (std::size_t i = 0; i < lanes.size(); i += per_phase) {
    std::vector<smem_access> phase(lanes.begin() + static_cast<long>(i),
                              lanes.begin() + static_cast<long>(std::min(lanes.size(), i + per_phase)));
    total += conflicts(phase);
  }
  return total;
}

// Element offset of (row, col) in a rows x cols tile: the layout under test.
using tile_layout = std::function<int(int row, int col, int cols, int elem_bytes, int k_contiguous)>;

const tile_layout swizzled = [](int row, int col, int cols, int eb, int kc) {
  return tt_swizzled_offset(row, col, cols, eb, kc);
};
// The layout before the swizzle: rows padded by 16 bytes (tf32 k-rows by 4 words).
const tile_layout padded = [](int row, int col, int cols, int eb, int kc) {
  const int pad = eb == 2 ? 8 : (kc ? 4 : 8);
  return row * (cols + pad) + col;
};
// A broken swizzle: the mask of row / 8 instead of row % 8.
const tile_layout broken = [](int row, int col, int cols, int eb, int kc) {
  return tt_swizzled_offset(row / 8, col, cols, eb, kc) - (row / 8) * cols + row * cols;
};

struct operand_tile {
  int rows, cols, kc;
};

struct mma_case {
  tile_config c;
  dtype type;
  layout l;
  int eb() const { return element_bytes(type); }
  operand_tile a() const {
    return l.a_transposed ? operand_tile{c.block_k, c.block_m, 0} : operand_tile{c.block_m, c.block_k, 1};
  }
  operand_tile b() const {
    return l.b_transposed ? operand_tile{c.block_n, c.block_k, 1} : operand_tile{c.block_k, c.block_n, 0};
  }
};

// cp.async: thread tid copies chunk c = tid + i * threads, row c / chunks_per_row.
int copy_conflicts(const mma_case& k, const operand_tile& t, const tile_layout& f) {
  const int eb = k.eb(), chunk = 16 / eb, threads = k.c.threads();
  const int cpr = t.cols / chunk, chunks = t.rows * cpr;
  int total = 0;
  for (int i = 0; i * threads < chunks; ++i)
    for (int w = 0; w < threads / 32; ++w) {
      std::vector<smem_access> lanes;
      for (int lane = 0; lane < 32; ++lane) {
        const int c = w * 32 + lane + i * threads;
        if (c >= chunks) break;
        lanes.push_back({f(c / cpr, (c % cpr) * chunk, t.cols, eb, t.kc) * eb, 16});
      }
      total += warp_conflicts(lanes);
    }
  return total;
}

// ldmatrix.x4 for the 16-bit types: lanes 8q..8q+7 give row r of matrix q;
// the logical (row, col) as tt_load_fragments (mma_fragments.cuh) documents them.
struct ldmatrix_row {
  int row, col;
};
ldmatrix_row ldmatrix_a(const mma_case& k, int m, int k_base, int lane) {
  const int q = lane >> 3, r = lane & 7;
  if (k.l.a_transposed) return {k_base + r + (q >> 1) * 8, m + (q & 1) * 8};
  return {m + r + (q & 1) * 8, k_base + (q >> 1) * 8};
}
ldmatrix_row ldmatrix_b(const mma_case& k, int n, int k_base, int lane) {
  const int q = lane >> 3, r = lane & 7;
  if (k.l.b_transposed) return {n + r + (q >> 1) * 8, k_base + (q & 1) * 8};
  return {k_base + r + (q & 1) * 8, n + (q >> 1) * 8};
}
// The kernel's shortcut: the lane's mask and chunk ^ small offsets (see tt_load_fragments).
int kernel_ldmatrix_a(const mma_case& k, int m, int k_base, int lane) {
  const int q = lane >> 3, r = lane & 7;
  const operand_tile t = k.a();
  const int mask = tt_swizzle_mask(r, t.cols / 8, 2, t.kc);
  if (k.l.a_transposed) return (k_base + r + (q >> 1) * 8) * t.cols + (((m >> 3) ^ (q & 1) ^ mask) * 8);
  return (m + r + (q & 1) * 8) * t.cols + (((k_base >> 3) ^ (q >> 1) ^ mask) * 8);
}
int kernel_ldmatrix_b(const mma_case& k, int n, int k_base, int lane) {
  const int q = lane >> 3, r = lane & 7;
  const operand_tile t = k.b();
  const int mask = tt_swizzle_mask(r, t.cols / 8, 2, t.kc);
  if (k.l.b_transposed) return (n + r + (q >> 1) * 8) * t.cols + (((k_base >> 3) ^ (q & 1) ^ mask) * 8);
  return (k_base + r + (q & 1) * 8) * t.cols + (((n >> 3) ^ (q >> 1) ^ mask) * 8);
}

struct fragment_count {
  int conflicts = 0;
  int shortcut_mismatches = 0;
};

fragment_count fragment_conflicts(const mma_case& k, const tile_layout& f) {
  fragment_count out;
  const tile_config& c = k.c;
  const operand_tile ta = k.a(), tb = k.b();
  const int eb = k.eb();
  for (int warp = 0; warp < mma_warps_m(c) * mma_warps_n(c); ++warp) {
    const int wm0 = (warp / mma_warps_n(c)) * mma_warp_tile_m(c), wn0 = (warp % mma_warps_n(c)) * mma_warp_tile_n(c);
    if (eb == 2) {
      for (int k_base = 0; k_base < c.block_k; k_base += 16) {
        for (int mi = 0; mi < mma_warp_tile_m(c) / 16; ++mi) {
          std::vector<smem_access> lanes;
          for (int lane = 0; lane < 32; ++lane) {
            const auto [row, col] = ldmatrix_a(k, wm0 + mi * 16, k_base, lane);
            const int at = f(row, col, ta.cols, 2, ta.kc);
            out.shortcut_mismatches += at != kernel_ldmatrix_a(k, wm0 + mi * 16, k_base, lane);
            lanes.push_back({at * 2, 16});
          }
          out.conflicts += warp_conflicts(lanes);
        }
        for (int ni = 0; ni < mma_warp_tile_n(c) / 8; ni += 2) {
          std::vector<smem_access> lanes;
          for (int lane = 0; lane < 32; ++lane) {
            const auto [row, col] = ldmatrix_b(k, wn0 + ni * 8, k_base, lane);
            const int at = f(row, col, tb.cols, 2, tb.kc);
            out.shortcut_mismatches += at != kernel_ldmatrix_b(k, wn0 + ni * 8, k_base, lane);
            lanes.push_back({at * 2, 16});
          }
          out.conflicts += warp_conflicts(lanes);
        }
      }
    } else {
      // tf32 m16n8k8: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (k t, n g),
      // b1 (k t+4, n g); one 4-byte load per register and lane, but A stored [k][m]: its
      // rows paired (row g + 8h is tile row 2g + h), a0 a1 and a2 a3 each one 8-byte load.
      auto a_at = [&](int m, int kk) {
        return k.l.a_transposed ? f(kk, m, ta.cols, 4, ta.kc) : f(m, kk, ta.cols, 4, ta.kc);
      };
      auto b_at = [&](int kk, int n) {
        return k.l.b_transposed ? f(n, kk, tb.cols, 4, tb.kc) : f(kk, n, tb.cols, 4, tb.kc);
      };
      for (int k_base = 0; k_base < c.block_k; k_base += 8) {
        for (int mi = 0; k.l.a_transposed && mi < mma_warp_tile_m(c) / 16; ++mi)
          for (int j = 0; j < 2; ++j) {
            std::vector<smem_access> lanes;
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane >> 2, t = lane & 3;
              const int at = a_at(wm0 + mi * 16 + 2 * g, k_base + t + j * 4);
              const int kernel = tt_tf32_pair_lane_offset(wm0, mi % 2, lane, ta.cols) +
                                 tt_tf32_pair_added(mi, k_base, j, ta.cols);
              const int element = tt_tf32_pair_offset(k_base + t + 4 * j, t + 4 * j, wm0 + mi * 16, g, 0, ta.cols);
              const int element1 = tt_tf32_pair_offset(k_base + t + 4 * j, t + 4 * j, wm0 + mi * 16, g, 1, ta.cols);
              // the pair's second element (row g + 8) lies right after the first in the layout
              const int second = a_at(wm0 + mi * 16 + 2 * g + 1, k_base + t + j * 4);
              out.shortcut_mismatches += (at != kernel) + (at != element) + (second != element1) + (second != at + 1);
              lanes.push_back({at * 4, 8});
            }
            out.conflicts += warp_conflicts(lanes);
          }
        for (int mi = 0; !k.l.a_transposed && mi < mma_warp_tile_m(c) / 16; ++mi)
          for (int reg = 0; reg < 4; ++reg) {
            std::vector<smem_access> lanes;
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane >> 2, t = lane & 3, h = reg & 1, j = reg >> 1;
              const int at = a_at(wm0 + mi * 16 + g + h * 8, k_base + t + j * 4);
              // the kernel's shortcut for the same element (mma_fragments.cuh)
              const int kernel = tt_tf32_offset_k_contiguous(wm0 + mi * 16 + 8 * h + g, g, k_base, j, t, ta.cols);
              out.shortcut_mismatches += at != kernel;
              lanes.push_back({at * 4, 4});
            }
            out.conflicts += warp_conflicts(lanes);
          }
        for (int ni = 0; ni < mma_warp_tile_n(c) / 8; ++ni)
          for (int j = 0; j < 2; ++j) {
            std::vector<smem_access> lanes;
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane >> 2, t = lane & 3;
              const int at = b_at(k_base + t + j * 4, wn0 + ni * 8 + g);
              const int kernel = k.l.b_transposed
                                     ? tt_tf32_offset_k_contiguous(wn0 + ni * 8 + g, g, k_base, j, t, tb.cols)
                                     : tt_tf32_offset_mn_contiguous(k_base + t + 4 * j, t + 4 * j, wn0 + ni * 8, g, tb.cols);
              out.shortcut_mismatches += at != kernel;
              lanes.push_back({at * 4, 4});
            }
            out.conflicts += warp_conflicts(lanes);
          }
      }
    }
  }
  return out;
}

std::vector<mma_case> mma_cases() {
  std::vector<mma_case> out;
  const device_spec& d = find_preset("h100-sxm");
  for (dtype t : {dtype::tf32, dtype::f16, dtype::bf16})
    for (const char* l : {"nn", "nt", "tn", "tt"}) {
      gemm_problem p;
      p.m = p.n = p.k = 4096;
      p.type = t;
      p.layout = parse_layout(l);
      for (const auto& c : default_search_space(family_named("mma"), t))
        if (!check_constraints(c, p, d)) out.push_back({c, t, p.layout});
    }
  return out;
}

std::string name(const mma_case& k) { return k.c.id() + " " + std::string(to_string(k.type)) + " " + k.l.name(); }

}  // namespace

TEST(tile_addressing, the_mask_depends_on_row_mod_8_and_stays_in_the_row) {
  for (int cpr : {4, 8, 16, 32, 64})
    for (int eb : {2, 4})
      for (int kc : {0, 1})
        for (int row = 0; row < 64; ++row) {
          const int mask = tt_swizzle_mask(row, cpr, eb, kc);
          EXPECT_EQ(mask, tt_swizzle_mask(row & 7, cpr, eb, kc));
          EXPECT_LT(mask, cpr);
        }
}

TEST(tile_addressing, every_element_of_a_swizzled_tile_has_its_own_place) {
  for (const auto& k : mma_cases())
    for (const operand_tile& t : {k.a(), k.b()}) {
      std::vector<int> seen(static_cast<std::size_t>(t.rows * t.cols), 0);
      for (int r = 0; r < t.rows; ++r)
        for (int c = 0; c < t.cols; ++c) ++seen.at(static_cast<std::size_t>(tt_swizzled_offset(r, c, t.cols, k.eb(), t.kc)));
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), t.rows * t.cols) << name(k);
    }
}

TEST(tile_addressing, copies_and_fragment_loads_are_free_of_bank_conflicts) {
  const auto cases = mma_cases();
  ASSERT_GT(cases.size(), 100u);
  int checked = 0;
  for (const auto& k : cases) {
    EXPECT_EQ(copy_conflicts(k, k.a(), swizzled), 0) << "A copy " << name(k);
    EXPECT_EQ(copy_conflicts(k, k.b(), swizzled), 0) << "B copy " << name(k);
    const fragment_count f = fragment_conflicts(k, swizzled);
    EXPECT_EQ(f.conflicts, 0) << "fragments " << name(k);
    EXPECT_EQ(f.shortcut_mismatches, 0) << "the kernel's fragment address differs " << name(k);
    ++checked;
  }
  std::printf("%d mma variant/layout pairs replayed\n", checked);
}

TEST(tile_addressing, the_replay_finds_the_conflicts_of_the_padded_and_of_a_broken_layout) {
  int padded_total = 0, broken_total = 0;
  for (const auto& k : mma_cases()) {
    padded_total += copy_conflicts(k, k.a(), padded) + copy_conflicts(k, k.b(), padded) +
                    fragment_conflicts(k, padded).conflicts;
    broken_total += fragment_conflicts(k, broken).conflicts;
  }
  EXPECT_GT(padded_total, 0);
  EXPECT_GT(broken_total, 0);
  // The measured variant: the padded 64-byte rows of bf16 'nt' at BK 32 conflict on the copies.
  const mma_case measured{mma_tile(128, 128, 32, 2, 2, 3), dtype::bf16, parse_layout("nt")};
  EXPECT_GT(copy_conflicts(measured, measured.a(), padded), 0);
  EXPECT_EQ(copy_conflicts(measured, measured.a(), swizzled), 0);
}

TEST(tile_addressing, smem_bytes_is_what_the_template_allocates) {
  for (const auto& k : mma_cases()) {
    const tile_config& c = k.c;
    EXPECT_EQ(c.smem_bytes(k.type, k.l),
              tt_mma_smem_bytes(c.block_m, c.block_n, c.block_k, mma_warps_m(c), c.stages, k.eb()))
        << name(k);
  }
}

// The epilogue: each accumulator element (warp, mi, ni, e) is staged, read
// back by exactly one thread's 16-byte piece at its own tile (row, col), with
// conflict-free staging writes and reads, within the shared memory allocated.
TEST(tile_addressing, the_epilogue_puts_every_accumulator_at_its_place_once) {
  for (const auto& k : mma_cases()) {
    const tile_config& c = k.c;
    const int wm = mma_warp_tile_m(c), wn = mma_warp_tile_n(c), mi_count = wm / 16, ni_count = wn / 8;
    const int smem = tt_mma_smem_bytes(c.block_m, c.block_n, c.block_k, mma_warps_m(c), c.stages, k.eb());
    const int epi_mi = tt_mma_epi_mi(mi_count, mma_warps_m(c), c.block_n, smem);
    ASSERT_EQ(mi_count % epi_mi, 0) << name(k);
    const int pass_rows = mma_warps_m(c) * epi_mi * 16, vec = 16 / k.eb(), bn = c.block_n;
    ASSERT_LE(pass_rows * bn * 4, smem) << name(k);
    std::vector<int> written(static_cast<std::size_t>(c.block_m * bn), 0);
    int conflict_count = 0;
    const bool paired = k.eb() == 4 && k.l.a_transposed;
    for (int pass = 0; pass < mi_count / epi_mi; ++pass) {
      // Staging: the value's tile position (row * BN + col), as the kernel stores it.
      std::vector<int> stage(static_cast<std::size_t>(pass_rows * bn), -1);
      for (int warp = 0; warp < mma_warps_m(c) * mma_warps_n(c); ++warp) {
        const int warp_m = warp / mma_warps_n(c), wm0 = warp_m * wm, wn0 = (warp % mma_warps_n(c)) * wn;
        for (int j = 0; j < epi_mi; ++j)
          for (int ni = 0; ni < ni_count; ++ni)
            for (int h = 0; h < 2; ++h) {
              std::vector<smem_access> lanes;
              for (int lane = 0; lane < 32; ++lane) {
                const int g = lane >> 2, t = lane & 3;
                const int sr = warp_m * epi_mi * 16 + j * 16 + g + h * 8;
                const int at = tt_stage_offset(sr, wn0 + ni * 8 + 2 * t, bn);
                lanes.push_back({at * 4, 8});
                for (int e = 0; e < 2; ++e) {
                  // acc[pass * epi_mi + j][ni][2h + e] sits at (g + 8h, 2t + e) of its m16n8 tile;
                  // tf32 A stored [k][m] made row g + 8h tile row 2g + h.
                  const int r16 = paired ? 2 * g + h : g + 8 * h;
                  const int m = wm0 + (pass * epi_mi + j) * 16 + r16, n = wn0 + ni * 8 + 2 * t + e;
                  ASSERT_EQ(stage.at(static_cast<std::size_t>(at + e)), -1) << name(k);
                  stage.at(static_cast<std::size_t>(at + e)) = m * bn + n;
                }
              }
              conflict_count += warp_conflicts(lanes);
            }
      }
      // Read back: item -> (staging row, col) -> tile row, in 16-byte pieces.
      const int items = pass_rows * (bn / vec);
      for (int base = 0; base < items; base += 32) {
        std::vector<smem_access> first, second;
        for (int item = base; item < std::min(items, base + 32); ++item) {
          const int sr = item / (bn / vec), col = (item % (bn / vec)) * vec;
          const int row = tt_mma_stage_row_to_tile_row(sr, pass, epi_mi, wm, paired);
          if (vec == 8) {
            const int swap = (col >> 5) & 1;
            first.push_back({tt_stage_offset(sr, col + 4 * swap, bn) * 4, 16});
            second.push_back({tt_stage_offset(sr, col + 4 - 4 * swap, bn) * 4, 16});
          } else {
            first.push_back({tt_stage_offset(sr, col, bn) * 4, 16});
          }
          for (int e = 0; e < vec; ++e) {
            const int got = stage.at(static_cast<std::size_t>(tt_stage_offset(sr, col + e, bn)));
            EXPECT_EQ(got, row * bn + col + e) << name(k) << " pass " << pass << " item " << item;
            ++written.at(static_cast<std::size_t>(row * bn + col + e));
          }
        }
        conflict_count += warp_conflicts(first) + warp_conflicts(second);
      }
    }
    EXPECT_EQ(std::count(written.begin(), written.end(), 1), c.block_m * bn) << name(k);
    EXPECT_EQ(conflict_count, 0) << "staging " << name(k);
  }
}

// simt: registers -> shared stores (scalar and transposing for the k-contiguous
// layouts, whole vectors otherwise), every config and layout, conflict-free.
TEST(tile_addressing, simt_shared_stores_are_free_of_bank_conflicts) {
  int checked = 0, padded_conflicts = 0;
  for (const auto& c : default_search_space(family_named("simt"), dtype::f32)) {
    gemm_problem p;
    p.m = p.n = p.k = 4096;
    if (check_constraints(c, p, find_preset("h100-sxm"))) continue;
    const int threads = c.threads(), vec = simt_vector_width(c), bk = c.block_k;
    for (int mn : {c.block_m, c.block_n})
      for (int k_contiguous : {0, 1}) {
        const int loads = mn * bk / (threads * vec);
        for (int i = 0; i < loads; ++i)
          for (int w = 0; w < threads / 32; ++w) {
            if (k_contiguous) {
              for (int v = 0; v < vec; ++v) {
                std::vector<smem_access> lanes, old;
                for (int lane = 0; lane < 32; ++lane) {
                  const int cidx = w * 32 + lane + i * threads;
                  const int r = cidx / (bk / vec), kc = (cidx % (bk / vec)) * vec;
                  lanes.push_back({tt_simt_offset(kc + v, r, mn, bk, vec) * 4, 4});
                  old.push_back({((kc + v) * (mn + 4) + r) * 4, 4});
                }
                EXPECT_EQ(warp_conflicts(lanes), 0) << c.id();
                padded_conflicts += warp_conflicts(old);
              }
            } else {
              std::vector<smem_access> lanes;
              for (int lane = 0; lane < 32; ++lane) {
                const int cidx = w * 32 + lane + i * threads;
                const int kr = cidx / (mn / vec), col = (cidx % (mn / vec)) * vec;
                lanes.push_back({tt_simt_offset(kr, col, mn, bk, vec) * 4, vec * 4});
              }
              EXPECT_EQ(warp_conflicts(lanes), 0) << c.id();
            }
          }
        ++checked;
      }
  }
  EXPECT_GT(checked, 20);
  EXPECT_GT(padded_conflicts, 0);  // the old +4 padding conflicted on the transposing stores
}

TEST(block_raster, every_block_tile_is_visited_once) {
  for (int tiles_m : {1, 3, 7, 13, 32})
    for (int tiles_n : {1, 5, 9, 16})
      for (int group : {0, 1, 2, 4, 8})
        for (int along_n : {0, 1}) {
          std::vector<int> seen(static_cast<std::size_t>(tiles_m * tiles_n), 0);
          for (int l = 0; l < tiles_m * tiles_n; ++l) {
            int tm = -1, tn = -1;
            tt_raster(l, tiles_m, tiles_n, group, along_n, tm, tn);
            ASSERT_TRUE(tm >= 0 && tm < tiles_m && tn >= 0 && tn < tiles_n)
                << tiles_m << "x" << tiles_n << " g" << group << " l" << l;
            ++seen[static_cast<std::size_t>(tm + tn * tiles_m)];
          }
          EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), tiles_m * tiles_n)
              << tiles_m << "x" << tiles_n << " g" << group << " along_n " << along_n;
        }
  // Grouped: the first `group` blocks walk down one column of a group of rows.
  int tm = 0, tn = 0;
  tt_raster(3, 16, 16, 8, 0, tm, tn);
  EXPECT_EQ(tm, 3);
  EXPECT_EQ(tn, 0);
  tt_raster(8, 16, 16, 8, 0, tm, tn);
  EXPECT_EQ(tm, 0);
  EXPECT_EQ(tn, 1);
}
