#include "core/tune/perf_model.hpp"
#include "core/gemm/families/simt/simt_family.hpp"
#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

using namespace tiletune;

namespace {
// A toy GPU with round numbers: 10 SMs at 1 TFLOP/s each.
device_spec toy() {
  device_spec d = find_preset("a100-sxm-80gb");
  d.sm_count = 10;
  d.peak_tflops_bf16 = 10;
  d.memory_bandwidth_gbs = 1e9;
  d.l2_bandwidth_gbs = 1e9;
  return d;
}
tile_config tile128() { return mma_tile(128, 128, 32, 2, 2, 3); }
gemm_problem bf16(std::int64_t m, std::int64_t n, std::int64_t k) {
  gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.type = dtype::bf16;
  return p;
}
}  // namespace

TEST(occupancy, registers_shared_memory_and_threads_are_counted) {
  const device_spec& h100 = find_preset("h100-sxm");
  // 128 regs x 32 lanes = 4096 per warp; 65536 / 4096 = 16 warps = 2 blocks of 8 warps.
  auto o = estimate_occupancy(h100, 256, 128, 64 * 1024);
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.limited_by, "registers");
  EXPECT_EQ(o.warps_per_sm, 16);
  // 226 regs round up to 7424 per warp: 8 warps fit, one block.
  EXPECT_EQ(estimate_occupancy(h100, 256, 226, 90 * 1024).blocks_per_sm, 1);
  // 32 regs: registers allow 8 blocks of 256; shared memory 228K / (100K + 1K) allows 2.
  o = estimate_occupancy(h100, 256, 32, 100 * 1024);
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.limited_by, "shared_memory");
  // 64 threads, 16 regs, no smem: the 32-block limit binds before threads (2048/64 = 32).
  EXPECT_EQ(estimate_occupancy(h100, 64, 16, 0).blocks_per_sm, 32);
  // Over the register limit per thread, or over the block's shared memory: nothing is resident.
  EXPECT_EQ(estimate_occupancy(h100, 128, 300, 0).blocks_per_sm, 0);
  EXPECT_EQ(estimate_occupancy(h100, 128, 32, 300 * 1024).blocks_per_sm, 0);
}

TEST(perf_model, one_partial_wave_is_worked_by_hand) {
  const occupancy_estimate occ{1, 8, "registers"};
  // 256x256x128: 4 blocks on 10 SMs, one each. A block does 2*128*128*128 flops
  // at 0.85 TFLOP/s (Ampere mma efficiency), with 8 warps hiding latency fully.
  const prediction r = predict(toy(), bf16(256, 256, 128), tile128(), occ);
  const double block_us = 2.0 * 128 * 128 * 128 / 0.85e12 * 1e6;
  EXPECT_EQ(r.blocks, 4);
  EXPECT_NEAR(r.compute_us, block_us, 1e-9);
  // Its k-loop: 4 k-tiles of 32, two in flight (3 stages, mma's consumers hold one), an L2
  // round trip (0.5 us) per two: 1 us, which joins the math by the 4-norm (7 parts in 10^4).
  const double latency_us = 128.0 / 32 * 0.5 / 2;
  EXPECT_NEAR(r.latency_us, latency_us, 1e-12);
  EXPECT_NEAR(r.time_us, std::pow(std::pow(block_us, 4) + std::pow(latency_us, 4), 0.25) + 3.0, 1e-9);  // + launch
  EXPECT_GT(r.time_us, block_us + 3.0);
  EXPECT_NEAR(r.wave_efficiency, 0.4, 1e-12);
  EXPECT_EQ(r.bound, "compute");
}

// A k-loop whose loads take longer than its math: one k-tile in flight (2 stages) and an
// L2 round trip each, 0.5 us per k-tile against 0.3 of math: the chain sets the time.
TEST(perf_model, a_k_loop_with_one_tile_in_flight_waits_out_each_round_trip) {
  const occupancy_estimate occ{1, 8, "registers"};
  device_spec d = toy();
  d.peak_tflops_bf16 = 10 * 2.0 * 128 * 128 * 32 / 0.85 / 0.3e-6 / 1e12;  // 0.3 us a k-tile
  const tile_config two = mma_tile(128, 128, 32, 2, 2, 2), four = mma_tile(128, 128, 32, 2, 2, 4);
  const prediction r2 = predict(d, bf16(128, 128, 32 * 64), two, occ);
  const prediction r4 = predict(d, bf16(128, 128, 32 * 64), four, occ);
  EXPECT_NEAR(r2.latency_us, 64 * 0.5, 1e-9);
  EXPECT_NEAR(r4.latency_us, 64 * 0.5 / 3, 1e-9);
  EXPECT_GT(r2.time_us - 3.0, r2.latency_us);  // past both the chain and the math
  EXPECT_LT(r4.time_us, r2.time_us);
}

TEST(perf_model, wave_and_tile_quantization) {
  const occupancy_estimate occ{1, 8, "registers"};
  // 1280x256: 20 blocks = two full waves on 10 SMs.
  const prediction two = predict(toy(), bf16(1280, 256, 128), tile128(), occ);
  const double block_us = 2.0 * 128 * 128 * 128 / 0.85e12 * 1e6;
  EXPECT_NEAR(two.compute_us, 2 * block_us, 1e-9);
  EXPECT_NEAR(two.waves, 2.0, 1e-12);
  // 1281 rows need an 11th block row: 22 blocks, a third wave for two of them.
  const prediction three = predict(toy(), bf16(1281, 256, 128), tile128(), occ);
  EXPECT_NEAR(three.compute_us, 3 * block_us, 1e-9);
  // 129 rows in 128-row tiles: half the padded tile work is useful.
  EXPECT_NEAR(predict(toy(), bf16(129, 256, 128), tile128(), occ).tile_efficiency, 129.0 / 256, 1e-12);
  // A partial k-tile still costs a whole one.
  EXPECT_NEAR(predict(toy(), bf16(256, 256, 97), tile128(), occ).compute_us, block_us, 1e-9);
}

TEST(perf_model, memory_roof) {
  device_spec d = toy();
  d.memory_bandwidth_gbs = 1;  // 1 GB/s: DRAM dominates
  d.l2_bandwidth_gbs = 10;
  const occupancy_estimate occ{1, 8, "registers"};
  const prediction r = predict(d, bf16(256, 256, 128), tile128(), occ);
  // DRAM: (256*128 + 128*256 + 256*256) * 2 bytes = 262144 bytes at 0.9 of 1 GB/s (what a
  // large copy draws of the peak; this test read the full peak before issue 21), plus the
  // latency term: the k-loops' loads of A and B (131072 bytes) through 4 blocks with 2 stages of
  // (128 + 128) x 32 bf16 in flight (131072 bytes) wait one window of 0.75 us, less than the 2
  // windows each block waits in turn (4 k-tiles, 2 in flight): 1.5 us.
  const double latency_us = std::max(131072 * 0.75 / 131072, 2 * 0.75);
  EXPECT_NEAR(r.memory_us, 262.144 / 0.9 + latency_us, 1e-9);
  EXPECT_NEAR(r.dram_us, r.memory_us, 1e-12);
  EXPECT_EQ(r.bound, "memory");
  // A calibration may say what share GEMMs really drew.
  EXPECT_NEAR(predict(d, bf16(256, 256, 128), tile128(), occ, 0, 0.5).memory_us, 262.144 / 0.5 + latency_us, 1e-9);
  // beta != 0 reads C as well, after the k-loop: its bytes, not the loop's latency.
  gemm_problem p = bf16(256, 256, 128);
  p.beta = 1;
  EXPECT_NEAR(predict(d, p, tile128(), occ).memory_us, (262.144 + 131.072) / 0.9 + latency_us, 1e-9);
  // L2 serves each block the rows of A and B inside the problem: a 16-row problem in
  // 128-row tiles moves 16 rows of A per k, not 128.
  d.memory_bandwidth_gbs = 1e9;
  d.l2_bandwidth_gbs = 1;
  const prediction thin = predict(d, bf16(16, 256, 128), tile128(), occ);
  EXPECT_NEAR(thin.l2_bytes, (2.0 * 16 + 1 * 256) * 128 * 2 + 16.0 * 256 * 2, 1e-9);
}

TEST(perf_model, few_resident_warps_and_shallow_pipelines_cost_time) {
  // 64x64 warp tiles (32 MMAs a k-step): 8 warps hold 64 a scheduler, 4 hold 32 (mma_family.cpp).
  const prediction full = predict(toy(), bf16(256, 256, 128), tile128(), {1, 8, "registers"});
  const prediction thin = predict(toy(), bf16(256, 256, 128), tile128(), {1, 4, "registers"});
  EXPECT_NEAR(thin.compute_us / full.compute_us, 1 / 0.8, 1e-9);
  tile_config two = tile128();
  two.stages = 2;
  EXPECT_NEAR(predict(toy(), bf16(256, 256, 128), two, {1, 8, "registers"}).compute_us / full.compute_us, 1 / 0.9,
              1e-9);
}

// The mma loop's rate follows the independent MMAs each scheduler holds per k-step, whatever holds
// them: warps or their accumulator tiles. Other families need eight warps an SM.
TEST(perf_model, the_mma_loop_runs_at_the_mmas_each_scheduler_holds) {
  const device_spec& h100 = find_preset("h100-sxm");
  const kernel_family mma = family_named("mma");
  const tile_config narrow = mma_tile(128, 128, 32, 2, 4, 4), wide = mma_tile(128, 128, 32, 2, 2, 4);
  const tile_config small = mma_tile(128, 64, 64, 4, 2, 4);
  EXPECT_NEAR(mma->latency_factor(narrow, 8, h100), 0.8, 1e-12);   // 64x32 warp tiles, one block
  EXPECT_NEAR(mma->latency_factor(narrow, 16, h100), 1.0, 1e-12);  // two blocks
  EXPECT_NEAR(mma->latency_factor(wide, 8, h100), 1.0, 1e-12);     // 64x64 warp tiles, two blocks
  EXPECT_NEAR(mma->latency_factor(small, 16, h100), 0.8, 1e-12);   // 32x32 warp tiles, two blocks
  EXPECT_NEAR(mma->latency_factor(wide, 4, find_preset("a100-sxm-80gb")), 0.8, 1e-12);
  EXPECT_NEAR(family_named("wgmma")->latency_factor(wgmma_tile(128, 256, 64, 2, 4), 8, h100), 1.0, 1e-12);
  EXPECT_NEAR(family_named("wgmma")->latency_factor(wgmma_tile(128, 256, 64, 2, 4), 4, h100), 0.75, 1e-12);
  // In the prediction: the same tile at two blocks an SM computes in 4/5 of the time at one.
  const prediction one = predict(h100, bf16(4096, 4096, 4096), narrow, {1, 8, "registers"});
  const prediction two = predict(h100, bf16(4096, 4096, 4096), narrow, {2, 16, "registers"});
  EXPECT_NEAR(two.compute_us / one.compute_us, 0.8, 1e-9);
}

TEST(perf_model, hopper_mma_sync_is_capped_near_63_percent) {
  const device_spec& h100 = find_preset("h100-sxm");
  tile_config wide = tile128();
  wide.block_n = 256;
  mma_warps_n(wide) = 4;
  const prediction r = predict(h100, bf16(8192, 8192, 8192), wide, {1, 8, "registers"});
  EXPECT_EQ(r.bound, "compute");
  EXPECT_LT(r.tflops, 0.64 * h100.peak_tflops_bf16);
  EXPECT_GT(r.tflops, 0.5 * h100.peak_tflops_bf16);
}

TEST(perf_model, small_thread_tiles_wait_on_shared_memory) {
  const device_spec& h100 = find_preset("h100-sxm");
  tile_config c = simt_tile(64, 64, 8, 4, 4);
  // H100 FFMA: 66.9 TFLOP/s over 132 SMs at 1980 MHz = 256 flop/clock/SM.
  const double rate = h100.peak_tflops_f32 * 1e12 / h100.sm_count;
  // 4x4 (a warp: 2 rows of 16 threads): a warp's k is 1,024 flops, 4 clocks of FFMA, against
  // 8 wavefronts of float4 reads (A's read broadcast, 4 quarter-warps; B's 4): half speed.
  simt_thread_m(c) = simt_thread_n(c) = 4;
  EXPECT_EQ(simt_read_wavefronts(c), 8);
  EXPECT_NEAR(shared_memory_factor(h100, dtype::f32, c, rate), 0.5, 0.01);
  // 8x8 (4 rows of 8): 4,096 flops, 16 clocks, against 24 wavefronts (B's lanes 32 bytes apart
  // meet in the same banks two by two): 2/3 at the full FFMA rate, none at the rate the model
  // gives the family with its loop's issue (0.85 x 65%: 512 FFMA in about 790 instructions).
  simt_thread_m(c) = simt_thread_n(c) = 8;
  EXPECT_EQ(simt_read_wavefronts(c), 24);
  EXPECT_NEAR(shared_memory_factor(h100, dtype::f32, c, rate), 2.0 / 3, 0.01);
  const double issue = simt_family().issue_factor(c, dtype::f32, h100);
  EXPECT_NEAR(issue, 0.65, 0.01);
  EXPECT_NEAR(shared_memory_factor(h100, dtype::f32, c, rate * 0.85 * issue), 1.0, 0.01);
  // The recorded pair: t8x4 and t4x8 in 64x128 issue alike, but t4x8's B reads take 16
  // wavefronts where t8x4's take 4; measured 1.43x slower on the H100 (2026-11-23).
  EXPECT_EQ(simt_read_wavefronts(simt_tile(64, 128, 16, 8, 4)), 12);
  EXPECT_EQ(simt_read_wavefronts(simt_tile(64, 128, 16, 4, 8)), 20);
  // A 64x64 bf16 warp tile is compute-bound on mma.sync.
  const tile_config m = mma_tile(128, 128, 32, 2, 2, 3);
  EXPECT_DOUBLE_EQ(shared_memory_factor(h100, dtype::bf16, m, h100.peak_tflops_bf16 * 1e12 * 0.63 / h100.sm_count), 1.0);
}

// Skinny problems: 64 or 128 blocks on 132 SMs cannot draw the H100's DRAM
// and L2 bandwidth, so the model calls them memory-bound at their real block
// count; split-K multiplies the blocks and is predicted faster.
TEST(perf_model, skinny_problems_are_memory_bound_and_split_k_pays) {
  const device_spec& h100 = find_preset("h100-sxm");
  struct skinny_case {
    std::int64_t m;
    tile_config tile;
    std::int64_t blocks;
  };
  for (const skinny_case& s : {skinny_case{16, mma_tile(64, 64, 64, 2, 2, 3), 64},
                               skinny_case{128, mma_tile(64, 64, 64, 2, 2, 3), 128},
                               skinny_case{128, mma_tile(128, 64, 64, 2, 2, 3), 64}}) {
    const gemm_problem p = bf16(s.m, 4096, 4096);
    tile_config c = s.tile;
    const auto occ = estimate_occupancy(h100, c.threads(), 128, c.smem_bytes(p.type, p.layout));
    const prediction plain = predict(h100, p, c, occ);
    EXPECT_EQ(plain.blocks, s.blocks);
    EXPECT_EQ(plain.bound, "memory") << s.m << " " << c.id();
    if (s.blocks > 64) continue;  // 128 blocks already reach most SMs
    c.split_k = 2;
    const prediction split = predict(h100, p, c, occ);
    EXPECT_EQ(split.blocks, plain.blocks * 2);
    // 0.85, not 0.8 as before DRAM's latency term was added to its bandwidth term rather
    // than compared with it: split-K shortens only the latency term (128x4096x4096 in
    // 128x64 tiles: 19.4 us over 23.9).
    EXPECT_LT(split.time_us, 0.85 * plain.time_us) << s.m << " " << c.id();
    // The operands still take their time at the full DRAM bandwidth.
    const double roof_us = static_cast<double>(p.operand_bytes()) / (h100.memory_bandwidth_gbs * 1e3);
    EXPECT_GT(split.memory_us, roof_us) << s.m;
  }
  // A square problem has blocks enough: split-K only adds partial traffic.
  const gemm_problem big = bf16(4096, 4096, 4096);
  tile_config c = mma_tile(128, 128, 32, 2, 4, 3);
  const auto occ = estimate_occupancy(h100, c.threads(), 128, c.smem_bytes(big.type, big.layout));
  const prediction plain = predict(h100, big, c, occ);
  c.split_k = 2;
  // Compute-bound since L2 is 14.9 TB/s (it was memory-bound at 7.5, and the
  // partials made it slower): the partials now hide under the compute, so the
  // split is not faster, and it moves more bytes (which loses the tie).
  const prediction split = predict(h100, big, c, occ);
  EXPECT_GE(split.time_us, plain.time_us);
  EXPECT_GT(split.l2_bytes, plain.l2_bytes);
}

// Split-K through a workspace (mma): after the k-loops each tile's last slice reads the split
// partial tiles of its rows back at its SM's share of L2 bandwidth, after an L2 round trip for
// the count; about one block in split of the busiest SM's pays it. Without a split, nothing.
TEST(perf_model, split_k_pays_its_last_slices_reduction) {
  const device_spec& h100 = find_preset("h100-sxm");
  const gemm_problem p = bf16(128, 4096, 4096);
  tile_config c = mma_tile(128, 128, 64, 2, 4, 4);
  const auto occ = estimate_occupancy(h100, c.threads(), 128, c.smem_bytes(p.type, p.layout));
  ASSERT_EQ(occ.blocks_per_sm, 1);
  EXPECT_EQ(predict(h100, p, c, occ).fixup_us, 0);
  const double sm_l2_gbs = h100.l2_bandwidth_gbs / h100.sm_count;
  // Its 256 threads each take 128 x 128 / 8 / 256 = 8 items of 8 bf16 of C and read each item's
  // partials one slice after another, every load awaited: 8 x split L2 hits of 0.15 us, longer
  // than the bytes take at the SM's share of L2 bandwidth (split x 64 KiB: 0.58 us a slice).
  EXPECT_EQ(family_named("mma")->split_k_reduction_round_trips(c, p), 0);
  for (const int split : {2, 4, 8}) {
    c.split_k = split;
    EXPECT_EQ(family_named("mma")->split_k_reduction_round_trips(c, p), 8.0 * split);
    const prediction r = predict(h100, p, c, occ);
    // 32 tiles x split blocks on 132 SMs, one each: the busiest SM runs one block, one tail.
    const double tails = std::ceil(std::ceil(32.0 * split / 132) / split);
    const double bandwidth_us = split * 128.0 * 128 * 4 / (sm_l2_gbs * 1e3), waits_us = 8.0 * split * 0.15;
    EXPECT_GT(waits_us, bandwidth_us);
    EXPECT_NEAR(r.fixup_us, tails * (waits_us + 0.5), 1e-9) << split;
    // The tail is serial: it is in the time beside the k-loop's.
    EXPECT_GE(r.time_us, std::max(r.compute_us, r.memory_us) + r.fixup_us) << split;
  }
  // A 16-row problem's partial tiles hold its 16 rows only: 16 x 16 items, one a thread.
  c.split_k = 4;
  const prediction skinny = predict(h100, bf16(16, 4096, 4096), c, occ);
  EXPECT_NEAR(skinny.fixup_us, std::max(4 * 16.0 * 128 * 4 / (sm_l2_gbs * 1e3), 4 * 0.15) + 0.5, 1e-9);
  // A family that reduces inside a cluster waits out no such hits.
  EXPECT_EQ(family_named("wgmma")->split_k_reduction_round_trips(c, p), 0);
}

// Split-K inside a cluster (wgmma): each peer stores its whole fp32 partial tile into the leader's
// shared memory and the leader waits for them before its epilogue; per tile the busiest SM runs,
// the split - 1 partial tiles through its SM's share of L2 bandwidth and one round trip (0.5 us).
TEST(perf_model, split_k_in_a_cluster_pays_the_leaders_reduction) {
  const device_spec& h200 = find_preset("h200");
  const occupancy_estimate occ = estimate_occupancy(h200, 384, 64, 150 * 1024);  // one CTA an SM
  ASSERT_EQ(occ.blocks_per_sm, 1);
  const double sm_l2_gbs = h200.l2_bandwidth_gbs / h200.sm_count;
  auto at = [&](int split, std::int64_t m) {
    tile_config c = wgmma_tile(64, 128, 64, 1, 7);
    c.split_k = split;
    return predict(h200, bf16(m, 4096, 4096), c, occ, 0.8);
  };
  EXPECT_EQ(at(1, 128).fixup_us, 0);
  // 2 x 32 tiles, split in pairs: 128 CTAs, 66 pairs fit at once, one tile a CTA.
  const double tile_bytes = 64.0 * 128 * 4;
  EXPECT_NEAR(at(2, 128).fixup_us, tile_bytes / (sm_l2_gbs * 1e3) + 0.5, 1e-9);
  // The whole tile crosses, the rows past M too: a 16-row problem pays as much.
  EXPECT_NEAR(at(2, 16).fixup_us, at(2, 128).fixup_us, 1e-9);
  // In fours: three partial tiles to the leader, and 2 x 32 tiles need 64 clusters where 31 fit
  // at once: the busiest SM runs three tiles' reductions.
  EXPECT_NEAR(at(4, 128).fixup_us, 3 * (3 * tile_bytes / (sm_l2_gbs * 1e3) + 0.5), 1e-9);
  // The tail follows the k-loop: it is in the time.
  const prediction r = at(2, 128);
  EXPECT_GE(r.time_us, std::max(r.compute_us, r.memory_us) + r.fixup_us);
  // A family that reduces through global memory has its own tail (above), not this one.
  EXPECT_FALSE(family_named("mma")->reduces_split_k_in_cluster());
  EXPECT_TRUE(family_named("wgmma")->reduces_split_k_in_cluster());
}

// Rows that are not 16-byte aligned: mma copies them one element at a time, each load
// awaited (kernels_templates/mma/mma_copies.cuh), so its panels take their bytes at one element
// per thread in flight; 16-byte aligned rows and the other families are not affected.
TEST(perf_model, unaligned_rows_are_copied_one_element_at_a_time) {
  const device_spec& h100 = find_preset("h100-sxm");
  const tile_config c = mma_tile(128, 64, 64, 4, 2, 3);
  const auto occ = estimate_occupancy(h100, c.threads(), 128, c.smem_bytes(dtype::bf16, layout{false, true}));
  ASSERT_EQ(occ.blocks_per_sm, 2);
  auto nt = [](std::int64_t k) {
    gemm_problem p = bf16(1000, 3000, k);
    p.layout = layout{false, true};  // A M x K, B N x K: both rows K elements long
    return p;
  };
  const prediction aligned = predict(h100, nt(776), c, occ);  // 1552-byte rows
  const prediction odd = predict(h100, nt(777), c, occ);      // 1554-byte rows
  // 8 x 47 = 376 blocks, 264 resident at once (2 per SM), 256 threads with one 2-byte element
  // each in flight; A's rows are read by 47 block columns, B's by 8 block rows, 832 elements each.
  const double bytes = (47.0 * 1000 + 8.0 * 3000) * 832 * 2;
  EXPECT_NEAR(odd.l2_us, bytes * 0.15 / (264.0 * 256 * 2), 1e-6);
  EXPECT_GT(odd.memory_us, 10 * aligned.memory_us);
  // What the floor allows: the variant measured there (2026-11-22) took 190.4 us.
  EXPECT_LT(odd.memory_us, 190.4);
  // An aligned operand keeps its 16-byte copies: with B's rows 3000 elements long (nn),
  // only A's panels are copied serially.
  gemm_problem nn = nt(777);
  nn.layout = layout{};
  EXPECT_NEAR(predict(h100, nn, c, occ).l2_us, 47.0 * 1000 * 832 * 2 * 0.15 / (264.0 * 256 * 2), 1e-6);
  // wgmma refuses such rows (TMA), simt loads them in unrolled element loads: no serial term.
  const tile_config s = simt_tile(128, 128, 8, 8, 8);
  const auto s_occ = estimate_occupancy(h100, s.threads(), 128, s.smem_bytes(dtype::bf16, layout{false, true}));
  EXPECT_NEAR(predict(h100, nt(777), s, s_occ).memory_us, predict(h100, nt(776), s, s_occ).memory_us,
              0.01 * predict(h100, nt(776), s, s_occ).memory_us);
}

TEST(perf_model, fp8_reads_one_byte_operands_and_writes_bf16_c) {
  // An fp8 problem's traffic: A and B one byte an element, C two (bf16), as the kernels store it.
  device_spec d = find_preset("h100-sxm");
  d.memory_bandwidth_gbs = 1;  // DRAM dominates
  const occupancy_estimate occ{1, 8, "registers"};
  gemm_problem p = bf16(256, 256, 256);
  p.type = dtype::e4m3;
  p.scaling = scaling_mode::tensor;
  const prediction r = predict(d, p, tile128(), occ);
  EXPECT_NEAR(r.dram_bytes, 256.0 * 256 + 256.0 * 256 + 256.0 * 256 * 2, 1e-9);
  EXPECT_EQ(p.least_traffic_bytes(), 256 * 256 * 4);
}

// A cluster sits inside one GPC: an H200 holds 66 pairs but, as planned, 31 clusters of 4 (32 ran
// as if fewer fit, 2026-12-04). Split-K in clusters of 4 over 32 tiles then runs a second wave of
// clusters, and its compute and its loads' round trips are predicted twice over; with pairs, no such step.
TEST(perf_model, clusters_past_what_fits_at_once_run_a_second_wave) {
  const device_spec& h200 = find_preset("h200");
  EXPECT_EQ(clusters_at_once(h200, 2, 1), 66);
  EXPECT_EQ(clusters_at_once(h200, 4, 1), 31);
  EXPECT_EQ(clusters_at_once(h200, 1, 2), 264);
  auto compute_at = [&](int split, std::int64_t n) {
    tile_config c = wgmma_tile(16, 128, 64, 1, 8);
    set_wgmma_swap_ab(c, true);
    c.split_k = split;
    const gemm_problem p = bf16(16, n, 4096);
    const occupancy_estimate occ = estimate_occupancy(h200, c.threads(), 64, 150 * 1024);  // one CTA an SM
    return predict(h200, p, c, occ, 0.8);
  };
  const prediction k4_32 = compute_at(4, 32 * 128), k4_31 = compute_at(4, 31 * 128);
  EXPECT_GT(k4_32.compute_us, 1.8 * k4_31.compute_us);
  EXPECT_GT(k4_32.waves, 1.0);
  EXPECT_LE(k4_31.waves, 1.0);
  // The second wave's blocks wait out their own fills too: the loads' round trips per window count
  // twice (3% more bytes; without the second round the memory time rose 3%, and the calibrated
  // model put these tiles first at 16 rows, measured 1.66-1.74x the best).
  EXPECT_GT(k4_32.memory_us, 1.1 * k4_31.memory_us);
  const prediction k2_64 = compute_at(2, 64 * 128), k2_63 = compute_at(2, 63 * 128);  // 64 pairs fit
  EXPECT_LT(k2_64.compute_us, 1.1 * k2_63.compute_us);
  EXPECT_LT(k2_64.memory_us, 1.1 * k2_63.memory_us);
}
