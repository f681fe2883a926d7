// fp8 fast accumulation (_fa, issue 35): no promotion, every QGMMA into the fp32 accumulators
// through the tensor core's short running sum, verified to a looser bound it states
// (wgmma_fast_accumulation_bound). Here: the space and constraints, the bound carried to the
// worker, and the emulation: exact against a host GEMM at ordinary K, and with a 13-bit running
// sum at K 16384 inside its own bound but outside the dtype's (the promoting variants stay inside).
#include "wgmma_emulation.hpp"

#include "core/measure/measure_protocol.hpp"

using namespace tiletune;
using namespace wgmma_emu;

namespace {
tile_config fast_tile(int bm, int bn, int consumers, int stages) {
  tile_config c = wgmma_tile(bm, bn, 128, consumers, stages);
  set_wgmma_fast_accumulation(c, true);
  return c;
}
}  // namespace

TEST(wgmma_fast_accumulation, tensor_and_rowwise_problems_plan_it_and_block_scales_do_not) {
  for (scaling_mode s : {scaling_mode::tensor, scaling_mode::rowwise, scaling_mode::block}) {
    const gemm_problem p = scaled(problem(4096, 4096, 4096, 1, dtype::e4m3, "nt"), s);
    int fast = 0;
    for (const tile_config& c : wgmma_family().problem_space(p, h100())) {
      if (!wgmma_fast_accumulation(c) || check_constraints(c, p, h100())) continue;
      ++fast;
      EXPECT_EQ(wgmma_promotion(c), 0) << c.id();
      EXPECT_NE(c.id().find("_fa"), std::string::npos) << c.id();
      EXPECT_FALSE(wgmma_stream_k(c)) << c.id();
    }
    if (s == scaling_mode::block)
      EXPECT_EQ(fast, 0);
    else
      EXPECT_GE(fast, 4) << to_string(s);
  }
  const gemm_problem block = scaled(problem(4096, 4096, 4096, 1, dtype::e4m3, "nt"), scaling_mode::block);
  tile_config c = fast_tile(128, 128, 2, 4);
  set_wgmma_scales(c, scaling_mode::block);
  ASSERT_TRUE(check_constraints(c, block, h100()));
  EXPECT_NE(check_constraints(c, block, h100())->message.find("_fa"), std::string::npos);
  // Promotion and fast accumulation are one or the other; 16-bit types have neither.
  tile_config both = fast_tile(128, 128, 2, 4);
  set_wgmma_promotion(both, 1);
  const gemm_problem tensor = problem(4096, 4096, 4096, 1, dtype::e4m3, "nt");
  ASSERT_TRUE(check_constraints(both, tensor, h100()));
  EXPECT_EQ(check_constraints(both, tensor, h100())->constraint, "promotion");
  tile_config bf16 = wgmma_tile(128, 128, 64, 2, 4);
  set_wgmma_fast_accumulation(bf16, true);
  ASSERT_TRUE(check_constraints(bf16, problem(4096, 4096, 4096, 1, dtype::bf16, "nt"), h100()));
  // One accumulator set: a consumer may hold 128 a thread, as 16-bit types do.
  EXPECT_FALSE(check_constraints(fast_tile(128, 256, 2, 3), tensor, h100()));
  tile_config promoted = wgmma_tile(128, 256, 128, 2, 3);
  set_wgmma_promotion(promoted, 1);
  EXPECT_TRUE(check_constraints(promoted, tensor, h100()));
}

TEST(wgmma_fast_accumulation, the_id_json_source_bound_and_request_say_so) {
  const tile_config c = fast_tile(128, 128, 2, 4);
  EXPECT_EQ(tile_from_json(tile_to_json(c)), c);
  EXPECT_EQ(tile_to_json(c).at("fast_accumulation"), true);
  const gemm_problem p = problem(4096, 4096, 16384, 1, dtype::e4m3, "nt");
  const std::string source = render_kernel_source(c, p.type, p.layout);
  EXPECT_EQ(rendered_macro(source, "TT_FAST_ACCUMULATION"), 1);
  EXPECT_EQ(rendered_macro(source, "TT_PROMOTE"), 0);
  // ceil(16384 / 32) = 512 cuts of 2^-14: 0.03125; at K 4096 the dtype's 0.01 is larger.
  EXPECT_DOUBLE_EQ(wgmma_family().error_bound(c, p), 512 * 0x1p-14);
  EXPECT_DOUBLE_EQ(wgmma_family().error_bound(c, problem(4096, 4096, 4096, 1, dtype::e4m3, "nt")), 0.01);
  tile_config promoted = wgmma_tile(128, 128, 128, 2, 4);
  set_wgmma_promotion(promoted, 1);
  EXPECT_DOUBLE_EQ(wgmma_family().error_bound(promoted, p), row_of(dtype::e4m3).error_bound);
  measure_request r;
  r.op = measure_op::variant;
  r.error_bound = wgmma_family().error_bound(c, p);
  EXPECT_DOUBLE_EQ(measure_request_from_json(to_json(r)).error_bound, 512 * 0x1p-14);
  const kernel_launch l = wgmma_family().describe_launch(c, p, h100());
  bool said = false;
  for (const std::string& req : l.requirements) said |= req.find("_fa: fast accumulation") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(wgmma_family().untried_on_gpu(c, dtype::e4m3), "");  // ran correct on an H200, 2026-12-04
  // The requirement names C's own type: bf16 by default, what --out-dtype asked otherwise (the
  // launcher's C pointer); it said bf16 for every output.
  auto fp8_requirement = [&](const tile_config& t, const gemm_problem& q) {
    for (const std::string& req : wgmma_family().describe_launch(t, q, h100()).requirements)
      if (req.rfind("fp8 (", 0) == 0) return req;
    return std::string();
  };
  EXPECT_NE(fp8_requirement(c, p).find("C bf16;"), std::string::npos) << fp8_requirement(c, p);
  for (element_type out : {element_type::f32, element_type::f16}) {
    gemm_problem q = p;
    q.out = out;
    tile_config t = c;
    set_wgmma_out(t, out);
    const std::string req = fp8_requirement(t, q);
    EXPECT_NE(req.find(fmt::format("C {};", to_string(out))), std::string::npos) << req;
    EXPECT_EQ(req.find("bf16"), std::string::npos) << req;
  }
}

TEST(wgmma_fast_accumulation, emulated_variants_match_a_host_gemm) {
  int ran = 0;
  for (scaling_mode s : {scaling_mode::tensor, scaling_mode::rowwise})
    for (dtype t : {dtype::e4m3, dtype::e5m2}) {
      const prepared x = prepare(scaled(problem(200, 328, 400, 2, t, "nt"), s), 91);
      for (tile_config c : {fast_tile(64, 128, 1, 4), fast_tile(128, 192, 2, 3), fast_tile(128, 256, 2, 3)}) {
        set_wgmma_scales(c, s == scaling_mode::tensor ? scaling_mode::none : s);
        ASSERT_FALSE(check_constraints(c, x.p, h100())) << c.id() << ": " << check_constraints(c, x.p, h100())->message;
        EXPECT_EQ(run_and_compare(c, x, 0.75, s == scaling_mode::tensor ? -0.5 : 0.0, 5), "") << c.id();
        ++ran;
      }
    }
  EXPECT_EQ(ran, 2 * 2 * 3);
}

TEST(wgmma_fast_accumulation, a_short_running_sum_at_k_16384_keeps_its_own_bound_not_the_dtypes) {
  // As wgmma_fp8_emulation's promotion test: the running sum kept to 13 mantissa bits after each
  // QGMMA, fp8 inputs (exact host sums), relative Frobenius error as verification measures it.
  const prepared x = prepare(problem(64, 128, 16384, 1, dtype::e4m3, "nt"), 64);
  defects short_sum;
  short_sum.accumulator_mantissa_bits = 13;
  const emulation e = emulate_kernel(fast_tile(64, 128, 1, 4), x.p, x.a, x.b, x.c_nan, 1, short_sum);
  ASSERT_TRUE(e.errors.empty()) << e.errors.front();
  double err = 0, ref = 0;
  for (std::size_t i = 0; i < x.dot.size(); ++i) {
    const double got = load_element(e.c.data() + 2 * i, dtype::bf16);
    err += (got - x.dot[i]) * (got - x.dot[i]);
    ref += x.dot[i] * x.dot[i];
  }
  const double rel = std::sqrt(err / ref);
  EXPECT_GT(rel, row_of(dtype::e4m3).error_bound) << "fast accumulation within the promoting variants' bound";
  EXPECT_LT(rel, wgmma_fast_accumulation_bound(dtype::e4m3, 16384)) << "outside the bound it states";
  std::printf("fp8 fast accumulation, K 16384, 13-bit running sums: relative error %.2g (its bound %.2g, the "
              "dtype's %.0e)\n",
              rel, wgmma_fast_accumulation_bound(dtype::e4m3, 16384), row_of(dtype::e4m3).error_bound);
}
