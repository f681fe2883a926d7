// Rowwise scales (_rw) in the mma family: fp8 with a scale per row of A and per column of B (torchao's
// rowwise recipe), applied to each sum as the epilogue writes C. Here: what the tuner sees (space,
// constraints and their messages, id and JSON, source, launch and its bindings). The data path is
// mma_datapath.fp8_with_rowwise_scales_*'s (emulated, with planted defects); the compile and SASS
// compile.sm_89.rowwise_scales's.
#include <gtest/gtest.h>

#include "core/compile/kernel_templates.hpp"
#include "core/device/device_spec.hpp"
#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/search_space.hpp"
#include "problem_spaces.hpp"

using namespace tiletune;

namespace {
const device_spec& rowwise_l40s() { return find_preset("l40s"); }

gemm_problem scaled(dtype t, const char* l, scaling_mode s) {
  gemm_problem p = tiletune_test::problem_of(1000, 520, 744, 1, t, l);
  p.scaling = s;
  return p;
}

std::vector<tile_config> rowwise_space_of(const gemm_problem& p) {
  return tiletune_test::runnable_space(mma_family(), p, rowwise_l40s());
}

tile_config rowwise(tile_config c) {
  set_mma_rowwise_scales(c, true);
  return c;
}
}  // namespace

TEST(mma_rowwise_scales, a_rowwise_problem_plans_rw_variants_and_nothing_else_does) {
  for (const char* l : {"nt", "tn"}) {
    const gemm_problem p = scaled(dtype::e4m3, l, scaling_mode::rowwise);
    const std::vector<tile_config> ok = rowwise_space_of(p);
    ASSERT_GT(ok.size(), 30u) << l;
    std::size_t copies = 0;
    for (const tile_config& c : ok) {
      EXPECT_TRUE(mma_rowwise_scales(c)) << c.id();
      copies += mma_k_major_copies(c);
    }
    // tn runs on copies only; nt's K 744 (not a multiple of 16 fp8 elements) has each tile twice,
    // element-wise and on padded copies.
    EXPECT_EQ(copies, std::string(l) == "nt" ? ok.size() / 2 : ok.size()) << l;
    tile_config without = ok.front();
    set_mma_rowwise_scales(without, false);
    const auto v = check_constraints(without, p, rowwise_l40s());
    ASSERT_TRUE(v) << without.id();
    EXPECT_EQ(v->constraint, "scaling");
    EXPECT_NE(v->message.find("must apply them (_rw)"), std::string::npos) << v->message;
  }
  // Per-tensor scales (alpha's) and the other dtypes: no _rw; block scales: none of the family.
  const gemm_problem tensor = scaled(dtype::e4m3, "nt", scaling_mode::tensor);
  const std::vector<tile_config> ok = rowwise_space_of(tensor);
  ASSERT_FALSE(ok.empty());
  for (const tile_config& c : ok) EXPECT_FALSE(mma_rowwise_scales(c)) << c.id();
  auto v = check_constraints(rowwise(ok.front()), tensor, rowwise_l40s());
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message, "the variant applies rowwise scales (_rw), the problem's are tensor");
  const gemm_problem bf16 = scaled(dtype::bf16, "nt", scaling_mode::none);
  v = check_constraints(rowwise(mma_tile(128, 128, 32, 2, 2, 3)), bf16, rowwise_l40s());
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message, "rowwise scales (_rw) are fp8's, not bf16's");
  const gemm_problem block = scaled(dtype::e4m3, "nt", scaling_mode::block);
  EXPECT_TRUE(rowwise_space_of(block).empty());
  v = check_constraints(rowwise(ok.front()), block, rowwise_l40s());
  ASSERT_TRUE(v);
  EXPECT_NE(v->message.find("not block scales"), std::string::npos) << v->message;
}

TEST(mma_rowwise_scales, the_id_json_source_and_launch_carry_the_scales) {
  const gemm_problem p = scaled(dtype::e4m3, "nn", scaling_mode::rowwise);
  tile_config c = rowwise(mma_tile(64, 128, 64, 2, 2, 3));
  set_mma_k_major_copies(c, true);
  c.split_k = 2;
  ASSERT_FALSE(check_constraints(c, p, rowwise_l40s())) << check_constraints(c, p, rowwise_l40s())->message;
  EXPECT_EQ(c.id(), "mma_64x128x64_w2x2_s3_k2_rw_kc");
  const nlohmann::json j = tile_to_json(c);
  EXPECT_EQ(j.at("scales"), "rowwise");
  EXPECT_EQ(tile_from_json(j), c);
  nlohmann::json bad = j;
  bad["scales"] = "block";
  EXPECT_THROW(tile_from_json(bad), std::invalid_argument);
  const std::string source = render_kernel_source(c, p.type, p.layout);
  EXPECT_NE(source.find("#define TT_SCALING 1\n"), std::string::npos);
  const std::string unscaled = render_kernel_source(mma_tile(64, 128, 64, 2, 2, 3), dtype::e4m3, parse_layout("nt"));
  EXPECT_EQ(unscaled.find("#define TT_SCALING 1\n"), std::string::npos);
  // The scales come last, after split-K's buffers, as the kernel declares them; the worker binds them.
  const kernel_launch l = mma_family().describe_launch(c, p, rowwise_l40s());
  ASSERT_GE(l.parameters.size(), 4u);
  const std::size_t n = l.parameters.size();
  EXPECT_EQ(l.parameters[n - 4].name, "workspace");
  EXPECT_EQ(l.parameters[n - 3].name, "tile_counters");
  EXPECT_EQ(l.parameters[n - 2].name, "scale_a");
  EXPECT_EQ(l.parameters[n - 1].name, "scale_b");
  const std::vector<argument_binding> b = bind_arguments(l);
  EXPECT_EQ(b[n - 2].from, argument_binding::source::scales);
  EXPECT_EQ(b[n - 2].operand, 'A');
  EXPECT_EQ(b[n - 1].from, argument_binding::source::scales);
  EXPECT_EQ(b[n - 1].operand, 'B');
  EXPECT_NE(mma_family().untried_on_gpu(c, p.type).find("rowwise scales"), std::string::npos);
  EXPECT_NE(mma_family().cutlass_shape(c, p.type).find("rowwise scales"), std::string::npos);
}
