// The TMA-store epilogue in the wgmma family, as the tuner sees it: the id and tile JSON, where the
// space offers it, the constraints, C's tensor map and the launch's third map, and the shared
// memory of the staging buffers. Its data path (stmatrix fragments, the swizzled staging, the
// clipped store) is proven in wgmma_datapath_emulation_test (tma_store_*), the staging buffers'
// reuse in wgmma_tma_store_model_check_test, its compile and SASS in compile.sm_90a.tma_store.
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_tile_math.cuh"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/tensor_map_spec.hpp"
#include "core/compile/kernel_templates.hpp"

namespace tiletune {
namespace {

gemm_problem square(dtype t = dtype::bf16, std::int64_t batch = 1) {
  gemm_problem p;
  p.m = p.n = p.k = 4096;
  p.batch = batch;
  p.type = t;
  p.layout = parse_layout("nt");
  return p;
}

tile_config tmas(int bm = 128, int bn = 256, int consumers = 2, int stages = 4) {
  tile_config c = wgmma_tile(bm, bn, 64, consumers, stages);
  set_wgmma_tma_store(c, true);
  return c;
}

TEST(wgmma_tma_store, the_id_and_json_name_it_beside_the_other_bits) {
  tile_config c = tmas();
  EXPECT_EQ(c.id().substr(c.id().size() - 5), "_tmas");
  const nlohmann::json j = tile_to_json(c);
  EXPECT_EQ(j.at("tma_store"), true);
  EXPECT_EQ(tile_from_json(j), c);
  set_wgmma_evict_first_b(c, true);
  EXPECT_TRUE(wgmma_tma_store(c));
  set_wgmma_tma_store(c, false);
  EXPECT_TRUE(wgmma_evict_first_b(c));
  EXPECT_FALSE(tile_to_json(c).contains("tma_store"));
}

TEST(wgmma_tma_store, spaces_of_16_bit_plain_problems_offer_it) {
  const device_spec& d = find_preset("h100-sxm");
  auto count = [&](const gemm_problem& p) {
    int n = 0;
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d)) n += wgmma_tma_store(c);
    return n;
  };
  // 6 shapes x 3 stage counts, their stream-K copies (3.88 waves), and the ping-pong tiles' (2 x 3).
  EXPECT_EQ(count(square()), 18 + 18 + 6);
  EXPECT_EQ(count(square(dtype::tf32)), 0);
  gemm_problem beta = square();  // beta != 0 loads C's boxes by TMA
  beta.beta = 0.5;
  EXPECT_EQ(count(beta), 18 + 18 + 6);
  gemm_problem f32_out = square(dtype::e4m3);
  f32_out.out = element_type::f32;
  EXPECT_EQ(count(f32_out), 0);
}

TEST(wgmma_tma_store, constraints_name_what_the_epilogue_cannot_do) {
  const device_spec& d = find_preset("h100-sxm");
  auto broken = [&](const tile_config& c, const gemm_problem& p) {
    const auto v = check_constraints(c, p, d);
    return v ? v->constraint : std::string("none");
  };
  EXPECT_EQ(broken(tmas(), square()), "none");
  EXPECT_EQ(broken(tmas(128, 256, 2, 4), square(dtype::f16, 2)), "none");
  tile_config tf = tmas();
  tf.block_k = 32;
  EXPECT_EQ(broken(tf, square(dtype::tf32)), "tma_store");
  gemm_problem beta = square();
  beta.beta = 1.0;
  EXPECT_EQ(broken(tmas(), beta), "none");
  tile_config swapped = tmas(16, 128, 1, 4);
  set_wgmma_swap_ab(swapped, true);
  gemm_problem decode = square();
  decode.m = 16;
  EXPECT_EQ(broken(swapped, decode), "tma_store");
  gemm_problem odd = square();
  odd.n = 4100;  // ldc of 4100 bf16: 8200 bytes, not a multiple of 16 (B's ldb too: nt reads it K-major)
  EXPECT_EQ(broken(tmas(), odd), "tma_alignment");
}

TEST(wgmma_tma_store, c_has_a_tensor_map_of_64_by_64_boxes_and_the_launch_passes_it_last) {
  const device_spec& d = find_preset("h100-sxm");
  gemm_problem p = square(dtype::bf16, 3);
  p.m = 200;
  p.n = 136;
  const tensor_map_spec c = tensor_map_for(p, tmas(), 'c');
  EXPECT_EQ(c.dims[0], 136u);
  EXPECT_EQ(c.dims[1], 200u);
  EXPECT_EQ(c.dims[2], 3u);
  EXPECT_EQ(c.strides_bytes[0], 136u * 2);
  EXPECT_EQ(c.strides_bytes[1], 200u * 136 * 2);
  EXPECT_EQ(c.box[0], 64u);
  EXPECT_EQ(c.box[1], 64u);
  EXPECT_EQ(c.swizzle_bytes, 128);
  kernel_launch l = family_named("wgmma")->describe_launch(tmas(), p, d);
  EXPECT_EQ(l.parameters.back().name, "tmap_c");
  ASSERT_EQ(l.tensor_maps.size(), 3u);
  EXPECT_EQ(l.tensor_maps[2].tensor, "C");
  const auto bound = bind_arguments(l);
  EXPECT_EQ(bound.back().from, argument_binding::source::tensor_map);
  EXPECT_EQ(bound.back().operand, 'C');
  // Without it, two maps.
  EXPECT_EQ(family_named("wgmma")->describe_launch(wgmma_tile(128, 256, 64, 2, 4), p, d).tensor_maps.size(), 2u);
}

TEST(wgmma_tma_store, the_staging_replaces_the_classic_epilogues_and_is_1024_aligned) {
  // 128x256, two consumers, 4 stages of 48 KB: the ring, its barriers, then two 8 KB buffers a
  // consumer on a 1024-byte boundary (the classic epilogue's 9 KB a consumer are gone).
  const int ring = 4 * (128 + 256) * 128;
  const int barriers = 2 * 4 * 8;
  // Then the four buffers' C-load mbarriers (beta != 0).
  EXPECT_EQ(wgmma_smem_bytes(tmas(), dtype::bf16),
            1024 + (ring + barriers + 1023) / 1024 * 1024 + 2 * 2 * 8192 + 2 * 2 * 8);
  EXPECT_EQ(tt_staging_buffer(5), 1);
  EXPECT_EQ(tt_c_load_parity(0), 0u);  // buffer 0's first use: the phase of parity 0
  EXPECT_EQ(tt_c_load_parity(1), 0u);  // buffer 1's first
  EXPECT_EQ(tt_c_load_parity(2), 1u);
  EXPECT_EQ(tt_c_load_parity(5), 0u);  // buffer 1's third
  EXPECT_EQ(tt_staging_offset(0, 0), 0u);
  EXPECT_EQ(tt_staging_offset(1, 0), 128u + 16u);  // row 1: chunk 0 XOR 1
  EXPECT_EQ(tt_staging_offset(9, 3), 9u * 128 + ((3 ^ 9) & 7) * 16);
  EXPECT_EQ(family_named("wgmma")->untried_on_gpu(tmas(), dtype::bf16), "");  // ran correct on an H200, 2026-12-04
}

// The kernel's layout and the launch's shared memory cannot drift apart: every variant's source
// carries the launch's bytes (TT_SMEM_BYTES) and the kernel static_asserts that its own layout
// (TT_EPI_CONSUMERS and the rest) adds up to them. On the H200 (2026-12-04) every _tmas variant
// faulted at its first mbarrier init: the kernel still counted the classic epilogue's staging,
// the launch did not (compile.sm_90a.tma_store now fails to compile such a variant).
TEST(wgmma_tma_store, every_variant_checks_its_layout_against_the_launch_when_compiled) {
  const device_spec& d = find_preset("h100-sxm");
  int checked = 0;
  for (dtype t : {dtype::bf16, dtype::tf32, dtype::e4m3}) {
    gemm_problem p = square(t);
    for (const char* l : {"nt", "nn"}) {
      p.layout = parse_layout(l);
      for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d)) {
        const std::string source = render_kernel_source(c, t, p.layout);
        const std::string define = "#define TT_SMEM_BYTES " + std::to_string(wgmma_smem_bytes(c, t)) + "\n";
        ASSERT_NE(source.find(define), std::string::npos) << c.id();
        ASSERT_NE(source.find("static_assert(tt_smem_layout_total(layout) + 1024 == TT_SMEM_BYTES"), std::string::npos);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 500);
}

}  // namespace
}  // namespace tiletune
