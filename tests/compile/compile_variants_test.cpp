// Every variant of the default search spaces compiles with NVRTC, on a machine without a GPU,
// with no spills; so do the split-K and grouped-raster copies. Each variant once where another
// architecture or dtype would compile the same code again: sm_80 f32, tf32 and bf16; f16 on sm_86
// (its smaller shared memory); e4m3 on sm_89 (fp8's mma.sync); sm_90 f32 (simt); and one variant
// in four of sm_90 bf16 and sm_89 bf16 (sm_80's mma variants under another ptxas). Each variant is
// compiled in one layout and the layouts rotate over the variants, so every
// variant and every layout is compiled (a quarter of the cross product, which
// keeps CI on two cores in time); TILETUNE_COMPILE_ALL_LAYOUTS=1 compiles every
// variant in all four layouts (scripts/compile_all_layouts.sh).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/compile/cubin_resources.hpp"
#include "core/tune/compile_selection.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "core/compile/kernel_templates.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/simt/simt_family.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "cuda/nvrtc_compiler.hpp"
#include "mma_budget.hpp"
#include "compile_checks.hpp"
#include "sass_reading.hpp"

using namespace tiletune;
using namespace tiletune_test;

namespace {

// Whether variant number `index` is compiled in layout number `layout` (0..3): one variant in
// `sample`, each of those in one layout.
bool compile_in_layout(std::size_t index, int layout, int sample) {
  static const bool all = [] {
    const char* v = std::getenv("TILETUNE_COMPILE_ALL_LAYOUTS");
    return v != nullptr && std::string(v) == "1";
  }();
  if (all) return true;
  if (index % sample != 0) return false;
  return static_cast<int>(index / sample % 4) == layout;
}

struct target {
  std::string arch;
  std::string preset;
  dtype type;
  int sample = 1;  // one variant in `sample` (an architecture whose variants another target compiles)
};

class compile_variants : public ::testing::TestWithParam<target> {};

TEST_P(compile_variants, all_compile_without_spills) {
  const target& t = GetParam();
  device_spec d = find_preset(t.preset);
  ASSERT_EQ(d.arch(), t.arch);
  std::vector<compile_job> jobs;
  std::vector<int> floors;  // register_floor of each job's tile: the bounded compile's premise
  std::vector<tile_config> configs;
  const char* layouts[] = {"nn", "nt", "tn", "tt"};
  for (int li = 0; li < 4; ++li) {
    gemm_problem p;
    p.m = p.n = p.k = 4096;
    p.type = t.type;
    p.layout = parse_layout(layouts[li]);
    std::size_t index = 0;
    for (kernel_family f : families_for(t.type))
      // wgmma variants (sm_90a) have their own test below, with a SASS check.
      for (const auto& c : f == family_named("wgmma") ? std::vector<tile_config>{} : default_search_space(f, t.type))
        // fp8 runs in one layout (nt): every variant is compiled in it.
        if (!check_constraints(c, p, d) && (is_fp8(t.type) || compile_in_layout(index++, li, t.sample))) {
          jobs.push_back(make_compile_job(c, t.type, p.layout, d));
          jobs.back().name = fmt::format("{} {}", c.id(), layouts[li]);
          floors.push_back(register_floor(c));
          configs.push_back(c);
        }
  }
  // The problem-dependent copies: split-K (a skinny problem) and grouped rasterization, in one layout.
  // wgmma's grouped rasterization is its default space's (compile.sm_90a.*, with the SASS read):
  // compiling it here again was 250 of sm_90 bf16's 340 variants, CI's longest test.
  for (const std::int64_t m : {16, 4096}) {
    gemm_problem p;
    p.m = m;
    p.n = p.k = 4096;
    p.type = t.type;
    p.layout = parse_layout("nt");
    for (kernel_family f : families_for(t.type))
      for (const auto& c : problem_search_space(f, p, d))
        if ((c.split_k > 1 || (c.raster_group > 0 && f != family_named("wgmma"))) && !check_constraints(c, p, d)) {
          jobs.push_back(make_compile_job(c, t.type, p.layout, d));
          jobs.back().name = fmt::format("{} nt", c.id());
          floors.push_back(register_floor(c));
          configs.push_back(c);
        }
  }
  ASSERT_GT(jobs.size(), 20u);
  const auto results = compile_all(shared_compiler(), jobs, std::max(1u, std::thread::hardware_concurrency()));
  double total_ms = 0;
  int cached = 0;  // read from the kernel cache (another test compiled them)
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& r = results[i];
    EXPECT_TRUE(r.ok) << jobs[i].name << "\n" << r.log;
    EXPECT_EQ(r.resources.spill_bytes(), 0) << jobs[i].name << "\n" << r.log;
    EXPECT_LE(r.resources.registers, 255) << jobs[i].name;
    EXPECT_GE(r.resources.registers, floors[i]) << jobs[i].name;  // the offline plan's bound holds
    EXPECT_GT(r.cubin.size(), 1000u) << jobs[i].name;
    // The figures read from the cubin equal ptxas's, so a run without a report loses nothing.
    ASSERT_TRUE(r.resources.from_ptxas_report) << jobs[i].name << "\n" << r.log;
    cubin_resources c;
    std::string error;
    ASSERT_TRUE(read_cubin_resources(r.cubin, kernel_entry_name, c, error)) << jobs[i].name << ": " << error;
    EXPECT_EQ(c.registers, r.resources.registers) << jobs[i].name;
    EXPECT_EQ(c.static_smem_bytes, r.resources.static_smem_bytes) << jobs[i].name;
    EXPECT_EQ(c.frame_bytes, r.resources.stack_bytes) << jobs[i].name;
    EXPECT_EQ(c.frame_bytes, 0) << jobs[i].name << ": local memory";
    total_ms += r.compile_ms;
    cached += r.from_cache;
  }
  std::printf("%zu variants for %s %s (%d from the cache), %.0f ms of compilation each on average\n", jobs.size(),
              t.arch.c_str(), std::string(to_string(t.type)).c_str(), cached,
              total_ms / std::max<double>(1, static_cast<double>(jobs.size()) - cached));
#ifdef TILETUNE_CUOBJDUMP
  // The SASS of the jobs `which` names (disassembled in a few batches), read in parallel:
  // read(j, sass) for the j-th of them.
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  auto read_sass = [&](const std::vector<std::size_t>& which, const std::function<void(std::size_t, const std::string&)>& read) {
    std::vector<std::string> cubins, archs;
    for (std::size_t i : which) cubins.push_back(results[i].cubin), archs.push_back(jobs[i].arch);
    const std::vector<std::string> listings = disassemble_all(cubins, archs);
    std::vector<std::thread> readers;
    for (unsigned w = 0; w < threads; ++w)
      readers.emplace_back([&, w] {
        for (std::size_t j = w; j < which.size(); j += threads) read(j, listings[j]);
      });
    for (auto& r : readers) r.join();
  };
  // Issue 38: every mma variant's main loop within its instruction budget,
  // on the architectures where the mma family is the product (on sm_90,
  // whose tensor-core path is wgmma, compile.sass reads representatives).
  std::vector<std::size_t> mma;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    if (t.arch != "sm_90" && configs[i].family == family_named("mma") && results[i].ok) mma.push_back(i);
  std::vector<std::vector<std::string>> problems(mma.size());
  std::vector<double> per_hmma(mma.size(), 0);
  read_sass(mma, [&](std::size_t j, const std::string& sass) {
    problems[j] = mma_budget_problems(sass, configs[mma[j]], t.type);
    for (const hmma_loop& l : hmma_loops(sass))
      if (l.copies > 0 && l.zero_filling_copies == 0) per_hmma[j] = l.per_hmma();
  });
  double worst = 0;
  for (std::size_t j = 0; j < mma.size(); ++j) {
    for (const auto& p : problems[j]) ADD_FAILURE() << jobs[mma[j]].name << ": " << p;
    worst = std::max(worst, per_hmma[j]);
  }
  // On the preset's GPU the issue port keeps up with the tensor pipe: no loop spends more
  // instructions per HMMA than an HMMA takes clocks there (tf32's 7.25 against an A100's 8).
  if (!mma.empty()) {
    const double clocks = tensor_clocks_per_hmma(d, t.type);
    std::printf("%zu mma main loops read, at most %.2f instructions per HMMA; an HMMA takes %.1f clocks on %s\n",
                mma.size(), worst, clocks, t.preset.c_str());
    EXPECT_LE(worst, clocks) << t.preset << ": the loop would be bound by instruction issue";
  }
  // The model's count of what a simt main loop issues (simt_loop_instructions, the issue factor):
  // its FFMA exactly, its LDS within 2, the whole within 10% of every simt variant's SASS.
  std::vector<std::size_t> simt;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    if (configs[i].family == family_named("simt") && results[i].ok) simt.push_back(i);
  std::vector<hmma_loop> simt_loops(simt.size());
  read_sass(simt, [&](std::size_t j, const std::string& sass) {
    for (const hmma_loop& l : ffma_loops(sass))
      if (l.ffma > simt_loops[j].ffma) simt_loops[j] = l;
  });
  double worst_error = 0;
  for (std::size_t j = 0; j < simt.size(); ++j) {
    const simt_loop_mix mix = simt_loop_instructions(configs[simt[j]]);
    const hmma_loop& l = simt_loops[j];
    EXPECT_EQ(l.ffma, mix.ffma) << jobs[simt[j]].name;
    EXPECT_NEAR(l.lds, mix.lds, 2) << jobs[simt[j]].name;
    const double error = l.instructions > 0 ? mix.total() / l.instructions - 1 : 1;
    worst_error = std::max(worst_error, std::abs(error));
    EXPECT_LE(std::abs(error), 0.10) << jobs[simt[j]].name << ": " << l.instructions << " instructions, the model counts "
                                     << mix.total();
  }
  if (!simt.empty())
    std::printf("%zu simt main loops read; the model's instruction count within %.1f%% of each\n", simt.size(),
                100 * worst_error);
#endif
}

std::vector<target> targets() {
  std::vector<target> out;
  // f16 is bf16's template with another instruction type: sm_86 compiles its variants below.
  for (dtype t : {dtype::f32, dtype::tf32, dtype::bf16}) out.push_back({"sm_80", "a100-sxm-80gb", t});
  // f16 on sm_90 is bf16's template with the same instruction shape and element size; tf32's
  // mma and simt templates are sm_80's (tf32's 240 s here was CI's longest test; its variants
  // compiled and ran on an H100 and an H200, and sm_90's wgmma tf32 has its own test below).
  // sm_90's mma variants are sm_80's (compiled there, every one): a sample checks Hopper's ptxas on
  // them; its simt variants are all compiled, as the simt loop's model is checked on H100's SASS.
  out.push_back({"sm_90", "h100-sxm", dtype::f32});
  out.push_back({"sm_90", "h100-sxm", dtype::bf16, 4});
  out.push_back({"sm_86", "rtx-3090", dtype::f16});
  // Ada's bf16 variants are Ampere's (sm_80 compiles every one): a sample checks sm_89's ptxas on them.
  out.push_back({"sm_89", "l4", dtype::bf16, 4});
  out.push_back({"sm_89", "l40s", dtype::e4m3});
  return out;
}

INSTANTIATE_TEST_SUITE_P(all, compile_variants, ::testing::ValuesIn(targets()),
                         [](const auto& info) {
                           return info.param.arch + "_" + std::string(to_string(info.param.type));
                         });

}  // namespace

TEST(nvrtc_compiler, a_broken_source_is_a_compile_error_value) {
  nvrtc_compiler nvrtc;
  compile_job job;
  job.name = "broken";
  job.source = "extern \"C\" __global__ void tiletune_gemm() { undefined_thing(); }";
  job.arch = "sm_80";
  const auto r = nvrtc.compile(job);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("undefined_thing"), std::string::npos) << r.log;
  EXPECT_NE(nvrtc.version().find("nvrtc "), std::string::npos);
}

TEST(nvrtc_compiler, ampere_and_ada_targets_compile_too) {
  nvrtc_compiler nvrtc;
  for (const char* preset : {"l4", "rtx-4090"}) {
    const device_spec& d = find_preset(preset);
    gemm_problem p;
    p.m = p.n = p.k = 1024;
    p.type = dtype::f16;
    const tile_config c = mma_tile(128, 128, 32, 2, 2, 3);
    ASSERT_FALSE(check_constraints(c, p, d));
    const auto r = nvrtc.compile(make_compile_job(c, p.type, p.layout, d));
    EXPECT_TRUE(r.ok) << preset << r.log;
  }
  // fp8 through mma.sync m16n8k32 on GeForce Blackwell (sm_120; sm_89 has compile.sm_89.e4m3),
  // in each fp8 type: it compiles without spills.
  for (const dtype t : {dtype::e4m3, dtype::e5m2, dtype::e4m3_e5m2, dtype::e5m2_e4m3}) {
    const device_spec& d = find_preset("rtx-5090");
    gemm_problem p;
    p.m = p.n = p.k = 1024;
    p.type = t;
    p.layout = parse_layout("nt");
    const tile_config c = mma_tile(128, 128, 64, 2, 2, 3);
    ASSERT_FALSE(check_constraints(c, p, d)) << to_string(t);
    const auto r = nvrtc.compile(make_compile_job(c, p.type, p.layout, d));
    EXPECT_TRUE(r.ok) << to_string(t) << r.log;
    EXPECT_EQ(r.resources.spill_bytes(), 0) << to_string(t);
  }
}

// Every wgmma variant of the default space (f16's and e5m2's: one in four) compiles for sm_90a
// with no spills and no local memory, and its SASS runs HGMMA (read with cuobjdump on the CPU).
class compile_wgmma : public ::testing::TestWithParam<dtype> {};

namespace {
// HGMMAs one k-tile of a wgmma variant issues: its k-steps times its m64 instructions per consumer.
int hgmma_per_k_tile(const tile_config& c, dtype t) {
  const int k_step = 32 / element_bytes(t);  // 32 bytes of k an instruction
  return (c.block_k / k_step) * (wgmma_kernel_m(c) / wgmma_consumers(c) / 64);
}
}  // namespace

TEST_P(compile_wgmma, all_compile_for_sm_90a_without_spills_and_run_hgmma) {
  const dtype type = GetParam();
  const device_spec& d = find_preset("h100-sxm");
  std::vector<compile_job> jobs;
  std::vector<std::string> names;
  std::vector<tile_config> configs;
  const char* layouts[] = {"nn", "nt", "tn", "tt"};
  // f16's variants are bf16's template and e5m2's are e4m3's, with another element type: one in
  // four of them checks that type's instruction; bf16 and e4m3 compile every variant.
  const int sample = type == dtype::f16 || type == dtype::e5m2 ? 4 : 1;
  for (int li = 0; li < 4; ++li) {
    gemm_problem p;
    p.m = p.n = p.k = 4096;
    p.type = type;
    p.layout = parse_layout(layouts[li]);
    std::size_t index = 0;
    for (const auto& c : default_search_space(family_named("wgmma"), type)) {
      if (check_constraints(c, p, d)) continue;
      const std::size_t i = index++;
      // fp8 (and tf32) plain variants run nt only: every fp8 one there (the other layouts make
      // K-major copies first, compile.sm_90a.k_major_copies).
      if (is_fp8(type) ? i % sample == 0 : compile_in_layout(i, li, sample)) {
        jobs.push_back(make_compile_job(c, type, p.layout, d));
        EXPECT_EQ(jobs.back().arch, "sm_90a");
        names.push_back(fmt::format("{}_{}", c.id(), layouts[li]));
        configs.push_back(c);
      }
    }
  }
  ASSERT_GE(jobs.size(), type == dtype::tf32 ? 6u : 24u / sample);
  // fp8: QGMMA (wgmma .e4m3/.e5m2), never HGMMA.
  const char* mma = is_fp8(type) ? "QGMMA" : "HGMMA";
  const auto results = compile_all(shared_compiler(), jobs, std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<std::string> listings = sass_of(jobs, results);
  double total_ms = 0;
  int cached = 0;  // read from the kernel cache (another test compiled them)
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& r = results[i];
    ASSERT_TRUE(r.ok) << names[i] << "\n" << r.log;
    EXPECT_EQ(r.resources.spill_bytes(), 0) << names[i] << "\n" << r.log;
    EXPECT_EQ(r.resources.stack_bytes, 0) << names[i] << "\n" << r.log;
    EXPECT_LE(r.resources.registers, 255) << names[i];
    // Two consumers: setmaxnreg moves registers from the producer (40) to the
    // consumers (232), which balances only if the CTA starts at 168 each.
    if (wgmma_consumers(configs[i]) == 2) {
      EXPECT_EQ(r.resources.registers, 168) << names[i];
    }
    // No wgmma serialization or injected waits (ptxas says so in the log, C751x),
    // and in the SASS one committed group of back-to-back HGMMAs per k-tile.
    for (const auto& w : ptxas_performance_warnings(r.log)) ADD_FAILURE() << names[i] << ": " << w;
    const std::string& sass = listings[i];
    EXPECT_NE(sass.find(mma), std::string::npos) << names[i] << "\n" << sass.substr(0, 2000);
    if (is_fp8(type)) {
      EXPECT_EQ(sass.find("HGMMA"), std::string::npos) << names[i];
    }
    for (const auto& problem : hgmma_issue_problems(sass, hgmma_per_k_tile(configs[i], type), mma))
      ADD_FAILURE() << names[i] << ": " << problem;
    // The consumer index is warp-uniform: no descriptor moves into uniform registers between the
    // instructions of a k-group (KERNEL_REVIEW item 3).
    EXPECT_EQ(uniform_moves_in_k_groups(sass, mma), 0) << names[i] << ": R2UR between the " << mma << "s of k-groups";
    EXPECT_EQ(sass.find("LDL"), std::string::npos) << names[i];
    EXPECT_EQ(sass.find("STL"), std::string::npos) << names[i];
    EXPECT_NE(sass.find("UTMALDG"), std::string::npos) << names[i];
    total_ms += r.compile_ms;
    cached += r.from_cache;
  }
  std::printf("%zu wgmma variants for sm_90a %s (%d from the cache), %.0f ms of compilation each on average\n",
              jobs.size(), std::string(to_string(type)).c_str(), cached,
              total_ms / std::max<double>(1, static_cast<double>(jobs.size()) - cached));
}

// The checks above can fail: an accumulator write planted between the wgmmas of
// a k-step makes ptxas serialize them (C7510-C7519 in the log, a gsb0 on every
// HGMMA), and both checks say so; the same variant unplanted passes both. A
// per-thread consumer index puts R2UR between the HGMMAs.
TEST(compile_wgmma_checks, a_planted_accumulator_write_between_wgmmas_is_caught) {
  const device_spec& d = find_preset("h100-sxm");
  gemm_problem p;
  p.m = p.n = p.k = 4096;
  p.type = dtype::bf16;
  p.layout = parse_layout("nt");
  std::optional<tile_config> chosen;
  for (const auto& c : default_search_space(family_named("wgmma"), p.type))
    if (c.block_m == 128 && c.block_n == 128 && wgmma_consumers(c) == 1 && !check_constraints(c, p, d)) chosen = c;
  ASSERT_TRUE(chosen);
  const compile_job plain = make_compile_job(*chosen, p.type, p.layout, d);
  compile_job planted = plain;
  const std::string call = "tt_wgmma(acc[mi], da, db, (kt > u.k_begin || kk > 0) ? 1 : 0);";
  const auto at = planted.source.find(call);
  ASSERT_NE(at, std::string::npos) << "the template's wgmma call changed; update this test";
  planted.source.insert(at + call.size(), " acc[mi][0] += 1e-3f;");
  planted.name += "_planted";
  nvrtc_compiler nvrtc;
  const auto good = shared_compiler().compile(plain);
  const auto bad = nvrtc.compile(planted);
  ASSERT_TRUE(good.ok && bad.ok) << good.log << bad.log;
  const int per_k_tile = hgmma_per_k_tile(*chosen, p.type);
  EXPECT_TRUE(ptxas_performance_warnings(good.log).empty()) << good.log;
  EXPECT_TRUE(hgmma_issue_problems(disassemble(good.cubin, "plain"), per_k_tile).empty());
  EXPECT_FALSE(ptxas_performance_warnings(bad.log).empty()) << bad.log;
  EXPECT_FALSE(hgmma_issue_problems(disassemble(bad.cubin, "planted"), per_k_tile).empty());
  // The consumer index as threadIdx.x / 128 (not a shuffle from lane 0): the descriptors it
  // offsets move through R2UR between the HGMMAs, which the check counts.
  compile_job per_thread = plain;
  const std::string shuffle = "__shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0)";
  const auto wg = per_thread.source.find(shuffle);
  ASSERT_NE(wg, std::string::npos) << "the template's consumer index changed; update this test";
  per_thread.source.replace(wg, shuffle.size(), "(int)(threadIdx.x / 128)");
  per_thread.name += "_per_thread_index";
  const auto moved = nvrtc.compile(per_thread);
  ASSERT_TRUE(moved.ok) << moved.log;
  EXPECT_EQ(uniform_moves_in_k_groups(disassemble(good.cubin, "plain")), 0);
  const int moves = uniform_moves_in_k_groups(disassemble(moved.cubin, "per_thread"));
  EXPECT_GT(moves, 0);
  std::printf("per-thread consumer index: %d R2UR between the HGMMAs of k-groups (warp-uniform: 0)\n", moves);
}

// Stream-K (_sk): one copy of each tile shape (4 stages; 3 where 4 do not fit) for bf16 nt, and
// the two-consumer copies with an MN-major operand: 128x128 (nn), and those of 128 accumulators a
// thread that ptxas compiles at --register-usage-level 3 (128x256 nn, 256x128 tn; at the default
// level they spilled, H100 2026-11-26), compile for sm_90a without spills or local memory; the
// SASS runs HGMMA, the fixup's release fence (MEMBAR.ALL.GPU) and its strong GPU-scope flag accesses.
namespace {
std::vector<compile_job> stream_k_jobs(const device_spec& d) {
  gemm_problem p;
  p.m = 16;  // decode: every tile shape gets its stream-K copy
  p.n = p.k = 4096;
  p.type = dtype::bf16;
  std::vector<compile_job> jobs;
  for (const char* lay : {"nt", "nn", "tn"}) {
    p.layout = parse_layout(lay);
    const std::string l = lay;
    for (const auto& c : problem_search_space(family_named("wgmma"), p, d)) {
      if (!wgmma_stream_k(c) || check_constraints(c, p, d)) continue;
      if (wgmma_swap_ab(c) || (c.block_m == 64 && c.block_n == 128)) continue;  // decode tiles: compile.sm_90a.decode
      if (wgmma_tma_store(c)) continue;  // compile.sm_90a.tma_store
      const bool two_by_128 = wgmma_consumers(c) == 2 && c.stages == 4;
      const bool wanted = l == "nt"   ? (c.stages == 4 || (c.stages == 3 && c.block_m == 64))
                          : l == "nn" ? two_by_128 && c.block_m == 128 && (c.block_n == 128 || c.block_n == 256)
                                      : two_by_128 && c.block_m == 256 && c.block_n == 128;
      if (wanted) jobs.push_back(make_compile_job(c, p.type, p.layout, d));
      if (wanted) jobs.back().name += " " + l;
    }
  }
  return jobs;
}
// What the fixup must show in the SASS; empty when all is there.
std::string stream_k_sass_problems(const std::string& sass) {
  std::string problems;
  for (const char* needed : {"HGMMA", "MEMBAR.ALL.GPU", "STG.E.STRONG.GPU", "LDG.E.STRONG.GPU"})
    if (sass.find(needed) == std::string::npos) problems += std::string(" no ") + needed + ";";
  for (const char* banned : {"LDL", "STL"})
    if (sass.find(banned) != std::string::npos) problems += std::string(" ") + banned + " (local memory);";
  return problems;
}
}  // namespace

TEST(compile_wgmma_stream_k, copies_compile_without_spills_and_the_sass_runs_the_fixup) {
  const device_spec& d = find_preset("h100-sxm");
  const std::vector<compile_job> jobs = stream_k_jobs(d);
  std::string names;
  for (const auto& j : jobs) names += j.name + "; ";
  ASSERT_EQ(jobs.size(), 10u) << names;  // 6 tile shapes in nt (64x256 twice), 2 in nn, 1 in tn
  const std::string lower = "--ptxas-options=--register-usage-level=3";
  EXPECT_EQ(std::count_if(jobs.begin(), jobs.end(),
                          [&](const compile_job& j) {
                            return std::find(j.options.begin(), j.options.end(), lower) != j.options.end();
                          }),
            2);
  const auto results = compile_all(shared_compiler(), jobs, std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<std::string> listings = sass_of(jobs, results);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& r = results[i];
    const std::string name = jobs[i].name;
    ASSERT_TRUE(r.ok) << name << "\n" << r.log;
    EXPECT_EQ(r.resources.spill_bytes(), 0) << name << "\n" << r.log;
    EXPECT_EQ(r.resources.stack_bytes, 0) << name;
    EXPECT_LE(r.resources.registers, 255) << name;
    EXPECT_EQ(stream_k_sass_problems(listings[i]), "") << name;
  }
}

// The lower register-usage level is what keeps those copies whole: without it, ptxas spills.
TEST(compile_wgmma_stream_k, the_copies_of_128_accumulators_spill_at_the_default_register_usage_level) {
  const device_spec& d = find_preset("h100-sxm");
  const std::string lower = "--ptxas-options=--register-usage-level=3";
  for (const compile_job& j : stream_k_jobs(d)) {
    auto at = std::find(j.options.begin(), j.options.end(), lower);
    if (at == j.options.end()) continue;
    compile_job planted = j;
    planted.options.erase(planted.options.begin() + (at - j.options.begin()));
    const auto r = nvrtc_compiler().compile(planted);
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_GT(r.resources.spill_bytes(), 0) << j.name << ": ptxas no longer spills it at the default level; "
                                            << "wgmma_lower_register_usage may be dropped\n" << r.log;
    return;  // one is enough (each compile is seconds on the CI's two cores)
  }
  FAIL() << "no stream-K job compiles at the lower level";
}

// The SASS check can fail: the same variant with the fixup's release fence taken out shows no
// MEMBAR.ALL.GPU, and the check says so.
TEST(compile_wgmma_stream_k, a_planted_missing_release_fence_is_caught) {
  const device_spec& d = find_preset("h100-sxm");
  const compile_job plain = stream_k_jobs(d).front();
  compile_job planted = plain;
  const std::string fence = "asm volatile(\"fence.acq_rel.gpu;\\n\" ::: \"memory\");";
  // The publish's fence is the source's last (gemm_common.cuh's tt_fence_gpu has the same text).
  const auto at = planted.source.rfind(fence);
  ASSERT_NE(at, std::string::npos) << "the template's release fence changed; update this test";
  ASSERT_LT(planted.source.rfind("tt_sk_publish", at), at) << "the last fence is not the publish's";
  planted.source.erase(at, fence.size());
  planted.name += "_planted";
  nvrtc_compiler nvrtc;
  const auto good = shared_compiler().compile(plain);
  const auto bad = nvrtc.compile(planted);
  ASSERT_TRUE(good.ok && bad.ok) << good.log << bad.log;
  EXPECT_EQ(stream_k_sass_problems(disassemble(good.cubin, "plain")), "");
  EXPECT_NE(stream_k_sass_problems(disassemble(bad.cubin, "planted")).find("MEMBAR.ALL.GPU"), std::string::npos);
}

// Grouped GEMM (wgmma_grouped.cuh): a grouped problem's variants (TT_GROUPED, from the
// family's grouped knob) compile for a one- and a two-consumer tile, whole tiles and stream-K,
// without spills, with exactly the group table's static shared memory the host counts; the SASS
// runs HGMMA and the table's shuffle scan. Not yet run on a GPU.
namespace {
gemm_problem grouped_decode_problem() {  // few tiles: every tile shape gets its stream-K copy
  return grouped_problem(groups_of_rows({16, 0, 3, 9}, group_layout::contiguous), 4096, 4096, dtype::bf16,
                         parse_layout("nt"));
}
std::vector<compile_job> grouped_jobs(const device_spec& d, std::vector<tile_config>& tiles) {
  const gemm_problem p = grouped_decode_problem();
  std::vector<compile_job> jobs;
  std::set<std::tuple<int, int, bool>> taken;  // one per tile and scheduler
  for (const auto& c : problem_search_space(family_named("wgmma"), p, d)) {
    if (check_constraints(c, p, d) || c.stages != 4 || c.block_n != 256) continue;
    if ((c.block_m != 64 && c.block_m != 128) || !taken.insert({c.block_m, wgmma_consumers(c), wgmma_stream_k(c)}).second)
      continue;
    jobs.push_back(make_compile_job(c, p.type, p.layout, d));
    tiles.push_back(c);
  }
  return jobs;
}
std::string grouped_sass_problems(const std::string& sass) {
  std::string problems;
  for (const char* needed : {"HGMMA", "SHFL.UP"})
    if (sass.find(needed) == std::string::npos) problems += std::string(" no ") + needed + ";";
  for (const char* banned : {"LDL", "STL"})
    if (sass.find(banned) != std::string::npos) problems += std::string(" ") + banned + " (local memory);";
  return problems;
}
}  // namespace

TEST(compile_wgmma_grouped, the_grouped_template_compiles_without_spills_and_builds_its_table_by_shuffles) {
  const device_spec& d = find_preset("h100-sxm");
  std::vector<tile_config> tiles;
  const std::vector<compile_job> jobs = grouped_jobs(d, tiles);
  std::string names;
  for (const auto& j : jobs) names += j.name + "; ";
  ASSERT_GE(jobs.size(), 3u) << names;
  ASSERT_TRUE(std::any_of(jobs.begin(), jobs.end(), [](const compile_job& j) { return j.name.find("_sk") != std::string::npos; }))
      << names;
  const auto results = compile_all(shared_compiler(), jobs, std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<std::string> listings = sass_of(jobs, results);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& r = results[i];
    std::printf("%s: %d registers, %lld bytes of static shared memory\n", jobs[i].name.c_str(), r.resources.registers,
                static_cast<long long>(r.resources.static_smem_bytes));
    ASSERT_TRUE(r.ok) << jobs[i].name << "\n" << r.log;
    EXPECT_EQ(r.resources.spill_bytes(), 0) << jobs[i].name << "\n" << r.log;
    EXPECT_EQ(r.resources.stack_bytes, 0) << jobs[i].name;
    EXPECT_EQ(r.resources.static_smem_bytes, wgmma_group_table_bytes) << jobs[i].name;
    EXPECT_NE(jobs[i].name.find("_grp"), std::string::npos) << jobs[i].name;
    EXPECT_EQ(grouped_sass_problems(listings[i]), "") << jobs[i].name;
  }
  // The check can fail: the same tile without the grouped knob builds no table.
  tile_config tile = tiles.front();
  set_wgmma_grouped(tile, false);
  const auto r = shared_compiler().compile(make_compile_job(tile, dtype::bf16, parse_layout("nt"), d));
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_NE(grouped_sass_problems(disassemble(r.cubin, "plain")).find("SHFL.UP"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(all, compile_wgmma, ::testing::Values(dtype::tf32, dtype::f16, dtype::bf16, dtype::e4m3, dtype::e5m2),
                         [](const auto& info) { return "sm_90a_" + std::string(to_string(info.param)); });
