// 2x1 clusters with TMA multicast (_cl2x1, issue 33): the cluster copy of each default tile shape
// (bf16 nt: B K-major; and nn: B MN-major, BN 128 and 256) compiles for sm_90a without spills or
// local memory, its main loop's HGMMA k-groups as without; the SASS multicasts B's half
// (UTMALDG...MULTICAST), releases a stage to the peer too (remote SYNCS.ARRIVE...RED) and has the
// cluster barrier after the barriers' init and before the exit. Not yet run on a GPU.
#include <algorithm>
#include <string>
#include <thread>

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

std::string multicast_sass_problems(const std::string& sass) {
  int multicast = 0, remote = 0, arrive = 0, wait = 0, local = 0;
  for (const std::string& i : instructions(sass)) {
    multicast += i.rfind("UTMALDG", 0) == 0 && i.find("MULTICAST") != std::string::npos;
    remote += i.find("SYNCS.ARRIVE.TRANS64.RED") != std::string::npos;
    arrive += i.rfind("UCGABAR_ARV", 0) == 0;
    wait += i.rfind("UCGABAR_WAIT", 0) == 0;
    local += i.rfind("LDL", 0) == 0 || i.rfind("STL", 0) == 0;
  }
  std::string problems;
  if (multicast == 0) problems += " no multicast TMA load;";
  if (remote == 0) problems += " no remote arrival on the peer's barrier;";
  if (arrive < 2 || wait < 2) problems += fmt::format(" cluster barrier {} / {} times, not at start and exit;", arrive, wait);
  if (local) problems += fmt::format(" {} local-memory instructions;", local);
  return problems;
}

}  // namespace

TEST(compile_multicast, cluster_copies_compile_and_the_sass_multicasts_and_releases_to_the_peer) {
  const device_spec& d = find_preset("h100-sxm");
  std::vector<compile_job> jobs;
  std::vector<tile_config> tiles;
  for (const char* lay : {"nt", "nn"}) {
    gemm_problem p;
    p.m = p.n = p.k = 4096;
    p.type = dtype::bf16;
    p.layout = parse_layout(lay);
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d)) {
      if (c.cluster_m != 2 || c.stages != 3 || check_constraints(c, p, d)) continue;
      if (std::string(lay) == "nn" && !(c.block_m == 128 && wgmma_consumers(c) == 2)) continue;
      jobs.push_back(make_compile_job(c, p.type, p.layout, d));
      jobs.back().name += std::string(" ") + lay;
      tiles.push_back(c);
    }
  }
  std::string names;
  for (const auto& j : jobs) names += j.name + "; ";
  ASSERT_EQ(jobs.size(), 8u) << names;  // 6 shapes in nt; 128x128 and 128x256 of two consumers in nn
  const auto results = compile_cleanly(jobs);
  const std::vector<std::string> listings = sass_of(jobs, results);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!results[i].ok) continue;
    const std::string& sass = listings[i];
    EXPECT_EQ(multicast_sass_problems(sass), "") << jobs[i].name;
    for (const auto& problem : hgmma_issue_problems(sass, (tiles[i].block_k / 16) * (wgmma_consumer_rows(tiles[i]) / 64)))
      ADD_FAILURE() << jobs[i].name << ": " << problem;
  }
  // The check can fail: a release only local (no arrival on the peer's barrier).
  compile_job planted = jobs.front();
  const std::string remote = "    tt_mbar_arrive_remote_release(tt_map_to_rank(TT_EMPTY(s), (unsigned)(rank ^ 1))); \\\n";
  const auto at = planted.source.find(remote);
  ASSERT_NE(at, std::string::npos) << "the template's remote release changed; update this test";
  planted.source.erase(at, remote.size());
  const auto bad = nvrtc_compiler().compile(planted);
  ASSERT_TRUE(bad.ok) << bad.log;
  EXPECT_NE(multicast_sass_problems(disassemble(bad.cubin, "planted")).find("no remote arrival"), std::string::npos);
}
