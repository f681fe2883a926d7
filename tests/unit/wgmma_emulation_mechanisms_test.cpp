// The host emulation (wgmma_emulation.hpp) of the wgmma mechanisms not yet run on a GPU: swap-AB,
// split-K inside a cluster, the TMA-store epilogue, ping-pong consumers and 2x1 multicast clusters,
// each against a host GEMM and each with its planted defects.
#include "wgmma_emulation.hpp"

using namespace tiletune;
using namespace wgmma_emu;

// ---- swap-AB: the kernel computes C^T, its A the problem's B -------------------------

namespace {
tile_config swap_tile(int rows, int cols, int bk, int consumers, int stages, bool along_n = false) {
  tile_config c = wgmma_tile(rows, cols, bk, consumers, stages, 8, along_n);
  set_wgmma_swap_ab(c, true);
  return c;
}
}  // namespace

TEST(wgmma_emulation, swap_ab_tiles_match_a_host_gemm) {
  // Few rows (1, 5, 16, 30) inside one tile of 8-32 (the instruction's N), the rest of the
  // kernel's N zero-filled by TMA and never stored; 72 rows over three tiles of 32; N ending
  // inside the kernel's 64-256-row tiles; two batches; beta reading C transposed; both raster
  // orders; stream-K splitting a decode shape's k-tiles across 5 CTAs. K-major A only (nt, nn).
  struct shape {
    std::int64_t m, n, k, batch;
    double beta;
  };
  const shape shapes[] = {{1, 200, 136, 1, 0.0}, {5, 136, 72, 2, -0.5}, {16, 200, 200, 1, 1.5},
                          {30, 72, 136, 1, 0.0}, {72, 136, 72, 1, 0.25}};
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::f16, "nn"}, case_layout{dtype::tf32, "nt"}})
    for (const shape& sh : shapes) {
      const prepared x = prepare(problem(sh.m, sh.n, sh.k, sh.batch, cl.t, cl.layout), 21);
      const int bk = cl.t == dtype::tf32 ? 32 : 64;
      int rows = 8;
      while (rows < std::min<std::int64_t>(sh.m, 32)) rows *= 2;
      for (const tile_config& c : {swap_tile(rows, 64, bk, 1, 4), swap_tile(rows, 128, bk, 1, 3, true),
                                   swap_tile(rows, 256, bk, 2, 2)}) {
        ASSERT_EQ(check_constraints(c, x.p, h100), std::nullopt) << c.id() << " " << x.p.describe();
        for (int stream_k : {0, 1}) {
          EXPECT_EQ(run_and_compare(c, x, 0.75, sh.beta, 5, {}, stream_k), "")
              << c.id() << " " << x.p.describe() << " stream-K " << stream_k;
          ++ran;
        }
      }
    }
  EXPECT_EQ(ran, 3 * 5 * 3 * 2);
}

TEST(wgmma_emulation, swap_ab_planted_defects_are_caught) {
  const prepared x = prepare(problem(5, 200, 136, 2, dtype::bf16, "nt"), 22);
  const tile_config c = swap_tile(8, 128, 64, 1, 4);
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.5, 3), "");
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 5, {}, 1), "");
  struct planted {
    const char* name;
    defects d;
  };
  std::vector<planted> all;
  all.push_back({"C stored untransposed", {}});
  all.back().d.swap_store_untransposed = true;
  all.push_back({"zero-filled rows of A stored into C", {}});
  all.back().d.swap_stores_padded_rows = true;
  all.push_back({"tensor maps in the problem's order", {}});
  all.back().d.swap_maps_in_problem_order = true;
  all.push_back({"fragment column off by one", {}});
  all.back().d.fragment_col_off_by_one = true;
  for (const planted& pl : all) {
    const std::string whole = run_and_compare(c, x, 1.0, 0.5, 3, pl.d);
    const std::string split = run_and_compare(c, x, 1.0, 0.0, 5, pl.d, 1);
    EXPECT_NE(whole, "") << pl.name << " went unnoticed";
    EXPECT_NE(split, "") << pl.name << " went unnoticed with stream-K";
    std::printf("%s:\n  %.160s\n  %.160s\n", pl.name, whole.c_str(), split.c_str());
  }
}

// The decode shapes' search space holds swap-AB tiles (with stream-K copies) that the constraints
// allow, and the tiles the space adds for them compute right on a smaller problem of the same rows.
TEST(wgmma_emulation, the_decode_space_holds_swap_ab_tiles_that_compute_right) {
  const device_spec& h100 = find_preset("h100-sxm");
  for (std::int64_t m : {1, 16, 64}) {
    const gemm_problem decode = problem(m, 4096, 4096, 1, dtype::bf16, "nt");
    const prepared x = prepare(problem(m, 200, 200, 1, dtype::bf16, "nt"), 23);
    int swapped = 0, streamed = 0;
    for (const tile_config& c : problem_search_space(family_named("wgmma"), decode, h100)) {
      if (!wgmma_swap_ab(c) || check_constraints(c, decode, h100)) continue;
      ++swapped;
      streamed += wgmma_stream_k(c);
      EXPECT_GE(c.block_m, m) << c.id();
      EXPECT_LT(c.block_m, std::max<std::int64_t>(16, 2 * m)) << c.id() << ": not the smallest that holds M";
      if (!wgmma_stream_k(c)) {
        EXPECT_EQ(run_and_compare(c, x, 1.0, 0.0, 4), "") << c.id();
      }
    }
    EXPECT_GE(swapped, 6) << "M = " << m;
    EXPECT_GE(streamed, 3) << "M = " << m;
  }
  // No swap-AB tile for 65 rows or more, nor for a transposed A.
  for (const gemm_problem& p : {problem(65, 4096, 4096, 1, dtype::bf16, "nt"), problem(16, 4096, 4096, 1, dtype::bf16, "tn")})
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, h100))
      EXPECT_FALSE(wgmma_swap_ab(c)) << c.id() << " " << p.describe();
}

// ---- cluster split-K: k-slices per rank, partials in the leader's shared memory ----------

namespace {
tile_config split_tile(tile_config c, int split) {
  c.split_k = split;
  return c;
}
}  // namespace

TEST(wgmma_emulation, cluster_split_k_matches_a_host_gemm) {
  // 2 and 4 CTAs a cluster on plain and swap-AB tiles: few tiles (decode), more tiles than the
  // clusters hold (each cluster walks several), K not a multiple of the split's k-tiles, two
  // batches, beta reading C; the launch's grid and cluster dims come from its description.
  struct shape {
    std::int64_t m, n, k, batch;
    double beta;
  };
  const shape shapes[] = {{16, 200, 1280, 1, 0.0}, {5, 136, 328, 2, -0.5}, {72, 520, 392, 1, 1.5}};
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::f16, "nn"}, case_layout{dtype::tf32, "nt"}})
    for (const shape& sh : shapes) {
      const prepared x = prepare(problem(sh.m, sh.n, sh.k, sh.batch, cl.t, cl.layout), 31);
      const int bk = cl.t == dtype::tf32 ? 32 : 64;
      for (int split : {2, 4})
        for (const tile_config& c : {split_tile(wgmma_tile(64, 128, bk, 1, 4), split),
                                     split_tile(swap_tile(sh.m <= 8 ? 8 : 16, 128, bk, 1, 3), split)}) {
          ASSERT_EQ(check_constraints(c, x.p, h100), std::nullopt) << c.id() << " " << x.p.describe();
          EXPECT_EQ(run_and_compare(c, x, 0.75, sh.beta, 6), "") << c.id() << " " << x.p.describe();
          ++ran;
        }
      // Pairs in a swap-AB tile's 16-stage ring (the decode space's deepest): the leader's slots after it.
      const tile_config deep = split_tile(swap_tile(sh.m <= 8 ? 8 : 16, 64, bk, 1, 16), 2);
      ASSERT_EQ(check_constraints(deep, x.p, h100), std::nullopt) << deep.id() << " " << x.p.describe();
      EXPECT_EQ(run_and_compare(deep, x, 0.75, sh.beta, 6), "") << deep.id() << " " << x.p.describe();
      ++ran;
    }
  EXPECT_EQ(ran, 3 * 3 * (2 * 2 + 1));
}

TEST(wgmma_emulation, cluster_split_k_planted_defects_are_caught) {
  const prepared x = prepare(problem(16, 200, 1280, 1, dtype::bf16, "nt"), 32);
  const tile_config c = split_tile(swap_tile(16, 128, 64, 1, 4), 4);
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 8), "");
  defects skip;
  skip.split_skips_last_peer = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 8, skip), "") << "a leader that forgets a peer";
  defects next;
  next.split_peer_in_next_slot = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 8, next), "") << "a peer in its neighbour's slot";
  defects same;
  same.split_same_k_slice = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 8, same), "") << "every rank on the leader's k-tiles";
  // The same in pairs after a 16-stage ring.
  const tile_config deep = split_tile(swap_tile(16, 64, 64, 1, 16), 2);
  ASSERT_EQ(run_and_compare(deep, x, 1.0, 0.0, 8), "");
  EXPECT_NE(run_and_compare(deep, x, 1.0, 0.0, 8, skip), "") << "a leader that forgets its peer (16 stages)";
  EXPECT_NE(run_and_compare(deep, x, 1.0, 0.0, 8, same), "") << "both ranks on the leader's k-tiles (16 stages)";
}

// ---- the TMA-store epilogue: stmatrix into swizzled staging, a clipped bulk store ------------

namespace {
tile_config tma_tile(int bm, int bn, int consumers, int stages, bool stream_k = false) {
  tile_config c = wgmma_tile(bm, bn, 64, consumers, stages);
  set_wgmma_tma_store(c, true);
  set_wgmma_stream_k(c, stream_k);
  return c;
}
}  // namespace

TEST(wgmma_emulation, tma_store_epilogue_matches_a_host_gemm) {
  // Every default tile shape with the TMA-store epilogue, f16 and bf16, nn and nt: M and N ending
  // inside tiles (the store clips), two batches (a box must not spill into the next matrix), whole
  // tiles and stream-K; C holds NaN (beta 0) and must be written exactly once where it lies; with
  // beta 0.5 C's boxes are TMA-loaded into the staging and read back with ldmatrix.
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::f16, "nn"}})
    for (const auto& [m, n, k, batch] : {std::array<std::int64_t, 4>{200, 136, 136, 2}, {72, 328, 1280, 1}}) {
      const prepared x = prepare(problem(m, n, k, batch, cl.t, cl.layout), 41);
      for (const tile_config& c : default_search_space(family_named("wgmma"), cl.t)) {
        if (c.raster_group != 8 || c.raster_along_n || c.stages != 3) continue;
        tile_config t = c;
        set_wgmma_tma_store(t, true);
        if (check_constraints(t, x.p, h100)) continue;
        EXPECT_EQ(run_and_compare(t, x, 1.25, 0.0, 3, {}, 0), "") << t.id() << " " << x.p.describe();
        EXPECT_EQ(run_and_compare(t, x, 1.25, 0.0, 3, {}, 1), "") << t.id() << " stream-K " << x.p.describe();
        EXPECT_EQ(run_and_compare(t, x, 1.25, 0.5, 3, {}, 0), "") << t.id() << " beta " << x.p.describe();
        EXPECT_EQ(run_and_compare(t, x, 1.25, 0.5, 3, {}, 1), "") << t.id() << " stream-K beta " << x.p.describe();
        ran += 4;
      }
    }
  EXPECT_EQ(ran, 2 * 2 * 6 * 4);
}

TEST(wgmma_emulation, tma_store_planted_defects_are_caught) {
  const prepared x = prepare(problem(200, 136, 72, 2, dtype::bf16, "nt"), 42);
  const tile_config c = tma_tile(128, 128, 2, 3);
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 3), "");
  struct planted {
    const char* name;
    defects d;
  };
  std::vector<planted> all;
  all.push_back({"staging without the swizzle", {}});
  all.back().d.tma_staging_no_swizzle = true;
  all.push_back({"stmatrix rows off by 8", {}});
  all.back().d.tma_stmatrix_rows_off_by_8 = true;
  all.push_back({"a store box not clipped to C", {}});
  all.back().d.tma_store_unclipped = true;
  all.push_back({"C's box loaded without the swizzle (beta 0.5)", {}});
  all.back().d.tma_c_load_no_swizzle = true;
  all.push_back({"C's box of the next chunk loaded (beta 0.5)", {}});
  all.back().d.tma_c_load_next_chunk = true;
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.5, 3), "");
  for (const planted& pl : all) {
    const bool reads_c = pl.d.tma_c_load_no_swizzle || pl.d.tma_c_load_next_chunk;
    const std::string r = run_and_compare(c, x, 1.0, reads_c ? 0.5 : 0.0, 3, pl.d);
    EXPECT_NE(r, "") << pl.name << " went unnoticed";
    std::printf("%s:\n  %.160s\n", pl.name, r.c_str());
  }
}

// ---- ping-pong: two consumers take the CTA's tiles in turn, whole ----------------------------

TEST(wgmma_emulation, pingpong_tiles_match_a_host_gemm) {
  // 128x128 and 64x256 with two consumers in turn, whole tiles: several tiles per CTA (each
  // consumer gets some, an odd count leaves consumer 0 one more), both epilogues where they apply,
  // every layout of bf16 and tf32 nt, two batches, beta reading C.
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::bf16, "tn"}, case_layout{dtype::f16, "nn"},
                         case_layout{dtype::tf32, "nt"}})
    for (const double beta : {0.0, 0.5}) {
      const prepared x = prepare(problem(264, 520, 136, 2, cl.t, cl.layout), 51);
      const int bk = cl.t == dtype::tf32 ? 32 : 64;
      for (const auto& [bm, bn] : {std::pair{128, 128}, std::pair{64, 256}})
        for (const bool tma : {false, true}) {
          tile_config c = wgmma_tile(bm, bn, bk, 2, 3);
          set_wgmma_pingpong(c, true);
          set_wgmma_tma_store(c, tma);
          gemm_problem with_beta = x.p;
          with_beta.beta = beta;
          if (check_constraints(c, with_beta, h100)) continue;
          EXPECT_EQ(run_and_compare(c, x, 0.5, beta, 3), "") << c.id() << " " << x.p.describe() << " beta " << beta;
          ++ran;
        }
    }
  EXPECT_EQ(ran, 4 * 2 * 2 + 3 * 2 * 2);  // the TMA store: 16-bit C (beta 0.5: C loaded by TMA)
}

TEST(wgmma_emulation, pingpong_with_the_cooperative_rows_is_caught) {
  // The host says ping-pong but the kernel were rendered without it: its consumers would split each
  // tile's rows and both store; the emulation, reading the rendered macros, shows the difference.
  const prepared x = prepare(problem(264, 520, 136, 1, dtype::bf16, "nt"), 52);
  tile_config c = wgmma_tile(128, 128, 64, 2, 3);
  set_wgmma_pingpong(c, true);
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 3), "");
  defects d;
  d.fragment_col_off_by_one = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 3, d), "") << "a wrong fragment map goes unnoticed with ping-pong";
}

// ---- 2x1 clusters: pairs of M tiles sharing B, each CTA multicasting half of it ---------------

TEST(wgmma_emulation, multicast_clusters_match_a_host_gemm) {
  // Every default tile shape as a 2x1 cluster, K-major and MN-major B: an odd count of M tiles
  // (the last pair's second tile lies past M), N ending inside a tile, two batches, both
  // epilogues, a grid with fewer clusters than pairs.
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::f16, "nn"}, case_layout{dtype::tf32, "nt"}}) {
    const prepared x = prepare(problem(328, 264, 136, 2, cl.t, cl.layout), 61);
    for (const tile_config& d : default_search_space(family_named("wgmma"), cl.t)) {
      if (d.raster_group != 8 || d.raster_along_n || d.stages != 3) continue;
      tile_config c = d;
      c.cluster_m = 2;
      for (const bool tma : {false, true}) {
        set_wgmma_tma_store(c, tma);
        if (check_constraints(c, x.p, h100)) continue;
        EXPECT_EQ(run_and_compare(c, x, 1.5, 0.0, 4), "") << c.id() << " " << x.p.describe();
        ++ran;
      }
    }
  }
  EXPECT_GE(ran, 6 + 6 + 4 + 6);  // bf16 nt both epilogues; f16 nn (BN 128 and 256) both; tf32 plain
}

TEST(wgmma_emulation, multicast_planted_defects_are_caught) {
  for (const char* layout : {"nt", "nn"}) {
    const prepared x = prepare(problem(328, 264, 136, 1, dtype::bf16, layout), 62);
    tile_config c = wgmma_tile(128, 256, 64, 2, 3);
    c.cluster_m = 2;
    ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 4), "") << layout;
    defects own;
    own.multicast_own_half_only = true;
    EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 4, own), "") << layout << ": the peer's half never landing";
    defects same;
    same.multicast_same_offset = true;
    EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 4, same), "") << layout << ": both halves in one place";
  }
}
