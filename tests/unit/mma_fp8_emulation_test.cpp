// The mma family's fp8 (mma.sync m16n8k32, Ada and sm_120) on the host (mma_emulation.hpp): every
// l40s and rtx-4090 variant of the four fp8 types in layout nt, and in nn, tn and tt on K-major
// copies after the emulated pre-pass, and with rowwise scales, against a host GEMM.
#include "mma_emulation.hpp"

using namespace tiletune;
using namespace mma_emu;

// fp8 through mma.sync m16n8k32 (Ada, GeForce Blackwell): every variant of l40s and rtx-4090, the
// four fp8 types, layout nt (the others run on K-major copies: below), each on the tiny case and one
// other recipe in rotation. The operands are fp8 bytes read by ldmatrix as 16-bit tiles; the
// emulated mma reads its fragments by the PTX ISA's m16n8k32 map, so this shows the two agree.
TEST(mma_datapath, fp8_variants_match_a_host_gemm_on_edge_shapes) {
  const auto start = std::chrono::steady_clock::now();
  int cases = 0;
  report::paths ran;
  const layout l = parse_layout("nt");
  const std::vector<dtype> fp8 = {dtype::e4m3, dtype::e5m2, dtype::e4m3_e5m2, dtype::e5m2_e4m3};
  for (std::size_t ti = 0; ti < fp8.size(); ++ti) {
    const dtype t = fp8[ti];
    const auto variants = variants_under_test(t, l);
    EXPECT_GT(variants.size(), 30u) << to_string(t);
    for (std::size_t vi = 0; vi < variants.size(); ++vi) {
      const tile_config& c = variants[vi];
      const kernel_macros k = macros_for(c, t, l);
      const std::vector<int> which = c.split_k > 1 ? std::vector<int>{static_cast<int>(vi + ti)}
                                                   : std::vector<int>{3, static_cast<int>((vi + ti) % 5)};
      for (int w : which) {
        const gemm_case g = recipe(w, k);
        const report r = run_case(c, t, l, g, {}, static_cast<std::uint32_t>(cases + 1));
        EXPECT_TRUE(r.ok()) << name(c, t, l, g) << ": " << r.describe();
        ++cases;
        ran.add(r.ran);
      }
    }
  }
  std::printf("fp8: %d cases, %.1f s\n", cases,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  for (const long long n : {ran.cp_async_full, ran.cp_async_partial, ran.cp_async_empty, ran.element_copies,
                            ran.c_vector_stores, ran.c_element_stores, ran.c_reads, ran.split_reductions,
                            ran.unbounded_blocks, ran.bounded_blocks})
    EXPECT_GT(n, 0);
}

// fp8 in the layouts that store an operand MN-major: every l40s and rtx-4090 variant (all _kc) of
// each, the transposing pre-pass emulated from the launches describe_launch gives (ld, matrices,
// grid) and the GEMM as its rendered source and launch say (layout nt, its A and B the copies),
// against the host GEMM of the operands as stored. Packed rows only: the pre-pass and the GEMM
// take tiletune's strides, which assume them.
TEST(mma_datapath, fp8_on_k_major_copies_matches_a_host_gemm) {
  const auto start = std::chrono::steady_clock::now();
  int cases = 0;
  report::paths ran;
  const std::vector<std::pair<dtype, const char*>> runs = {
      {dtype::e4m3, "nn"}, {dtype::e5m2, "tn"}, {dtype::e4m3_e5m2, "tt"}, {dtype::e5m2_e4m3, "nn"}};
  for (std::size_t ri = 0; ri < runs.size(); ++ri) {
    const auto [t, ln] = runs[ri];
    const layout l = parse_layout(ln);
    const auto variants = variants_under_test(t, l);
    EXPECT_GT(variants.size(), 30u) << to_string(t) << " " << ln;
    for (std::size_t vi = 0; vi < variants.size(); ++vi) {
      const tile_config& c = variants[vi];
      EXPECT_TRUE(mma_k_major_copies(c)) << c.id();
      const int recipes[] = {0, 2, 3, 4};
      const gemm_case g = recipe(c.split_k > 1 ? static_cast<int>(vi) : recipes[(vi + ri) % 4], macros_for(c, t, l));
      const report r = run_case(c, t, l, g, {}, static_cast<std::uint32_t>(cases + 1));
      EXPECT_TRUE(r.ok()) << name(c, t, l, g) << ": " << r.describe();
      ++cases;
      ran.add(r.ran);
    }
  }
  std::printf("fp8 on K-major copies: %d cases, %.1f s\n", cases,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  // The copies' rows are padded to 16 bytes: the GEMM on them never takes the element-wise path,
  // whatever K (the recipes' K include ones that are not multiples of 16).
  EXPECT_EQ(ran.element_copies, 0);
  const std::pair<const char*, long long> paths[] = {
      {"cp.async of 16 bytes", ran.cp_async_full},
      {"16-byte C stores", ran.c_vector_stores},   {"element-wise C stores", ran.c_element_stores},
      {"split-K reductions", ran.split_reductions}, {"blocks copying without bounds", ran.unbounded_blocks},
      {"blocks copying with bounds", ran.bounded_blocks}};
  for (const auto& [what, n] : paths) EXPECT_GT(n, 0) << what;
}

// fp8 with rowwise scales (_rw): every l40s and rtx-4090 variant of e4m3 nt and of e5m2_e4m3 tn (on
// K-major copies), the scales (powers of two, one per row of A and column of B) applied as the
// epilogue writes C, after split-K's reduction, against the host GEMM times scale_a[m] scale_b[n].
TEST(mma_datapath, fp8_with_rowwise_scales_matches_a_host_gemm) {
  const auto start = std::chrono::steady_clock::now();
  int cases = 0;
  report::paths ran;
  const std::vector<std::pair<dtype, const char*>> runs = {{dtype::e4m3, "nt"}, {dtype::e5m2_e4m3, "tn"}};
  for (std::size_t ri = 0; ri < runs.size(); ++ri) {
    const auto [t, ln] = runs[ri];
    const layout l = parse_layout(ln);
    const auto variants = variants_under_test(t, l, scaling_mode::rowwise);
    EXPECT_GT(variants.size(), 30u) << to_string(t) << " " << ln;
    for (std::size_t vi = 0; vi < variants.size(); ++vi) {
      const tile_config& c = variants[vi];
      EXPECT_TRUE(mma_rowwise_scales(c)) << c.id();
      const int recipes[] = {0, 2, 3, 4};
      gemm_case g = recipe(c.split_k > 1 ? static_cast<int>(vi) : recipes[(vi + ri) % 4], macros_for(c, t, l));
      g.rowwise = true;
      const report r = run_case(c, t, l, g, {}, static_cast<std::uint32_t>(cases + 1));
      EXPECT_TRUE(r.ok()) << name(c, t, l, g) << ": " << r.describe();
      ++cases;
      ran.add(r.ran);
    }
  }
  std::printf("fp8 with rowwise scales: %d cases, %.1f s\n", cases,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  const std::pair<const char*, long long> paths[] = {
      {"16-byte C stores", ran.c_vector_stores}, {"element-wise C stores", ran.c_element_stores},
      {"C reads (beta)", ran.c_reads}, {"split-K reductions", ran.split_reductions}};
  for (const auto& [what, n] : paths) EXPECT_GT(n, 0) << what;
}
