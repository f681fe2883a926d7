// Swap-AB in the wgmma family, as the tuner sees it: the id and tile JSON, the constraints, the
// macros and instruction the template is rendered with, the launch (maps exchanged, M and N
// exchanged), the shared memory the host counts, and the note an offline plan carries while no
// GPU has run it. The kernel's data path with A and B exchanged and C stored transposed is proven
// in wgmma_datapath_emulation_test (swap_ab_*), its compile and SASS in compile.sm_90a.decode.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/compile/kernel_templates.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/search_space.hpp"
#include "core/tune/variant_ranking.hpp"

namespace tiletune {
namespace {

gemm_problem decode(std::int64_t m, const char* layout = "nt") {
  gemm_problem p;
  p.m = m;
  p.n = 4096;
  p.k = 4096;
  p.type = dtype::bf16;
  p.layout = parse_layout(layout);
  return p;
}

tile_config swapped(int bm, int bn, int consumers = 1, int stages = 4) {
  tile_config c = wgmma_tile(bm, bn, 64, consumers, stages);
  set_wgmma_swap_ab(c, true);
  return c;
}

TEST(wgmma_swap_ab, the_id_and_tile_json_name_it_and_older_records_read_unswapped) {
  const tile_config c = swapped(16, 128);
  tile_config plain = c;
  set_wgmma_swap_ab(plain, false);
  EXPECT_EQ(c.id(), plain.id() + "_swab");
  const nlohmann::json j = tile_to_json(c);
  EXPECT_EQ(j.at("swap_ab"), true);
  EXPECT_EQ(tile_from_json(j), c);
  EXPECT_FALSE(tile_to_json(plain).contains("swap_ab"));
  EXPECT_EQ(tile_from_json(tile_to_json(plain)), plain);
}

// Evict-first on B shares the knob with swap-AB (two bits): each sets its own.
TEST(wgmma_swap_ab, evict_first_is_its_own_bit_in_the_id_json_and_source) {
  tile_config c = swapped(16, 128);
  set_wgmma_evict_first_b(c, true);
  EXPECT_TRUE(wgmma_swap_ab(c));
  EXPECT_EQ(c.id().substr(c.id().size() - 9), "_swab_efb");
  tile_config plain_ef = wgmma_tile(64, 128, 64, 1, 8);
  set_wgmma_evict_first_b(plain_ef, true);
  EXPECT_FALSE(wgmma_swap_ab(plain_ef));
  set_wgmma_swap_ab(c, false);
  EXPECT_TRUE(wgmma_evict_first_b(c));
  set_wgmma_swap_ab(c, true);
  const nlohmann::json j = tile_to_json(c);
  EXPECT_EQ(j.at("evict_first_b"), true);
  EXPECT_EQ(tile_from_json(j), c);
  EXPECT_NE(render_kernel_source(c, dtype::bf16, parse_layout("nt")).find("#define TT_EVICT_FIRST_B 1\n"),
            std::string::npos);
  EXPECT_EQ(render_kernel_source(swapped(16, 128), dtype::bf16, parse_layout("nt")).find("#define TT_EVICT_FIRST_B 1"),
            std::string::npos);
}

TEST(wgmma_swap_ab, the_kernel_tile_is_the_transposed_one) {
  const tile_config c = swapped(16, 256, 2);
  EXPECT_EQ(wgmma_kernel_m(c), 256);
  EXPECT_EQ(wgmma_kernel_n(c), 16);
  EXPECT_EQ(wgmma_accumulators_per_thread(c), 16);  // 128 kernel rows a consumer: two m64 tiles of n16, 8 each
  EXPECT_EQ(wgmma_kernel_layout(c, parse_layout("nt")), parse_layout("nt"));
  EXPECT_EQ(wgmma_kernel_layout(c, parse_layout("nn")), parse_layout("tt"));
  // Stages of 256 + 16 rows of 128 bytes and no epilogue staging, as the template lays them out.
  EXPECT_EQ(wgmma_smem_bytes(c, dtype::bf16), 1024 + 4 * (256 + 16) * 128 + 2 * 4 * 8);
}

TEST(wgmma_swap_ab, constraints_name_what_the_kernel_cannot_run) {
  const device_spec& d = find_preset("h100-sxm");
  EXPECT_EQ(check_constraints(swapped(16, 128), decode(16), d), std::nullopt);
  EXPECT_EQ(check_constraints(swapped(8, 64), decode(1, "nn"), d), std::nullopt);
  auto broken = [&](const tile_config& c, const gemm_problem& p) {
    const auto v = check_constraints(c, p, d);
    return v ? v->constraint : std::string("none");
  };
  EXPECT_EQ(broken(swapped(16, 128), decode(16, "tn")), "swap_ab");  // A MN-major
  EXPECT_EQ(broken(swapped(12, 128), decode(12)), "warpgroup_tile");  // N of 12: not a multiple of 8
  EXPECT_EQ(broken(swapped(16, 96), decode(16)), "warpgroup_tile");   // kernel M of 96
  EXPECT_EQ(broken(swapped(16, 128, 2), decode(16)), "none");  // 64 kernel rows per consumer
  EXPECT_EQ(broken(swapped(16, 64, 2), decode(16)), "warpgroup_tile");  // 32 per consumer
}

TEST(wgmma_swap_ab, the_template_gets_the_swapped_instruction_and_raster) {
  tile_config c = swapped(16, 128);
  const std::string s = render_kernel_source(c, dtype::bf16, parse_layout("nn"));
  EXPECT_NE(s.find("#define TT_SWAP_AB 1\n"), std::string::npos);
  EXPECT_NE(s.find("wgmma.mma_async.sync.aligned.m64n16k16"), std::string::npos);
  // nn runs as tt: the kernel's A (the problem's B, stored K x N) is MN-major, its B K-major.
  EXPECT_NE(s.find("p, 1, 1, 1, 0;"), std::string::npos);
  // Raster along the problem's M is along the kernel's N.
  EXPECT_NE(s.find("#define TT_RASTER_N 1\n"), std::string::npos);
  c.raster_along_n = true;
  EXPECT_NE(render_kernel_source(c, dtype::bf16, parse_layout("nn")).find("#define TT_RASTER_N 0\n"), std::string::npos);
  set_wgmma_swap_ab(c, false);
  EXPECT_EQ(render_kernel_source(c, dtype::bf16, parse_layout("nn")).find("#define TT_SWAP_AB 1"), std::string::npos);
}

TEST(wgmma_swap_ab, the_launch_passes_b_first_and_the_sizes_exchanged) {
  const device_spec& d = find_preset("h100-sxm");
  gemm_problem p = decode(5);
  p.n = 200;
  kernel_launch l = family_named("wgmma")->describe_launch(swapped(8, 128), p, d);
  ASSERT_EQ(l.tensor_maps.size(), 2u);
  EXPECT_EQ(l.tensor_maps[0].parameter, "tmap_a");
  EXPECT_EQ(l.tensor_maps[0].tensor, "B");
  EXPECT_EQ(l.tensor_maps[0].box_dims[1], 128);  // B's rows (the problem's N) in boxes of BN
  EXPECT_EQ(l.tensor_maps[1].tensor, "A");
  EXPECT_EQ(l.tensor_maps[1].box_dims[1], 8);
  EXPECT_EQ(parameter_named(l, "M").value, 200);
  EXPECT_EQ(parameter_named(l, "N").value, 5);
  const auto bound = bind_arguments(l);
  EXPECT_EQ(bound[0].operand, 'B');
  EXPECT_EQ(bound[1].operand, 'A');
  // Without the swap, the problem's order.
  const kernel_launch plain = family_named("wgmma")->describe_launch(wgmma_tile(64, 128, 64, 1, 4), p, d);
  EXPECT_EQ(plain.tensor_maps[0].tensor, "A");
  EXPECT_EQ(parameter_named(const_cast<kernel_launch&>(plain), "M").value, 5);
}

// Swap-AB ran correct on an H200 (2026-12-04) and is the decode suite's pick there: an offline plan
// that recommends it no longer says it has not run.
TEST(wgmma_swap_ab, an_offline_plan_that_recommends_it_no_longer_says_it_has_not_run) {
  gemm_plan plan;
  plan.mode = plan_mode::predicted;
  variant_result v;
  v.config = swapped(16, 128);
  plan.variants.push_back(v);
  plan.recommended = 0;
  note_untried_recommendation(plan);
  EXPECT_TRUE(plan.notes.empty()) << plan.notes[0];
}

}  // namespace
}  // namespace tiletune
