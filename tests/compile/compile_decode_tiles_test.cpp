// The tiles a decode shape's search space adds (wgmma_space.hpp, wgmma_problem_space): swap-AB
// (_swab) at 8, 16, 32 and 64 rows, whole and stream-K, and the deep-ring 64 x 128 tile, compile
// for sm_90a without spills or local memory; a swap-AB kernel's SASS issues m64 x BM HGMMAs in
// clean k-groups (the problem's rows as the instruction's N) and stores C element by element (no
// staging in shared memory, no 16-byte vector stores). Not yet run on a GPU.
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_space.hpp"
#include "core/gemm/search_space.hpp"
#include "core/tune/compile_selection.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "cuda/nvrtc_compiler.hpp"
#include "compile_checks.hpp"
#include "sass_reading.hpp"

using namespace tiletune;
using namespace tiletune_test;

namespace {

gemm_problem decode_problem(std::int64_t m) {
  gemm_problem p;
  p.m = m;
  p.n = p.k = 4096;
  p.type = dtype::bf16;
  p.layout = parse_layout("nt");
  return p;
}

// What a swap-AB kernel's SASS must show: HGMMA m64 x BM (the instruction's N is the problem's
// rows), in k-groups of BK/16 x the kernel's m64 tiles per consumer; 16-bit stores of C and no
// STS (its epilogue stages nothing); no local memory. Empty: all there.
std::string swap_ab_sass_problems(const std::string& sass, const tile_config& c) {
  std::string problems;
  const std::string hgmma = fmt::format("HGMMA.64x{}x16", c.block_m);
  if (sass.find(hgmma) == std::string::npos) problems += " no " + hgmma + ";";
  for (const auto& p : hgmma_issue_problems(sass, (c.block_k / 16) * (wgmma_kernel_m(c) / wgmma_consumers(c) / 64)))
    problems += " " + p + ";";
  if (sass.find("STG.E.U16") == std::string::npos) problems += " no STG.E.U16 (C element by element);";
  for (const char* banned : {"STS", "STG.E.128", "LDL", "STL"})
    if (sass.find(banned) != std::string::npos) problems += std::string(" ") + banned + ";";
  return problems;
}

// Evict-first on B: B's TMA loads carry the cache policy operand (UTMALDG ... desc[URn]) and A's
// do not; without it no load carries one. Empty: as it should be.
std::string evict_first_sass_problems(const std::string& sass, bool evict_first) {
  int hinted = 0, plain = 0;
  for (const std::string& i : instructions(sass)) {
    if (i.rfind("UTMALDG", 0) != 0) continue;
    (i.find("desc[") != std::string::npos ? hinted : plain) += 1;
  }
  if (evict_first && (hinted == 0 || plain == 0))
    return fmt::format("evict-first: {} TMA loads with a cache policy, {} without (want both: B's and A's)", hinted,
                       plain);
  if (!evict_first && hinted > 0) return fmt::format("{} TMA loads with a cache policy, none asked for", hinted);
  return "";
}

}  // namespace

TEST(compile_decode_tiles, swap_ab_and_deep_ring_tiles_compile_without_spills) {
  const device_spec& d = find_preset("h100-sxm");
  std::vector<compile_job> jobs;
  std::vector<tile_config> tiles;
  for (std::int64_t m : {1, 16, 32, 64}) {
    const gemm_problem p = decode_problem(m);
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d)) {
      if (check_constraints(c, p, d)) continue;
      const bool decode_tile = (wgmma_swap_ab(c) || (c.block_m == 64 && c.block_n == 128)) && c.split_k == 1;
      // The deep rings (the most shared memory), at 16 rows both
      // schedulers with and without evict-first, elsewhere stream-K only (the decode shapes'
      // pick) without; the 64 x 128 tile at 16 rows only.
      if (!decode_tile || c.stages == 4 || (!wgmma_swap_ab(c) && m != 16)) continue;
      if (m != 16 && (!wgmma_stream_k(c) || wgmma_evict_first_b(c))) continue;
      jobs.push_back(make_compile_job(c, p.type, p.layout, d));
      tiles.push_back(c);
    }
  }
  std::string names;
  for (const auto& j : jobs) names += j.name + "; ";
  // 16 rows: (3 swap-AB tiles + 64x128) x 2 schedulers x 2 (evict-first), and the 64- and 128-wide
  // swap-AB tiles' deeper rings (16 and 12 stages, evict-first) x 2 schedulers; 8 (for M = 1), 32, 64
  // rows: 3 each.
  ASSERT_EQ(jobs.size(), 29u) << names;
  const auto results = compile_cleanly(jobs);
  const std::vector<std::string> listings = sass_of(jobs, results);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& r = results[i];
    const std::string& name = jobs[i].name;
    if (!r.ok) continue;
    std::printf("%s: %d registers\n", name.c_str(), r.resources.registers);
    const std::string& sass = listings[i];
    if (wgmma_swap_ab(tiles[i])) {
      EXPECT_EQ(swap_ab_sass_problems(sass, tiles[i]), "") << name;
    } else {
      EXPECT_EQ(sass.find("LDL"), std::string::npos) << name;
      EXPECT_EQ(sass.find("STL"), std::string::npos) << name;
    }
    EXPECT_EQ(evict_first_sass_problems(sass, wgmma_evict_first_b(tiles[i])), "") << name;
  }
}

// What cluster split-K must show in the SASS: the cluster barrier at the start and before the
// exit (UCGABAR_ARV / UCGABAR_WAIT twice each), remote mbarrier arrivals (SYNCS.ARRIVE...RED),
// the peers' stores into the leader's shared memory (generic ST.E to the mapa address), HGMMA, and
// no local memory. Empty: all there.
std::string cluster_split_sass_problems(const std::string& sass) {
  std::string problems;
  auto count = [&](const char* what) {
    int n = 0;
    for (const std::string& i : instructions(sass)) n += i.rfind(what, 0) == 0;
    return n;
  };
  for (const char* barrier : {"UCGABAR_ARV", "UCGABAR_WAIT"})
    if (count(barrier) < 2) problems += fmt::format(" {} {} times, not at the start and before the exit;", barrier, count(barrier));
  for (const char* needed : {"SYNCS.ARRIVE.TRANS64.RED", "ST.E", "HGMMA"})
    if (count(needed) == 0) problems += fmt::format(" no {};", needed);
  for (const char* banned : {"LDL", "STL"})
    if (count(banned) > 0) problems += fmt::format(" {} (local memory);", banned);
  return problems;
}

TEST(compile_decode_tiles, cluster_split_k_copies_compile_and_the_sass_runs_the_cluster_reduction) {
  const device_spec& d = find_preset("h100-sxm");
  const gemm_problem p = decode_problem(16);
  std::vector<compile_job> jobs;
  std::vector<bool> evict_first;
  int with_evict_first = 0, deep = 0, compiled_evict_first = 0;
  for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d)) {
    if (c.split_k == 1 || check_constraints(c, p, d)) continue;
    with_evict_first += wgmma_evict_first_b(c);
    // Each split tile has an evict-first copy; the first one's compiled (the same kernel but for B's
    // policy), and the pairs in the 64- and 128-wide swap-AB tiles' deeper rings (evict-first only).
    const bool deeper = c.stages > wgmma_decode_max_stages;
    deep += deeper;
    if (wgmma_evict_first_b(c) && !deeper && compiled_evict_first++ > 0) continue;
    jobs.push_back(make_compile_job(c, p.type, p.layout, d));
    evict_first.push_back(wgmma_evict_first_b(c));
  }
  std::string names;
  for (const auto& j : jobs) names += j.name + "; ";
  EXPECT_EQ(with_evict_first, 10) << names;
  EXPECT_EQ(deep, 2) << names;
  // (3 swap-AB tiles + 64x128) x split 2 and 4, one with evict-first, and the two deeper pairs.
  ASSERT_EQ(jobs.size(), 11u) << names;
  const auto results = compile_cleanly(jobs);
  const std::vector<std::string> listings = sass_of(jobs, results);
  for (std::size_t i = 0; i < jobs.size(); ++i)
    if (results[i].ok) {
      EXPECT_EQ(cluster_split_sass_problems(listings[i]), "") << jobs[i].name;
      EXPECT_EQ(evict_first_sass_problems(listings[i], evict_first[i]), "") << jobs[i].name;
    }
  // The check can fail: without the cluster barrier before the exit, one UCGABAR pair is left.
  compile_job planted = jobs.front();
  const std::string exit_sync = "  // No CTA leaves while a peer may still write into its shared memory or arrive on its barriers.\n  tt_cluster_sync();\n";
  const auto at = planted.source.find(exit_sync);
  ASSERT_NE(at, std::string::npos) << "the template's exit barrier changed; update this test";
  planted.source.erase(at, exit_sync.size());
  const auto bad = nvrtc_compiler().compile(planted);
  ASSERT_TRUE(bad.ok) << bad.log;
  EXPECT_NE(cluster_split_sass_problems(disassemble(bad.cubin, "planted")).find("UCGABAR_WAIT 1 times"), std::string::npos);
}

// The check can fail: the plain 64 x 128 kernel (no swap: an m64n128 instruction, C staged in
// shared memory and stored as 16-byte vectors) fails what a swap-AB kernel must show; and the
// swap-AB source without its TT_SWAP_AB macro is a 16 x 128 kernel tile with no m64 wgmma tile,
// which the template refuses to compile.
TEST(compile_decode_tiles, the_swap_ab_sass_check_catches_a_kernel_that_is_not_swapped) {
  const device_spec& d = find_preset("h100-sxm");
  const gemm_problem p = decode_problem(16);
  tile_config c = wgmma_tile(16, 128, 64, 1, 4);
  set_wgmma_swap_ab(c, true);
  const tile_config plain = wgmma_tile(64, 128, 64, 1, 4);
  ASSERT_EQ(check_constraints(c, p, d), std::nullopt);
  ASSERT_EQ(check_constraints(plain, p, d), std::nullopt);
  const compile_job good = make_compile_job(c, p.type, p.layout, d);
  compile_job no_macro = good;
  const std::string macro = "#define TT_SWAP_AB 1\n";
  const auto at = no_macro.source.find(macro);
  ASSERT_NE(at, std::string::npos) << "the render no longer defines TT_SWAP_AB; update this test";
  no_macro.source.erase(at, macro.size());
  nvrtc_compiler nvrtc;
  const auto g = shared_compiler().compile(good);
  const auto b = shared_compiler().compile(make_compile_job(plain, p.type, p.layout, d));
  ASSERT_TRUE(g.ok && b.ok) << g.log << b.log;
  EXPECT_EQ(swap_ab_sass_problems(disassemble(g.cubin, "swapped"), c), "");
  const std::string problems = swap_ab_sass_problems(disassemble(b.cubin, "plain"), c);
  EXPECT_NE(problems.find("no HGMMA.64x16x16"), std::string::npos) << problems;
  EXPECT_NE(problems.find("STS"), std::string::npos) << problems;
  EXPECT_FALSE(nvrtc.compile(no_macro).ok) << "a 16-row kernel tile compiled";
  // The evict-first check fails on a kernel without the policy.
  EXPECT_NE(evict_first_sass_problems(disassemble(g.cubin, "swapped"), true), "");
}

// `--kernel-debug racecheck` (TT_EVERY_THREAD_ARRIVES): the two kernels racecheck flagged on the H200
// (2026-12-04), split-K in a cluster with swap-AB and fp8 block scales copied by TMA, compile with
// every consumer thread making the arrivals one makes: cleanly (no spills, no local memory, no
// ptxas warning) and into other code than the release build's (the macro reaches the kernel).
TEST(compile_decode_tiles, the_racecheck_build_of_the_flagged_kernels_compiles_cleanly) {
  const device_spec& d = find_preset("h100-sxm");
  gemm_problem fp8 = decode_problem(256);
  fp8.n = 400;
  fp8.k = 1024;
  fp8.type = dtype::e4m3;
  fp8.scaling = scaling_mode::block;
  std::vector<compile_job> jobs;
  for (const auto& [p, id] : {std::pair{decode_problem(16), "wgmma_16x128x64_c1_s8_cl1x1_g8m_k2_swab"},
                              std::pair{fp8, "wgmma_64x192x128_c1_s4_cl1x1_g8m_p1_blk_ts"}}) {
    const std::vector<tile_config> space = problem_search_space(family_named("wgmma"), p, d);
    const auto c = std::find_if(space.begin(), space.end(), [&](const tile_config& t) { return t.id() == id; });
    ASSERT_NE(c, space.end()) << id;
    ASSERT_EQ(check_constraints(*c, p, d), std::nullopt) << id;
    jobs.push_back(make_compile_job(*c, p.type, p.layout, d));
    jobs.push_back(jobs.back());
    for (const std::string& o : kernel_debug_options("racecheck")) jobs.back().options.push_back(o);
    jobs.back().name += " (racecheck)";
  }
  const auto results = compile_cleanly(jobs);
  const std::vector<std::string> listings = sass_of(jobs, results);
  for (std::size_t i = 0; i < jobs.size(); i += 2) {
    ASSERT_TRUE(results[i].ok && results[i + 1].ok) << jobs[i].name;
    EXPECT_NE(instructions(listings[i]), instructions(listings[i + 1])) << jobs[i].name;
  }
}
