// The exported kernel's own name and its host header (ID.h), on the CPU.
// tests/cli/export_link_cli_test.cpp compiles and links two of them with nvcc.
#include "core/export/kernel_header.hpp"

#include <cctype>
#include <set>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "core/compile/kernel_templates.hpp"
#include "core/device/device_spec.hpp"
#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/simt/simt_family.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/export/kernel_export.hpp"

using namespace tiletune;

namespace {

gemm_problem header_problem(dtype t, const char* layout_name) {
  gemm_problem p;
  p.m = 1000;
  p.n = 3000;
  p.k = 777;
  p.batch = 2;
  p.type = t;
  p.layout = parse_layout(layout_name);
  return p;
}

bool is_c_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (const char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
  return true;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(kernel_header, entry_names_are_c_identifiers_distinct_per_variant_and_problem_and_stable) {
  std::set<std::string> names;
  const tile_config tiles[] = {simt_tile(64, 64, 8, 8, 8, 4), mma_tile(128, 128, 32, 2, 2, 3),
                               mma_tile(128, 64, 32, 2, 2, 3), wgmma_tile(128, 256, 64, 2, 4)};
  for (const auto& c : tiles)
    for (const dtype t : {dtype::f32, dtype::bf16})
      for (const char* l : {"nn", "nt", "tn", "tt"})
        for (const std::int64_t m : {std::int64_t{16}, std::int64_t{4096}})
          for (const std::int64_t batch : {std::int64_t{1}, std::int64_t{2}}) {
            gemm_problem p = header_problem(t, l);
            p.m = m;
            p.batch = batch;
            const std::string name = export_entry_name(c, p);
            EXPECT_TRUE(is_c_identifier(name)) << name;
            EXPECT_NE(name, kernel_entry_name);
            EXPECT_TRUE(names.insert(name).second) << "twice: " << name;
            EXPECT_EQ(name, export_entry_name(c, p));
          }
  gemm_problem p = header_problem(dtype::bf16, "nt");
  p.m = 4096, p.n = 1024, p.k = 512, p.batch = 1;
  EXPECT_EQ(export_entry_name(mma_tile(128, 128, 32, 2, 2, 3), p), "tiletune_mma_128x128x32_w2x2_s3_bf16_nt_4096x1024x512");
  p.batch = 3;
  EXPECT_EQ(export_entry_name(mma_tile(128, 128, 32, 2, 2, 3), p),
            "tiletune_mma_128x128x32_w2x2_s3_bf16_nt_4096x1024x512_b3");
  // Grouped problems of the same rows in all, split differently: each its own name.
  const tile_config w = wgmma_tile(128, 256, 64, 2, 4);
  const gemm_problem even = grouped_problem(groups_of_rows({64, 64}, group_layout::contiguous), 1024, 512,
                                            dtype::bf16, parse_layout("nt"));
  const gemm_problem skew = grouped_problem(groups_of_rows({100, 28}, group_layout::contiguous), 1024, 512,
                                            dtype::bf16, parse_layout("nt"));
  EXPECT_NE(export_entry_name(w, even), export_entry_name(w, skew));
  EXPECT_NE(export_entry_name(w, even).find("_nt_128x1024x512_g2_"), std::string::npos) << export_entry_name(w, even);
  EXPECT_TRUE(is_c_identifier(export_entry_name(w, skew)));
}

TEST(kernel_header, rename_entry_replaces_the_whole_word_only) {
  EXPECT_EQ(rename_entry("void tiletune_gemm(int); // tiletune_gemm\ntiletune_gemm_x my_tiletune_gemm", "k_1"),
            "void k_1(int); // k_1\ntiletune_gemm_x my_tiletune_gemm");
  EXPECT_EQ(rename_entry("tiletune_gemm", "k"), "k");
  // A prologue's entry takes the export's name and its suffix; a longer word stays.
  EXPECT_EQ(rename_entry("tiletune_gemm_transpose(x); tiletune_gemm_transposed", "k"),
            "k_transpose(x); tiletune_gemm_transposed");
  EXPECT_EQ(rename_entry("no entry here", "k"), "no entry here");
}

TEST(kernel_header, simt_header_declares_the_kernel_and_launches_it_with_every_parameter_in_order) {
  const gemm_problem p = header_problem(dtype::f32, "tn");
  kernel_launch l = describe_launch(simt_tile(64, 64, 8, 8, 8, 4), p, find_preset("h100-sxm"));
  l.entry = "tiletune_x";
  const std::string h = exported_header(l, "simt_x", "// about\n");
  EXPECT_EQ(h.rfind("// about\n", 0), 0u);
  EXPECT_NE(h.find("#pragma once"), std::string::npos);
  EXPECT_EQ(h.find("#include <cuda.h>"), std::string::npos) << "no tensor map, no driver types";
  EXPECT_NE(h.find("extern \"C\" __global__ void tiletune_x(const float* A, const float* B, float* C, int M,"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("static constexpr int tiletune_x_M = 1000;"), std::string::npos) << h;
  EXPECT_NE(h.find("static constexpr long long tiletune_x_batch_stride_a = 777000;"), std::string::npos) << h;
  EXPECT_NE(h.find("cudaError_t tiletune_x_launch(const float* A, const float* B, float* C, float* workspace, "
                   "unsigned* tile_counters, float alpha, float beta, cudaStream_t stream = 0)"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find(fmt::format("config.gridDim = dim3({}, {}, {});", l.grid[0], l.grid[1], l.grid[2])),
            std::string::npos);
  EXPECT_NE(h.find(fmt::format("static constexpr unsigned tiletune_x_dynamic_smem_bytes = {};", l.dynamic_smem_bytes)),
            std::string::npos);
  EXPECT_NE(h.find("cudaFuncAttributeMaxDynamicSharedMemorySize"), std::string::npos);
  EXPECT_NE(h.find("cudaLaunchKernelEx(&config, tiletune_x, A, B, C, tiletune_x_M, tiletune_x_N, tiletune_x_K, "
                   "tiletune_x_lda, tiletune_x_ldb, tiletune_x_ldc, tiletune_x_batch_stride_a, "
                   "tiletune_x_batch_stride_b, tiletune_x_batch_stride_c, alpha, beta, workspace, tile_counters);"),
            std::string::npos)
      << h;
  EXPECT_EQ(h.find("cudaLaunchAttributeClusterDimension"), std::string::npos);
  // A launch without tensor maps does not speak of them (the mma and simt headers did).
  EXPECT_EQ(h.find("tensor map"), std::string::npos) << h;
  EXPECT_NE(h.find("// Returns the first CUDA error: the attribute or the launch."), std::string::npos) << h;
}

TEST(kernel_header, wgmma_header_encodes_each_tensor_map_and_sets_the_cluster) {
  const gemm_problem p = header_problem(dtype::bf16, "nt");
  kernel_launch l = describe_launch(wgmma_tile(128, 256, 64, 2, 4), p, find_preset("h100-sxm"));
  ASSERT_EQ(l.tensor_maps.size(), 2u);
  l.entry = "tiletune_w";
  l.cluster = {2, 1, 1};
  const std::string h = exported_header(l, "wgmma_x", "");
  EXPECT_NE(h.find("#include <cuda.h>"), std::string::npos);
  EXPECT_NE(h.find("tiletune_w(const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap "
                   "tmap_b, unsigned short* C,"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("tiletune_w_launch(const void* A, const void* B, unsigned short* C, float alpha, float beta,"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("cudaGetDriverEntryPointByVersion(\"cuTensorMapEncodeTiled\""), std::string::npos);
  EXPECT_EQ(count(h, "if (encode(&"), 2u);
  EXPECT_NE(h.find("encode(&tmap_a, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(static_cast<const void*>(A))"), std::string::npos)
      << h;
  EXPECT_NE(h.find("encode(&tmap_b, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(static_cast<const void*>(B))"), std::string::npos);
  const auto& a = l.tensor_maps[0];
  EXPECT_NE(h.find(fmt::format("const cuuint64_t dims[] = {{{}, {}, {}}};", a.global_dims[0], a.global_dims[1],
                               a.global_dims[2])),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("CU_TENSOR_MAP_SWIZZLE_128B"), std::string::npos);
  EXPECT_NE(h.find("cluster[0].val.clusterDim.x = 2;"), std::string::npos);
  EXPECT_NE(h.find("config.numAttrs = 1;"), std::string::npos);
  EXPECT_NE(h.find("cudaLaunchKernelEx(&config, tiletune_w, tmap_a, tmap_b, C, tiletune_w_M,"), std::string::npos);
}

// Stream-K's grid is every SM of the tuned GPU, each CTA resident at once: on a GPU of fewer SMs the
// launch would never finish, so the launcher returns an error instead; a grid that loops over its
// tiles has no such check.
TEST(kernel_header, a_stream_k_launcher_refuses_a_gpu_of_fewer_sms) {
  const gemm_problem p = header_problem(dtype::bf16, "nt");
  tile_config sk = wgmma_tile(128, 256, 64, 2, 4);
  set_wgmma_stream_k(sk, true);
  kernel_launch l = describe_launch(sk, p, find_preset("h100-pcie"));
  EXPECT_TRUE(l.all_resident);
  l.entry = "tiletune_sk";
  const std::string h = exported_header(l, "wgmma_sk", "");
  EXPECT_NE(h.find("cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)"), std::string::npos) << h;
  EXPECT_NE(h.find("if (sms < 114) return cudaErrorCooperativeLaunchTooLarge;"), std::string::npos) << h;
  EXPECT_LT(h.find("cudaErrorCooperativeLaunchTooLarge"), h.find("cudaLaunchKernelEx(&config"));
  kernel_launch plain = describe_launch(wgmma_tile(128, 256, 64, 2, 4), p, find_preset("h100-pcie"));
  EXPECT_FALSE(plain.all_resident);
  plain.entry = "tiletune_w";
  EXPECT_EQ(exported_header(plain, "wgmma_x", "").find("cudaDevAttrMultiProcessorCount"), std::string::npos);
}

// K-major copies (_kc): the header declares the pre-pass and the GEMM, takes the operand and its
// copy's buffer once each, launches the pre-pass first and maps the copy, not the operand.
TEST(kernel_header, a_prologue_is_declared_and_launched_before_the_gemm_on_the_copy) {
  gemm_problem p = header_problem(dtype::tf32, "nn");
  p.k = 776;  // rows on 16 bytes: only B (stored K x N) is copied
  tile_config c = wgmma_tile(128, 128, 32, 2, 4);
  set_wgmma_k_major_copies(c, true);
  kernel_launch l = describe_launch(c, p, find_preset("h100-sxm"));
  ASSERT_EQ(l.prologue.size(), 1u);
  l.entry = "tiletune_w";
  l.prologue[0].entry = rename_entry(l.prologue[0].entry, l.entry);
  EXPECT_EQ(l.prologue[0].entry, "tiletune_w_transpose");
  const std::string h = exported_header(l, "wgmma_kc", "");
  EXPECT_NE(h.find("extern \"C\" __global__ void tiletune_w_transpose(const float* B, float* B_k_major, int rows, "
                   "int cols, long long ld, long long matrix_stride, int row, int k_major);"),
            std::string::npos)
      << h;
  // The operands first, in order, then the copy's buffer.
  EXPECT_NE(h.find("tiletune_w_launch(const void* A, const float* B, float* C, float* B_k_major, float alpha, float "
                   "beta, cudaStream_t stream = 0)"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find(fmt::format("// B_k_major: a device buffer of {} bytes", 776 * 3000 * 2 * 4)), std::string::npos);
  const std::size_t before = h.find("cudaLaunchKernelEx(&before, tiletune_w_transpose, B, B_k_major, "
                                    "tiletune_w_transpose_B_rows, tiletune_w_transpose_B_cols,");
  const std::size_t gemm = h.find("cudaLaunchKernelEx(&config, tiletune_w,");
  ASSERT_NE(before, std::string::npos) << h;
  ASSERT_NE(gemm, std::string::npos);
  EXPECT_LT(before, gemm);
  EXPECT_NE(h.find("static constexpr int tiletune_w_transpose_B_rows = 776;"), std::string::npos) << h;
  EXPECT_NE(h.find("encode(&tmap_b, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<void*>(static_cast<const void*>(B_k_major))"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("encode(&tmap_a, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<void*>(static_cast<const void*>(A))"), std::string::npos);
}

// Both operands MN-major (tn): two pre-passes of one kernel, A's then B's. The kernel is declared
// once and each launch passes constants of its own (one set of names for both did not compile).
TEST(kernel_header, two_pre_passes_of_one_kernel_take_constants_of_their_own) {
  gemm_problem p = header_problem(dtype::e4m3, "tn");
  p.k = 640;
  tile_config c = mma_tile(128, 128, 64, 2, 2, 3);
  set_mma_k_major_copies(c, true);
  kernel_launch l = describe_launch(c, p, find_preset("l40s"));
  ASSERT_EQ(l.prologue.size(), 2u);
  l.entry = "tiletune_m";
  for (kernel_launch& k : l.prologue) k.entry = rename_entry(k.entry, l.entry);
  const std::string h = exported_header(l, "mma_kc", "");
  std::set<std::string> constants;
  for (std::size_t at = h.find("static constexpr "); at != std::string::npos; at = h.find("static constexpr ", at + 1)) {
    const std::size_t eq = h.find(" = ", at), name = h.rfind(' ', eq - 1) + 1;  // "static constexpr T NAME = "
    EXPECT_TRUE(constants.insert(h.substr(name, eq - name)).second) << h.substr(name, eq - name) << " defined twice";
  }
  EXPECT_EQ(constants.count("tiletune_m_transpose_A_ld"), 1u);
  EXPECT_EQ(constants.count("tiletune_m_transpose_B_ld"), 1u);
  std::size_t declared = 0;
  for (std::size_t at = h.find("__global__ void tiletune_m_transpose("); at != std::string::npos;
       at = h.find("__global__ void tiletune_m_transpose(", at + 1))
    ++declared;
  EXPECT_EQ(declared, 1u);
  const std::size_t a = h.find("cudaLaunchKernelEx(&before, tiletune_m_transpose, A, A_k_major, tiletune_m_transpose_A_rows");
  const std::size_t b = h.find("cudaLaunchKernelEx(&before, tiletune_m_transpose, B, B_k_major, tiletune_m_transpose_B_rows");
  ASSERT_NE(a, std::string::npos) << h;
  ASSERT_NE(b, std::string::npos) << h;
  EXPECT_LT(a, b);
  EXPECT_NE(h.find("tiletune_m_launch(const unsigned char* A, const unsigned char* B, unsigned short* C, unsigned char* "
                   "A_k_major, unsigned char* B_k_major,"),
            std::string::npos)
      << h;
}
