// K-major copies (_kc) in the mma family: fp8 through mma.sync m16n8k32 reads both operands K-major
// (ldmatrix transposes 16-bit elements, not bytes), so a problem that stores one MN-major (fp8
// weights stored K x N, a training step's backward GEMMs in nn and tn) runs the transposing
// pre-pass (kernels_templates/common/gemm_transpose.cuh) into scratch copies, then the nt kernel.
// Here: what the tuner sees (space, constraints, id, source, launch with its prologue, scratch,
// model). The whole data path, pre-pass and GEMM, is mma_datapath.fp8_on_k_major_copies_*'s;
// the compile and SASS of both kernels compile.sm_89.k_major_copies's.
#include <gtest/gtest.h>

#include "core/compile/kernel_templates.hpp"
#include "core/device/device_spec.hpp"
#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/search_space.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/tune/perf_model.hpp"
#include "problem_spaces.hpp"

using namespace tiletune;

namespace {
const device_spec& l40s() { return find_preset("l40s"); }

gemm_problem kc_problem(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, dtype t, const char* l) {
  return tiletune_test::problem_of(m, n, k, batch, t, l);
}

std::vector<tile_config> space_of(const gemm_problem& p) {
  return tiletune_test::runnable_space(mma_family(), p, l40s());
}

tile_config copies(tile_config c) {
  set_mma_k_major_copies(c, true);
  return c;
}

long long scalar(const kernel_launch& l, const char* name) {
  for (const kernel_parameter& k : l.parameters)
    if (k.name == name) return k.value.get<long long>();
  ADD_FAILURE() << l.entry << " has no parameter " << name;
  return -1;
}
}  // namespace

TEST(mma_k_major_copies, fp8_with_an_mn_major_operand_plans_copies_and_nothing_else_does) {
  for (const char* l : {"nn", "tn", "tt"})
    for (dtype t : {dtype::e4m3, dtype::e5m2_e4m3}) {
      const gemm_problem p = kc_problem(4096, 4096, 4096, 1, t, l);
      const std::vector<tile_config> ok = space_of(p);
      ASSERT_GT(ok.size(), 30u) << to_string(t) << " " << l;
      for (const tile_config& c : ok) EXPECT_TRUE(mma_k_major_copies(c)) << c.id();
      tile_config without = ok.front();
      set_mma_k_major_copies(without, false);
      const auto v = check_constraints(without, p, l40s());
      ASSERT_TRUE(v) << without.id();
      EXPECT_EQ(v->constraint, "layout");
      EXPECT_NE(v->message.find(std::string(l) + " through K-major copies (_kc)"), std::string::npos) << v->message;
    }
  // fp8 nt needs none; the 16-bit types and tf32 read every layout themselves.
  for (const auto& [t, l] : {std::pair{dtype::e4m3, "nt"}, {dtype::bf16, "nn"}, {dtype::tf32, "tn"}}) {
    const gemm_problem p = kc_problem(4096, 4096, 4096, 1, t, l);
    const std::vector<tile_config> ok = space_of(p);
    ASSERT_FALSE(ok.empty());
    for (const tile_config& c : ok) EXPECT_FALSE(mma_k_major_copies(c)) << c.id();
    const auto v = check_constraints(copies(ok.front()), p, l40s());
    ASSERT_TRUE(v);
    EXPECT_EQ(v->constraint, "k_major_copies") << v->message;
  }
}

TEST(mma_k_major_copies, the_id_json_source_and_launch_name_the_copies) {
  const gemm_problem p = kc_problem(1000, 520, 752, 2, dtype::e4m3, "tt");  // A stored K x M, B N x K: A copied
  const tile_config c = copies(mma_tile(128, 128, 64, 2, 2, 3));
  ASSERT_FALSE(check_constraints(c, p, l40s())) << check_constraints(c, p, l40s())->message;
  EXPECT_EQ(c.id(), "mma_128x128x64_w2x2_s3_kc");
  EXPECT_EQ(tile_from_json(tile_to_json(c)), c);
  EXPECT_EQ(tile_to_json(c).at("k_major_copies"), true);
  // The GEMM compiles as layout nt, and the cubin holds the pre-pass.
  const std::string source = render_kernel_source(c, p.type, p.layout);
  EXPECT_NE(source.find("#define TT_A_T 1\n"), std::string::npos);  // the problem's, then redefined
  EXPECT_GT(source.rfind("#define TT_A_T 0\n"), source.find("#define TT_A_T 1\n"));
  EXPECT_GT(source.rfind("#define TT_B_T 1\n"), source.find("#undef TT_B_T"));
  EXPECT_NE(source.find("tiletune_gemm_transpose"), std::string::npos);
  const kernel_launch l = mma_family().describe_launch(c, p, l40s());
  ASSERT_EQ(l.prologue.size(), 1u);
  const kernel_launch& pre = l.prologue[0];
  EXPECT_EQ(pre.entry, std::string(kernel_entry_name) + kernel_prologue_suffix);
  EXPECT_EQ(pre.parameters[0].name, "A");
  EXPECT_EQ(pre.parameters[1].name, "A_k_major");
  EXPECT_EQ(pre.parameters[1].buffer_bytes, 2 * 1000 * 752);
  EXPECT_EQ(scalar(pre, "rows"), 752);
  EXPECT_EQ(scalar(pre, "cols"), 1000);
  EXPECT_EQ(scalar(pre, "ld"), 1000);  // A stored K x M
  EXPECT_EQ(pre.grid, (std::array<std::int64_t, 3>{(1000 + 31) / 32, (752 + 31) / 32, 2}));
  // The GEMM reads the copy (K elements a row) and B as stored (N x K).
  EXPECT_EQ(l.parameters[0].name, "A_k_major");
  EXPECT_EQ(l.parameters[0].buffer_bytes, 2 * 1000 * 752);
  EXPECT_EQ(l.parameters[1].name, "B");
  EXPECT_EQ(scalar(l, "lda"), 752);
  EXPECT_EQ(scalar(l, "ldb"), 752);
  const std::vector<argument_binding> b = bind_arguments(l);
  EXPECT_EQ(b[0].from, argument_binding::source::k_major_copy);
  EXPECT_EQ(b[1].from, argument_binding::source::operand);
  EXPECT_EQ(scratch_bytes(l), 2 * 1000 * 752);
  EXPECT_EQ(mma_family().scratch_bytes(c, p, l40s()), 2 * 1000 * 752);
  // tn: both stored MN-major, both copied, A's first; nn: B stored K x N is copied.
  const kernel_launch tn = mma_family().describe_launch(c, kc_problem(1000, 520, 752, 1, dtype::e4m3, "tn"), l40s());
  ASSERT_EQ(tn.prologue.size(), 2u);
  EXPECT_EQ(tn.prologue[0].parameters[0].name, "A");
  EXPECT_EQ(tn.prologue[1].parameters[0].name, "B");
  EXPECT_EQ(tn.parameters[0].name, "A_k_major");
  EXPECT_EQ(tn.parameters[1].name, "B_k_major");
  const kernel_launch nn = mma_family().describe_launch(c, kc_problem(1000, 520, 752, 1, dtype::e4m3, "nn"), l40s());
  ASSERT_EQ(nn.prologue.size(), 1u);
  EXPECT_EQ(nn.prologue[0].parameters[0].name, "B");
  EXPECT_EQ(scalar(nn.prologue[0], "ld"), 520);  // B stored K x N
  EXPECT_EQ(scalar(nn, "lda"), 752);
  EXPECT_EQ(scalar(nn, "ldb"), 752);
}

TEST(mma_k_major_copies, the_measure_request_and_the_model_carry_the_pre_pass) {
  const gemm_problem p = kc_problem(4096, 4096, 4096, 1, dtype::e4m3, "nn");
  const tile_config kc = copies(mma_tile(128, 128, 64, 2, 2, 3));
  measure_request r;
  r.op = measure_op::variant;
  r.id = kc.id();
  r.config = kc;
  r.launch = mma_family().describe_launch(kc, p, l40s());
  const measure_request back = measure_request_from_json(nlohmann::json::parse(to_json(r).dump()));
  ASSERT_EQ(back.launch.prologue.size(), 1u);
  EXPECT_EQ(bind_arguments(back.launch.prologue[0])[1].from, argument_binding::source::k_major_copy);
  EXPECT_EQ(bind_arguments(back.launch)[1].from, argument_binding::source::k_major_copy);
  EXPECT_EQ(scratch_bytes(back.launch), 4096ll * 4096);
  // B's 16 MiB read and written once, at most 0.9 of the L40S's 864 GB/s.
  occupancy_estimate occ;
  occ.blocks_per_sm = 1;
  const prediction a =
      predict(l40s(), kc_problem(4096, 4096, 4096, 1, dtype::e4m3, "nt"), mma_tile(128, 128, 64, 2, 2, 3), occ);
  const prediction b = predict(l40s(), p, kc, occ);
  EXPECT_EQ(a.prologue_us, 0);
  EXPECT_NEAR(b.prologue_us, 2.0 * 4096 * 4096 / (l40s().memory_bandwidth_gbs * 0.9 * 1e3), 1.0);
  EXPECT_NEAR(b.time_us - a.time_us, b.prologue_us, 1e-6);
}
