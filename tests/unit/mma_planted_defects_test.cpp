// Planted defects in the mma family's emulated data path (mma_emulation.hpp): each a test-local
// change of one map or step, on cases the clean emulation passes; the comparison must fail.
#include "mma_emulation.hpp"

using namespace tiletune;
using namespace mma_emu;

// Each planted defect makes the comparison fail (wrong C, or a hazard of the
// data path such as a read of a copy still in flight) on every case chosen
// for it, while the same cases pass without it.
TEST(mma_datapath, planted_defects_make_the_comparison_fail) {
  struct planted {
    std::string what;
    defects d;
    tile_config c;
    dtype t;
    const char* layout;
    int recipe;
    bool rowwise = false;  // fp8 with rowwise scales (the variant _rw)
  };
  const tile_config v128 = mma_tile(128, 128, 32, 2, 2, 3), v64 = mma_tile(64, 128, 32, 2, 4, 4);
  const tile_config t128 = mma_tile(128, 64, 16, 2, 2, 3);
  const tile_config k4 = split_variant(64, 64, 32, 2, 2, 3, 4), k8 = split_variant(64, 128, 32, 2, 4, 3, 8);
  std::vector<planted> cases;
  auto add = [&](std::string what, auto set, std::vector<std::tuple<tile_config, dtype, const char*, int>> where) {
    defects d;
    set(d);
    for (const auto& [c, t, l, w] : where) cases.push_back({what, d, c, t, l, w});
  };
  add("a wrong swizzle mask on A's fragment reads", [](defects& d) { d.read_mask_xor1 = true; },
      {{v128, dtype::bf16, "nt", 0}, {v64, dtype::f16, "tn", 1}, {t128, dtype::tf32, "nn", 0}, {t128, dtype::tf32, "tt", 2}});
  add("ldmatrix without .trans where the layout needs it", [](defects& d) { d.ldmatrix_without_trans = true; },
      {{v128, dtype::f16, "nn", 0}, {v64, dtype::bf16, "tn", 1}, {v128, dtype::bf16, "tt", 2}});
  add("the ldmatrix lane-to-row map off by one", [](defects& d) { d.ldmatrix_row_lane_plus1 = true; },
      {{v128, dtype::bf16, "nt", 0}, {v64, dtype::f16, "tt", 2}});
  add("the accumulator fragment's group off by one", [](defects& d) { d.acc_group_plus1 = true; },
      {{v128, dtype::bf16, "nt", 0}, {t128, dtype::tf32, "tn", 1}, {k4, dtype::f16, "nt", 0}});
  add("cp.async without the zero-fill at the edges", [](defects& d) { d.no_zero_fill = true; },
      {{v128, dtype::bf16, "nt", 1}, {t128, dtype::tf32, "nn", 1}, {v64, dtype::f16, "tt", 0}});
  add("the thread-to-chunk map of the copies", [](defects& d) { d.copy_stride_half = true; },
      {{v128, dtype::bf16, "nt", 0}, {v64, dtype::bf16, "tn", 2}});
  add("cp.async.wait_group one group short", [](defects& d) { d.wait_one_group_short = true; },
      {{v128, dtype::bf16, "nt", 0}, {t128, dtype::tf32, "tn", 0}});
  add("no barrier after the wait", [](defects& d) { d.no_barrier_after_wait = true; },
      {{v128, dtype::bf16, "nt", 0}, {v64, dtype::f16, "nn", 1}});
  add("split-K reducing slice 0 twice", [](defects& d) { d.split_slice0_twice = true; },
      {{k4, dtype::bf16, "nt", 0}, {k8, dtype::tf32, "tn", 0}, {k4, dtype::f16, "tt", 1}});
  add("split-K skipping the short last slice", [](defects& d) { d.split_skip_last_slice = true; },
      {{k4, dtype::bf16, "nt", 0}, {k8, dtype::f16, "nn", 0}});
  add("split-K slices that drop the remainder of the k-tiles", [](defects& d) { d.split_floor_per_slice = true; },
      {{k4, dtype::bf16, "nt", 0}, {k8, dtype::tf32, "nt", 0}});
  add("the next k-tile's first fragments loaded before its wait and barrier",
      [](defects& d) { d.fragments_before_barrier = true; },
      {{v128, dtype::bf16, "nt", 0}, {v64, dtype::f16, "tn", 1}, {t128, dtype::tf32, "nn", 0}});
  add("the prologue leaving the write stage on the read stage", [](defects& d) { d.refill_the_read_stage = true; },
      {{v128, dtype::bf16, "nt", 0}, {t128, dtype::tf32, "tt", 1}});
  add("blocks inside M and N copying a short k-tile without bounds", [](defects& d) { d.inside_ignores_k = true; },
      {{v128, dtype::bf16, "nt", 4}, {v64, dtype::f16, "nn", 4}, {t128, dtype::tf32, "tn", 4}});
  add("every fragment load taking lane offset 0", [](defects& d) { d.lane_offset_index_zero = true; },
      {{v128, dtype::bf16, "nt", 0}, {v64, dtype::f16, "tn", 0}, {v128, dtype::f16, "tt", 1}, {t128, dtype::tf32, "tn", 0}});
  add("tf32 tiles along k read by ldmatrix as if their columns were 16-bit", [](defects& d) { d.tf32_ldsm_own_columns = true; },
      {{t128, dtype::tf32, "nt", 0}, {t128, dtype::tf32, "nn", 1}, {t128, dtype::tf32, "tt", 4}});
  add("tf32 operands left unrounded (the cores truncate them)", [](defects& d) { d.tf32_unrounded = true; },
      {{t128, dtype::tf32, "nt", 0}, {t128, dtype::tf32, "tn", 1}, {k8, dtype::tf32, "nn", 4}, {t128, dtype::tf32, "tt", 2}});
  add("tf32's landed stage rounded before its wait", [](defects& d) { d.tf32_round_before_wait = true; },
      {{t128, dtype::tf32, "tn", 0}, {k8, dtype::tf32, "nt", 0}});
  add("tf32's read stage rounded instead of the landed one", [](defects& d) { d.tf32_round_read_stage = true; },
      {{t128, dtype::tf32, "tt", 0}, {k8, dtype::tf32, "nn", 4}});
  add("tf32 A's paired rows written back unpermuted", [](defects& d) { d.tf32_pairs_kept = true; },
      {{t128, dtype::tf32, "tt", 0}, {k8, dtype::tf32, "tn", 1}, {t128, dtype::tf32, "tn", 2}});
  add("tf32 A's rows unpaired on the element-wise path", [](defects& d) { d.tf32_elements_unpaired = true; },
      {{t128, dtype::tf32, "tt", 2}, {k8, dtype::tf32, "tn", 3}});
  const tile_config f128 = mma_tile(128, 128, 64, 2, 2, 3), f64 = mma_tile(64, 64, 128, 2, 2, 3);
  const tile_config fk4 = split_variant(64, 64, 64, 2, 2, 3, 4);
  add("fp8 tiles read by ldmatrix as if their byte columns were 16-bit", [](defects& d) { d.tf32_ldsm_own_columns = true; },
      {{f128, dtype::e4m3, "nt", 0}, {f64, dtype::e5m2, "nt", 1}, {fk4, dtype::e4m3_e5m2, "nt", 0}});
  add("fp8's k taken in elements by the element-wise path's ldmatrix", [](defects& d) { d.fp8_k_in_elements = true; },
      {{f128, dtype::e4m3, "nt", 2}, {f64, dtype::e5m2_e4m3, "nt", 3}});
  add("mixed fp8 with B read in A's format", [](defects& d) { d.fp8_b_in_a_format = true; },
      {{f128, dtype::e4m3_e5m2, "nt", 0}, {f64, dtype::e5m2_e4m3, "nt", 1}});
  add("a wrong swizzle mask on fp8 A's fragment reads", [](defects& d) { d.read_mask_xor1 = true; },
      {{f128, dtype::e4m3, "nt", 0}, {f64, dtype::e5m2, "nt", 4}});
  add("fp8 copies without the zero-fill at the edges", [](defects& d) { d.no_zero_fill = true; },
      {{f128, dtype::e4m3, "nt", 1}});
  auto kc = [](tile_config c) {
    set_mma_k_major_copies(c, true);
    return c;
  };
  add("K-major copies whose rows lie cols apart, not K", [](defects& d) { d.kc_rows_of_cols = true; },
      {{kc(f128), dtype::e4m3, "nn", 0}, {kc(f64), dtype::e5m2, "tn", 2}});
  add("a pre-pass that moves a partial tile whole", [](defects& d) { d.kc_unguarded = true; },
      {{kc(f128), dtype::e4m3, "tt", 2}});
  add("the GEMM launched without its pre-pass", [](defects& d) { d.kc_skipped = true; },
      {{kc(f128), dtype::e4m3, "nn", 0}, {kc(fk4), dtype::e5m2_e4m3, "tt", 0}});
  add("the GEMM reading the operands as stored, not the copies", [](defects& d) { d.kc_reads_operand = true; },
      {{kc(f64), dtype::e4m3, "tn", 3}, {kc(f128), dtype::e4m3_e5m2, "nn", 4}});
  auto rw = [](tile_config c) {
    set_mma_rowwise_scales(c, true);
    return c;
  };
  using places = std::vector<std::tuple<tile_config, dtype, const char*, int>>;
  auto add_rowwise = [&](std::string what, auto set, places where) {
    defects d;
    set(d);
    for (const auto& [c, t, l, w] : where) cases.push_back({what, d, rw(c), t, l, w, true});
  };
  add_rowwise("rowwise scales: B's taken at the row, not the column", [](defects& d) { d.rw_b_by_row = true; },
              {{f128, dtype::e4m3, "nt", 0}, {kc(f64), dtype::e5m2_e4m3, "tn", 2}});
  add_rowwise("rowwise scales: split-K's sum written unscaled", [](defects& d) { d.rw_split_unscaled = true; },
              {{fk4, dtype::e4m3, "nt", 0}, {kc(fk4), dtype::e4m3, "nn", 1}});
  add_rowwise("rowwise scales read past the matrix's rows and columns", [](defects& d) { d.rw_unclamped = true; },
              {{f128, dtype::e4m3, "nt", 1}, {f64, dtype::e4m3_e5m2, "nt", 2}});
  for (const planted& p : cases) {
    const layout l = parse_layout(p.layout);
    gemm_case g = recipe(p.recipe, macros_for(p.c, p.t, l));
    g.rowwise = p.rowwise;
    const report clean = run_case(p.c, p.t, l, g);
    ASSERT_TRUE(clean.ok()) << name(p.c, p.t, l, g) << ": " << clean.describe();
    const report bad = run_case(p.c, p.t, l, g, p.d);
    EXPECT_FALSE(bad.ok()) << p.what << " passed on " << name(p.c, p.t, l, g);
    std::printf("planted: %-55s %-55s fails: %lld/%lld elements wrong, %lld hazards\n", p.what.c_str(),
                name(p.c, p.t, l, g).c_str(), bad.mismatches, bad.checked, bad.hazards);
  }
}
