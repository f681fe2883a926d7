// Ping-pong consumers in the wgmma family, as the tuner sees it: the id and JSON, the rows and
// accumulators of a consumer, the constraints, and where the space offers them. The kernel's data
// path is emulated in wgmma_datapath_emulation_test (pingpong_*), its ring in
// wgmma_pingpong_model_check_test, its compile in compile.sm_90a.tma_store.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/compile/kernel_templates.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/search_space.hpp"

namespace tiletune {
namespace {

tile_config pp(int bm, int bn, int consumers = 2) {
  tile_config c = wgmma_tile(bm, bn, 64, consumers, 4);
  set_wgmma_pingpong(c, true);
  return c;
}

gemm_problem pingpong_square(dtype t = dtype::bf16) {
  gemm_problem p;
  p.m = p.n = p.k = 4096;
  p.type = t;
  p.layout = parse_layout("nt");
  return p;
}

TEST(wgmma_pingpong, the_id_json_and_source_name_it_and_a_consumer_holds_the_whole_tile) {
  const tile_config c = pp(128, 128);
  EXPECT_EQ(c.id().substr(c.id().size() - 3), "_pp");
  EXPECT_EQ(tile_to_json(c).at("pingpong"), true);
  EXPECT_EQ(tile_from_json(tile_to_json(c)), c);
  EXPECT_EQ(wgmma_consumer_rows(c), 128);
  EXPECT_EQ(wgmma_accumulators_per_thread(c), 128);
  tile_config coop = c;
  set_wgmma_pingpong(coop, false);
  EXPECT_EQ(wgmma_consumer_rows(coop), 64);
  EXPECT_NE(render_kernel_source(c, dtype::bf16, parse_layout("nt")).find("#define TT_PINGPONG 1\n"), std::string::npos);
  EXPECT_EQ(render_kernel_source(coop, dtype::bf16, parse_layout("nt")).find("#define TT_PINGPONG 1"), std::string::npos);
  EXPECT_NE(family_named("wgmma")->cutlass_shape(c, dtype::bf16).find("KernelTmaWarpSpecializedPingpong"),
            std::string::npos);
}

TEST(wgmma_pingpong, constraints_name_what_it_cannot_run) {
  const device_spec& d = find_preset("h100-sxm");
  auto broken = [&](const tile_config& c, const gemm_problem& p) {
    const auto v = check_constraints(c, p, d);
    return v ? v->constraint : std::string("none");
  };
  EXPECT_EQ(broken(pp(128, 128), pingpong_square()), "none");
  EXPECT_EQ(broken(pp(64, 256), pingpong_square()), "none");
  EXPECT_EQ(broken(pp(128, 256), pingpong_square()), "accumulator_registers");  // 256 a thread
  EXPECT_EQ(broken(pp(128, 128, 1), pingpong_square()), "pingpong");
  tile_config sk = pp(128, 128);
  set_wgmma_stream_k(sk, true);
  EXPECT_EQ(broken(sk, pingpong_square()), "pingpong");
}

TEST(wgmma_pingpong, plain_problems_get_copies_without_stream_k) {
  const device_spec& d = find_preset("h100-sxm");
  int copies = 0, with_tma = 0;
  for (const tile_config& c : problem_search_space(family_named("wgmma"), pingpong_square(), d)) {
    if (!wgmma_pingpong(c)) continue;
    ++copies;
    with_tma += wgmma_tma_store(c);
    EXPECT_FALSE(wgmma_stream_k(c)) << c.id();
    EXPECT_EQ(c.raster_group, 8) << c.id();
  }
  EXPECT_EQ(copies, 12);  // 128x128 and 64x256 at 3, 4 and 5 stages, each with either epilogue
  EXPECT_EQ(with_tma, 6);
  int tf32 = 0;
  for (const tile_config& c : problem_search_space(family_named("wgmma"), pingpong_square(dtype::tf32), d))
    tf32 += wgmma_pingpong(c);
  EXPECT_EQ(tf32, 6);
  EXPECT_EQ(family_named("wgmma")->untried_on_gpu(pp(128, 128), dtype::bf16), "");  // ran correct on an H200, 2026-12-04
}

}  // namespace
}  // namespace tiletune
