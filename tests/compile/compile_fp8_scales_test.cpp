// fp8 with rowwise and block scales (issue 35): one variant of each default tile shape, plain and
// stream-K, with the ping-pong, TMA-store and 2x1-cluster copies, compiles for sm_90a without
// spills or local memory; its SASS runs QGMMA in clean k-groups (no HGMMA) and reads the scales
// (block: loads in the main loop, before the promotion's wait; by TMA (_ts): no loads of them, a
// bulk copy of A's and two cp.async of B's with their arrival on the stage's barrier, a copy
// without them failing that check). Not yet run on a GPU.
#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/search_space.hpp"
#include "core/tune/compile_selection.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "cuda/nvrtc_compiler.hpp"
#include "compile_checks.hpp"
#include "sass_reading.hpp"

using namespace tiletune;
using namespace tiletune_test;

namespace {
int qgmma_per_k_tile(const tile_config& c) { return (c.block_k / 32) * (wgmma_consumer_rows(c) / 64); }

// The global loads of the scales: LDG of 32 bits (the operands come by TMA, C is stored).
int scale_loads(const std::string& sass) {
  int n = 0;
  for (const std::string& i : instructions(sass)) n += i.rfind("LDG.E", 0) == 0 && i.find(".128") == std::string::npos;
  return n;
}
int count_of(const std::string& sass, const char* mnemonic) {
  int n = 0;
  for (const std::string& i : instructions(sass)) n += i.rfind(mnemonic, 0) == 0 || i.find(std::string(" ") + mnemonic) != std::string::npos;
  return n;
}
// What scales by TMA show in SASS, or why not: a bulk copy (UBLKCP) of A's scales in the producer,
// and fewer 32-bit global loads than the tile that loads them (`loads`: its count; B's two remain).
std::string tma_scale_problems(const std::string& sass, int loads) {
  std::string why;
  if (count_of(sass, "UBLKCP") < 1) why += "no bulk copy; ";
  if (scale_loads(sass) >= loads) why += fmt::format("{} 32-bit loads, the loading tile {}; ", scale_loads(sass), loads);
  return why;
}
}  // namespace

TEST(compile_fp8_scales, scaled_variants_compile_without_spills_and_run_qgmma) {
  const device_spec& d = find_preset("h100-sxm");
  // A prefill shape with each scaling, a decode step (16 rows) whose swap-AB tiles take rowwise
  // or block scales, and a grouped GEMM (rows 0: Mixtral-like experts) with each scaling.
  for (const auto& [s, rows] : {std::pair{scaling_mode::rowwise, 4096}, std::pair{scaling_mode::block, 4096},
                                std::pair{scaling_mode::rowwise, 16}, std::pair{scaling_mode::block, 16},
                                std::pair{scaling_mode::rowwise, 0},
                                std::pair{scaling_mode::block, 0}}) {
    gemm_problem p;
    p.m = rows, p.n = 7168, p.k = 4096;
    if (rows == 0)
      p = grouped_problem(groups_of_rows({512, 0, 77, 1024, 300, 5, 640, 129}, group_layout::contiguous), 14336, 4096,
                          dtype::e4m3, parse_layout("nt"));
    p.type = dtype::e4m3;
    p.layout = parse_layout("nt");
    p.scaling = s;
    std::vector<compile_job> jobs;
    std::vector<tile_config> tiles;
    std::set<std::tuple<int, int, int, int, int, int>> kinds;
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d)) {
      if (check_constraints(c, p, d) || c.stages != 4 || (rows == 16 && !wgmma_swap_ab(c))) continue;
      if (!kinds.insert({c.block_m * 10 + wgmma_consumers(c), c.block_n, wgmma_stream_k(c), wgmma_pingpong(c),
                         wgmma_tma_store(c) + 2 * c.cluster_m + 4 * c.split_k, wgmma_promotion(c)})
               .second)
        continue;
      jobs.push_back(make_compile_job(c, p.type, p.layout, d));
      tiles.push_back(c);
    }
    ASSERT_GE(jobs.size(), rows == 16 || rows == 0 ? 3u : 10u) << to_string(s) << " " << rows;
    // Every block-scaled prefill tile copies A's scales by TMA; the whole tiles of one consumer
    // schedule (no stream-K, clusters, ping-pong or TMA store: one per shape) also compiled loading
    // them, for the comparison (a copy that loads them must fail the copy's check: the planted defect).
    std::vector<std::size_t> loading_copy(jobs.size(), 0);
    if (s == scaling_mode::block && rows == 4096) {
      const std::size_t copying = tiles.size();
      for (std::size_t i = 0; i < copying; ++i) {
        EXPECT_TRUE(wgmma_tma_scales(tiles[i])) << tiles[i].id();
        const tile_config& c = tiles[i];
        if (wgmma_stream_k(c) || c.cluster_m > 1 || wgmma_pingpong(c) || wgmma_tma_store(c)) continue;
        tile_config loads = tiles[i];
        set_wgmma_tma_scales(loads, false);
        loading_copy[i] = jobs.size();
        jobs.push_back(make_compile_job(loads, p.type, p.layout, d));
        tiles.push_back(loads);
      }
    }
    const auto results = compile_cleanly(jobs);
    const std::vector<std::string> listings = sass_of(jobs, results);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (!results[i].ok) continue;
      const std::string& sass = listings[i];
      EXPECT_EQ(sass.find("HGMMA"), std::string::npos) << jobs[i].name;
      for (const auto& problem : hgmma_issue_problems(sass, qgmma_per_k_tile(tiles[i]), "QGMMA"))
        ADD_FAILURE() << jobs[i].name << ": " << problem;
      // (B's one block of a 128-column tile by TMA: one load of B's scale, none of A's)
      EXPECT_GE(scale_loads(sass), wgmma_tma_scales(tiles[i]) ? 1 : 2) << jobs[i].name << ": the scales are never read";
      if (!wgmma_tma_scales(tiles[i])) continue;
      const std::size_t l = loading_copy[i];
      if (l == 0) {  // no loading copy: the bulk copy at least
        EXPECT_NE(sass.find("UBLKCP"), std::string::npos) << jobs[i].name;
        continue;
      }
      ASSERT_TRUE(results[l].ok) << jobs[l].name;
      const std::string& loading = listings[l];
      EXPECT_EQ(tma_scale_problems(sass, scale_loads(loading)), "") << jobs[i].name;
      EXPECT_NE(tma_scale_problems(loading, scale_loads(loading)), "") << jobs[l].name << " passes as copying its scales";
    }
    std::printf("%zu %s-scaled fp8 variants of %s compiled\n", jobs.size(), std::string(to_string(s)).c_str(),
                rows ? fmt::format("{} rows", rows).c_str() : "grouped rows");
  }
}

// --out-dtype: fp8 writing f16 or f32 C compiles the same way (the TMA store only for f16).
TEST(compile_fp8_scales, f16_and_f32_c_compile_without_spills_and_run_qgmma) {
  const device_spec& d = find_preset("h100-sxm");
  for (element_type out : {element_type::f16, element_type::f32}) {
    gemm_problem p;
    p.m = p.n = p.k = 4096;
    p.type = dtype::e4m3;
    p.layout = parse_layout("nt");
    p.scaling = scaling_mode::tensor;
    p.out = out;
    std::vector<compile_job> jobs;
    std::vector<tile_config> tiles;
    std::set<std::tuple<int, int, int, int>> kinds;
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d)) {
      if (check_constraints(c, p, d) || c.stages != 4 || c.raster_along_n || c.cluster_m > 1 || wgmma_promotion(c) > 1)
        continue;
      if (!kinds.insert({c.block_m * 10 + wgmma_consumers(c), c.block_n, wgmma_pingpong(c), wgmma_tma_store(c)}).second)
        continue;
      jobs.push_back(make_compile_job(c, p.type, p.layout, d));
      tiles.push_back(c);
    }
    ASSERT_GE(jobs.size(), out == element_type::f16 ? 8u : 5u) << to_string(out);
    const auto results = compile_cleanly(jobs);
    const std::vector<std::string> listings = sass_of(jobs, results);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (!results[i].ok) continue;
      EXPECT_NE(jobs[i].name.find(out == element_type::f16 ? "_of16" : "_of32"), std::string::npos) << jobs[i].name;
      const std::string& sass = listings[i];
      for (const auto& problem : hgmma_issue_problems(sass, qgmma_per_k_tile(tiles[i]), "QGMMA"))
        ADD_FAILURE() << jobs[i].name << ": " << problem;
    }
  }
}

// Fast accumulation (_fa): one accumulator set, every QGMMA into it. The tensor-scaled copies of
// 128x128 and 128x256 (128 accumulators a thread, which promotion's two sets could not hold)
// compile without spills, run QGMMA in clean k-groups, and add no partial sums in the main loop:
// fewer FADD than the promoting copy of the same tile (a planted promotion is caught: the _p1
// copy itself fails the check).
TEST(compile_fp8_scales, fast_accumulation_compiles_with_one_accumulator_set) {
  const device_spec& d = find_preset("h100-sxm");
  gemm_problem p;
  p.m = p.n = p.k = 4096;
  p.type = dtype::e4m3;
  p.layout = parse_layout("nt");
  p.scaling = scaling_mode::tensor;
  auto fast = [](int bn, int stages) {
    tile_config c = wgmma_tile(128, bn, 128, 2, stages);
    set_wgmma_fast_accumulation(c, true);
    return c;
  };
  tile_config promoted = wgmma_tile(128, 128, 128, 2, 4);
  set_wgmma_promotion(promoted, 1);
  const std::vector<tile_config> tiles = {fast(128, 4), fast(256, 3), promoted};
  std::vector<compile_job> jobs;
  for (const tile_config& c : tiles) {
    ASSERT_FALSE(check_constraints(c, p, d)) << c.id() << ": " << check_constraints(c, p, d)->message;
    jobs.push_back(make_compile_job(c, p.type, p.layout, d));
  }
  const auto results = compile_cleanly(jobs);
  const std::vector<std::string> listings = sass_of(jobs, results);
  auto fadds = [](const std::string& sass) {
    int n = 0;
    for (const std::string& i : instructions(sass)) n += i.find("FADD") != std::string::npos;
    return n;
  };
  std::vector<int> counts;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_TRUE(results[i].ok) << jobs[i].name;
    const std::string& sass = listings[i];
    EXPECT_EQ(sass.find("HGMMA"), std::string::npos) << jobs[i].name;
    for (const auto& problem : hgmma_issue_problems(sass, qgmma_per_k_tile(tiles[i]), "QGMMA"))
      ADD_FAILURE() << jobs[i].name << ": " << problem;
    counts.push_back(fadds(sass));
  }
  // The promoting 128x128 adds its 64 partials a thread per k-tile; the fast one none of them.
  std::printf("FADD: %d fast, %d promoting\n", counts[0], counts[2]);
  EXPECT_LE(counts[0] + 64, counts[2]) << counts[0] << " FADD in " << jobs[0].name << ", " << counts[2] << " in "
                                       << jobs[2].name;
}

// Mixed fp8 (e4m3_e5m2, e5m2_e4m3): the QGMMAs name A's format then B's (E4M3.E5M2), swapped in a
// swap-AB decode tile whose kernel A is the problem's B; no spills, clean k-groups.
TEST(compile_fp8_scales, mixed_formats_compile_to_qgmma_of_both) {
  const device_spec& d = find_preset("h100-sxm");
  std::vector<compile_job> jobs;
  std::vector<tile_config> tiles;
  std::vector<std::string> want;
  for (dtype t : {dtype::e4m3_e5m2, dtype::e5m2_e4m3}) {
    gemm_problem p;
    p.m = 16;
    p.n = p.k = 4096;
    p.type = t;
    p.layout = parse_layout("nt");
    tile_config plain = wgmma_tile(128, 128, 128, 2, 4);
    set_wgmma_promotion(plain, 1);
    tile_config swab = wgmma_tile(16, 128, 128, 1, 8);
    set_wgmma_promotion(swab, 1);
    set_wgmma_swap_ab(swab, true);
    const std::string a(to_string(row_of(t).a)), b(to_string(row_of(t).b));
    auto upper = [](std::string s) {
      for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      return s;
    };
    for (const auto& [c, types] : {std::pair{plain, upper(a + "." + b)}, {swab, upper(b + "." + a)}}) {
      ASSERT_FALSE(check_constraints(c, p, d)) << c.id() << ": " << check_constraints(c, p, d)->message;
      jobs.push_back(make_compile_job(c, t, p.layout, d));
      tiles.push_back(c);
      want.push_back(".F32." + types);
    }
  }
  const auto results = compile_cleanly(jobs);
  const std::vector<std::string> listings = sass_of(jobs, results);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!results[i].ok) continue;
    const std::string& sass = listings[i];
    int qgmma = 0, right = 0;
    for (const std::string& ins : instructions(sass))
      if (ins.rfind("QGMMA", 0) == 0) {
        ++qgmma;
        right += ins.find(want[i]) != std::string::npos;
      }
    EXPECT_GT(qgmma, 0) << jobs[i].name;
    EXPECT_EQ(right, qgmma) << jobs[i].name << ": QGMMA without " << want[i];
    for (const auto& problem : hgmma_issue_problems(sass, qgmma_per_k_tile(tiles[i]), "QGMMA"))
      ADD_FAILURE() << jobs[i].name << ": " << problem;
  }
}

// The mma family's rowwise scales (_rw) on sm_89: e4m3 nt of a 4-warp and an 8-warp tile and a
// split-K tile compile without spills; their k-loops run the unscaled kernel's QMMAs in no more
// instructions (the scales live in the epilogue only; ptxas schedules split-K's edge loops a few
// instructions apart), and the epilogue loads the scales and multiplies by them (more 32-bit loads
// and FMULs than the unscaled kernel). Not yet run on a GPU.
TEST(compile_mma_rowwise, scales_change_the_epilogue_and_not_the_main_loop) {
  const device_spec& d = find_preset("l40s");
  std::vector<compile_job> jobs;
  std::vector<std::string> ids;
  for (const auto& [rows, id] : {std::pair{4096, "mma_128x128x64_w2x2_s3_rw"},
                                 std::pair{4096, "mma_128x256x64_w2x4_s3_rw"},
                                 std::pair{16, "mma_64x64x64_w2x2_s4_k4_rw"}}) {
    gemm_problem p;
    p.m = rows, p.n = p.k = 4096;
    p.type = dtype::e4m3;
    p.scaling = scaling_mode::rowwise;
    p.layout = parse_layout("nt");
    const std::vector<tile_config> space = problem_search_space(family_named("mma"), p, d);
    const auto it = std::find_if(space.begin(), space.end(), [&](const tile_config& c) { return c.id() == id; });
    ASSERT_NE(it, space.end()) << id;
    ASSERT_FALSE(check_constraints(*it, p, d)) << check_constraints(*it, p, d)->message;
    jobs.push_back(make_compile_job(*it, p.type, p.layout, d));
    tile_config plain = *it;
    set_mma_rowwise_scales(plain, false);
    jobs.push_back(make_compile_job(plain, p.type, p.layout, d));
    ids.push_back(id);
  }
  const auto results = compile_cleanly(jobs);
  const std::vector<std::string> listings = sass_of(jobs, results);
  ASSERT_EQ(results.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); i += 2) {
    if (!results[i].ok || !results[i + 1].ok) continue;
    const std::string& rw = listings[i];
    const std::string& plain = listings[i + 1];
    const auto loops = hmma_loops(rw), plain_loops = hmma_loops(plain);
    ASSERT_EQ(loops.size(), plain_loops.size()) << ids[i / 2];
    ASSERT_FALSE(loops.empty()) << ids[i / 2];
    for (std::size_t j = 0; j < loops.size(); ++j) {
      EXPECT_GT(loops[j].hmma, 0) << ids[i / 2];
      std::printf("%s loop %zu: %d instructions, %d QMMA (unscaled: %d, %d)\n", ids[i / 2].c_str(), j,
                  loops[j].instructions, loops[j].hmma, plain_loops[j].instructions, plain_loops[j].hmma);
      EXPECT_LE(loops[j].instructions, plain_loops[j].instructions) << ids[i / 2] << " loop " << j;
      EXPECT_EQ(loops[j].hmma, plain_loops[j].hmma) << ids[i / 2] << " loop " << j;
    }
    EXPECT_GT(scale_loads(rw), scale_loads(plain)) << ids[i / 2];
    EXPECT_GE(count_of(rw, "FMUL") - count_of(plain, "FMUL"), 8) << ids[i / 2];  // 8 columns a bf16 row piece
  }
}
