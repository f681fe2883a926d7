// The TMA-store epilogue (_tmas, issue 33): the copy of each default tile shape (bf16 nt, whole and
// one stream-K) compiles for sm_90a without spills or local memory, its main loop unchanged
// (HGMMA k-groups as hgmma_issue_problems reads them), and its SASS stages with stmatrix
// (STSM.16.M88.4, four per 64-column chunk and m64 tile), fences the staging for the async proxy,
// waits for a buffer's previous store to have read it (DEPBAR.LE SB0, 0x1) before reusing it,
// stores with UTMASTG and waits for every store (DEPBAR.LE SB0, 0x0) before the exit; for beta != 0
// it loads C's boxes with UTMALDG and reads them back with ldmatrix (LDSM.16.M88.4, four per chunk).
// Not yet run on a GPU.
#include <algorithm>
#include <string>
#include <set>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>

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

// What the SASS of a TMA-store variant must show; empty when all is there.
std::string tma_store_sass_problems(const std::string& sass, const tile_config& c) {
  const int chunks = wgmma_consumer_rows(c) / 64 * (wgmma_kernel_n(c) / 64);  // per consumer
  int stsm = 0, ldsm = 0, loads = 0, stores = 0, read_waits = 0, final_waits = 0, fences = 0, local = 0;
  for (const std::string& i : instructions(sass)) {
    stsm += i.rfind("STSM.16.M88.4", 0) == 0;
    ldsm += i.rfind("LDSM.16.M88.4", 0) == 0;
    loads += i.rfind("UTMALDG", 0) == 0;
    stores += i.rfind("UTMASTG", 0) == 0;
    read_waits += i.rfind("DEPBAR.LE SB0, 0x1", 0) == 0;
    final_waits += i.rfind("DEPBAR.LE SB0, 0x0", 0) == 0;
    fences += i.rfind("FENCE.VIEW.ASYNC.S", 0) == 0;
    local += i.rfind("LDL", 0) == 0 || i.rfind("STL", 0) == 0;
  }
  std::string problems;
  if (stsm != 4 * chunks) problems += fmt::format(" {} STSM.16.M88.4, not {};", stsm, 4 * chunks);
  if (ldsm != 4 * chunks) problems += fmt::format(" {} LDSM.16.M88.4 (C read back for beta), not {};", ldsm, 4 * chunks);
  if (loads < chunks + 2) problems += fmt::format(" {} UTMALDG: fewer than A's, B's and C's {} boxes;", loads, chunks);
  if (stores != chunks) problems += fmt::format(" {} UTMASTG, not {};", stores, chunks);
  if (read_waits != chunks) problems += fmt::format(" {} waits for a staging buffer's read, not {};", read_waits, chunks);
  if (final_waits < 1) problems += " no wait for the stores before the exit;";
  if (fences < chunks) problems += fmt::format(" {} proxy fences for {} chunks;", fences, chunks);
  if (local) problems += fmt::format(" {} local-memory instructions;", local);
  return problems;
}

int tma_store_hgmma_per_k_tile(const tile_config& c) { return (c.block_k / 16) * (wgmma_consumer_rows(c) / 64); }

}  // namespace

TEST(compile_tma_store, the_copies_compile_without_spills_and_the_sass_stages_stores_and_waits) {
  const device_spec& d = find_preset("h100-sxm");
  gemm_problem p;
  p.m = p.n = p.k = 4096;  // 3.88 waves of 128x256: stream-K copies too
  p.type = dtype::bf16;
  p.layout = parse_layout("nt");
  std::vector<compile_job> jobs;
  std::vector<tile_config> tiles;
  std::set<std::pair<int, int>> shapes;
  bool streamed = false;
  for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d)) {
    if (!wgmma_tma_store(c) || wgmma_pingpong(c) || check_constraints(c, p, d) || c.stages != 3) continue;
    if (wgmma_stream_k(c) ? std::exchange(streamed, true) : !shapes.insert({c.block_m * 10 + wgmma_consumers(c), c.block_n}).second)
      continue;
    jobs.push_back(make_compile_job(c, p.type, p.layout, d));
    tiles.push_back(c);
  }
  std::string names;
  for (const auto& j : jobs) names += j.name + "; ";
  ASSERT_EQ(jobs.size(), 7u) << names;  // the 6 default tile shapes and one stream-K copy
  const auto results = compile_cleanly(jobs);
  const std::vector<std::string> listings = sass_of(jobs, results);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!results[i].ok) continue;
    const std::string& sass = listings[i];
    EXPECT_EQ(tma_store_sass_problems(sass, tiles[i]), "") << jobs[i].name;
    for (const auto& problem : hgmma_issue_problems(sass, tma_store_hgmma_per_k_tile(tiles[i])))
      ADD_FAILURE() << jobs[i].name << ": " << problem;
  }
  // The check can fail: without the wait for a staging buffer's read, its reuse is unguarded.
  compile_job planted = jobs.front();
  const std::string wait = "asm volatile(\"cp.async.bulk.wait_group.read 1;\\n\" ::: \"memory\");";
  const auto at = planted.source.find(wait);
  ASSERT_NE(at, std::string::npos) << "the template's read wait changed; update this test";
  planted.source.erase(at, wait.size());
  const auto bad = nvrtc_compiler().compile(planted);
  ASSERT_TRUE(bad.ok) << bad.log;
  EXPECT_NE(tma_store_sass_problems(disassemble(bad.cubin, "planted"), tiles.front()).find("waits for a staging"),
            std::string::npos);
}

// Ping-pong (_pp): the copies of 128x128 and 64x256, with either epilogue, compile without spills
// or local memory; each consumer's main loop issues the whole tile's HGMMAs in clean k-groups.
TEST(compile_tma_store, pingpong_copies_compile_without_spills) {
  const device_spec& d = find_preset("h100-sxm");
  gemm_problem p;
  p.m = p.n = p.k = 4096;
  p.type = dtype::bf16;
  p.layout = parse_layout("nt");
  std::vector<compile_job> jobs;
  std::vector<tile_config> tiles;
  for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d))
    if (wgmma_pingpong(c) && c.stages == 4 && !check_constraints(c, p, d)) {
      jobs.push_back(make_compile_job(c, p.type, p.layout, d));
      tiles.push_back(c);
    }
  ASSERT_EQ(jobs.size(), 4u);
  const auto results = compile_cleanly(jobs);
  const std::vector<std::string> listings = sass_of(jobs, results);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!results[i].ok) continue;
    const std::string& sass = listings[i];
    for (const auto& problem : hgmma_issue_problems(sass, tma_store_hgmma_per_k_tile(tiles[i])))
      ADD_FAILURE() << jobs[i].name << ": " << problem;
    if (wgmma_tma_store(tiles[i])) {
      EXPECT_EQ(tma_store_sass_problems(sass, tiles[i]), "") << jobs[i].name;
    }
  }
}
