// K-major copies (_kc, issues 35 and 38): a tf32 nn and an e4m3 nn wgmma variant compile for
// sm_90a, and e4m3 and e5m2_e4m3 mma variants (nn, tn) for sm_89, without spills; the cubin holds
// the GEMM and its transposing pre-pass (tiletune_gemm_transpose). The GEMM is the nt kernel,
// instruction for instruction (the copies change its tensor maps or pointers, not its code), and
// the resources the compile reports are the GEMM's. The pre-pass's transpose moves each element once
// through shared memory: a barrier between the tile's shared-memory stores and its loads, global loads
// and stores of the element's width (32 bits for tf32, 8 for fp8); its padded row copy (a K-major
// operand) two 16-byte loads and one 16-byte store a thread, or 16 bytes of elements at a row's end;
// no local memory. Ran on an H200 (2026-12-04) but for the row copy, newer.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/compile/kernel_templates.hpp"
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
// The SASS of one function of a cuobjdump listing ("Function : name" to the next function).
std::string function_sass(const std::string& sass, const std::string& name) {
  const std::string header = "Function : " + name + "\n";
  const std::size_t at = sass.find(header);
  if (at == std::string::npos) return "";
  const std::size_t end = sass.find("Function : ", at + header.size());
  return sass.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// What is wrong with the pre-pass's SASS; empty when nothing is. `bits`: the element's width.
std::string transpose_sass_problems(const std::string& sass, int bits) {
  int sts = 0, lds = 0, ldg = 0, stg = 0, ldg16 = 0, stg16 = 0, local = 0, other_width = 0;
  bool barrier_between = false, loaded_before_barrier = false;
  const std::string width = bits == 32 ? "" : fmt::format(".U{}", bits);
  for (std::string i : instructions(sass)) {
    if (i.rfind('@', 0) == 0) i = i.substr(i.find(' ') + 1);  // the predicate (the tile's bounds) off
    const bool is_ldg = i.rfind("LDG.E", 0) == 0, is_stg = i.rfind("STG.E", 0) == 0;
    const std::string op = i.substr(0, i.find(' '));
    if ((is_ldg || is_stg) && op.find(".128") != std::string::npos) {  // the row copy's 16 bytes
      ldg16 += is_ldg;
      stg16 += is_stg;
      continue;
    }
    if (is_ldg || is_stg) {
      const bool right = bits == 32 ? op.find(".U") == std::string::npos && op.find(".64") == std::string::npos &&
                                          op.find(".128") == std::string::npos
                                    : op.find(width) != std::string::npos;
      other_width += !right;
    }
    ldg += is_ldg;
    stg += is_stg;
    if (i.rfind("STS", 0) == 0) ++sts;
    if (i.rfind("LDS", 0) == 0) {
      ++lds;
      loaded_before_barrier |= !barrier_between;
    }
    if (i.rfind("BAR.SYNC", 0) == 0 && sts > 0 && lds == 0) barrier_between = true;
    local += i.rfind("LDL", 0) == 0 || i.rfind("STL", 0) == 0;
  }
  std::string problems;
  // The transpose: 4 elements a thread in and out. The row copy: a window's two 16-byte loads and one
  // 16-byte store, or a row's last 16 bytes element by element (128 / bits loads).
  if (ldg != 4 + 128 / bits || stg != 4 || sts != 4 || lds != 4)
    problems += fmt::format(" {} LDG, {} STS, {} LDS, {} STG of {} bits: not 4 each (4 elements a thread) and {} loads "
                            "(a row's last 16 bytes);",
                            ldg, sts, lds, stg, bits, 128 / bits);
  if (ldg16 != 2 || stg16 != 1)
    problems += fmt::format(" {} 16-byte loads and {} stores: not a window's 2 and 1;", ldg16, stg16);
  if (!barrier_between || loaded_before_barrier) problems += " no barrier between the tile's stores and its loads;";
  if (other_width) problems += fmt::format(" {} global accesses not of {} bits;", other_width, bits);
  if (local) problems += fmt::format(" {} local-memory instructions;", local);
  return problems;
}

// jobs in pairs (the _kc variant, then the same tile on the nt problem): each _kc cubin holds the
// pre-pass, whose SASS moves elements of `bits[i]` bits once, and a GEMM whose instructions and
// reported resources are the nt kernel's.
void check_pairs(const std::vector<compile_job>& jobs, const std::vector<int>& bits) {
  const auto results = compile_cleanly(jobs);
  const std::vector<std::string> listings = sass_of(jobs, results);
  ASSERT_EQ(results.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); i += 2) {
    if (!results[i].ok || !results[i + 1].ok) continue;
    const std::string& sass = listings[i];
    const std::string gemm = function_sass(sass, kernel_entry_name);
    const std::string pre = function_sass(sass, std::string(kernel_entry_name) + kernel_prologue_suffix);
    ASSERT_FALSE(gemm.empty()) << jobs[i].name << ": no " << kernel_entry_name << " in\n" << sass.substr(0, 2000);
    ASSERT_FALSE(pre.empty()) << jobs[i].name << ": no pre-pass";
    const std::string nt = function_sass(listings[i + 1], kernel_entry_name);
    EXPECT_EQ(instructions(gemm), instructions(nt)) << jobs[i].name << " is not the nt kernel " << jobs[i + 1].name;
    EXPECT_EQ(transpose_sass_problems(pre, bits[i]), "") << jobs[i].name;
    EXPECT_EQ(results[i].resources.registers, results[i + 1].resources.registers) << jobs[i].name;
    EXPECT_EQ(results[i].resources.static_smem_bytes, results[i + 1].resources.static_smem_bytes) << jobs[i].name;
  }
}
}  // namespace

TEST(compile_k_major_copies, the_gemm_is_the_nt_kernel_and_the_pre_pass_moves_each_element_once) {
  const device_spec& d = find_preset("h100-sxm");
  std::vector<compile_job> jobs;
  std::vector<int> bits;
  for (dtype t : {dtype::tf32, dtype::e4m3}) {
    gemm_problem p;
    p.m = p.n = p.k = 4096;
    p.type = t;
    p.scaling = default_scaling(t);
    p.layout = parse_layout("nn");
    const std::vector<tile_config> space = problem_search_space(family_named("wgmma"), p, d);
    const auto first = std::find_if(space.begin(), space.end(),
                                    [&](const tile_config& c) { return wgmma_consumers(c) == 2 && !check_constraints(c, p, d); });
    ASSERT_NE(first, space.end()) << to_string(t);
    ASSERT_TRUE(wgmma_k_major_copies(*first)) << first->id();
    jobs.push_back(make_compile_job(*first, t, p.layout, d));
    bits.push_back(t == dtype::tf32 ? 32 : 8);
    // The same tile on the nt problem: the GEMM it compiles to.
    tile_config plain = *first;
    set_wgmma_k_major_copies(plain, false);
    jobs.push_back(make_compile_job(plain, t, parse_layout("nt"), d));
    bits.push_back(0);
  }
  check_pairs(jobs, bits);
  // The check can fail: without the barrier, a thread reads tile elements others have not stored.
  compile_job planted = jobs.front();
  const std::string barrier = "  __syncthreads();\n#pragma unroll\n  for (int i = 0; i < TT_XPOSE_TILE";
  const auto at = planted.source.find(barrier);
  ASSERT_NE(at, std::string::npos) << "the pre-pass's barrier changed; update this test";
  planted.source.erase(at, std::string("  __syncthreads();\n").size());
  const auto bad = nvrtc_compiler().compile(planted);
  ASSERT_TRUE(bad.ok) << bad.log;
  const std::string bad_pre =
      function_sass(disassemble(bad.cubin, "planted"), std::string(kernel_entry_name) + kernel_prologue_suffix);
  EXPECT_NE(transpose_sass_problems(bad_pre, 32).find("no barrier"), std::string::npos) << bad_pre;
}

// The mma family's fp8 (mma.sync m16n8k32, sm_89): the backward GEMMs of an fp8 training step
// (nn, tn) on copies, one tile of 4 warps and one of 8.
TEST(compile_k_major_copies, mma_fp8_on_sm_89_is_the_nt_kernel_after_the_pre_pass) {
  const device_spec& d = find_preset("l40s");
  std::vector<compile_job> jobs;
  std::vector<int> bits;
  for (const auto& [t, l, id] : {std::tuple{dtype::e4m3, "nn", "mma_128x128x64_w2x2_s3_kc"},
                                 std::tuple{dtype::e5m2_e4m3, "tn", "mma_128x256x64_w2x4_s3_kc"}}) {
    gemm_problem p;
    p.m = p.n = p.k = 4096;
    p.type = t;
    p.scaling = default_scaling(t);
    p.layout = parse_layout(l);
    const std::vector<tile_config> space = problem_search_space(family_named("mma"), p, d);
    const auto it = std::find_if(space.begin(), space.end(), [&](const tile_config& c) { return c.id() == id; });
    ASSERT_NE(it, space.end()) << id;
    ASSERT_FALSE(check_constraints(*it, p, d)) << check_constraints(*it, p, d)->message;
    jobs.push_back(make_compile_job(*it, t, p.layout, d));
    bits.push_back(8);
    tile_config plain = *it;
    set_mma_k_major_copies(plain, false);
    jobs.push_back(make_compile_job(plain, t, parse_layout("nt"), d));
    bits.push_back(0);
  }
  check_pairs(jobs, bits);
}

// Padded copies: a bf16 problem whose K (4095) puts its rows off 16 bytes runs on copies padded to
// 16 bytes, made by the same pre-pass in 16-bit elements (copied, not transposed: the operands are
// K-major). A wgmma tile for sm_90a and an mma tile for sm_80, each the nt kernel after the pre-pass.
TEST(compile_k_major_copies, padded_bf16_copies_on_sm_90a_and_sm_80_are_the_nt_kernel_after_the_pre_pass) {
  std::vector<compile_job> jobs;
  std::vector<int> bits;
  for (const bool hopper : {true, false}) {
    const device_spec& d = find_preset(hopper ? "h100-sxm" : "a100-sxm-80gb");
    gemm_problem p;
    p.m = p.n = 4096;
    p.k = 4095;
    p.type = dtype::bf16;
    p.layout = parse_layout("nt");
    auto copies = [&](const tile_config& c) { return hopper ? wgmma_k_major_copies(c) : mma_k_major_copies(c); };
    const std::vector<tile_config> space = problem_search_space(family_named(hopper ? "wgmma" : "mma"), p, d);
    const auto first = std::find_if(space.begin(), space.end(),
                                    [&](const tile_config& c) { return copies(c) && !check_constraints(c, p, d); });
    ASSERT_NE(first, space.end());
    jobs.push_back(make_compile_job(*first, p.type, p.layout, d));
    bits.push_back(16);
    tile_config plain = *first;
    if (hopper)
      set_wgmma_k_major_copies(plain, false);
    else
      set_mma_k_major_copies(plain, false);
    jobs.push_back(make_compile_job(plain, p.type, p.layout, d));
    bits.push_back(0);
  }
  check_pairs(jobs, bits);
}
