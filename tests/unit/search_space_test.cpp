#include "core/gemm/search_space.hpp"
#include "core/gemm/families/simt/simt_family.hpp"
#include "core/gemm/families/mma/mma_family.hpp"

#include <array>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace tiletune;

namespace {
gemm_problem space_problem(dtype t, const char* l = "nn") {
  gemm_problem p;
  p.m = p.n = p.k = 4096;
  p.type = t;
  p.layout = parse_layout(l);
  return p;
}
tile_config mma(int bm, int bn, int bk, int wm, int wn, int stages) { return mma_tile(bm, bn, bk, wm, wn, stages); }
}  // namespace

TEST(search_space, families_by_dtype) {
  EXPECT_EQ(families_for(dtype::f32), std::vector<kernel_family>{family_named("simt")});
  EXPECT_EQ(families_for(dtype::bf16), (std::vector<kernel_family>{family_named("mma"), family_named("wgmma")}));
}

TEST(search_space, ids_are_unique_and_round_trip_through_json) {
  for (dtype t : {dtype::f32, dtype::tf32, dtype::f16}) {
    for (kernel_family f : families_for(t)) {
      std::set<std::string> ids;
      for (const auto& c : default_search_space(f, t)) {
        EXPECT_TRUE(ids.insert(c.id()).second) << c.id();
        EXPECT_EQ(tile_from_json(tile_to_json(c)), c) << c.id();
      }
      EXPECT_GT(ids.size(), 20u);
    }
  }
}

// Every preset keeps variants of every dtype, but datacenter Blackwell's tensor-core dtypes (its
// tcgen05 is not built, mma.sync's rate there unknown) and the V100's (sm_70: no family is built
// for Volta's tensor cores): refused there, each by "architecture".
TEST(search_space, every_dtype_keeps_variants_on_every_preset) {
  for (const auto& d : device_presets()) {
    const bool blackwell = (d.compute_capability >= 100 && d.compute_capability < 120) || d.compute_capability < 80;
    for (dtype t : {dtype::f32, dtype::tf32, dtype::f16, dtype::bf16}) {
      int kept = 0, architecture = 0, all = 0;
      for (kernel_family f : families_for(t))
        for (const auto& c : default_search_space(f, t)) {
          const auto v = check_constraints(c, space_problem(t), d);
          kept += !v;
          architecture += v && v->constraint == "architecture";
          ++all;
        }
      if (blackwell && t != dtype::f32) {
        EXPECT_EQ(architecture, all) << d.preset << " " << to_string(t);
      } else {
        EXPECT_GE(kept, 10) << d.preset << " " << to_string(t);
      }
    }
  }
}

TEST(tile_config, shared_memory_is_worked_by_hand) {
  // bf16 nt, 128x128x32, 3 stages: A [128][32], B [128][32] unpadded (swizzled), 2 bytes each.
  EXPECT_EQ(mma(128, 128, 32, 2, 2, 3).smem_bytes(dtype::bf16, parse_layout("nt")), 3 * (128 * 32 + 128 * 32) * 2);
  // bf16 nn: B is [32][128]; the same bytes.
  EXPECT_EQ(mma(128, 128, 32, 2, 2, 3).smem_bytes(dtype::bf16, parse_layout("nn")), 3 * (128 * 32 + 32 * 128) * 2);
  // tf32 tn: A [16][128], B [16][64], 4 bytes.
  EXPECT_EQ(mma(128, 64, 16, 2, 2, 2).smem_bytes(dtype::tf32, parse_layout("tn")), 2 * (16 * 128 + 16 * 64) * 4);
  // 64x256x16 bf16 with 4 warp rows, 2 stages: the epilogue's fp32 staging of
  // 4 x 16 rows x 256 columns (65536) is larger than the pipeline (2 x 320 x 16 x 2).
  EXPECT_EQ(mma(64, 256, 16, 4, 2, 2).smem_bytes(dtype::bf16, parse_layout("nn")), 4 * 16 * 256 * 4);
  const tile_config s = simt_tile(64, 128, 8, 8, 8);
  EXPECT_EQ(s.threads(), 128);
  EXPECT_EQ(s.smem_bytes(dtype::f32, parse_layout("nn")), 2 * (8 * 64 + 8 * 128) * 4);
  EXPECT_EQ(s.id(), "simt_64x128x8_t8x8_v4");
  EXPECT_EQ(mma(128, 256, 32, 2, 4, 3).id(), "mma_128x256x32_w2x4_s3");
}

TEST(constraints, each_is_named) {
  const device_spec& h100 = find_preset("h100-sxm");
  const device_spec& l4 = find_preset("l4");
  auto broken = [](const tile_config& c, const gemm_problem& p, const device_spec& d) {
    auto v = check_constraints(c, p, d);
    return v ? v->constraint : std::string("none");
  };
  EXPECT_EQ(broken(mma(128, 128, 32, 2, 2, 3), space_problem(dtype::bf16), h100), "none");
  EXPECT_EQ(broken(mma(128, 128, 32, 2, 2, 3), space_problem(dtype::f32), h100), "dtype");
  EXPECT_EQ(broken(mma(64, 64, 32, 4, 2, 3), space_problem(dtype::bf16), h100), "warp_tile");     // 16x32
  EXPECT_EQ(broken(mma(128, 256, 32, 4, 2, 3), space_problem(dtype::bf16), h100), "warp_tile");   // 32x128
  EXPECT_EQ(broken(mma(256, 256, 32, 2, 2, 3), space_problem(dtype::bf16), h100), "accumulator_registers");
  EXPECT_EQ(broken(mma(128, 128, 24, 2, 2, 3), space_problem(dtype::bf16), h100), "block_k");
  EXPECT_EQ(broken(mma(128, 128, 64, 2, 2, 3), space_problem(dtype::bf16), h100), "register_pressure");
  EXPECT_EQ(broken(mma(128, 128, 32, 2, 2, 3), space_problem(dtype::tf32), h100), "register_pressure");
  EXPECT_EQ(broken(mma(128, 128, 16, 2, 2, 3), space_problem(dtype::tf32), h100), "none");
  // 5 stages of 256x128x32 bf16 nt need 5*(256*32 + 128*32)*2 = 122880 bytes: fits an H100, not an L4.
  EXPECT_EQ(broken(mma(256, 128, 32, 4, 2, 5), space_problem(dtype::bf16, "nt"), h100), "none");
  EXPECT_EQ(broken(mma(256, 128, 32, 4, 2, 5), space_problem(dtype::bf16, "nt"), l4), "shared_memory");
  device_spec volta = h100;
  volta.compute_capability = 70;
  EXPECT_EQ(broken(mma(128, 128, 32, 2, 2, 3), space_problem(dtype::bf16), volta), "architecture");
  gemm_problem wide = space_problem(dtype::bf16);
  wide.m = 1;
  wide.n = 65536 * 64 + 1;
  EXPECT_EQ(broken(mma(64, 64, 32, 2, 2, 3), wide, h100), "grid");

  EXPECT_EQ(broken(simt_tile(32, 32, 8, 8, 8), space_problem(dtype::f32), h100), "threads_per_block");     // 16 threads
  EXPECT_EQ(broken(simt_tile(128, 128, 8, 4, 4), space_problem(dtype::f32), h100),
            "threads_per_block");  // 1024 threads
  // 256 threads x 4 = 1024 elements per load; a 64x8 tile has 512.
  EXPECT_EQ(broken(simt_tile(64, 128, 8, 4, 8), space_problem(dtype::f32), h100), "load_balance");
}

TEST(search_space, split_k_is_offered_where_blocks_leave_sms_idle) {
  const device_spec& h100 = find_preset("h100-sxm");
  gemm_problem skinny = space_problem(dtype::bf16, "nt");
  skinny.m = 16;
  int split = 0;
  std::set<std::string> ids;
  for (const auto& c : problem_search_space(family_named("mma"), skinny, h100)) {
    EXPECT_TRUE(ids.insert(c.id()).second) << c.id();
    EXPECT_EQ(tile_from_json(tile_to_json(c)), c) << c.id();
    if (c.split_k > 1) {
      ++split;
      EXPECT_LE(c.block_m, 64) << c.id();
      const auto launch_tiles = (skinny.n + c.block_n - 1) / c.block_n;
      EXPECT_LT(launch_tiles, h100.sm_count) << c.id();
    }
  }
  EXPECT_GT(split, 5);
  // The square problem gets no split-K, and grouped rasterization instead.
  int square_split = 0, grouped = 0;
  for (const auto& c : problem_search_space(family_named("mma"), space_problem(dtype::bf16, "nt"), h100)) {
    square_split += c.split_k > 1;
    grouped += c.raster_group > 0;
  }
  EXPECT_EQ(square_split, 0);
  EXPECT_GT(grouped, 0);
  // The simt family has no split-K.
  tile_config s = simt_tile(64, 64, 8, 4, 4);
  s.split_k = 2;
  ASSERT_TRUE(check_constraints(s, space_problem(dtype::f32), h100));
  EXPECT_EQ(check_constraints(s, space_problem(dtype::f32), h100)->constraint, "split_k");
}

// The GPU test's thin shapes get split-K variants, so the GPU checks them.
TEST(search_space, the_gpu_tests_thin_shapes_get_split_k) {
  for (auto [m, n, k] : {std::array<std::int64_t, 3>{1, 256, 8192}, std::array<std::int64_t, 3>{20, 320, 5000}}) {
    for (dtype t : {dtype::tf32, dtype::f16, dtype::bf16}) {
      gemm_problem p = space_problem(t, "tn");
      p.m = m;
      p.n = n;
      p.k = k;
      int split = 0;
      for (const auto& c : problem_search_space(family_named("mma"), p, find_preset("h100-sxm")))
        split += c.split_k > 1 && !check_constraints(c, p, find_preset("h100-sxm"));
      EXPECT_GT(split, 3) << m << "x" << n << "x" << k << " " << to_string(t);
    }
  }
}

// A problem's search space names each variant once, on every preset, dtype, family and shape
// (fp8's 64x128 decode ring was also one of its default tiles: listed, compiled and timed twice,
// and `--only` of it ran two).
TEST(search_space, a_problem_space_names_each_variant_once) {
  std::size_t spaces = 0;
  for (const device_spec& d : device_presets())
    for (dtype t : {dtype::f32, dtype::tf32, dtype::f16, dtype::bf16, dtype::e4m3, dtype::e5m2})
      for (std::int64_t m : {1, 16, 128, 4096}) {
        gemm_problem p;
        p.m = m;
        p.n = p.k = 4096;
        p.type = t;
        p.layout = parse_layout("nt");
        for (kernel_family f : families_for(t)) {
          std::set<std::string> ids;
          for (const tile_config& c : problem_search_space(f, p, d))
            EXPECT_TRUE(ids.insert(c.id()).second) << c.id() << " twice for " << p.describe() << " on " << d.name;
          ++spaces;
        }
      }
  EXPECT_GT(spaces, 500u);
}
