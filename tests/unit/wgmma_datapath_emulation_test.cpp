// A host emulation of the wgmma kernel's data path (kernels_templates/wgmma/wgmma_gemm.cu),
// written from the PTX ISA and the CUDA driver API rather than from the kernel:
// TMA box copies into 128-byte-swizzled shared memory as tensor_map_for()
// describes them, wgmma's operand fetch decoded from the descriptors the kernel
// builds, the accumulator fragments of m64nNk16 / m64nNk8, and the epilogue.
// The kernel's own index math (wgmma_tile_math.cuh) is called, never copied, so
// a bug there shows here as a wrong product against a plain host GEMM; planted
// defects show that the comparison can fail.
#include "wgmma_emulation.hpp"

using namespace tiletune;
using namespace wgmma_emu;


// ---- the pieces, each against its documentation -------------------------------

TEST(wgmma_emulation, element_conversions_round_trip) {
  // The host's f16 / bf16 conversions, which the comparison leans on: every
  // finite value survives float and back, and ties round to even.
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const std::uint16_t v = static_cast<std::uint16_t>(h);
    if (((v >> 10) & 0x1F) != 0x1F) {
      ASSERT_EQ(float_to_f16(f16_to_float(v)), v) << h;
    }
    if (((v >> 7) & 0xFF) != 0xFF) {
      ASSERT_EQ(float_to_bf16(bf16_to_float(v)), v) << h;
    }
  }
  EXPECT_EQ(f16_to_float(0x3C00), 1.0f);
  EXPECT_EQ(float_to_f16(1.0f + 0x1p-11f), 0x3C00);      // tie, to even
  EXPECT_EQ(float_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie, to even (up)
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(float_to_f16(0x1p-25f * 3), 0x0002);  // subnormal tie, to even
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-11f), 1.0f);
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);
}

TEST(wgmma_emulation, tma_box_lands_swizzled_and_zero_filled) {
  // A 9-row, 64-element bf16 box (one 128-byte row per tensor row, so the
  // XOR pattern wraps) whose last 4 elements lie past the tensor's 60 columns; element (r, x) holds
  // r*64+x+1.
  tensor_map_spec map;
  map.type = tensor_map_spec::element::bf16;
  map.dims = {60, 9, 1};
  map.strides_bytes = {128, 128 * 9};
  map.box = {64, 9, 1};
  std::vector<std::uint8_t> global(128 * 9);
  for (int r = 0; r < 9; ++r)
    for (int x = 0; x < 64; ++x) {
      const std::uint16_t v = static_cast<std::uint16_t>(r * 64 + x + 1);
      std::memcpy(global.data() + r * 128 + x * 2, &v, 2);
    }
  shared_memory smem;
  smem.bytes.assign(4096, 0xAB);
  std::vector<std::string> errors;
  EXPECT_EQ(tma_copy_box(map, global, smem, 1024, 0, 0, 0, {}, errors),
            64 * 9 * 2);  // the whole box
  ASSERT_TRUE(errors.empty()) << errors.front();
  for (int r = 0; r < 9; ++r)
    for (int x = 0; x < 64; ++x) {
      // Chunk x/8 of row r sits at chunk (x/8) ^ (r%8) of the 128-byte row r.
      const int chunk = (x / 8) ^ (r % 8);
      std::uint16_t got;
      std::memcpy(&got, smem.bytes.data() + 1024 + r * 128 + chunk * 16 + (x % 8) * 2, 2);
      EXPECT_EQ(got, x < 60 ? r * 64 + x + 1 : 0) << "row " << r << " element " << x;
    }
  // A destination off the 1024-byte pattern is refused.
  tma_copy_box(map, global, smem, 1024 + 128, 0, 0, 0, {}, errors);
  EXPECT_FALSE(errors.empty());
}

TEST(wgmma_emulation, accumulator_fragment_map_is_the_ptx_isas) {
  // The kernel's tt_acc_* against the ISA's D fragment, for every register of
  // every lane of the widest instruction; and the map covers 64 x 256 once.
  const int n = 256;
  std::vector<int> seen(64 * n, 0);
  for (int warp = 0; warp < 4; ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int j = 0; j < n / 8; ++j)
        for (int h = 0; h < 2; ++h)
          for (int e = 0; e < 2; ++e) {
            const int i = tt_acc_index(j, h, e);
            ASSERT_GE(i, 0);
            ASSERT_LT(i, n / 2);
            const fragment_coord isa = isa_d_fragment(warp, lane, i);
            EXPECT_EQ(tt_acc_warp_row0(warp) + tt_acc_row(lane, h), isa.row)
                << warp << " " << lane << " " << i;
            EXPECT_EQ(tt_acc_col(lane, j, e), isa.col) << warp << " " << lane << " " << i;
            ++seen[static_cast<std::size_t>(isa.row * n + isa.col)];
          }
  for (int v : seen) ASSERT_EQ(v, 1);
  // The copy-out covers the warp's 16 staged rows x 8 vectors once.
  std::vector<int> copied(16 * 8, 0);
  for (int pass = 0; pass < 4; ++pass)
    for (int lane = 0; lane < 32; ++lane)
      ++copied[static_cast<std::size_t>(tt_epi_copy_row(pass, lane) * 8 +
                                        tt_epi_copy_vector(lane))];
  for (int v : copied) EXPECT_EQ(v, 1);
}

TEST(wgmma_emulation, operand_fetch_reads_the_element_tma_wrote) {
  // Bit-exact: every element of A and B wgmma reads, per k-step of a k-tile,
  // through the kernel's descriptors, is the one op(A)(m, k) / op(B)(k, n) of
  // the global tensor (zero past its edges). Tags, not numbers: element
  // (row, col) of a stored matrix holds its own coordinates.
  const device_spec& h100 = find_preset("h100-sxm");
  int checked = 0;
  for (const auto& cl : all_layouts) {
    // An edge tile: M, N and K end inside the tile.
    const gemm_problem p = problem(200, 136, 72, 2, cl.t, cl.layout);
    const int eb = element_bytes(p.type);
    for (const tile_config& c : default_search_space(family_named("wgmma"), p.type)) {
      if (c.stages != 3 || c.raster_group != 8 || c.raster_along_n || check_constraints(c, p, h100))
        continue;
      const bool a_kmajor = !p.layout.a_transposed, b_kmajor = p.layout.b_transposed;
      const tensor_map_spec map_a = tensor_map_for(p, c, 'a'), map_b = tensor_map_for(p, c, 'b');
      auto tagged = [&](const tensor_map_spec& m) {
        std::vector<std::uint8_t> g(static_cast<std::size_t>(m.dims[2] * m.strides_bytes[1]));
        for (std::uint64_t b = 0; b < m.dims[2]; ++b)
          for (std::uint64_t r = 0; r < m.dims[1]; ++r)
            for (std::uint64_t x = 0; x < m.dims[0]; ++x) {
              const std::uint32_t tag =
                  eb == 2 ? 1 + ((r % 512) * 128 + x % 128) % 65535
                          : static_cast<std::uint32_t>(1 + (b * 4096 + r) * 4096 + x);
              std::memcpy(g.data() + b * m.strides_bytes[1] + r * m.strides_bytes[0] + x * eb, &tag,
                          static_cast<std::size_t>(eb));
            }
        return g;
      };
      auto tag_of = [&](const tensor_map_spec& m, std::int64_t row, std::int64_t col,
                        std::int64_t b) -> std::uint32_t {
        if (row >= static_cast<std::int64_t>(m.dims[1]) ||
            col >= static_cast<std::int64_t>(m.dims[0]))
          return 0;
        return eb == 2 ? static_cast<std::uint32_t>(1 + ((row % 512) * 128 + col % 128) % 65535)
                       : static_cast<std::uint32_t>(1 + (b * 4096 + row) * 4096 + col);
      };
      const auto ga = tagged(map_a), gb = tagged(map_b);
      const wgmma_instruction ins = parse_instruction(p.type, c.block_n, p.layout);
      shared_memory smem;
      smem.bytes.assign(static_cast<std::size_t>(wgmma_smem_bytes(c, p.type)), 0xFF);
      const std::uint32_t sa = 1024 * 2, sb = sa + static_cast<std::uint32_t>(
                                                       tt_smem_a_stage(c.block_m, c.block_k, eb));
      // The last m, n and k tiles of batch 1.
      const int m0 = static_cast<int>((p.m - 1) / c.block_m * c.block_m),
                n0 = static_cast<int>((p.n - 1) / c.block_n * c.block_n);
      const int k0 = static_cast<int>((p.k - 1) / c.block_k * c.block_k), batch = 1;
      std::vector<std::string> errors;
      load_operand(a_kmajor, c.block_m, c.block_k, sa, map_a, ga, smem, k0, m0, batch, {}, errors);
      load_operand(b_kmajor, c.block_n, c.block_k, sb, map_b, gb, smem, k0, n0, batch, {}, errors);
      ASSERT_TRUE(errors.empty()) << errors.front();
      const int wg_m = c.block_m / wgmma_consumers(c), mma_k = ins.k;
      auto read = [&](std::uint64_t desc, bool mn_major, int mn, int k) {
        const std::int64_t addr = wgmma_operand_address(desc, mn_major, mn, k, eb, errors);
        std::uint32_t v = 0;
        if (addr >= 0) std::memcpy(&v, smem.bytes.data() + addr, static_cast<std::size_t>(eb));
        return v;
      };
      for (int kk = 0; kk < c.block_k; kk += mma_k) {
        const std::uint64_t db =
            tt_wgmma_desc(sb + tt_operand_offset(b_kmajor, 0, kk, c.block_k, eb),
                          tt_operand_lbo(b_kmajor, c.block_k), tt_operand_sbo());
        for (int k = 0; k < mma_k; ++k)
          for (int n = 0; n < c.block_n; ++n) {
            const std::int64_t gk = k0 + kk + k, gn = n0 + n;
            const std::uint32_t want =
                b_kmajor ? tag_of(map_b, gn, gk, batch) : tag_of(map_b, gk, gn, batch);
            ASSERT_EQ(read(db, ins.b_mn_major, n, k), want)
                << c.id() << " " << p.describe() << " B k " << gk << " n " << gn;
          }
        for (int consumer = 0; consumer < wgmma_consumers(c); ++consumer)
          for (int mi = 0; mi < wg_m / 64; ++mi) {
            const int mn0 = consumer * wg_m + mi * 64;
            const std::uint64_t da =
                tt_wgmma_desc(sa + tt_operand_offset(a_kmajor, mn0, kk, c.block_k, eb),
                              tt_operand_lbo(a_kmajor, c.block_k), tt_operand_sbo());
            for (int m = 0; m < 64; ++m)
              for (int k = 0; k < mma_k; ++k) {
                const std::int64_t gm = m0 + mn0 + m, gk = k0 + kk + k;
                const std::uint32_t want =
                    a_kmajor ? tag_of(map_a, gm, gk, batch) : tag_of(map_a, gk, gm, batch);
                ASSERT_EQ(read(da, ins.a_mn_major, m, k), want)
                    << c.id() << " " << p.describe() << " A m " << gm << " k " << gk;
              }
          }
      }
      ASSERT_TRUE(errors.empty()) << errors.front();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6 * 9);  // six block shapes, nine dtype/layout pairs
}

// ---- the whole kernel against a host GEMM --------------------------------------

TEST(wgmma_emulation, every_default_variant_matches_a_host_gemm) {
  // Every default variant the constraints allow, every layout: M, N and K end
  // inside tiles, two batches, and two CTAs, so that each walks the ring
  // across two tiles (all block shapes but 128x256 have four tiles here). beta
  // alternates between 0 (C holds NaN and must not be read) and nonzero.
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0, pruned = 0;
  for (const auto& cl : all_layouts) {
    const prepared x = prepare(problem(72, 200, 72, 2, cl.t, cl.layout), 1);
    int index = 0;
    for (const tile_config& c : default_search_space(family_named("wgmma"), cl.t)) {
      const double beta = index++ % 2 ? 0.0 : -0.75;
      if (check_constraints(c, x.p, h100)) {
        ++pruned;
        continue;
      }
      EXPECT_EQ(run_and_compare(c, x, 1.25, beta, 2), "")
          << c.id() << " " << x.p.describe() << " beta " << beta;
      ++ran;
    }
  }
  // 54 per dtype and layout; only shared memory prunes (256x128 and 128x256 at 5 stages).
  EXPECT_GE(ran, 9 * 48);
  EXPECT_EQ(ran + pruned, 9 * 54);
}

TEST(wgmma_emulation, edge_shapes_match_a_host_gemm) {
  // Shapes the constraints allow, on one variant per block shape: a tile
  // that is almost all zero fill, a ring that wraps inside a tile (more
  // k-tiles than stages), whole tiles with vector stores, C rows that are not
  // 16-byte aligned (element-wise stores), three batches on two CTAs.
  struct shape {
    std::int64_t m, n, k, batch;
    double beta;
  };
  const shape shapes[] = {{8, 8, 8, 1, 0.5},
                          {264, 72, 200, 1, -1.0},
                          {256, 256, 128, 1, 0.0},
                          {72, 61, 40, 1, 2.0},
                          {64, 64, 264, 3, 0.25}};
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : all_layouts)
    for (const shape& s : shapes) {
      const prepared x = prepare(problem(s.m, s.n, s.k, s.batch, cl.t, cl.layout), 7);
      for (const tile_config& c : default_search_space(family_named("wgmma"), cl.t)) {
        if (c.raster_group != 8 || c.raster_along_n || c.stages != 3 ||
            check_constraints(c, x.p, h100))
          continue;
        EXPECT_EQ(run_and_compare(c, x, -0.5, s.beta, 2), "")
            << c.id() << " " << x.p.describe() << " beta " << s.beta;
        ++ran;
      }
    }
  // N = 61 is only allowed where B is K-major (ldb = K): nt and tt.
  EXPECT_GE(ran, 6 * (9 * 4 + 5));
}

// ---- the comparison can fail ----------------------------------------------------

TEST(wgmma_emulation, planted_defects_are_caught) {
  // Each defect, injected through the emulation's switches (not by editing the
  // kernel), must make the emulated kernel disagree with the host GEMM on a
  // variant with one K-major and one MN-major operand and on a tf32 one.
  struct planted {
    const char* name;
    defects d;
  };
  std::vector<planted> all;
  all.push_back({"LBO and SBO swapped", {}});
  all.back().d.swap_lbo_sbo = true;
  all.push_back({"swizzle XOR with the row mod 4", {}});
  all.back().d.tma_swizzle_row_mask = 3;
  all.push_back({"descriptor without the 128B swizzle", {}});
  all.back().d.descriptor_no_swizzle = true;
  all.push_back({"k-step advance halved", {}});
  all.back().d.half_k_step = true;
  all.push_back({"fragment column off by one", {}});
  all.back().d.fragment_col_off_by_one = true;
  all.push_back({"no zero fill past the edges", {}});
  all.back().d.tma_no_zero_fill = true;
  const tile_config c16 = wgmma_tile(128, 128, 64, 2, 3);
  const tile_config c32 = wgmma_tile(128, 128, 32, 1, 4);
  const prepared nn = prepare(problem(136, 200, 72, 2, dtype::bf16, "nn"), 3);
  const prepared tn = prepare(problem(136, 200, 72, 2, dtype::f16, "tn"), 4);
  const prepared tf = prepare(problem(136, 200, 72, 2, dtype::tf32, "nt"), 5);
  // Without a defect all three agree (so a failure below is the defect's).
  EXPECT_EQ(run_and_compare(c16, nn, 1.0, 0.5, 3), "");
  EXPECT_EQ(run_and_compare(c16, tn, 1.0, 0.0, 3), "");
  EXPECT_EQ(run_and_compare(c32, tf, 1.0, 0.0, 3), "");
  for (const planted& pl : all) {
    const std::string r_nn = run_and_compare(c16, nn, 1.0, 0.5, 3, pl.d);
    const std::string r_tn = run_and_compare(c16, tn, 1.0, 0.0, 3, pl.d);
    const std::string r_tf = run_and_compare(c32, tf, 1.0, 0.0, 3, pl.d);
    EXPECT_NE(r_nn, "") << pl.name << " went unnoticed on " << nn.p.describe();
    EXPECT_NE(r_tn, "") << pl.name << " went unnoticed on " << tn.p.describe();
    EXPECT_NE(r_tf, "") << pl.name << " went unnoticed on " << tf.p.describe();
    std::printf("%s:\n  %.160s\n  %.160s\n  %.160s\n", pl.name, r_nn.c_str(), r_tn.c_str(),
                r_tf.c_str());
  }
}

// ---- stream-K: units of k-tiles, partials through the workspace ----------------

TEST(wgmma_emulation, stream_k_units_and_their_fixup_match_a_host_gemm) {
  // The rest after whole waves split into ranges of k-tiles: 4 tiles of 40 k-tiles on 3 CTAs
  // (one whole wave, the last tile in three ranges: an owner and two peers), a decode shape
  // (2 tiles on 5 CTAs, split-K across the grid), two batches, beta reading C.
  struct shape {
    std::int64_t m, n, k, batch;
    int sms;
    double beta;
  };
  const shape shapes[] = {{136, 200, 2560, 1, 3, 0.0}, {16, 200, 1280, 1, 5, -0.5}, {72, 136, 1024, 2, 3, 1.5}};
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::f16, "tn"}, case_layout{dtype::tf32, "nt"}})
    for (const shape& sh : shapes) {
      const prepared x = prepare(problem(sh.m, sh.n, sh.k, sh.batch, cl.t, cl.layout), 11);
      const int bk = cl.t == dtype::tf32 ? 32 : 64;
      for (const tile_config& c : {wgmma_tile(128, 128, bk, 2, 4), wgmma_tile(64, 128, bk, 1, 6)}) {
        EXPECT_EQ(run_and_compare(c, x, 0.75, sh.beta, sh.sms, {}, 1), "") << c.id() << " " << x.p.describe();
        ++ran;
      }
    }
  EXPECT_EQ(ran, 18);
}

TEST(wgmma_emulation, stream_k_planted_defects_are_caught) {
  const prepared x = prepare(problem(16, 200, 1280, 1, dtype::bf16, "nt"), 12);
  const tile_config c = wgmma_tile(64, 128, 64, 1, 6);
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 5, {}, 1), "");
  defects skip;
  skip.fixup_skips_last_peer = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, skip, 1), "") << "an owner that forgets a peer";
  defects slot;
  slot.peer_publishes_next_slot = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, slot, 1), "") << "a peer in its neighbour's slot";
  // Without stream-K the same problem runs whole tiles and needs no workspace.
  EXPECT_EQ(run_and_compare(c, x, 1.0, 0.0, 5, skip, 0), "");
}
