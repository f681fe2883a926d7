// The wgmma template's integer math, compiled for the host from the same file
// the kernel embeds: the tile scheduler, descriptors, shared-memory layout.
#include <set>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_tile_math.cuh"

#include "core/gemm/tile_config.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"

using namespace tiletune;

TEST(wgmma_scheduler, every_output_tile_exactly_once) {
  struct shape {
    int m_tiles, n_tiles, batch;
  };
  // Odd shapes: single tiles, primes, groups that do not divide the tile count.
  const shape shapes[] = {{1, 1, 1}, {1, 7, 1}, {7, 1, 2}, {13, 11, 1}, {33, 17, 3}, {32, 32, 1}, {5, 64, 2}};
  for (auto s : shapes)
    for (int group : {0, 1, 3, 8, 16})
      for (int along_n : {0, 1})
        for (int grid : {1, 2, 7, 132, s.m_tiles * s.n_tiles * s.batch, 1000}) {
          const long long tiles = (long long)s.m_tiles * s.n_tiles * s.batch;
          std::vector<int> seen(static_cast<std::size_t>(tiles), 0);
          // The kernel's persistent loop, for every CTA of the grid.
          for (int cta = 0; cta < grid; ++cta)
            for (long long t = cta; t < tiles; t += grid) {
              const tt_tile_coord c = tt_tile_of(t, s.m_tiles, s.n_tiles, group, along_n);
              ASSERT_GE(c.batch, 0);
              ASSERT_LT(c.batch, s.batch);
              ASSERT_GE(c.m_tile, 0);
              ASSERT_LT(c.m_tile, s.m_tiles);
              ASSERT_GE(c.n_tile, 0);
              ASSERT_LT(c.n_tile, s.n_tiles);
              ++seen[static_cast<std::size_t>((c.batch * s.m_tiles + c.m_tile) * s.n_tiles + c.n_tile)];
            }
          for (int v : seen)
            ASSERT_EQ(v, 1) << s.m_tiles << "x" << s.n_tiles << "x" << s.batch << " group " << group
                            << " along_n " << along_n << " grid " << grid;
        }
}

TEST(wgmma_scheduler, grouped_order_walks_the_group_first) {
  // 4 m-tiles, 3 n-tiles, groups of 2 along M: (0,0) (1,0) (0,1) (1,1) (0,2) (1,2) (2,0) ...
  std::vector<std::pair<int, int>> order;
  for (int t = 0; t < 12; ++t) {
    const auto c = tt_tile_of(t, 4, 3, 2, 0);
    order.emplace_back(c.m_tile, c.n_tile);
  }
  const std::vector<std::pair<int, int>> expected = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2},
                                                     {2, 0}, {3, 0}, {2, 1}, {3, 1}, {2, 2}, {3, 2}};
  EXPECT_EQ(order, expected);
  // Along N the roles swap; plain order walks M fastest (or N when along_n).
  EXPECT_EQ(tt_tile_of(1, 4, 3, 2, 1).n_tile, 1);
  EXPECT_EQ(tt_tile_of(1, 4, 3, 2, 1).m_tile, 0);
  EXPECT_EQ(tt_tile_of(5, 4, 3, 0, 0).m_tile, 1);
  EXPECT_EQ(tt_tile_of(5, 4, 3, 0, 0).n_tile, 1);
  EXPECT_EQ(tt_tile_of(12, 4, 3, 0, 0).batch, 1);
}

TEST(wgmma_descriptor, bit_fields_follow_the_ptx_isa) {
  const unsigned long long d = tt_wgmma_desc(0x12340, 8192, 1024);
  EXPECT_EQ(d & 0x3FFF, 0x12340u >> 4);
  EXPECT_EQ((d >> 16) & 0x3FFF, 8192u >> 4);
  EXPECT_EQ((d >> 32) & 0x3FFF, 1024u >> 4);
  EXPECT_EQ((d >> 49) & 0x7, 0u);  // base offset: 1024-byte aligned tiles
  EXPECT_EQ(d >> 62, 1u);          // 128-byte swizzle
  EXPECT_EQ((d >> 14) & 0x3, 0u);  // reserved bits stay clear
  EXPECT_EQ((d >> 30) & 0x3, 0u);
  // Addresses past 256 KiB cannot be encoded; shared memory never reaches there.
  EXPECT_EQ(tt_wgmma_desc(1u << 18, 0, 0) & 0x3FFF, 0u);
}

TEST(wgmma_descriptor, operand_offsets_match_the_tma_boxes) {
  // K-major bf16: 128-byte rows of k, one per row of M/N; a k16 step is 32 bytes.
  EXPECT_EQ(tt_operand_offset(1, 64, 16, 64, 2), 64u * 128 + 32);
  EXPECT_EQ(tt_operand_offset(1, 128, 48, 64, 2), 128u * 128 + 96);
  // tf32 K-major: a k8 step is 32 bytes too.
  EXPECT_EQ(tt_operand_offset(1, 0, 8, 32, 4), 32u);
  // MN-major bf16, BK 64: boxes of [64 k][64 elements], 8 KiB each; a k16 step is 16 rows.
  EXPECT_EQ(tt_operand_offset(0, 64, 16, 64, 2), 64u * 128 + 16 * 128);
  EXPECT_EQ(tt_operand_offset(0, 192, 0, 64, 2), 3u * 64 * 128);
  EXPECT_EQ(tt_operand_lbo(0, 64), 64u * 128);  // next 64-wide block of M/N
  EXPECT_EQ(tt_operand_sbo(), 1024u);           // next 8 rows
  // Every wgmma start address is 16-byte aligned and every m64 tile 1024-aligned.
  for (int k = 0; k < 64; k += 16)
    for (int mn = 0; mn < 256; mn += 64) {
      EXPECT_EQ(tt_operand_offset(1, mn, k, 64, 2) % 16, 0u);
      EXPECT_EQ(tt_operand_offset(0, mn, 0, 64, 2) % 1024, 0u);
      EXPECT_EQ(tt_operand_offset(1, mn, 0, 64, 2) % 1024, 0u);
    }
}

TEST(wgmma_layout, shared_memory_is_worked_by_hand) {
  // 256x128x64 bf16, 2 consumers, 4 stages: 1024 slack + 4 x (32 KiB + 16 KiB)
  // + 8 warps x 16 rows x 144 bytes of epilogue staging + 8 mbarriers.
  const tile_config c = wgmma_tile(256, 128, 64, 2, 4);
  EXPECT_EQ(c.smem_bytes(dtype::bf16, parse_layout("nt")), 1024 + 4 * (32768 + 16384) + 8 * 16 * 144 + 8 * 8);
  EXPECT_EQ(c.smem_bytes(dtype::bf16, parse_layout("tn")), c.smem_bytes(dtype::bf16, parse_layout("nt")));
  // tf32 BK 32: the same bytes per stage.
  EXPECT_EQ(wgmma_tile(256, 128, 32, 2, 4).smem_bytes(dtype::tf32, parse_layout("nt")),
            c.smem_bytes(dtype::bf16, parse_layout("nt")));
  EXPECT_EQ(c.threads(), 384);
  EXPECT_EQ(wgmma_tile(64, 256, 64, 1, 4).threads(), 256);
  // The epilogue staging and the barriers start where the stages end.
  EXPECT_EQ(tt_smem_epilogue_offset(256, 128, 64, 2, 4), 4 * 49152);
  EXPECT_EQ(tt_smem_barrier_offset(256, 128, 64, 2, 4, 2) % 8, 0);
}

TEST(wgmma_layout, instruction_source_names_shape_types_and_transposes) {
  const std::string nt = wgmma_instruction_source(dtype::bf16, 128, parse_layout("nt"));
  EXPECT_NE(nt.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"), std::string::npos) << nt;
  EXPECT_NE(nt.find("%64, %65, p, 1, 1, 0, 0;"), std::string::npos) << nt;  // both K-major
  EXPECT_NE(nt.find("\"+f\"(d[63])"), std::string::npos);
  EXPECT_EQ(nt.find("\"+f\"(d[64])"), std::string::npos);
  // A 't' and B 'n' are MN-major: transposed.
  EXPECT_NE(wgmma_instruction_source(dtype::f16, 64, parse_layout("tn")).find("p, 1, 1, 1, 1;"), std::string::npos);
  EXPECT_NE(wgmma_instruction_source(dtype::f16, 64, parse_layout("nn")).find("p, 1, 1, 0, 1;"), std::string::npos);
  const std::string tf = wgmma_instruction_source(dtype::tf32, 256, parse_layout("nt"));
  EXPECT_NE(tf.find("m64n256k8.f32.tf32.tf32"), std::string::npos) << tf;
  EXPECT_NE(tf.find("%128, %129, p, 1, 1;"), std::string::npos) << tf;  // tf32 takes no transposes
}

TEST(wgmma_tile_config, id_and_json) {
  tile_config c = wgmma_tile(256, 128, 64, 2, 4, 8, true);
  EXPECT_EQ(c.id(), "wgmma_256x128x64_c2_s4_cl1x1_g8n");
  EXPECT_EQ(tile_from_json(tile_to_json(c)), c);
  c.raster_along_n = false;
  c.raster_group = 16;
  EXPECT_EQ(c.id(), "wgmma_256x128x64_c2_s4_cl1x1_g16m");
  EXPECT_EQ(tile_from_json(tile_to_json(c)), c);
}
