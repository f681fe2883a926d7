// The machine code of representative variants, read with cuobjdump on a
// machine without a GPU: the mma family loads fragments with LDSM (16-bit
// types) and multiplies with HMMA, both families write C with 128-bit stores
// (STG.E.128), and nothing goes to local memory (LDL/STL: spills or arrays
// indexed at run time).
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/tune/gemm_tuner.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/families/simt/simt_family.hpp"
#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "cuda/nvrtc_compiler.hpp"
#include "compile_checks.hpp"
#include "mma_budget.hpp"
#include "sass_reading.hpp"

using namespace tiletune;
using namespace tiletune_test;

namespace {

bool has(const std::string& sass, const std::string& mnemonic) { return sass.find(mnemonic) != std::string::npos; }

struct sass_case {
  std::string preset;
  dtype type;
  std::string layout;
  tile_config config;
};

std::string name(const sass_case& c) {
  return fmt::format("{}_{}_{}_{}", c.config.id(), to_string(c.type), c.layout, c.preset);
}

// mma: per dtype (f16, bf16, tf32), the measured 4-warp tile in all four
// layouts and an 8-warp tile in nn and tt, on sm_80 (A100) and sm_90 (H100);
// a split-K (nt) and a grouped-raster (tn) variant per dtype. simt: the
// measured tile in all four layouts.
std::vector<sass_case> cases() {
  std::vector<sass_case> out;
  tile_config split = mma_tile(64, 64, 32, 2, 2, 3);
  split.split_k = 4;
  tile_config grouped = mma_tile(128, 128, 32, 2, 4, 3);
  grouped.raster_group = 8;
  for (const char* preset : {"a100-sxm-80gb", "h100-sxm"}) {
    for (dtype t : {dtype::f16, dtype::bf16, dtype::tf32}) {
      const int bk = t == dtype::tf32 ? 16 : 32;
      for (const char* l : {"nn", "nt", "tn", "tt"}) out.push_back({preset, t, l, mma_tile(128, 128, bk, 2, 2, 3)});
      for (const char* l : {"nn", "tt"}) out.push_back({preset, t, l, mma_tile(128, 128, bk, 2, 4, 3)});
      tile_config s = split;
      s.block_k = bk;
      out.push_back({preset, t, "nt", s});
      tile_config g = grouped;
      g.block_k = bk;
      out.push_back({preset, t, "tn", g});
    }
    for (const char* l : {"nn", "nt", "tn", "tt"}) out.push_back({preset, dtype::f32, l, simt_tile(64, 128, 16, 8, 4)});
  }
  return out;
}

}  // namespace

TEST(sass, fragments_tensor_cores_vector_stores_and_no_local_memory) {
  const auto all = cases();
  std::vector<compile_job> jobs;
  for (const sass_case& c : all) {
    const device_spec& d = find_preset(c.preset);
    gemm_problem p;
    p.m = 16;
    p.n = p.k = 4096;
    p.type = c.type;
    p.layout = parse_layout(c.layout);
    ASSERT_FALSE(check_constraints(c.config, p, d)) << name(c);
    jobs.push_back(make_compile_job(c.config, c.type, p.layout, d));
  }
  const auto results = compile_all(shared_compiler(), jobs, std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<std::string> listings = sass_of(jobs, results);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const sass_case& c = all[i];
    const auto& r = results[i];
    ASSERT_TRUE(r.ok) << name(c) << "\n" << r.log;
    const std::string& sass = listings[i];
    ASSERT_TRUE(has(sass, "tiletune_gemm")) << name(c) << ": cuobjdump gave\n" << sass.substr(0, 2000);
    EXPECT_TRUE(has(sass, "STG.E.128")) << name(c) << ": no 128-bit global store";
    EXPECT_FALSE(has(sass, "LDL")) << name(c) << ": loads from local memory";
    EXPECT_FALSE(has(sass, "STL")) << name(c) << ": stores to local memory";
    if (c.config.family == family_named("mma")) {
      EXPECT_TRUE(has(sass, "HMMA")) << name(c) << ": no tensor-core instruction";
      for (const auto& problem : mma_budget_problems(sass, c.config, c.type)) ADD_FAILURE() << name(c) << ": " << problem;
      if (c.type != dtype::tf32) {
        EXPECT_TRUE(has(sass, "LDSM")) << name(c) << ": no ldmatrix";
      }
    }
  }
  std::printf("%zu variants disassembled\n", all.size());
}

// The main-loop budget can fail: the same variant with a division of its
// moving pointer planted in each copy of its main loop, or with every block on the edge blocks' path
// (bounds checked in the main loop, as before issue 38), is over it.
TEST(sass, the_main_loop_budget_catches_a_planted_defect) {
  const device_spec& d = find_preset("a100-sxm-80gb");
  const tile_config c = mma_tile(64, 64, 32, 2, 2, 3);
  const compile_job clean = make_compile_job(c, dtype::bf16, parse_layout("nt"), d);
  const std::pair<std::string, std::string> defects[] = {
      {"tt_cp_async16_whole(dst, g + i * row_step);",
       "tt_cp_async16_whole(dst, g + i * row_step + (reinterpret_cast<unsigned long long>(g) / 3 % 5 == 4));"},
      {"tt_pipelined<false>(blk, acc);", "tt_pipelined<true>(blk, acc);"}};
  nvrtc_compiler nvrtc;
  const auto base = shared_compiler().compile(clean);
  ASSERT_TRUE(base.ok) << base.log;
  EXPECT_TRUE(mma_budget_problems(disassemble(base.cubin, "clean"), c, dtype::bf16).empty());
  for (const auto& [from, to] : defects) {
    compile_job job = clean;
    const auto at = job.source.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    job.source.replace(at, from.size(), to);
    const auto r = nvrtc.compile(job);
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_FALSE(mma_budget_problems(disassemble(r.cubin, "planted"), c, dtype::bf16).empty()) << to;
  }
}

// The check itself can fail: a kernel that spills to local memory is caught.
TEST(sass, a_local_array_shows_as_local_memory) {
  nvrtc_compiler nvrtc;
  compile_job job;
  job.name = "local_array";
  job.source =
      "extern \"C\" __global__ void tiletune_gemm(float* out, int i) {\n"
      "  volatile float a[64];\n"
      "  a[i & 63] = out[1];\n"
      "  out[0] = a[(i >> 6) & 63];\n"
      "}\n";
  job.arch = "sm_80";
  job.options = make_compile_job(mma_tile(64, 64, 32, 2, 2, 3), dtype::f16, layout{}, find_preset("a100-sxm-80gb")).options;
  const auto r = nvrtc.compile(job);
  ASSERT_TRUE(r.ok) << r.log;
  const std::string sass = disassemble(r.cubin, "local_array");
  EXPECT_TRUE(has(sass, "STL") || has(sass, "LDL")) << sass.substr(0, 2000);
  EXPECT_FALSE(has(sass, "STG.E.128"));
}

namespace {
// A listing's instructions by function, each with its address ("01a0 @P0 BRA 0x2c0").
std::map<std::string, std::vector<std::string>> by_function(const std::string& sass) {
  static const std::regex function(R"(Function : (\S+))"), line(R"(/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;)");
  std::map<std::string, std::vector<std::string>> out;
  std::string current;
  std::istringstream in(sass);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, function)) current = m[1];
    else if (std::regex_search(l, m, line)) out[current].push_back(m[1].str() + " " + m[2].str());
  }
  return out;
}
}  // namespace

// disassemble_all lists what cuobjdump lists, function by function and address by address. Two or
// more kernels of each architecture, so that all but the first of a run sit at an offset in its raw
// image (their addresses and branch targets rebased); among them a cubin of two functions (the
// k-major copies' pre-pass and GEMM) and a stream-K kernel (calls and returns).
TEST(sass_batches, list_each_cubin_as_cuobjdump_does) {
  std::vector<compile_job> jobs;
  auto add = [&](const char* preset, const tile_config& c, dtype t, const char* l) {
    gemm_problem p;
    p.m = p.n = p.k = 4096;
    p.type = t;
    p.scaling = default_scaling(t);
    p.layout = parse_layout(l);
    const device_spec& d = find_preset(preset);
    ASSERT_FALSE(check_constraints(c, p, d)) << c.id() << ": " << check_constraints(c, p, d)->message;
    jobs.push_back(make_compile_job(c, t, p.layout, d));
  };
  add("a100-sxm-80gb", mma_tile(128, 128, 32, 2, 2, 3), dtype::bf16, "nt");
  add("a100-sxm-80gb", simt_tile(64, 128, 16, 8, 4), dtype::f32, "tn");
  add("l40s", mma_tile(128, 128, 64, 2, 2, 3), dtype::e4m3, "nt");
  add("l40s", mma_tile(64, 64, 64, 2, 2, 4), dtype::e4m3, "nt");
  tile_config streamed = wgmma_tile(128, 128, 64, 2, 4);
  set_wgmma_stream_k(streamed, true);
  tile_config copied = wgmma_tile(128, 128, 32, 2, 4);
  set_wgmma_k_major_copies(copied, true);
  add("h100-sxm", wgmma_tile(128, 256, 64, 2, 4), dtype::bf16, "nt");
  add("h100-sxm", streamed, dtype::bf16, "nt");
  add("h100-sxm", copied, dtype::tf32, "nn");
  ASSERT_EQ(jobs.size(), 7u);
  const auto results = compile_cleanly(jobs);
  const std::vector<std::string> batched = sass_of(jobs, results);
  int functions = 0, branches = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_TRUE(results[i].ok) << jobs[i].name;
    const auto want = by_function(disassemble(results[i].cubin, jobs[i].name)), got = by_function(batched[i]);
    ASSERT_FALSE(want.empty()) << jobs[i].name;
    EXPECT_EQ(got, want) << jobs[i].name << ": the batched listing differs from cuobjdump's";
    functions += static_cast<int>(got.size());
    for (const auto& [f, lines] : got)
      for (const std::string& l : lines) branches += i > 0 && l.find("BRA 0x") != std::string::npos;
  }
  EXPECT_GE(functions, 8) << "the k-major copies' cubin lists its pre-pass and its GEMM";
  EXPECT_GT(branches, 10) << "no branch target at an offset was compared";
}
