// The mma family's data path on the host (mma_emulation.hpp): the number formats and lane maps
// against the PTX ISA, then every default 16-bit and tf32 variant of h100-sxm and a100-sxm-80gb
// (with the split-K and grouped-raster copies the search adds), layouts nn, nt, tn, tt, against a
// host GEMM on small shapes with partial tiles, batch 2, alpha and beta.
#include "mma_emulation.hpp"

using namespace tiletune;
using namespace mma_emu;

TEST(mma_datapath, number_formats_round_like_the_cvt_instructions) {
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(-2.5f), 0xc100);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);                      // rounds up to infinity
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie to even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(float_to_tf32(1.0f + std::ldexp(1.0f, -11)), float_bits(1.0f + std::ldexp(1.0f, -10)));  // tie away from zero
  EXPECT_EQ(float_to_tf32(-(1.0f + std::ldexp(1.0f, -11))), float_bits(-(1.0f + std::ldexp(1.0f, -10))));
  for (u32 h = 0; h < 0x7c00; ++h) ASSERT_EQ(float_to_f16(f16_to_float(static_cast<u16>(h))), h);
  for (u32 b = 0; b < 0x7f80; b += 7) ASSERT_EQ(float_to_bf16(bf16_to_float(static_cast<u16>(b))), b);
}

// One warp's ldmatrix through the kernel's lane maps, for each layout, lands
// every element of a 16x16 A piece and a 16x16 B piece (two n8 tiles) in the
// register and lane the PTX fragment layout of mma.m16n8k16 names.
TEST(mma_datapath, ldmatrix_through_the_kernels_lane_maps_yields_the_ptx_fragments) {
  for (const char* ln : layouts) {
    const layout l = parse_layout(ln);
    const tile_config c = mma_tile(64, 64, 32, 2, 2, 2);
    kernel_macros k = macros_for(c, dtype::f16, l);
    report r;
    shared_memory smem(k.smem_bytes(), r);
    // Element (i, j) of op(A) holds 1000 + 64 i + j, of op(B) 5000 + 64 i + j (as raw 16-bit codes).
    auto a_code = [](int m, int kk) { return static_cast<u16>(1000 + 64 * m + kk); };
    auto b_code = [](int kk, int n) { return static_cast<u16>(5000 + 64 * kk + n); };
    for (int row = 0; row < k.a_rows(); ++row)
      for (int col = 0; col < k.a_cols(); ++col) {
        const u16 v = k.a_t ? a_code(col, row) : a_code(row, col);
        smem.store(0, tt_swizzled_offset(row, col, k.a_cols(), 2, k.a_kc()) * 2, &v, 2, "fill");
      }
    const int bs = k.b_at();  // stage 0's B tile
    for (int row = 0; row < k.b_rows(); ++row)
      for (int col = 0; col < k.b_cols(); ++col) {
        const u16 v = k.b_t ? b_code(col, row) : b_code(row, col);
        smem.store(0, bs + tt_swizzled_offset(row, col, k.b_cols(), 2, k.b_kc()) * 2, &v, 2, "fill");
      }
    smem.barrier();
    for (int m = 0; m < 32; m += 16)
      for (int kb = 0; kb < 32; kb += 16) {
        std::array<int, 32> addr{};
        for (int lane = 0; lane < 32; ++lane) {
          const int q = tt_ldsm_matrix(lane), rr = tt_ldsm_row(lane);
          const int mask = tt_swizzle_mask(rr, k.a_cols() / 8, 2, k.a_kc());
          addr[static_cast<std::size_t>(lane)] =
              tt_ldsm_offset(tt_ldsm_a_row(k.a_t, m, kb, q, rr), tt_ldsm_a_chunk(k.a_t, m, kb, q, mask), k.a_cols());
        }
        regs4 a{};
        ldmatrix_x4(smem, 0, addr, tt_ldsm_a_trans(k.a_t), a);
        for (int lane = 0; lane < 32; ++lane)
          for (int i = 0; i < 8; ++i) {  // a_i: PTX ISA, m16n8k16 A fragment
            const int row = lane / 4 + ((i / 2) % 2) * 8, col = 2 * (lane % 4) + (i % 2) + (i >= 4 ? 8 : 0);
            const u32 reg = a[static_cast<std::size_t>(lane)][static_cast<std::size_t>(i / 2)];
            EXPECT_EQ((i % 2) ? reg >> 16 : reg & 0xffffu, a_code(m + row, kb + col)) << ln << " lane " << lane << " a" << i;
          }
        for (int lane = 0; lane < 32; ++lane) {
          const int q = tt_ldsm_matrix(lane), rr = tt_ldsm_row(lane);
          const int mask = tt_swizzle_mask(rr, k.b_cols() / 8, 2, k.b_kc());
          addr[static_cast<std::size_t>(lane)] =
              bs + tt_ldsm_offset(tt_ldsm_b_row(k.b_t, m, kb, q, rr), tt_ldsm_b_chunk(k.b_t, m, kb, q, mask), k.b_cols());
        }
        regs4 t{};
        ldmatrix_x4(smem, 0, addr, tt_ldsm_b_trans(k.b_t), t);
        for (int lane = 0; lane < 32; ++lane)
          for (int x = 0; x < 4; ++x)
            for (int e = 0; e < 2; ++e) {  // b_i, i = 2 reg + e, of n8 tile ni (PTX ISA, m16n8k16 B fragment)
              const int ni = tt_ldsm_b_tile(x), reg = tt_ldsm_b_reg(x), i = 2 * reg + e;
              const int kk = 2 * (lane % 4) + (i % 2) + (i >= 2 ? 8 : 0), n = m + ni * 8 + lane / 4;
              const u32 v = t[static_cast<std::size_t>(lane)][static_cast<std::size_t>(x)];
              EXPECT_EQ(e ? v >> 16 : v & 0xffffu, b_code(kb + kk, n)) << ln << " lane " << lane << " matrix " << x;
            }
      }
    EXPECT_EQ(r.hazards, 0) << r.describe();
  }
}

// Every variant, every dtype and layout, on the recipes: C matches the host GEMM.
TEST(mma_datapath, every_variant_matches_a_host_gemm_on_edge_shapes) {
  const auto start = std::chrono::steady_clock::now();
  int cases = 0, variant_count = 0, split_cases = 0, raster_cases = 0;
  long long elements = 0;
  report::paths ran;
  std::set<std::string> shapes;
  for (std::size_t ti = 0; ti < dtypes.size(); ++ti)
    for (std::size_t li = 0; li < layouts.size(); ++li) {
      const dtype t = dtypes[ti];
      const layout l = parse_layout(layouts[li]);
      const auto variants = variants_under_test(t, l);
      EXPECT_GT(variants.size(), 30u) << to_string(t) << " " << l.name();
      variant_count += static_cast<int>(variants.size());
      for (std::size_t vi = 0; vi < variants.size(); ++vi) {
        const tile_config& c = variants[vi];
        const kernel_macros k = macros_for(c, t, l);
        shapes.insert(fmt::format("{}x{}x{} w{}x{} s{} {}", c.block_m, c.block_n, c.block_k, mma_warps_m(c), mma_warps_n(c), c.stages,
                                  to_string(t)));
        // Each variant: the tiny case, and one of the others in rotation over
        // the dtypes and layouts (so every variant meets every recipe).
        std::vector<int> which;
        if (c.split_k > 1) {
          which = {static_cast<int>(vi + li + ti)};
          ++split_cases;
        } else {
          which = {3, static_cast<int>((vi + li + ti) % 3)};
          raster_cases += c.raster_group > 0;
        }
        for (int w : which) {
          const gemm_case g = recipe(w, k);
          const report r = run_case(c, t, l, g, {}, static_cast<std::uint32_t>(cases + 1));
          EXPECT_TRUE(r.ok()) << name(c, t, l, g) << ": " << r.describe();
          ++cases;
          elements += r.checked;
          ran.add(r.ran);
        }
      }
    }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d variant/layout pairs (%zu distinct tile/warp/stage shapes over the 3 dtypes), %d cases (%d split-K, "
              "%d grouped raster), %lld elements of C, %.1f s\n",
              variant_count, shapes.size(), cases, split_cases, raster_cases, elements, seconds);
  std::printf("paths: blocks copying without/with bounds %lld/%lld, cp.async 16/partial/0 bytes %lld/%lld/%lld, "
              "element-wise chunk copies %lld, C 16-byte/element stores %lld/%lld, C reads %lld, split-K slices "
              "full/short/empty %lld/%lld/%lld, reductions %lld\n",
              ran.unbounded_blocks, ran.bounded_blocks, ran.cp_async_full, ran.cp_async_partial, ran.cp_async_empty,
              ran.element_copies, ran.c_vector_stores, ran.c_element_stores, ran.c_reads, ran.full_slices,
              ran.short_slices, ran.empty_slices, ran.split_reductions);
  // The recipes reach every edge path of the kernel.
  for (const long long n : {ran.cp_async_full, ran.cp_async_partial, ran.cp_async_empty, ran.element_copies,
                            ran.c_vector_stores, ran.c_element_stores, ran.c_reads, ran.full_slices, ran.short_slices,
                            ran.empty_slices, ran.split_reductions, ran.unbounded_blocks, ran.bounded_blocks})
    EXPECT_GT(n, 0);
}



// Grouped rasterization on a grid taller than its group of 8 tile rows: the
// blocks' tiles are a permutation, and C is right.
TEST(mma_datapath, grouped_raster_covers_a_grid_taller_than_the_group) {
  for (const dtype t : dtypes) {
    tile_config c = mma_tile(128, 128, t == dtype::tf32 ? 16 : 32, 2, 2, 3);
    c.raster_group = 8;
    const kernel_macros k = macros_for(c, t, parse_layout("nt"));
    const gemm_case g = make_case("10 x 2 tiles", k, 9 * 128 + 40, 128 + 16, k.bk + 8, 1, 0, 1.0f, 0.0f);
    const report r = run_case(c, t, parse_layout("nt"), g);
    EXPECT_TRUE(r.ok()) << name(c, t, parse_layout("nt"), g) << ": " << r.describe();
  }
}
