// Stream-K in the wgmma family, as the tuner sees it: which problems get stream-K copies of the
// tiles, the id and tile JSON, the macros the template is rendered with, the launch (every SM,
// the fixup's workspace sized on the device), and the model's view of the shared k-loops.
// The schedule itself and its fixup are proven in wgmma_schedule_test, wgmma_fixup_model_check_test
// and wgmma_datapath_emulation_test; this file proves the wiring around them.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/compile/kernel_templates.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/search_space.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "core/tune/perf_model.hpp"
#include "core/gemm/families/mma/mma_family.hpp"

namespace tiletune {
namespace {

gemm_problem bf16_nt(std::int64_t m, std::int64_t n, std::int64_t k) {
  gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.type = dtype::bf16;
  p.layout = parse_layout("nt");
  return p;
}

std::vector<tile_config> stream_k_copies(const gemm_problem& p, const device_spec& d) {
  std::vector<tile_config> out;
  for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d))
    if (wgmma_stream_k(c)) out.push_back(c);
  return out;
}

tile_config stream_k(tile_config c) {
  set_wgmma_stream_k(c, true);
  return c;
}

TEST(wgmma_stream_k, copies_join_where_the_last_wave_leaves_the_grid_idle) {
  const device_spec& d = find_preset("h100-sxm");  // 132 SMs
  // Decode: 16 rows make 16-32 tiles on 132 SMs; every tile shape gets its copy, in one raster order.
  const auto decode = stream_k_copies(bf16_nt(16, 4096, 4096), d);
  // 6 block shapes x 3 stage counts, and the decode tiles (wgmma_space.hpp): 64x128 and three
  // swap-AB shapes, each at 4 stages and the deepest ring, that with and without evict-first, and
  // the 64- and 128-wide swap-AB tiles' deeper ring (16 and 12 stages) with evict-first; and the
  // TMA-store copies of the 18 (bf16, beta 0). Not ping-pong nor split-K: whole tiles only.
  EXPECT_EQ(decode.size(), 18u + 12u + 2u + 18u);
  for (const auto& c : decode) {
    EXPECT_EQ(c.raster_group, 8) << c.id();
    EXPECT_FALSE(c.raster_along_n) << c.id();
  }
  // 4096^3 in 128x256 tiles: 512 tiles are 3.88 waves, 3% of the grid idles in the last.
  const auto square = stream_k_copies(bf16_nt(4096, 4096, 4096), d);
  EXPECT_TRUE(std::any_of(square.begin(), square.end(), [](const tile_config& c) {
    return c.block_m == 128 && c.block_n == 256;
  }));
  // 33792 x 768: every tile shape makes a whole number of waves (128x128: 1584 tiles = 12 x 132).
  EXPECT_TRUE(stream_k_copies(bf16_nt(33792, 768, 4096), d).empty());
}

TEST(wgmma_stream_k, the_id_and_tile_json_name_it_and_older_records_read_as_whole_tiles) {
  const tile_config plain = wgmma_tile(128, 128, 64, 2, 4);
  const tile_config sk = stream_k(plain);
  EXPECT_NE(plain, sk);
  EXPECT_EQ(sk.id(), plain.id() + "_sk");
  const nlohmann::json j = tile_to_json(sk);
  EXPECT_EQ(j.at("stream_k"), true);
  EXPECT_EQ(tile_from_json(j), sk);
  EXPECT_FALSE(tile_to_json(plain).contains("stream_k"));  // records before stream-K stay as they were
  EXPECT_EQ(tile_from_json(tile_to_json(plain)), plain);
}

TEST(wgmma_stream_k, the_template_is_rendered_with_the_hosts_minimum_range) {
  const tile_config plain = wgmma_tile(128, 128, 64, 2, 4);
  const std::string sk = render_kernel_source(stream_k(plain), dtype::bf16, parse_layout("nt"));
  EXPECT_NE(sk.find("#define TT_STREAM_K 1\n"), std::string::npos);
  EXPECT_NE(sk.find("#define TT_SK_MIN_UNIT " + std::to_string(wgmma_stream_k_min_unit) + "\n"), std::string::npos);
  const std::string whole = render_kernel_source(plain, dtype::bf16, parse_layout("nt"));
  EXPECT_EQ(whole.find("#define TT_STREAM_K 1"), std::string::npos);
}

// ptxas compiles at --register-usage-level 3 exactly the stream-K copies whose consumers hold
// 128 accumulators and read an MN-major operand (the ones that spilled at the default, on an
// H100, 2026-11-26; tests/compile checks that they no longer do and that the option is why).
TEST(wgmma_stream_k, copies_that_spilled_compile_at_a_lower_register_usage_level) {
  const std::string lower = "--ptxas-options=--register-usage-level=3";
  const device_spec& d = find_preset("h100-sxm");
  auto lowered = [&](const tile_config& c, const char* lay) {
    const compile_job job = make_compile_job(c, dtype::bf16, parse_layout(lay), d);
    EXPECT_EQ(std::count(job.options.begin(), job.options.end(), lower),
              wgmma_lower_register_usage(c, parse_layout(lay)) ? 1 : 0) << c.id() << " " << lay;
    EXPECT_EQ(job.options.front(), "-std=c++17");  // the standard options stay first
    return wgmma_lower_register_usage(c, parse_layout(lay));
  };
  for (const tile_config& big : {wgmma_tile(128, 256, 64, 2, 4), wgmma_tile(256, 128, 64, 2, 3)}) {
    EXPECT_EQ(wgmma_accumulators_per_thread(big), 128);
    for (const char* lay : {"nn", "tn", "tt"}) {
      EXPECT_TRUE(lowered(stream_k(big), lay)) << big.id() << " " << lay;
      EXPECT_FALSE(lowered(big, lay)) << big.id() << " " << lay;  // the whole-tile kernel never spilled
    }
    EXPECT_FALSE(lowered(stream_k(big), "nt")) << big.id();  // both operands K-major: no spill
  }
  EXPECT_EQ(wgmma_accumulators_per_thread(wgmma_tile(64, 256, 64, 1, 4)), 128);  // one consumer: 255 registers
  for (const tile_config& other : {wgmma_tile(128, 128, 64, 2, 4), wgmma_tile(64, 256, 64, 1, 4),
                                   wgmma_tile(128, 128, 64, 1, 4)})
    for (const char* lay : {"nn", "tn", "tt"}) EXPECT_FALSE(lowered(stream_k(other), lay)) << other.id() << " " << lay;
  // Other families add nothing.
  EXPECT_EQ(make_compile_job(mma_tile(128, 64, 32, 2, 2, 3), dtype::bf16, parse_layout("tn"), d).options.size(), 2u);
}

// The consumer index is warp-uniform except in the stream-K copies of 128 accumulator registers a
// thread or more, fp8's partial set counted (the uniform index spilled there: compile.sm_90a.*).
TEST(wgmma_stream_k, the_largest_copies_keep_a_per_thread_consumer_index) {
  auto per_thread = [](const tile_config& c) {
    const bool rendered = render_kernel_source(c, dtype::bf16, parse_layout("nt")).find(
                              "#define TT_PER_THREAD_CONSUMER 1\n") != std::string::npos;
    EXPECT_EQ(rendered, wgmma_per_thread_consumer(c)) << c.id();
    return wgmma_per_thread_consumer(c);
  };
  EXPECT_TRUE(per_thread(stream_k(wgmma_tile(128, 256, 64, 2, 4))));   // 128 a thread
  EXPECT_TRUE(per_thread(stream_k(wgmma_tile(64, 256, 64, 1, 4))));    // 128, one consumer
  EXPECT_FALSE(per_thread(stream_k(wgmma_tile(128, 128, 64, 2, 4))));  // 64
  EXPECT_FALSE(per_thread(wgmma_tile(128, 256, 64, 2, 4)));            // no stream-K
  tile_config fp8 = stream_k(wgmma_tile(64, 192, 128, 1, 4));           // 96 and 96 of the partial set
  set_wgmma_promotion(fp8, 1);
  EXPECT_TRUE(wgmma_per_thread_consumer(fp8));
  set_wgmma_promotion(fp8, 0);
  EXPECT_FALSE(wgmma_per_thread_consumer(fp8));
}

TEST(wgmma_stream_k, the_launch_takes_every_sm_and_a_workspace_sized_for_its_workers) {
  const device_spec& d = find_preset("h100-sxm");
  const gemm_problem p = bf16_nt(16, 4096, 4096);  // 128x128: 32 tiles of 64 k-tiles
  const tile_config plain = wgmma_tile(128, 128, 64, 2, 4);
  const tile_config sk = stream_k(plain);
  const kernel_launch whole = plain.family->describe_launch(plain, p, d);
  const kernel_launch shared = sk.family->describe_launch(sk, p, d);
  EXPECT_EQ(whole.grid[0], 32);
  EXPECT_EQ(shared.grid[0], 132);
  EXPECT_EQ(scratch_bytes(whole), 0);
  // 32 x 64 = 2048 k-iterations, each tile cut into 132 / 32 = 4 ranges of 16 (tile-aligned,
  // wgmma_schedule.cuh): 128 workers, each a 128 x 128 fp32 slot and a flag.
  const std::int64_t workers = 128, slot = 128 * 128 * 4, flag = 4;
  ASSERT_EQ(shared.parameters.back().name, "workspace");
  EXPECT_EQ(shared.parameters.back().buffer_bytes, workers * (slot + flag));
  EXPECT_EQ(sk.family->scratch_bytes(sk, p, d), workers * (slot + flag));
  // A problem whose tiles fill whole waves has no stream-K workers: no workspace.
  const gemm_problem whole_waves = bf16_nt(33792, 768, 4096);
  EXPECT_EQ(sk.family->scratch_bytes(sk, whole_waves, d), 0);
}

TEST(wgmma_stream_k, the_model_counts_the_shared_k_loops_and_the_fixup) {
  const device_spec& d = find_preset("h100-sxm");
  const gemm_problem p = bf16_nt(128, 4096, 4096);  // 32 tiles of 128x128, 64 k-tiles each
  const tile_config plain = wgmma_tile(128, 128, 64, 2, 4);
  const tile_config sk = stream_k(plain);
  EXPECT_FALSE(plain.family->shared_k(plain, p, d.sm_count));
  const auto s = sk.family->shared_k(sk, p, d.sm_count);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->ctas, 132);
  // 2048 k-iterations over 132 workers: the longest range is 16 k-tiles, a quarter of a tile.
  EXPECT_DOUBLE_EQ(s->busiest_cta_tiles, 16.0 / 64);
  EXPECT_EQ(s->longest_k, 16 * 64);
  EXPECT_GE(s->owner_waits, 3);  // about 4 workers per tile: an owner waits on 3 or 4 peers
  EXPECT_LE(s->owner_waits, 4);
  const occupancy_estimate occ = estimate_occupancy(d, 384, 168, plain.smem_bytes(p.type, p.layout));
  const prediction whole = predict(d, p, plain, occ);
  const prediction shared = predict(d, p, sk, occ);
  EXPECT_EQ(whole.fixup_us, 0);
  EXPECT_GT(shared.fixup_us, 0);
  EXPECT_EQ(shared.blocks, 132);
  // 32 CTAs each streaming a whole K against 132 streaming a quarter: the model says stream-K wins
  // (measured on an H200: 21.9 us against 26.5 us, profiles/measured/h200-2026-11-26).
  EXPECT_LT(shared.time_us, whole.time_us);
}


// A stream-K range's k-tiles cost more than a whole tile's (wgmma_stream_k_tile_cost, measured on the
// H200): where the range is most of a tile and the last tiles' panels do not fit in L2, stream-K
// measured 1.20-1.25x its twin (4096x4096x14336 in 128x256 tiles: 3 whole waves and 0.88 of a tile
// in ranges) and the model, counting the ranges as whole tiles' k-tiles, put it 2% faster; where
// the last wave leaves two thirds of the grid idle (4096^3 in 128x192 tiles, 5.33 waves), stream-K
// measured 0.91-0.95x and stays ahead.
TEST(wgmma_stream_k, a_ranges_k_tiles_cost_what_they_measured_against_whole_tiles) {
  const device_spec& d = find_preset("h200");
  const gemm_problem down = bf16_nt(4096, 4096, 14336);
  const tile_config wide = wgmma_tile(128, 256, 64, 2, 4);
  const auto s = wide.family->shared_k(stream_k(wide), down, d.sm_count);
  ASSERT_TRUE(s);
  EXPECT_NEAR(s->shared_tiles, 0.88, 0.01);  // 116 tiles of 224 k-tiles over 132 ranges
  EXPECT_DOUBLE_EQ(s->busiest_cta_tiles, 3 + s->shared_tiles);
  EXPECT_DOUBLE_EQ(s->shared_tile_cost, wgmma_stream_k_tile_cost);
  EXPECT_GT(s->shared_tile_cost, 1.5);
  auto ratio = [&](const gemm_problem& p, const tile_config& c) {
    const occupancy_estimate occ = estimate_occupancy(d, c.threads(), 168, c.smem_bytes(p.type, p.layout));
    return predict(d, p, stream_k(c), occ).time_us / predict(d, p, c, occ).time_us;
  };
  EXPECT_GT(ratio(down, wide), 1.05);
  EXPECT_LT(ratio(bf16_nt(4096, 4096, 4096), wgmma_tile(128, 192, 64, 2, 4)), 0.97);
}

}  // namespace
}  // namespace tiletune
