#include "core/tune/gemm_tuner.hpp"

#include <filesystem>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/compile/kernel_templates.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"

using namespace tiletune;

namespace {
// Replays made-up ptxas figures, so the whole planning loop runs without NVRTC.
class tuner_replay_compiler : public kernel_compiler {
 public:
  std::string fail_id, spill_id, fat_id;
  std::vector<std::vector<std::string>> options_seen;
  std::mutex mutex;
  compiled_kernel compile(const compile_job& job) override {
    compiled_kernel k;
    if (job.name == fail_id) {
      k.ok = false;
      k.log = "error: something went wrong";
      return k;
    }
    k.ok = true;
    k.cubin = "cubin";
    k.resources.registers = 128;
    if (job.name == spill_id) k.resources.spill_store_bytes = 8;
    if (job.name == fat_id) k.resources.registers = 300;
    std::lock_guard lock(mutex);  // plan_gemm compiles on several threads
    options_seen.push_back(job.options);
    return k;
  }
  std::string version() const override { return "replay 1"; }
};

gemm_problem tuner_problem(std::int64_t m, std::int64_t n, std::int64_t k, dtype t) {
  gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.type = t;
  p.layout = parse_layout("nt");
  return p;
}

std::string first_kept_id(const gemm_problem& p, const device_spec& d, int skip) {
  for (const auto& c : default_search_space(families_for(p.type)[0], p.type))
    if (!check_constraints(c, p, d) && skip-- == 0) return c.id();
  return "";
}
}  // namespace

TEST(gemm_tuner, every_variant_ends_in_a_status_and_ok_ones_are_ranked) {
  const device_spec& d = find_preset("h100-sxm");
  const gemm_problem p = tuner_problem(4096, 4096, 4096, dtype::bf16);
  tuner_replay_compiler c;
  c.fail_id = first_kept_id(p, d, 0);
  c.spill_id = first_kept_id(p, d, 1);
  c.fat_id = first_kept_id(p, d, 2);
  plan_options o;
  o.jobs = 2;
  const gemm_plan plan = plan_gemm(p, d, c, o);

  ASSERT_TRUE(plan.recommended.has_value());
  EXPECT_EQ(*plan.recommended, 0u);
  EXPECT_EQ(plan.variants.size(), problem_search_space(family_named("mma"), p, d).size() +
                                      problem_search_space(family_named("wgmma"), p, d).size());
  int ok = 0;
  double last = 0;
  for (const auto& v : plan.variants) {
    if (v.config.id() == c.fail_id) {
      EXPECT_EQ(v.status, variant_status::compile_error);
      EXPECT_NE(v.compile_log.find("something went wrong"), std::string::npos);
    } else if (v.config.id() == c.spill_id) {
      EXPECT_EQ(v.status, variant_status::resource_limit);
      EXPECT_EQ(v.constraint, "spills");
    } else if (v.config.id() == c.fat_id) {
      EXPECT_EQ(v.status, variant_status::resource_limit);
      EXPECT_EQ(v.constraint, "occupancy");
    }
    if (v.status == variant_status::ok) {
      EXPECT_EQ(v.rank, ++ok);
      EXPECT_GE(v.predicted.time_us, last);  // best first
      last = v.predicted.time_us;
    } else {
      EXPECT_EQ(v.rank, 0);
      EXPECT_FALSE(v.reason.empty()) << v.config.id();
    }
  }
  EXPECT_GT(ok, 10);
}

TEST(gemm_tuner, json_has_the_contract_keys) {
  const device_spec& d = find_preset("a100-sxm-80gb");
  tuner_replay_compiler c;
  const gemm_plan plan = plan_gemm(tuner_problem(17, 33, 65, dtype::tf32), d, c, plan_options{});
  const auto j = to_json(plan, run_info{"tiletune gemm ...", "2026-11-22T00:00:00Z"});
  EXPECT_EQ(j["schema"], "tiletune.gemm/1");
  EXPECT_EQ(j["mode"], "predicted");
  // The commit the binary was built from: results in profiles/ say which code measured them.
  ASSERT_TRUE(j["tool"]["commit"].is_string());
  EXPECT_FALSE(j["tool"]["commit"].get<std::string>().empty());
  for (const char* k : {"name", "arch", "sm_count"}) EXPECT_TRUE(j["device"].contains(k)) << k;
  for (const char* k : {"m", "n", "k", "batch", "dtype", "layout", "alpha", "beta"})
    EXPECT_TRUE(j["problem"].contains(k)) << k;
  for (const char* k : {"provider", "median_us", "tflops"}) EXPECT_TRUE(j["reference"].contains(k)) << k;
  ASSERT_FALSE(j["variants"].empty());
  for (const auto& v : j["variants"]) {
    for (const char* k : {"id", "family", "tile", "status", "resources", "median_us", "tflops", "vs_reference",
                          "max_rel_error"})
      EXPECT_TRUE(v.contains(k)) << k;
    for (const char* k : {"registers", "smem_bytes", "spill_bytes", "threads"})
      EXPECT_TRUE(v["resources"].contains(k)) << k;
  }
  for (const char* k : {"id", "family", "tile", "tflops", "vs_reference", "triton", "cutlass"})
    EXPECT_TRUE(j["recommendation"].contains(k)) << k;
  EXPECT_EQ(j["recommendation"]["id"], j["variants"][0]["id"]);
  EXPECT_EQ(j["recommendation"]["triton"]["num_warps"], j["variants"][0]["tile"]["threads"].get<int>() / 32);
}

// Every tile parameter that changes the kernel reaches the Triton and CUTLASS
// translations: block shape, stages, split-K slices, rasterization group and
// order, consumers and cluster. (A split-K recommendation once lost its slices.)
TEST(gemm_tuner, every_tile_parameter_survives_the_translations) {
  const device_spec& h100 = find_preset("h100-sxm");
  std::vector<std::pair<tile_config, dtype>> all;
  for (const auto& p : {tuner_problem(16, 4096, 4096, dtype::bf16), tuner_problem(8192, 8192, 4096, dtype::bf16),
                        tuner_problem(16, 4096, 4096, dtype::f32), tuner_problem(8192, 8192, 4096, dtype::f32)})
    for (kernel_family f : families_for(p.type))
      for (const auto& c : problem_search_space(f, p, h100)) all.emplace_back(c, p.type);
  std::size_t split = 0, grouped = 0, fewer_stages = 0;
  for (const auto& [c, t] : all) {
    const auto tri = triton_config(c, t);
    const std::string cut = cutlass_shape(c, t), line = triton_summary(c, t);
    // Triton's blocks are the tile's, rounded up to what Triton compiles (a power of two, at least
    // 16), and the line says which were rounded.
    bool rounded = false;
    for (const auto& [key, size] : {std::pair<const char*, int>{"BLOCK_M", c.block_m}, {"BLOCK_N", c.block_n},
                                    {"BLOCK_K", c.block_k}}) {
      const int b = tri[key].get<int>();
      EXPECT_TRUE(b >= 16 && (b & (b - 1)) == 0 && b >= size && b < 2 * std::max(size, 16)) << c.id() << " " << key;
      if (b != size) {
        rounded = true;
        EXPECT_NE(line.find(fmt::format("{} {} -> {}", key, size, b)), std::string::npos) << line;
      }
    }
    EXPECT_EQ(line.find("->") != std::string::npos, rounded) << line;
    // A rounded tile's stages: no more of the larger buffers than the tile's own stages held, and
    // the line says where that took one away (128x192x64 in 5 stages is 128x256x64 in 4).
    const auto elements = [](std::int64_t m, std::int64_t n, std::int64_t k) { return m * k + k * n; };
    const int stages = tri["num_stages"].get<int>();
    EXPECT_GE(stages, 1) << c.id();
    EXPECT_LE(stages, c.stages) << c.id();
    if (stages > 1) {
      EXPECT_LE(elements(tri["BLOCK_M"], tri["BLOCK_N"], tri["BLOCK_K"]) * stages,
                elements(c.block_m, c.block_n, c.block_k) * c.stages)
          << c.id();
    }
    EXPECT_EQ(stages == c.stages, line.find(fmt::format("num_stages {} ->", c.stages)) == std::string::npos) << line;
    if (!rounded) {
      EXPECT_EQ(stages, c.stages) << c.id();
    }
    fewer_stages += stages < c.stages;
    if (c.id().rfind("wgmma_128x192x64_c2_s5_", 0) == 0) {
      EXPECT_EQ(stages, 4) << c.id();
    }
    // Swap-AB: CUTLASS runs the transposed problem, and its tile (the transposed one) is the one given.
    const bool swab = c.family == family_named("wgmma") && wgmma_swap_ab(c);
    EXPECT_NE(cut.find(swab ? fmt::format("TileShape<{},{},{}>", c.block_n, c.block_m, c.block_k)
                            : fmt::format("<{},{},{}>", c.block_m, c.block_n, c.block_k)),
              std::string::npos)
        << cut;
    if (swab) {
      EXPECT_EQ(cut.rfind("swap-AB: run CUTLASS on the transposed problem", 0), 0u) << cut;
      EXPECT_EQ(cut.find(fmt::format("TileShape<{},{},", c.block_m, c.block_n)), std::string::npos) << cut;
    }
    if (c.family != family_named("simt")) {
      EXPECT_NE(cut.find(fmt::format("stages {}", c.stages)), std::string::npos) << cut;
    }
    if (c.split_k > 1) {
      ++split;
      EXPECT_EQ(tri.value("SPLIT_K", 0), c.split_k) << c.id();
      EXPECT_NE(cut.find(fmt::format("split_k_slices {}", c.split_k)), std::string::npos) << c.id() << ": " << cut;
      EXPECT_NE(line.find(fmt::format("SPLIT_K={}", c.split_k)), std::string::npos) << line;
    } else {
      EXPECT_FALSE(tri.contains("SPLIT_K")) << c.id();
    }
    if (c.raster_group > 0) {
      ++grouped;
      EXPECT_EQ(tri.value(c.raster_along_n ? "GROUP_SIZE_N" : "GROUP_SIZE_M", 0), c.raster_group) << c.id();
      EXPECT_NE(cut.find(std::to_string(c.raster_group)), std::string::npos) << c.id() << ": " << cut;
      // (Swap-AB: the transposed problem's N is this one's M, so its order is the other one.)
      const bool along_n = c.raster_along_n != swab;
      const bool says_order = cut.find(along_n ? "AlongN" : "AlongM") != std::string::npos ||
                              cut.find(along_n ? "along N" : "along M") != std::string::npos;
      EXPECT_TRUE(says_order) << c.id() << ": " << cut;
      EXPECT_EQ(cut.find(along_n ? "AlongM" : "AlongN"), std::string::npos) << c.id() << ": " << cut;
    }
    if (c.family == family_named("wgmma")) {
      EXPECT_EQ(tri["num_warps"], 4 * wgmma_consumers(c));
      EXPECT_NE(cut.find(wgmma_pingpong(c)           ? "Pingpong"
                         : wgmma_consumers(c) == 2 ? "Cooperative"
                                                   : "KernelTmaWarpSpecialized"),
                std::string::npos)
          << cut;
      EXPECT_NE(cut.find(swab ? fmt::format("ClusterShape<{},{},1>", c.cluster_n, c.cluster_m)
                              : fmt::format("ClusterShape<{},{},1>", c.cluster_m, c.cluster_n)),
                std::string::npos)
          << cut;
    }
  }
  EXPECT_GT(split, 0u);  // the skinny problems bring split-K copies
  EXPECT_GT(grouped, 0u);
  EXPECT_GT(fewer_stages, 0u);  // the 192-wide tiles
}

// The CUTLASS translation names only schedules CUTLASS compiles: its StreamKScheduler with the cooperative
// kernel alone (the plain and ping-pong kernels static_assert against it), its grouped (ptr-array) kernels
// Cooperative or Pingpong with their own scheduler. A 64-row stream-K tile had been translated as
// KernelTmaWarpSpecialized with StreamKScheduler, which CUTLASS refuses to compile.
TEST(gemm_tuner, cutlass_translations_pair_only_schedules_cutlass_compiles) {
  const device_spec& h100 = find_preset("h100-sxm");
  const gemm_problem grouped =
      grouped_problem(groups_of_rows({3, 0, 130, 64}, group_layout::contiguous), 4096, 4096, dtype::bf16, parse_layout("nt"));
  std::size_t stream_k = 0, refused_stream_k = 0, in_groups = 0;
  for (const gemm_problem& p : {tuner_problem(16, 4096, 4096, dtype::bf16), tuner_problem(192, 4096, 4096, dtype::bf16),
                                tuner_problem(129, 4096, 4096, dtype::e4m3), grouped}) {
    for (const auto& c : problem_search_space(family_named("wgmma"), p, h100)) {
      const std::string cut = cutlass_shape(c, p.type);
      const bool says_stream_k = cut.find("StreamKScheduler") != std::string::npos;
      if (says_stream_k && cut.find("no CUTLASS stream-K") == std::string::npos) {
        ++stream_k;
        EXPECT_NE(cut.find("KernelTmaWarpSpecializedCooperative"), std::string::npos) << c.id() << ": " << cut;
        EXPECT_EQ(cut.find("PtrArray"), std::string::npos) << c.id() << ": " << cut;
      }
      if (wgmma_stream_k(c) && (p.grouped() || wgmma_consumers(c) != 2 || wgmma_pingpong(c))) {
        ++refused_stream_k;
        EXPECT_NE(cut.find("no CUTLASS stream-K for it"), std::string::npos) << c.id() << ": " << cut;
      }
      if (p.grouped()) {
        ++in_groups;
        EXPECT_TRUE(cut.find("KernelPtrArrayTmaWarpSpecializedCooperative") != std::string::npos ||
                    cut.find("KernelPtrArrayTmaWarpSpecializedPingpong") != std::string::npos)
            << c.id() << ": " << cut;
      }
    }
  }
  EXPECT_GT(stream_k, 0u);
  EXPECT_GT(refused_stream_k, 0u);
  EXPECT_GT(in_groups, 0u);
}

// --kernel-debug: every variant is built with the debug option, and the plan says so.
TEST(gemm_tuner, kernel_debug_builds_every_variant_with_its_option) {
  EXPECT_TRUE(kernel_debug_options("").empty());
  EXPECT_EQ(kernel_debug_options("lineinfo"), std::vector<std::string>{"-lineinfo"});
  EXPECT_EQ(kernel_debug_options("full"), std::vector<std::string>{"-G"});
  EXPECT_EQ(kernel_debug_options("racecheck"), (std::vector<std::string>{"-lineinfo", "-DTT_EVERY_THREAD_ARRIVES=1"}));
  EXPECT_THROW(kernel_debug_options("-G"), usage_error);
  for (const char* level : {"lineinfo", "full", "racecheck"}) {
    tuner_replay_compiler c;
    plan_options o;
    o.kernel_debug = level;
    const gemm_plan plan = plan_gemm(tuner_problem(256, 256, 256, dtype::bf16), find_preset("h100-sxm"), c, o);
    ASSERT_FALSE(c.options_seen.empty());
    const std::vector<std::string> want = kernel_debug_options(level);
    for (const auto& opts : c.options_seen) {
      ASSERT_GE(opts.size(), want.size()) << level;
      EXPECT_EQ(std::vector<std::string>(opts.end() - static_cast<long>(want.size()), opts.end()), want) << level;
    }
    EXPECT_NE(plan.notes.front().find("debugging"), std::string::npos);
  }
}

TEST(gemm_tuner, a_problem_no_variant_can_run_has_no_recommendation) {
  device_spec tiny = find_preset("l4");
  tiny.smem_per_block_optin_bytes = 1024;  // nothing fits
  tuner_replay_compiler c;
  const gemm_plan plan = plan_gemm(tuner_problem(64, 64, 64, dtype::f16), tiny, c, plan_options{});
  EXPECT_FALSE(plan.recommended);
  for (const auto& v : plan.variants) EXPECT_NE(v.status, variant_status::ok);
  EXPECT_TRUE(to_json(plan, {})["recommendation"].is_null());
}

TEST(gemm_tuner, memory_check_names_the_sizes_and_the_gpu) {
  gemm_problem p = tuner_problem(30000, 30000, 30000, dtype::f32);
  p.batch = 4;
  try {
    check_fits_memory(p, find_preset("l4"));
    FAIL();
  } catch (const usage_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("30000x30000x30000"), std::string::npos);
    EXPECT_NE(m.find("L4"), std::string::npos);
  }
  EXPECT_NO_THROW(check_fits_memory(p, find_preset("h200")));
}

TEST(kernel_templates, sources_carry_the_configuration) {
  const std::string s = render_kernel_source(mma_tile(128, 64, 32, 2, 2, 3), dtype::bf16, parse_layout("tn"));
  for (const char* line : {"#define TT_DTYPE 3\n", "#define TT_A_T 1\n", "#define TT_B_T 0\n", "#define TT_BM 128\n",
                           "#define TT_BN 64\n", "#define TT_STAGES 3\n", "tiletune_gemm"})
    EXPECT_NE(s.find(line), std::string::npos) << line;
  EXPECT_EQ(s.find("#include"), std::string::npos);  // self-contained for NVRTC
  EXPECT_THROW(template_text("nope.cu"), std::out_of_range);
  // Every template of kernels_templates/ is embedded (CMake collects them by folder), and nothing else.
  std::set<std::string> on_disk, embedded;
  const std::filesystem::path root = std::filesystem::path(TILETUNE_SOURCE_DIR) / "kernels_templates";
  for (const auto& e : std::filesystem::recursive_directory_iterator(root))
    if (e.is_regular_file() && (e.path().extension() == ".cu" || e.path().extension() == ".cuh"))
      on_disk.insert(std::filesystem::relative(e.path(), root).generic_string());
  for (const auto& t : embedded_templates()) embedded.insert(t.name);
  EXPECT_EQ(embedded, on_disk);
  EXPECT_GE(embedded.size(), 6u);
}

TEST(kernel_templates, wgmma_sources_are_self_contained_and_built_for_sm_90a) {
  const tile_config c = wgmma_tile(256, 128, 64, 2, 4, 8, true);
  const std::string s = render_kernel_source(c, dtype::bf16, parse_layout("tn"));
  for (const char* line : {"#define TT_CONSUMERS 2\n", "#define TT_RASTER_GROUP 8\n", "#define TT_RASTER_N 1\n",
                           "#define TT_STAGES 4\n", "tt_tile_of", "m64n128k16.f32.bf16.bf16", "tiletune_gemm"})
    EXPECT_NE(s.find(line), std::string::npos) << line;
  EXPECT_EQ(s.find("#include"), std::string::npos);
  const compile_job job = make_compile_job(c, dtype::bf16, parse_layout("tn"), find_preset("h100-sxm"));
  EXPECT_EQ(job.arch, "sm_90a");
  EXPECT_EQ(make_compile_job(mma_tile(128, 64, 32, 2, 2, 3), dtype::bf16, parse_layout("tn"), find_preset("h100-sxm")).arch,
            "sm_90");
}
