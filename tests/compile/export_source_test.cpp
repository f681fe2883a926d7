// An exported kernel's source compiles again with NVRTC, alone, to the same
// kernel tiletune compiled (same registers; the entry under the export's own name), on the CPU.
#include <gtest/gtest.h>

#include "core/export/kernel_export.hpp"
#include "core/export/kernel_header.hpp"
#include "core/compile/kernel_templates.hpp"
#include "cuda/nvrtc_compiler.hpp"

using namespace tiletune;

namespace {
// What the header comment tells a user to do: the exported source alone, the listed options.
template <typename Files>
compiled_kernel compile_again(nvrtc_compiler& nvrtc, const Files& files, const nlohmann::json& manifest) {
  compile_job again;
  again.name = files[0].name;
  again.source = files[0].bytes;
  again.arch = manifest["arch"].template get<std::string>();
  again.entry = manifest["launch"]["entry"].template get<std::string>();  // the GEMM's, renamed
  for (const auto& opt : manifest["compile"]["nvrtc_options"])
    if (!opt.template get<std::string>().starts_with("--gpu-architecture="))
      again.options.push_back(opt.template get<std::string>());
  return nvrtc.compile(again);
}
// The offline plan of one variant of a problem for an H100.
gemm_plan plan_only(const gemm_problem& p, const char* id, nvrtc_compiler& nvrtc) {
  plan_options o;
  o.only = {id};
  return plan_gemm(p, find_preset("h100-sxm"), nvrtc, o);
}
}  // namespace

TEST(export_source, compiles_again_with_nvrtc_to_the_same_kernel) {
  struct want {
    dtype type;
    const char* layout;
    const char* id;
  };
  for (const want& w : {want{dtype::f32, "tn", "simt_64x64x8_t8x8_v4"}, want{dtype::bf16, "nt", "mma_128x128x32_w2x2_s3"},
                        want{dtype::tf32, "tt", "mma_64x64x32_w2x2_s3"}}) {
    gemm_problem p;
    p.m = 1000;
    p.n = 3000;
    p.k = 777;
    p.type = w.type;
    p.layout = parse_layout(w.layout);
    nvrtc_compiler nvrtc;
    const gemm_plan plan = plan_only(p, w.id, nvrtc);
    ASSERT_TRUE(plan.recommended) << w.id;
    const variant_result& v = plan.variants[*plan.recommended];
    ASSERT_EQ(v.config.id(), w.id);
    const auto files = export_variant(plan, v, {"test", "2026-01-01T00:00:00Z"});
    ASSERT_EQ(files.size(), 4u);
    const auto manifest = nlohmann::json::parse(files[2].bytes);
    const compiled_kernel k = compile_again(nvrtc, files, manifest);
    ASSERT_TRUE(k.ok) << w.id << "\n" << k.log;
    EXPECT_EQ(k.cubin.substr(0, 4), "\x7f" "ELF") << w.id;
    EXPECT_NE(k.cubin.find(manifest["launch"]["entry"].get<std::string>()), std::string::npos) << w.id;
    EXPECT_EQ(manifest["launch"]["entry"], export_entry_name(v.config, p));
    EXPECT_EQ(k.resources.registers, v.resources.registers) << w.id;
    EXPECT_EQ(k.resources.spill_bytes(), 0) << w.id;
    EXPECT_EQ(manifest["resources"]["registers"], v.resources.registers);
  }
}

// The newer wgmma mechanisms export whole: the source compiles again alone, the manifest and the
// host header carry the cluster launch, C's tensor map (TMA store) and B's map first (swap-AB), and
// the launch requirements say where they ran (tiletune's own launch on an H200, 2026-12-04).
TEST(export_source, the_new_wgmma_mechanisms_export_with_their_maps_and_clusters) {
  struct want {
    std::int64_t m;
    const char* id;
    const char* header_has;
    dtype t = dtype::bf16;
    const char* layout = "nt";
  };
  for (const want& w : {want{4096, "wgmma_128x128x64_c2_s4_cl1x1_g8m_tmas_pp", "encode(&tmap_c"},
                        want{4096, "wgmma_128x256x64_c2_s4_cl2x1_g8m", "clusterDim.x = 2"},
                        want{16, "wgmma_16x128x64_c1_s8_cl1x1_g8m_k2_swab", "encode(&tmap_a, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(static_cast<const void*>(B))"},
                        // K-major copies: the pre-pass renamed with the entry, launched first, B's map on the copy.
                        want{4096, "wgmma_128x128x32_c2_s4_cl1x1_g8m_kc", "encode(&tmap_b, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<void*>(static_cast<const void*>(B_k_major))", dtype::tf32, "nn"}}) {
    gemm_problem p;
    p.m = w.m;
    p.n = p.k = 4096;
    p.type = w.t;
    p.layout = parse_layout(w.layout);
    nvrtc_compiler nvrtc;
    const gemm_plan plan = plan_only(p, w.id, nvrtc);
    ASSERT_TRUE(plan.recommended) << w.id;
    const variant_result& v = plan.variants[*plan.recommended];
    ASSERT_EQ(v.config.id(), w.id);
    const auto files = export_variant(plan, v, {"test", "2026-01-01T00:00:00Z"});
    ASSERT_EQ(files.size(), 4u);
    const auto manifest = nlohmann::json::parse(files[2].bytes);
    const compiled_kernel k = compile_again(nvrtc, files, manifest);
    ASSERT_TRUE(k.ok) << w.id << "\n" << k.log;
    EXPECT_EQ(k.resources.registers, v.resources.registers) << w.id;
    EXPECT_NE(files[3].bytes.find(w.header_has), std::string::npos) << w.id << "\n" << files[3].bytes;
    EXPECT_NE(manifest.dump().find("tiletune's own launch"), std::string::npos) << w.id;
  }
}
