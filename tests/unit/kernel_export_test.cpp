// The launch description, the exported files and their atomic writing, on the CPU.
#include "core/export/kernel_export.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/gemm/families/simt/simt_family.hpp"
#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/search_space.hpp"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

class fixed_compiler : public kernel_compiler {
 public:
  compiled_kernel compile(const compile_job& job) override {
    compiled_kernel k;
    k.ok = true;
    k.cubin = "\x7f" "ELF cubin of " + job.name;
    k.resources.registers = 90;
    return k;
  }
  std::string version() const override { return "fixed 1.0"; }
};

gemm_problem export_odd_problem(dtype t, const char* layout_name) {
  gemm_problem p;
  p.m = 1000;
  p.n = 3000;
  p.k = 777;
  p.batch = 3;
  p.type = t;
  p.layout = parse_layout(layout_name);
  p.alpha = 1.5;
  p.beta = 0.25;
  return p;
}

gemm_plan plan_for(const gemm_problem& p, std::vector<std::string> only = {}) {
  fixed_compiler compiler;
  plan_options o;
  o.only = std::move(only);
  return plan_gemm(p, find_preset("h100-sxm"), compiler, o);
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / fmt::format("tiletune-export-test-{}-{}", getpid(), name);
  fs::remove_all(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(kernel_export, simt_and_mma_launch_matches_the_worker_and_names_every_parameter_in_order) {
  const device_spec& d = find_preset("h100-sxm");
  for (const auto& [c, t, layout_name] :
       {std::tuple{simt_tile(64, 128, 8, 8, 8, 4), dtype::f32, "tn"}, std::tuple{mma_tile(128, 64, 32, 2, 2, 3), dtype::bf16, "nt"}}) {
    const gemm_problem p = export_odd_problem(t, layout_name);
    const kernel_launch l = describe_launch(c, p, d);
    const launch_shape s = launch_shape_for(c, p);
    EXPECT_EQ(l.entry, "tiletune_gemm");
    EXPECT_EQ(l.grid, (std::array<std::int64_t, 3>{s.grid_x, s.grid_y, s.grid_z}));
    EXPECT_EQ(l.grid[0], (1000 + c.block_m - 1) / c.block_m);
    EXPECT_EQ(l.grid[2], 3);
    EXPECT_EQ(l.block, (std::array<std::int64_t, 3>{c.threads(), 1, 1}));
    EXPECT_EQ(l.cluster, (std::array<std::int64_t, 3>{1, 1, 1}));
    EXPECT_EQ(l.dynamic_smem_bytes, c.smem_bytes(p.type, p.layout));
    EXPECT_TRUE(l.tensor_maps.empty());
    std::vector<std::string> names;
    for (const auto& k : l.parameters) names.push_back(k.name);
    EXPECT_EQ(names, (std::vector<std::string>{"A", "B", "C", "M", "N", "K", "lda", "ldb", "ldc", "batch_stride_a",
                                               "batch_stride_b", "batch_stride_c", "alpha", "beta", "workspace",
                                               "tile_counters"}));
    const std::string elem = t == dtype::f32 ? "float" : "unsigned short";
    EXPECT_EQ(l.parameters[0].c_type, "const " + elem + "*");
    EXPECT_EQ(l.parameters[2].c_type, elem + "*");
    EXPECT_EQ(l.parameters[0].kind, "pointer");
    EXPECT_TRUE(l.parameters[0].value.is_null());
    EXPECT_EQ(l.parameters[6].value, p.lda());
    EXPECT_EQ(l.parameters[7].value, p.ldb());
    EXPECT_EQ(l.parameters[8].value, 3000);
    EXPECT_EQ(l.parameters[9].c_type, "long long");
    EXPECT_EQ(l.parameters[9].value, 1000 * 777);
    EXPECT_EQ(l.parameters[12].value.get<double>(), 1.5);
    EXPECT_EQ(l.parameters[13].value.get<double>(), 0.25);
  }
  // 't' A is stored K x M: lda is M; 'n' B is K x N: ldb is N.
  const kernel_launch tn = describe_launch(simt_tile(64, 128, 8, 8, 8, 4), export_odd_problem(dtype::f32, "tn"), d);
  EXPECT_EQ(tn.parameters[6].value, 1000);
  EXPECT_EQ(tn.parameters[7].value, 3000);
  EXPECT_NE(tn.parameters[0].meaning.find("K x M"), std::string::npos) << tn.parameters[0].meaning;
}

TEST(kernel_export, launch_json_carries_cluster_and_tensor_maps) {
  kernel_launch l =
      describe_launch(mma_tile(64, 64, 32, 2, 2, 3), export_odd_problem(dtype::f16, "nn"), find_preset("h100-sxm"));
  l.cluster = {2, 1, 1};
  tensor_map_description t;
  t.parameter = "tmap_a";
  t.tensor = "A";
  t.data_type = "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
  t.global_dims = {777, 1000};
  t.global_strides_bytes = {1554};
  t.box_dims = {64, 128};
  t.element_strides = {1, 1};
  t.swizzle = "CU_TENSOR_MAP_SWIZZLE_128B";
  l.tensor_maps.push_back(t);
  const nlohmann::json j = to_json(l);
  EXPECT_EQ(j["cluster"], nlohmann::json::array({2, 1, 1}));
  EXPECT_EQ(j["parameters"].size(), 16u);
  EXPECT_EQ(j["parameters"][3]["name"], "M");
  EXPECT_EQ(j["parameters"][3]["value"], 1000);
  ASSERT_EQ(j["tensor_maps"].size(), 1u);
  EXPECT_EQ(j["tensor_maps"][0]["rank"], 2);
  EXPECT_EQ(j["tensor_maps"][0]["global_strides_bytes"], nlohmann::json::array({1554}));
  EXPECT_EQ(j["tensor_maps"][0]["swizzle"], "CU_TENSOR_MAP_SWIZZLE_128B");

  // A cluster launch is explained with cuLaunchKernelEx in the source's header.
  const gemm_plan plan = plan_for(export_odd_problem(dtype::f16, "nn"));
  ASSERT_TRUE(plan.recommended);
  const std::string src = exported_source(plan, plan.variants[*plan.recommended], l, {"cmd", "2026-01-01T00:00:00Z"});
  EXPECT_NE(src.find("CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (2, 1, 1)"), std::string::npos);
  EXPECT_NE(src.find("tmap_a: cuTensorMapEncodeTiled over A"), std::string::npos);
}

TEST(kernel_export, exported_files_say_what_the_plan_says) {
  const gemm_plan plan = plan_for(export_odd_problem(dtype::bf16, "nt"));
  ASSERT_TRUE(plan.recommended);
  const variant_result& v = plan.variants[*plan.recommended];
  const auto files = export_variant(plan, v, {"tiletune gemm ...", "2026-01-01T00:00:00Z"});
  ASSERT_EQ(files.size(), 4u);
  const std::string id = v.config.id();
  // The problem in the name, and a persistent grid's SM count (wgmma's 384 tiles over 132 SMs).
  const std::string entry = "tiletune_" + id + "_bf16_nt_1000x3000x777_b3" +
                            (id.rfind("wgmma_", 0) == 0 ? "_sm" + std::to_string(plan.device.sm_count) : "");
  EXPECT_EQ(files[0].name, id + ".cu");
  EXPECT_EQ(files[1].name, id + ".cubin");
  EXPECT_EQ(files[1].bytes, v.cubin);
  EXPECT_EQ(files[2].name, id + ".json");

  const std::string& src = files[0].bytes;
  EXPECT_EQ(src.find("#line"), std::string::npos) << "no #line pointing at files the reader lacks";
  EXPECT_NE(src.find("#define TT_BM " + std::to_string(v.config.block_m)), std::string::npos);
  EXPECT_NE(src.find(entry + "("), std::string::npos);
  EXPECT_EQ(src.find("tiletune_gemm("), std::string::npos) << "the export's entry has a name of its own";
  EXPECT_NE(src.find("PREDICTED"), std::string::npos);
  // K 777 puts bf16 rows off 16 bytes: the wgmma family's padded copies (_kc), for sm_90a.
  EXPECT_NE(src.find("nvcc -cubin -arch=sm_90a"), std::string::npos);
  // nvcc's cubin goes beside the shipped one (NVRTC's, its entry tiletune_gemm), never over it.
  EXPECT_NE(src.find(" -o " + id + ".nvcc.cubin " + id + ".cu"), std::string::npos) << src.substr(0, 3000);
  EXPECT_NE(src.find("1000x3000x777 batch 3 bf16 nt"), std::string::npos);

  const auto j = nlohmann::json::parse(files[2].bytes);
  EXPECT_EQ(j["schema"], "tiletune.kernel/1");
  EXPECT_EQ(j["id"], id);
  EXPECT_EQ(j["mode"], "predicted");
  EXPECT_EQ(j["arch"], "sm_90a");
  EXPECT_EQ(j["launch"]["entry"], entry);
  EXPECT_EQ(j["launch"]["cubin_entry"], "tiletune_gemm");
  EXPECT_EQ(j["files"]["header"], id + ".h");
  EXPECT_EQ(files[3].name, id + ".h");
  EXPECT_NE(files[3].bytes.find("extern \"C\" __global__ void " + entry + "("), std::string::npos);
  EXPECT_NE(files[3].bytes.find("cudaError_t " + entry + "_launch("), std::string::npos);
  EXPECT_EQ(j["resources"]["registers"], 90);
  EXPECT_EQ(j["figures"]["basis"], "predicted");
  EXPECT_EQ(j["figures"]["rank"], 1);
  EXPECT_DOUBLE_EQ(j["figures"]["tflops"].get<double>(), v.predicted.tflops);
  EXPECT_EQ(j["problem"]["m"], 1000);
  EXPECT_EQ(j["files"]["cubin"], id + ".cubin");
}

TEST(kernel_export, only_ids_are_exported_in_their_order_and_a_variant_that_is_not_ok_is_refused) {
  const gemm_plan plan =
      plan_for(export_odd_problem(dtype::f32, "nn"), {"simt_64x64x8_t8x8_v4", "simt_128x128x8_t8x8_v4"});
  const auto chosen = variants_to_export(plan, {"simt_64x64x8_t8x8_v4", "simt_128x128x8_t8x8_v4"});
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0]->config.id(), "simt_64x64x8_t8x8_v4");
  EXPECT_EQ(chosen[1]->config.id(), "simt_128x128x8_t8x8_v4");
  EXPECT_EQ(variants_to_export(plan, {}).size(), plan.recommended ? 1u : 0u);

  variant_result pruned = *chosen[0];
  pruned.status = variant_status::pruned;
  EXPECT_THROW(export_variant(plan, pruned, {}), std::invalid_argument);

  gemm_plan empty = plan;
  empty.recommended.reset();
  EXPECT_TRUE(variants_to_export(empty, {}).empty());
}

TEST(kernel_export, folder_names_of_suite_problems) {
  EXPECT_EQ(export_folder_name("llama-3-8b q_proj 4096 tokens"), "llama-3-8b-q_proj-4096-tokens");
  EXPECT_EQ(export_folder_name("a/b"), "a-b");
  EXPECT_EQ(export_folder_name(".."), "problem..");
  EXPECT_EQ(export_folder_name(""), "problem");
}

TEST(kernel_export, writes_whole_files_replaces_old_ones_and_leaves_no_temporary) {
  const fs::path dir = fresh_dir("write") / "deeper";
  write_export(dir, {{"x.cu", "old"}, {"sub/y.json", "{}"}});
  EXPECT_EQ(slurp(dir / "x.cu"), "old");
  EXPECT_EQ(slurp(dir / "sub" / "y.json"), "{}");
  write_export(dir, {{"x.cu", "new"}});
  EXPECT_EQ(slurp(dir / "x.cu"), "new");
  for (const auto& e : fs::recursive_directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  fs::remove_all(dir.parent_path());
}

TEST(kernel_export, a_file_or_an_unwritable_folder_is_refused_naming_it) {
  const fs::path base = fresh_dir("bad");
  fs::create_directories(base);
  std::ofstream(base / "plain") << "x";
  try {
    check_export_dir(base / "plain");
    ADD_FAILURE() << "a file is not a folder";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find((base / "plain").string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_export_dir(base / "plain" / "under"), usage_error);
  EXPECT_THROW(write_export(base / "plain", {{"a.cu", "x"}}), usage_error);
  EXPECT_EQ(slurp(base / "plain"), "x");
  EXPECT_NO_THROW(check_export_dir(base / "new" / "folders"));
  if (geteuid() != 0) {  // root writes anywhere
    fs::create_directories(base / "locked");
    chmod((base / "locked").c_str(), 0555);
    EXPECT_THROW(check_export_dir(base / "locked"), usage_error);
    EXPECT_THROW(check_export_dir(base / "locked" / "sub"), usage_error);
    chmod((base / "locked").c_str(), 0755);
  }
  fs::remove_all(base);
}

TEST(kernel_export, measured_figures_are_labelled_measured) {
  gemm_plan plan = plan_for(export_odd_problem(dtype::f16, "tt"));
  ASSERT_TRUE(plan.recommended);
  plan.mode = plan_mode::measured;
  measure_response ref;
  ref.status = variant_status::ok;
  ref.timing.samples = 20;
  ref.timing.median_us = 8;
  plan.reference = ref;
  variant_result& v = plan.variants[*plan.recommended];
  measure_response m;
  m.status = variant_status::ok;
  m.timing.samples = 20;
  m.timing.median_us = 10;
  m.timer = "cupti";
  m.verified = true;
  v.measured = m;
  const auto files = export_variant(plan, v, {"cmd", "2026-01-01T00:00:00Z"});
  const auto j = nlohmann::json::parse(files[2].bytes);
  EXPECT_EQ(j["mode"], "measured");
  EXPECT_EQ(j["figures"]["basis"], "measured");
  EXPECT_EQ(j["figures"]["median_us"], 10.0);
  EXPECT_DOUBLE_EQ(j["figures"]["vs_reference"].get<double>(), 0.8);
  EXPECT_EQ(j["figures"]["timer"], "cupti");
  EXPECT_TRUE(j["figures"]["verified"].get<bool>());
  EXPECT_EQ(j["figures"]["reference"]["median_us"], 8.0);
  EXPECT_NE(files[0].bytes.find("MEASURED: 10.0 us median"), std::string::npos);
  EXPECT_NE(files[0].bytes.find("0.80x cuBLASLt"), std::string::npos);
  EXPECT_EQ(files[0].bytes.find("PREDICTED"), std::string::npos);
}

// Exports for two GPUs link into one program: where a variant's launch differs between them (its grid,
// a buffer's bytes), its entry names differ. The H100 SXM's and PCIe's launchers of a split-K decode tile
// inside a cluster of 4 (grids 132 and 112) had shared one name: one more SM left the grid of whole
// clusters as it was, which was the test of a GPU's grid.
TEST(kernel_export, launches_that_differ_between_gpus_never_share_an_entry_name) {
  const device_spec& sxm = find_preset("h100-sxm");
  const device_spec& pcie = find_preset("h100-pcie");
  int differ = 0;
  for (const gemm_problem& p : {export_odd_problem(dtype::bf16, "nt"), [] {
         gemm_problem q = export_odd_problem(dtype::bf16, "nt");
         q.m = 16, q.n = 16384, q.k = 4096, q.batch = 1;
         return q;
       }()})
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, sxm)) {
      if (check_constraints(c, p, sxm) || check_constraints(c, p, pcie)) continue;
      const kernel_launch a = describe_launch(c, p, sxm), b = describe_launch(c, p, pcie);
      bool same = a.grid == b.grid && a.parameters.size() == b.parameters.size();
      for (std::size_t i = 0; same && i < a.parameters.size(); ++i)
        same = a.parameters[i].buffer_bytes == b.parameters[i].buffer_bytes;
      if (same) continue;
      ++differ;
      EXPECT_NE(export_entry_name(c, p, sxm), export_entry_name(c, p, pcie)) << c.id() << " " << p.describe();
    }
  EXPECT_GT(differ, 0);
}
