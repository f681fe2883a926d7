// Split-K inside a cluster in the wgmma family, as the tuner sees it: each rank's k-slice, the
// constraints, the launch (clusters of S, S x the clusters), the shared memory of the leader's
// slots, and where the space offers it. Its data path is proven in wgmma_datapath_emulation_test
// (cluster_split_k_*), its barriers in wgmma_cluster_split_model_check_test, its compile and SASS
// in compile.sm_90a.decode.
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_tile_math.cuh"
#include "wgmma/wgmma_schedule.cuh"

#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"
#include "core/gemm/families/wgmma/wgmma_space.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/search_space.hpp"

namespace tiletune {
namespace {

gemm_problem decode(std::int64_t m, std::int64_t k = 4096) {
  gemm_problem p;
  p.m = m;
  p.n = 4096;
  p.k = k;
  p.type = dtype::bf16;
  p.layout = parse_layout("nt");
  return p;
}

tile_config split(int s, bool swap = true) {
  tile_config c = wgmma_tile(16, 128, 64, 1, 6);
  set_wgmma_swap_ab(c, swap);
  c.split_k = s;
  return c;
}

TEST(wgmma_cluster_split, the_ranks_slices_cover_the_k_tiles_once) {
  for (int k_tiles : {2, 3, 4, 7, 64, 65})
    for (int s : {2, 4}) {
      if (k_tiles < s) continue;
      tt_work_unit whole{};
      whole.k_begin = 0;
      whole.k_end = k_tiles;
      int next = 0;
      for (int rank = 0; rank < s; ++rank) {
        const tt_work_unit u = tt_split_unit(whole, rank, s);
        EXPECT_EQ(u.k_begin, next) << k_tiles << " / " << s;
        EXPECT_GT(u.k_end, u.k_begin) << k_tiles << " / " << s << " rank " << rank;
        EXPECT_LE(u.k_end - u.k_begin, (k_tiles + s - 1) / s);
        EXPECT_EQ(u.owner, rank == 0 ? 1 : 0);
        next = u.k_end;
      }
      EXPECT_EQ(next, k_tiles);
    }
  EXPECT_EQ(tt_split_full_parity(0), 0u);
  EXPECT_EQ(tt_split_empty_parity(0), 1u);  // a fresh barrier passes: no tile before the first
}

TEST(wgmma_cluster_split, constraints_name_what_the_kernel_cannot_run) {
  const device_spec& d = find_preset("h100-sxm");
  auto broken = [&](const tile_config& c, const gemm_problem& p) {
    const auto v = check_constraints(c, p, d);
    return v ? v->constraint : std::string("none");
  };
  EXPECT_EQ(broken(split(2), decode(16)), "none");
  EXPECT_EQ(broken(split(4, false), decode(64)), "warpgroup_tile");  // 16 rows are swap-AB's only
  tile_config plain = wgmma_tile(64, 128, 64, 1, 4);
  plain.split_k = 4;
  EXPECT_EQ(broken(plain, decode(64)), "none");
  plain.stages = 6;  // the leader's three 32 KB slots beside six 24 KB stages: over 227 KB
  EXPECT_EQ(broken(plain, decode(64)), "shared_memory");
  EXPECT_EQ(broken(split(3), decode(16)), "split_k");
  EXPECT_EQ(broken(split(8), decode(16)), "split_k");
  EXPECT_EQ(broken(split(4), decode(16, 192)), "split_k");  // 3 k-tiles for 4 CTAs
  tile_config sk = split(2);
  set_wgmma_stream_k(sk, true);
  EXPECT_EQ(broken(sk, decode(16)), "split_k");
}

TEST(wgmma_cluster_split, the_launch_is_clusters_of_s_over_the_tiles) {
  const device_spec& d = find_preset("h100-sxm");  // 132 SMs
  const kernel_launch two = family_named("wgmma")->describe_launch(split(2), decode(16), d);
  EXPECT_EQ(two.cluster[0], 2);
  EXPECT_EQ(two.grid[0], 2 * 32);  // 32 tiles of 128 columns, 66 clusters fit
  const kernel_launch four = family_named("wgmma")->describe_launch(split(4), decode(16), d);
  EXPECT_EQ(four.cluster[0], 4);
  EXPECT_EQ(four.grid[0], 4 * 32);
  gemm_problem wide = decode(16);
  wide.n = 128 * 200;  // 200 tiles: 33 clusters of 4 walk them
  EXPECT_EQ(family_named("wgmma")->describe_launch(split(4), wide, d).grid[0], 4 * 33);
  EXPECT_EQ(family_named("wgmma")->describe_launch(wgmma_tile(64, 128, 64, 1, 6), wide, d).cluster[0], 1);
  // The leader's three slots of 128 x 16 fp32 after the ring, then its two barriers.
  const int ring = tt_smem_total(128, 16, 64, 2, 6, 0);
  EXPECT_EQ(wgmma_smem_bytes(split(4), dtype::bf16), 1024 + (ring + 15) / 16 * 16 + 3 * 128 * 16 * 4 + 16);
}

TEST(wgmma_cluster_split, decode_spaces_offer_it_with_and_without_evict_first_and_not_with_stream_k) {
  const device_spec& d = find_preset("h100-sxm");
  int splits = 0, evict_first = 0, deeper = 0;
  for (const tile_config& c : problem_search_space(family_named("wgmma"), decode(16), d)) {
    if (c.split_k == 1) continue;
    ++splits;
    evict_first += wgmma_evict_first_b(c);
    EXPECT_FALSE(wgmma_stream_k(c)) << c.id();
    EXPECT_EQ(check_constraints(c, decode(16), d), std::nullopt) << c.id();
    const std::string untried = family_named("wgmma")->untried_on_gpu(c, dtype::bf16);
    if (c.stages <= wgmma_decode_max_stages) {
      EXPECT_EQ(untried, "") << c.id();  // ran correct on an H200, 2026-12-04
    } else {  // the pairs in the 64- and 128-wide swap-AB tiles' deeper ring: not yet run
      ++deeper;
      EXPECT_TRUE(wgmma_swap_ab(c) && wgmma_evict_first_b(c) && c.split_k == 2 && c.block_n <= 128) << c.id();
      EXPECT_EQ(untried, fmt::format("split-K in a cluster with a {}-stage ring", c.stages)) << c.id();
    }
  }
  // The 64x128 and three swap-AB tiles, split 2 and 4, with and without evict-first; and the pairs
  // in the deeper rings.
  EXPECT_EQ(splits, 18);
  EXPECT_EQ(evict_first, 10);
  EXPECT_EQ(deeper, 2);
  for (const tile_config& c : problem_search_space(family_named("wgmma"), decode(4096), d))
    EXPECT_EQ(c.split_k, 1) << c.id();
}

}  // namespace
}  // namespace tiletune
