// fp8 (e4m3, e5m2) through the wgmma emulation (wgmma_emulation.hpp): one-byte operands in the
// TMA boxes and the descriptors of .k32 instructions, bf16 C, and the promotion of the partial
// set into the fp32 accumulators (kernels_templates/wgmma/wgmma_fp8.cuh) on every schedule the
// family runs fp8 with. A model of the tensor core's short running sum shows why promotion is
// there: at K 16384 without it the result misses the dtype's verification bound, with the
// kernel's intervals it does not.
#include "wgmma_emulation.hpp"

using namespace tiletune;
using namespace wgmma_emu;

namespace {
tile_config fp8_tile(int bm, int bn, int consumers, int stages, int interval) {
  tile_config c = wgmma_tile(bm, bn, 128, consumers, stages);
  set_wgmma_promotion(c, interval);
  return c;
}

// ||C - A B|| / ||A B|| over the emulated C (bf16) against the host's exact sums.
double relative_frobenius(const prepared& x, const emulation& e) {
  double err = 0, ref = 0;
  for (std::size_t i = 0; i < x.dot.size(); ++i) {
    const double got = load_element(e.c.data() + 2 * i, dtype::bf16);
    err += (got - x.dot[i]) * (got - x.dot[i]);
    ref += x.dot[i] * x.dot[i];
  }
  return std::sqrt(err / ref);
}
}  // namespace

TEST(wgmma_fp8_emulation, an_fp8_instruction_reads_32_bytes_of_k_from_k_major_operands) {
  for (dtype t : {dtype::e4m3, dtype::e5m2}) {
    const wgmma_instruction w = parse_instruction(t, 128, parse_layout("nt"));
    EXPECT_EQ(w.k, 32) << to_string(t);
    EXPECT_FALSE(w.a_mn_major || w.b_mn_major) << to_string(t) << ": fp8 wgmma has no transposes";
    EXPECT_NE(wgmma_instruction_source(t, 128, parse_layout("nt")).find(fmt::format(".f32.{0}.{0} ", to_string(t))),
              std::string::npos);
  }
}

TEST(wgmma_fp8_emulation, promotion_math_covers_every_k_tile_once) {
  // Over units of every length and start, each k-tile's sums reach acc exactly once: the partial
  // set starts from zero after each promotion and the unit's last k-tile always promotes.
  for (int interval : wgmma_promotion_intervals)
    for (int begin = 0; begin < 3; ++begin)
      for (int end = begin + 1; end < begin + 9; ++end) {
        int promoted = 0, pending = 0;
        for (int kt = begin; kt < end; ++kt) {
          if (tt_part_scale_d(kt, begin, interval, 0) == 0) {
            EXPECT_EQ(pending, 0) << "a reset drops k-tiles";
          }
          ++pending;
          EXPECT_EQ(tt_part_scale_d(kt, begin, interval, 32), 1);
          if (tt_promotes_after(kt, begin, end, interval)) {
            promoted += pending;
            pending = 0;
          }
        }
        EXPECT_EQ(promoted, end - begin) << "interval " << interval << " [" << begin << ", " << end << ")";
        EXPECT_EQ(pending, 0);
      }
}

TEST(wgmma_fp8_emulation, fp8_variants_match_a_host_gemm) {
  // e4m3 and e5m2, nt: one and two consumers, both intervals, the TMA-store epilogue, ping-pong,
  // stream-K and a 2x1 cluster; M, N and K ending inside tiles (TMA zero-fills, the epilogue
  // clips), two batches, beta reading C; C holds NaN where beta is 0 and must be written once.
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (dtype t : {dtype::e4m3, dtype::e5m2})
    for (const auto& [m, n, k, batch, beta] :
         {std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, double>{200, 136, 400, 2, 0.0},
          {72, 328, 1296, 1, -0.5}}) {
      const prepared x = prepare(problem(m, n, k, batch, t, "nt"), 61);
      std::vector<tile_config> tiles = {fp8_tile(64, 128, 1, 4, 1), fp8_tile(128, 128, 2, 3, 2),
                                        fp8_tile(128, 192, 2, 3, 1), fp8_tile(64, 192, 1, 5, 2)};
      tile_config tmas = fp8_tile(128, 128, 2, 3, 1);
      set_wgmma_tma_store(tmas, true);
      tile_config pp = fp8_tile(64, 128, 2, 4, 2);
      set_wgmma_pingpong(pp, true);
      tile_config cl = fp8_tile(64, 128, 1, 4, 1);
      cl.cluster_m = 2;
      for (const tile_config& c : {tmas, pp, cl}) tiles.push_back(c);
      for (const tile_config& c : tiles) {
        gemm_problem p = x.p;
        p.beta = beta;
        ASSERT_FALSE(check_constraints(c, p, h100)) << c.id() << ": " << check_constraints(c, p, h100)->message;
        EXPECT_EQ(run_and_compare(c, x, 0.75, beta, 5), "") << c.id() << " " << x.p.describe();
        ++ran;
        if (!wgmma_pingpong(c) && c.cluster_m == 1) {
          EXPECT_EQ(run_and_compare(c, x, 0.75, beta, 5, {}, 1), "") << c.id() << " stream-K " << x.p.describe();
          ++ran;
        }
      }
    }
  EXPECT_EQ(ran, 2 * 2 * (7 + 5));  // per dtype and beta (0 and -0.5: _tmas loads C by TMA): stream-K copies but _pp, _cl2x1
}

TEST(wgmma_fp8_emulation, decode_tiles_with_swap_ab_and_split_k_match_a_host_gemm) {
  // A decode step in fp8: the space's swap-AB and cluster split-K tiles.
  const device_spec& h100 = find_preset("h100-sxm");
  const gemm_problem decode = problem(16, 4096, 4096, 1, dtype::e4m3, "nt");
  const prepared x = prepare(problem(16, 200, 1280, 1, dtype::e4m3, "nt"), 62);
  int swapped = 0, split = 0;
  for (const tile_config& c : problem_search_space(family_named("wgmma"), decode, h100)) {
    if (check_constraints(c, decode, h100) || wgmma_stream_k(c)) continue;
    if (!wgmma_swap_ab(c) && c.split_k == 1) continue;
    EXPECT_EQ(wgmma_promotion(c), 1) << c.id();
    EXPECT_EQ(run_and_compare(c, x, 1.0, 0.0, 4), "") << c.id();
    swapped += wgmma_swap_ab(c);
    split += c.split_k > 1;
  }
  EXPECT_GE(swapped, 6);
  EXPECT_GE(split, 2);
}

namespace {
tile_config with_scales(tile_config c, scaling_mode s) {
  set_wgmma_scales(c, s);
  return c;
}
}  // namespace

TEST(wgmma_fp8_emulation, decode_swap_ab_tiles_take_rowwise_and_block_scales) {
  // fp8 decode with per-token and per-channel scales, or DeepSeek-V3's blocks (1 x 128 of the
  // tokens, 128 x 128 of the weights): the swap-AB tiles apply B's scales to the kernel's rows (C's
  // columns: the weights) and A's to its columns (C's rows: the tokens). N 200 puts the weights'
  // rows in two 128-row blocks, K 1280 makes ten k-blocks.
  const device_spec& h100 = find_preset("h100-sxm");
  for (scaling_mode s : {scaling_mode::rowwise, scaling_mode::block}) {
    const gemm_problem decode = scaled(problem(16, 4096, 4096, 1, dtype::e4m3, "nt"), s);
    const prepared x = prepare(scaled(problem(16, 200, 1280, 1, dtype::e4m3, "nt"), s), 65);
    int swapped = 0;
    std::optional<tile_config> first;
    for (const tile_config& c : problem_search_space(family_named("wgmma"), decode, h100)) {
      if (!wgmma_swap_ab(c) || check_constraints(c, decode, h100) || wgmma_stream_k(c)) continue;
      EXPECT_EQ(wgmma_scales(c), s) << c.id();
      EXPECT_EQ(run_and_compare(c, x, 1.0, 0.0, 4), "") << c.id() << " " << to_string(s);
      if (!first) first = c;
      ++swapped;
    }
    EXPECT_GE(swapped, 6) << to_string(s);
    ASSERT_TRUE(first);
    defects unswapped;
    unswapped.swap_scales_unswapped = true;
    EXPECT_NE(run_and_compare(*first, x, 1.0, 0.0, 4, unswapped), "") << "A's scales on the kernel's rows";
    defects next_block;
    next_block.scale_k_block_off_by_one = true;
    if (s == scaling_mode::block) {
      EXPECT_NE(run_and_compare(*first, x, 1.0, 0.0, 4, next_block), "") << "the next k-block's scales";
    }
  }
}

TEST(wgmma_fp8_emulation, promotion_defects_are_caught) {
  // Three k-tiles with an interval of two: the unit ends inside an interval.
  const prepared x = prepare(problem(136, 136, 384, 1, dtype::e4m3, "nt"), 63);
  const tile_config c = fp8_tile(128, 128, 2, 3, 2);
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 3), "");
  defects end;
  end.promote_only_on_interval = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 3, end), "") << "the unit's last k-tile left in the partial set";
  defects reset;
  reset.part_never_reset = true;
  EXPECT_NE(run_and_compare(fp8_tile(128, 128, 2, 3, 1), x, 1.0, 0.0, 3, reset), "")
      << "a partial set added again at every promotion";
  // With fp32 running sums, promoting only at the end is still right: what it costs is the
  // short accumulator's, below.
  defects none;
  none.no_promotion = true;
  EXPECT_EQ(run_and_compare(c, x, 1.0, 0.0, 3, none), "");
}

TEST(wgmma_fp8_emulation, without_promotion_a_short_accumulator_misses_the_bound_at_k_16384) {
  // The running sum kept to 13 mantissa bits (14 significant, the figure DeepSeek-V3 reports for
  // H800's fp8 accumulation), truncated after each QGMMA; the inputs are fp8 values, so the host's
  // sums are exact. Verification's bound is the dtype row's (relative Frobenius, as on a GPU).
  const double bound = row_of(dtype::e4m3).error_bound;
  const prepared x = prepare(problem(64, 128, 16384, 1, dtype::e4m3, "nt"), 64);
  gemm_problem p = x.p;
  defects short_sum;
  short_sum.accumulator_mantissa_bits = 13;
  std::vector<double> promoted;
  for (int interval : wgmma_promotion_intervals) {
    const emulation e = emulate_kernel(fp8_tile(64, 128, 1, 4, interval), p, x.a, x.b, x.c_nan, 1, short_sum);
    ASSERT_TRUE(e.errors.empty()) << e.errors.front();
    promoted.push_back(relative_frobenius(x, e));
    EXPECT_LT(promoted.back(), bound / 4) << "promoted every " << interval << " k-tiles";
  }
  defects fast = short_sum;
  fast.no_promotion = true;
  const emulation e = emulate_kernel(fp8_tile(64, 128, 1, 4, 1), p, x.a, x.b, x.c_nan, 1, fast);
  ASSERT_TRUE(e.errors.empty()) << e.errors.front();
  const double unpromoted = relative_frobenius(x, e);
  EXPECT_GT(unpromoted, bound) << "no promotion";
  std::printf("fp8 K 16384, 13-bit running sums: relative error %.2g promoted every %d k-tile(s), %.2g every %d, "
              "%.2g never (bound %.0e)\n",
              promoted[0], wgmma_promotion_intervals[0], promoted[1], wgmma_promotion_intervals[1], unpromoted, bound);
}


TEST(wgmma_fp8_emulation, rowwise_and_block_scales_match_a_host_gemm) {
  // The scaled product against the host's (scales from their definition): N 400 puts BN 192's second
  // tile across two 128-column blocks of B and its third past N's last block; K 400 ends inside a
  // k-block; plain tiles, stream-K, a split-K cluster, ping-pong, the TMA store and a 2x1 cluster.
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (scaling_mode s : {scaling_mode::rowwise, scaling_mode::block})
    for (dtype t : {dtype::e4m3, dtype::e5m2}) {
      const prepared x = prepare(scaled(problem(200, 400, 400, 2, t, "nt"), s), 71);
      std::vector<tile_config> tiles = {fp8_tile(64, 128, 1, 4, 1), fp8_tile(128, 192, 2, 3, 1),
                                        fp8_tile(64, 192, 1, 4, 1)};
      if (s == scaling_mode::rowwise) tiles.push_back(fp8_tile(128, 128, 2, 3, 2));
      tile_config tmas = fp8_tile(128, 128, 2, 3, 1), pp = fp8_tile(64, 192, 2, 4, 1), cl = fp8_tile(64, 128, 1, 4, 1),
                  split = fp8_tile(64, 128, 1, 4, 1);
      set_wgmma_tma_store(tmas, true);
      set_wgmma_pingpong(pp, true);
      cl.cluster_m = 2;
      split.split_k = 2;
      for (const tile_config& c : {tmas, pp, cl, split}) tiles.push_back(c);
      for (const tile_config& plain : tiles)
        for (bool copied : {false, true}) {  // block scales: loaded, or A's copied into the stages by TMA (_ts)
          if (copied && (s != scaling_mode::block || t != dtype::e4m3)) continue;  // (the copy is the format's alike)
          tile_config c = with_scales(plain, s);
          set_wgmma_tma_scales(c, copied);
          ASSERT_EQ(check_constraints(c, x.p, h100), std::nullopt) << c.id();
          EXPECT_EQ(run_and_compare(c, x, 0.5, 0.0, 5), "") << c.id() << " " << x.p.describe() << " " << to_string(s);
          ++ran;
          if (!wgmma_pingpong(c) && c.cluster_m == 1 && c.split_k == 1) {
            EXPECT_EQ(run_and_compare(c, x, 0.5, 0.0, 5, {}, 1), "") << c.id() << " stream-K " << to_string(s);
            ++ran;
          }
        }
    }
  EXPECT_EQ(ran, 2 * ((8 + 5) + (7 + 4)) + (7 + 4));
}

TEST(wgmma_fp8_emulation, scale_defects_are_caught) {
  const prepared block = prepare(scaled(problem(136, 400, 528, 1, dtype::e4m3, "nt"), scaling_mode::block), 72);
  const tile_config c = with_scales(fp8_tile(64, 192, 1, 4, 1), scaling_mode::block);
  ASSERT_EQ(run_and_compare(c, block, 1.0, 0.0, 3), "");
  struct planted {
    const char* name;
    defects d;
  };
  std::vector<planted> all(3);
  all[0] = {"the next k-block's scales", {}};
  all[0].d.scale_k_block_off_by_one = true;
  all[1] = {"a straddling tile's second B block scaled as its first", {}};
  all[1].d.scale_b_first_block_only = true;
  all[2] = {"the scale applied after the add", {}};
  all[2].d.scale_after_add = true;
  for (const planted& p : all) {
    const std::string why = run_and_compare(c, block, 1.0, 0.0, 3, p.d);
    EXPECT_NE(why, "") << p.name;
    std::printf("%s:\n  %s\n", p.name, why.c_str());
  }
  // A's scales copied into the stages by TMA (_ts): M 136 leaves the last 64-row tile 8 rows.
  tile_config ts = c;
  set_wgmma_tma_scales(ts, true);
  ASSERT_EQ(run_and_compare(ts, block, 1.0, 0.0, 3), "");
  std::vector<planted> copies(4);
  copies[0] = {"the next k-block's scales copied", {}};
  copies[0].d.scale_k_block_off_by_one = true;
  copies[1] = {"expect_tx without the scales' bytes", {}};
  copies[1].d.scale_copy_unannounced = true;
  copies[2] = {"the whole tile's rows copied, past M", {}};
  copies[2].d.scale_copy_whole_tile = true;
  copies[3] = {"the next stage's scales read", {}};
  copies[3].d.scale_copy_next_stage = true;
  for (const planted& p : copies) {
    const std::string why = run_and_compare(ts, block, 1.0, 0.0, 3, p.d);
    EXPECT_NE(why, "") << p.name;
    std::printf("%s (_ts):\n  %s\n", p.name, why.c_str());
  }
  const prepared rowwise = prepare(scaled(problem(136, 400, 528, 1, dtype::e4m3, "nt"), scaling_mode::rowwise), 73);
  const tile_config r = with_scales(fp8_tile(64, 192, 1, 4, 2), scaling_mode::rowwise);
  ASSERT_EQ(run_and_compare(r, rowwise, 1.0, 0.0, 3), "");
  defects no_b;
  no_b.rowwise_without_b = true;
  EXPECT_NE(run_and_compare(r, rowwise, 1.0, 0.0, 3, no_b), "") << "rowwise without B's scales";
}

TEST(wgmma_fp8_emulation, the_space_of_a_scaled_problem_applies_its_scales) {
  const device_spec& h100 = find_preset("h100-sxm");
  for (scaling_mode s : {scaling_mode::tensor, scaling_mode::rowwise, scaling_mode::block}) {
    const gemm_problem p = scaled(problem(4096, 7168, 4096, 1, dtype::e4m3, "nt"), s);
    int runnable = 0;
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, h100)) {
      EXPECT_EQ(wgmma_scales(c), s == scaling_mode::tensor ? scaling_mode::none : s) << c.id();
      if (check_constraints(c, p, h100)) continue;
      ++runnable;
      if (s == scaling_mode::block) {
        EXPECT_EQ(wgmma_promotion(c), 1) << c.id();
      }
      // Block scales of plain unswapped tiles come by TMA (_ts) where the scales' stages fit the GPU's
      // shared memory beside the tile's; other tiles load theirs.
      tile_config ts = c;
      set_wgmma_tma_scales(ts, true);
      const bool ts_fits = wgmma_smem_bytes(ts, p.type) <= h100.smem_per_block_optin_bytes;
      EXPECT_EQ(wgmma_tma_scales(c), s == scaling_mode::block && !wgmma_swap_ab(c) && ts_fits) << c.id();
    }
    EXPECT_GE(runnable, 30) << to_string(s);
  }
  // Scales by TMA: A's rows of every k-block whole 16-byte units (M a multiple of 4), plain tiles;
  // the stages' scales enlarge the shared memory by bm floats each.
  for (std::int64_t m : {4094, 4098, 4095}) {
    const gemm_problem odd = scaled(problem(m, 7168, 4096, 1, dtype::e4m3, "nt"), scaling_mode::block);
    int loading = 0;
    for (const tile_config& c : problem_search_space(family_named("wgmma"), odd, h100)) {
      EXPECT_FALSE(wgmma_tma_scales(c)) << c.id() << " M " << m;
      loading += !check_constraints(c, odd, h100);
      tile_config ts = c;
      set_wgmma_tma_scales(ts, true);
      const auto why = check_constraints(ts, odd, h100);
      ASSERT_TRUE(why.has_value()) << ts.id() << " M " << m;
      EXPECT_EQ(why->constraint, "tma_scales") << ts.id() << ": " << why->message;
    }
    EXPECT_GE(loading, 30) << "M " << m;
  }
  {
    const gemm_problem p = scaled(problem(4096, 7168, 4096, 1, dtype::e4m3, "nt"), scaling_mode::block);
    tile_config c = with_scales(fp8_tile(128, 128, 2, 4, 1), scaling_mode::block);
    const std::int64_t loads = wgmma_smem_bytes(c, p.type);
    set_wgmma_tma_scales(c, true);
    EXPECT_EQ(check_constraints(c, p, h100), std::nullopt) << c.id();
    EXPECT_GE(wgmma_smem_bytes(c, p.type), loads + 4 * 128 * 4);
    EXPECT_NE(c.id().find("_blk_ts"), std::string::npos) << c.id();
    set_wgmma_swap_ab(c, true);
    ASSERT_TRUE(check_constraints(c, p, h100).has_value());
  }
  // A tile the GPU holds is never lost to its _ts copy the GPU does not: 64x128x128 in 5 stages fits the
  // H100 (it is the best of 124x1024x1024), its _ts copy not (232,800 bytes of 232,448).
  {
    const gemm_problem p = scaled(problem(124, 1024, 1024, 1, dtype::e4m3, "nt"), scaling_mode::block);
    int plain_kept = 0;
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, h100)) {
      if (wgmma_swap_ab(c) || check_constraints(c, p, h100)) continue;
      tile_config ts = c;
      set_wgmma_tma_scales(ts, true);
      if (!wgmma_tma_scales(c)) {
        ++plain_kept;
        EXPECT_GT(wgmma_smem_bytes(ts, p.type), h100.smem_per_block_optin_bytes) << c.id();
      }
    }
    EXPECT_GT(plain_kept, 0);
  }
  // A tile's scales must be the problem's.
  const gemm_problem block = scaled(problem(256, 256, 256, 1, dtype::e4m3, "nt"), scaling_mode::block);
  const auto v = check_constraints(fp8_tile(64, 128, 1, 4, 1), block, h100);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->constraint, "scaling");
}

TEST(wgmma_fp8_emulation, f16_and_f32_c_match_a_host_gemm) {
  // --out-dtype: the same kernels writing f16 or f32 C (the TMA store only 16-bit), beta reading it.
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (element_type out : {element_type::f16, element_type::f32}) {
    gemm_problem p = problem(200, 136, 400, 2, dtype::e4m3, "nt");
    p.out = out;
    const prepared x = prepare(p, 81);
    tile_config tmas = fp8_tile(128, 128, 2, 3, 1);
    set_wgmma_tma_store(tmas, true);
    for (tile_config c : {fp8_tile(64, 128, 1, 4, 1), fp8_tile(128, 192, 2, 3, 2), tmas}) {
      set_wgmma_out(c, p.out);
      if (check_constraints(c, p, h100)) {
        EXPECT_TRUE(wgmma_tma_store(c) && out == element_type::f32) << c.id();
        continue;
      }
      EXPECT_EQ(run_and_compare(c, x, 0.75, 0.0, 5), "") << c.id();
      EXPECT_EQ(run_and_compare(c, x, 0.75, 0.0, 5, {}, 1), "") << c.id() << " stream-K";
      if (!wgmma_tma_store(c)) {
        EXPECT_EQ(run_and_compare(c, x, 0.75, -0.5, 5), "") << c.id() << " beta";
      }
      ran += 2 + !wgmma_tma_store(c);
    }
  }
  EXPECT_EQ(ran, 8 + 6);
  // A tile must write the problem's C.
  gemm_problem p = problem(256, 256, 256, 1, dtype::e4m3, "nt");
  p.out = element_type::f32;
  const auto v = check_constraints(fp8_tile(64, 128, 1, 4, 1), p, h100);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->constraint, "out_dtype");
}

// Mixed fp8 (e4m3_e5m2: A e4m3, B e5m2; e5m2_e4m3 the other way round), an fp8 training step's
// backward: the instruction names each operand's format (.e4m3.e5m2), swapped with swap-AB (the
// kernel's A is the problem's B), and the emulation decodes each operand as the rendered
// instruction says. Plain, stream-K, fast-accumulating and swap-AB decode tiles match a host GEMM;
// an instruction left unswapped under swap-AB, or naming one format for both, is caught.
TEST(wgmma_fp8_emulation, mixed_formats_decode_each_operand_in_its_own) {
  EXPECT_NE(wgmma_instruction_source(dtype::e4m3_e5m2, 128, parse_layout("nt")).find(".f32.e4m3.e5m2 "),
            std::string::npos);
  EXPECT_NE(wgmma_instruction_source(dtype::e4m3_e5m2, 16, parse_layout("nt"), true).find(".f32.e5m2.e4m3 "),
            std::string::npos);
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (dtype t : {dtype::e4m3_e5m2, dtype::e5m2_e4m3}) {
    const prepared x = prepare(problem(200, 136, 528, 2, t, "nt"), 66);
    tile_config fast = wgmma_tile(128, 256, 128, 2, 3);
    set_wgmma_fast_accumulation(fast, true);
    for (const tile_config& c : {fp8_tile(64, 128, 1, 4, 1), fp8_tile(128, 128, 2, 3, 2), fast}) {
      ASSERT_FALSE(check_constraints(c, x.p, h100)) << c.id() << ": " << check_constraints(c, x.p, h100)->message;
      EXPECT_EQ(run_and_compare(c, x, 0.5, -0.5, 5), "") << c.id() << " " << to_string(t);
      ++ran;
    }
    EXPECT_EQ(run_and_compare(fp8_tile(64, 128, 1, 4, 1), x, 0.5, 0.0, 5, {}, 1), "") << "stream-K " << to_string(t);
    const prepared decode = prepare(problem(16, 200, 1280, 1, t, "nt"), 67);
    tile_config swab = fp8_tile(16, 128, 1, 4, 1);
    set_wgmma_swap_ab(swab, true);
    ASSERT_FALSE(check_constraints(swab, decode.p, h100)) << check_constraints(swab, decode.p, h100)->message;
    EXPECT_EQ(run_and_compare(swab, decode, 1.0, 0.0, 4), "") << swab.id() << " " << to_string(t);
    defects unswapped;
    unswapped.mixed_types_unswapped = true;
    EXPECT_NE(run_and_compare(swab, decode, 1.0, 0.0, 4, unswapped), "") << "swap-AB's types unswapped";
    defects one;
    one.mixed_as_one_format = true;
    EXPECT_NE(run_and_compare(fp8_tile(64, 128, 1, 4, 1), x, 0.5, 0.0, 5, one), "") << "B decoded as A's format";
    ran += 2;
  }
  EXPECT_EQ(ran, 2 * 5);
}
