// 2x1 clusters with TMA multicast in the wgmma family, as the tuner sees it: the constraints, B's
// half boxes, the launch (clusters of two over pairs of M tiles), where the space offers it. The
// data path is emulated in wgmma_datapath_emulation_test (multicast_*), the shared ring in
// wgmma_multicast_model_check_test, the compile and SASS in compile.sm_90a.multicast.
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_tile_math.cuh"

#include <string>

#include <gtest/gtest.h>

#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/tensor_map_spec.hpp"

namespace tiletune {
namespace {

gemm_problem square(const char* layout = "nt") {
  gemm_problem p;
  p.m = p.n = p.k = 4096;
  p.type = dtype::bf16;
  p.layout = parse_layout(layout);
  return p;
}

tile_config pair(int bm, int bn, int consumers = 2) {
  tile_config c = wgmma_tile(bm, bn, 64, consumers, 4);
  c.cluster_m = 2;
  return c;
}

TEST(wgmma_multicast, constraints_name_what_a_cluster_cannot_run) {
  const device_spec& d = find_preset("h100-sxm");
  auto broken = [&](const tile_config& c, const gemm_problem& p) {
    const auto v = check_constraints(c, p, d);
    return v ? v->constraint : std::string("none");
  };
  EXPECT_EQ(broken(pair(128, 256), square()), "none");
  EXPECT_EQ(broken(pair(128, 128), square("nn")), "none");
  EXPECT_EQ(broken(pair(128, 192), square("nn")), "cluster");  // three 64-column boxes do not halve
  EXPECT_EQ(broken(pair(128, 192), square("nt")), "none");     // 96 rows each, K-major
  tile_config wide = pair(128, 128);
  wide.cluster_m = 1;
  wide.cluster_n = 2;
  EXPECT_EQ(broken(wide, square()), "cluster");
  tile_config sk = pair(128, 128);
  set_wgmma_stream_k(sk, true);
  EXPECT_EQ(broken(sk, square()), "cluster");
}

TEST(wgmma_multicast, b_boxes_hold_half_the_tile_and_the_grid_is_pairs_of_tiles) {
  const device_spec& d = find_preset("h100-sxm");  // 132 SMs
  EXPECT_EQ(tensor_map_for(square(), pair(128, 256), 'b').box[1], 128u);  // K-major: half of 256 rows
  EXPECT_EQ(tensor_map_for(square(), pair(128, 256), 'a').box[1], 128u);  // A whole
  EXPECT_EQ(tensor_map_for(square("nn"), pair(128, 256), 'b').box[0], 64u);  // MN-major: 64-column boxes
  const kernel_launch l = family_named("wgmma")->describe_launch(pair(128, 256), square(), d);
  EXPECT_EQ(l.cluster[0], 2);
  EXPECT_EQ(l.grid[0], 132);  // 512 tiles: 256 pairs, 66 clusters
  gemm_problem few = square();
  few.m = 384;  // 3 M tiles: 2 pairs (the last one half past M) x 16 N tiles
  EXPECT_EQ(family_named("wgmma")->describe_launch(pair(128, 256), few, d).grid[0], 2 * 32);
  EXPECT_EQ(tt_multicast_pairs(3, 16, 1), 32);
  EXPECT_EQ(tt_pair_tile(tt_tile_coord{0, 1, 5}, 1).m_tile, 3);
  EXPECT_EQ(tt_multicast_kmajor_offset(256, 1), 128u * 128);
  EXPECT_EQ(tt_multicast_first_box(256, 1), 2);
}

TEST(wgmma_multicast, plain_problems_of_two_or_more_m_tiles_get_cluster_copies) {
  const device_spec& d = find_preset("h100-sxm");
  int copies = 0;
  for (const tile_config& c : problem_search_space(family_named("wgmma"), square(), d)) {
    if (c.cluster_m != 2) continue;
    ++copies;
    EXPECT_FALSE(wgmma_stream_k(c)) << c.id();
    EXPECT_NE(c.id().find("_cl2x1"), std::string::npos);
    EXPECT_EQ(family_named("wgmma")->untried_on_gpu(c, dtype::bf16), "");  // ran correct on an H200, 2026-12-04
  }
  EXPECT_EQ(copies, 18);  // the 6 shapes at 3 stage counts
  gemm_problem decode = square();
  decode.m = 16;
  for (const tile_config& c : problem_search_space(family_named("wgmma"), decode, d)) EXPECT_EQ(c.cluster_m, 1) << c.id();
}

}  // namespace
}  // namespace tiletune
