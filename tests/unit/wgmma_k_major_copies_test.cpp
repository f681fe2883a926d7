// K-major copies (_kc) in the wgmma family: tf32 and fp8 problems that store an operand MN-major
// (tf32 nn on Hopper, fp8 weights stored K x N) run a transposing pre-pass
// (kernels_templates/wgmma/wgmma_transpose.cuh) into scratch copies, then the nt kernel on them.
// Here: what the tuner sees (space, constraints, id, launch with its prologue, scratch, model), and
// the whole data path, pre-pass and GEMM, through the host emulation (wgmma_emulation.hpp) with
// planted defects. The compile and SASS of both kernels are compile.sm_90a.k_major_copies's.
#include "wgmma_emulation.hpp"

#include "core/measure/measure_protocol.hpp"
#include "core/tune/perf_model.hpp"
#include "problem_spaces.hpp"

using namespace tiletune;
using namespace wgmma_emu;

namespace {
std::vector<tile_config> space_of(const gemm_problem& p) {
  return tiletune_test::runnable_space(wgmma_family(), p, h100());
}
}  // namespace

TEST(wgmma_k_major_copies, tf32_and_fp8_with_an_mn_major_operand_plan_copies_and_nothing_else_does) {
  for (const char* l : {"nn", "tn", "tt"})
    for (dtype t : {dtype::tf32, dtype::e4m3, dtype::e5m2}) {
      const gemm_problem p = problem(4096, 4096, 4096, 1, t, l);
      const std::vector<tile_config> ok = space_of(p);
      ASSERT_FALSE(ok.empty()) << to_string(t) << " " << l;
      for (const tile_config& c : ok) EXPECT_TRUE(wgmma_k_major_copies(c)) << c.id();
      tile_config without = ok.front();
      set_wgmma_k_major_copies(without, false);
      const auto v = check_constraints(without, p, h100());
      ASSERT_TRUE(v) << without.id();
      EXPECT_EQ(v->constraint, "layout");
      EXPECT_NE(v->message.find("_kc"), std::string::npos) << v->message;
    }
  for (const auto& [t, l] : {std::pair{dtype::tf32, "nt"}, {dtype::e4m3, "nt"}, {dtype::bf16, "nn"}, {dtype::f16, "tt"}}) {
    const gemm_problem p = problem(4096, 4096, 4096, 1, t, l);
    for (const tile_config& c : space_of(p)) EXPECT_FALSE(wgmma_k_major_copies(c)) << c.id();
    const auto v = check_constraints(copies(space_of(p).front()), p, h100());
    ASSERT_TRUE(v);
    EXPECT_EQ(v->constraint, "k_major_copies") << v->message;
  }
}

TEST(wgmma_k_major_copies, the_id_json_source_and_launch_name_the_copies) {
  const gemm_problem p = problem(1000, 520, 744, 2, dtype::tf32, "tn");
  const tile_config c = copies(wgmma_tile(128, 128, 32, 2, 4));
  ASSERT_FALSE(check_constraints(c, p, h100())) << check_constraints(c, p, h100())->message;
  EXPECT_EQ(c.id().substr(c.id().size() - 3), "_kc");
  EXPECT_EQ(tile_from_json(tile_to_json(c)), c);
  EXPECT_EQ(tile_to_json(c).at("k_major_copies"), true);
  const std::string source = render_kernel_source(c, p.type, p.layout);
  EXPECT_EQ(rendered_macro(source, "TT_K_MAJOR_COPIES"), 1);
  EXPECT_NE(source.find("tiletune_gemm_transpose("), std::string::npos);
  // The GEMM's instruction reads both operands K-major: no transpose immediates.
  EXPECT_EQ(wgmma_kernel_layout(c, p.layout).name(), "nt");

  const kernel_launch l = wgmma_family().describe_launch(c, p, h100());
  ASSERT_EQ(l.prologue.size(), 2u);  // tn: A stored K x M and B stored K x N
  const std::int64_t a_bytes = 2 * 1000 * 744 * 4, b_bytes = 2 * 520 * 744 * 4;
  for (const kernel_launch& k : l.prologue) {
    EXPECT_EQ(k.entry, "tiletune_gemm_transpose");
    const bool a = k.parameters.at(0).name == "A";
    EXPECT_EQ(k.parameters.at(1).name, a ? "A_k_major" : "B_k_major");
    EXPECT_EQ(k.parameters.at(1).buffer_bytes, a ? a_bytes : b_bytes);
    EXPECT_EQ(k.grid[0], a ? (1000 + 31) / 32 : (520 + 31) / 32);
    EXPECT_EQ(k.grid[1], (744 + 31) / 32);
    EXPECT_EQ(k.grid[2], 2);
  }
  ASSERT_EQ(l.tensor_maps.size(), 2u);
  EXPECT_EQ(l.tensor_maps[0].tensor, "A_k_major");
  EXPECT_EQ(l.tensor_maps[1].tensor, "B_k_major");
  // The maps are the copies' (rows of K elements) and the binding says so.
  EXPECT_EQ(l.tensor_maps[0].global_dims[0], 744);
  EXPECT_EQ(l.tensor_maps[1].global_dims[0], 744);
  const std::vector<argument_binding> b = bind_arguments(l);
  EXPECT_TRUE(b[0].of_copy && b[1].of_copy);
  const std::vector<argument_binding> pre = bind_arguments(l.prologue[0]);
  EXPECT_EQ(pre[0].from, argument_binding::source::operand);
  EXPECT_EQ(pre[1].from, argument_binding::source::k_major_copy);
  // One buffer per copy, counted once: the family's scratch and the launch's agree.
  EXPECT_EQ(scratch_bytes(l), a_bytes + b_bytes);
  EXPECT_EQ(wgmma_family().scratch_bytes(c, p, h100()), a_bytes + b_bytes);
  EXPECT_EQ(wgmma_family().untried_on_gpu(c, dtype::bf16), "");  // the transposes ran correct on an H200, 2026-12-04
}

// The worker gets the launch as JSON: the prologue's kernels travel with it (entry, grid, block,
// arguments with the copy's buffer), and the GEMM's maps still name the copies.
TEST(wgmma_k_major_copies, a_measure_request_carries_the_prologue_to_the_worker) {
  const gemm_problem p = problem(1000, 520, 744, 2, dtype::e4m3, "tn");
  tile_config c = copies(wgmma_tile(128, 128, 128, 2, 3));
  set_wgmma_promotion(c, 1);
  measure_request r;
  r.op = measure_op::variant;
  r.id = c.id();
  r.config = c;
  r.launch = wgmma_family().describe_launch(c, p, h100());
  const measure_request back = measure_request_from_json(nlohmann::json::parse(to_json(r).dump()));
  ASSERT_EQ(back.launch.prologue.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const kernel_launch &sent = r.launch.prologue[i], &got = back.launch.prologue[i];
    EXPECT_EQ(got.entry, sent.entry);
    EXPECT_EQ(got.grid, sent.grid);
    EXPECT_EQ(got.block, sent.block);
    ASSERT_EQ(got.parameters.size(), sent.parameters.size());
    for (std::size_t k = 0; k < sent.parameters.size(); ++k) {
      EXPECT_EQ(got.parameters[k].name, sent.parameters[k].name);
      EXPECT_EQ(got.parameters[k].buffer_bytes, sent.parameters[k].buffer_bytes);
      EXPECT_EQ(got.parameters[k].value, sent.parameters[k].value);
    }
    EXPECT_EQ(bind_arguments(got)[1].from, argument_binding::source::k_major_copy);
  }
  const std::vector<argument_binding> gemm = bind_arguments(back.launch);
  EXPECT_TRUE(gemm[0].of_copy && gemm[1].of_copy);
  EXPECT_EQ(scratch_bytes(back.launch), scratch_bytes(r.launch));
}

TEST(wgmma_k_major_copies, the_model_adds_the_pre_pass_at_dram_bandwidth) {
  const gemm_problem nn = problem(4096, 4096, 4096, 1, dtype::tf32, "nn");
  const gemm_problem nt = problem(4096, 4096, 4096, 1, dtype::tf32, "nt");
  const tile_config plain = wgmma_tile(128, 128, 32, 2, 4), kc = copies(plain);
  occupancy_estimate occ;
  occ.blocks_per_sm = 1;
  const prediction a = predict(h100(), nt, plain, occ), b = predict(h100(), nn, kc, occ);
  EXPECT_EQ(a.prologue_us, 0);
  // B's 64 MiB read and written once: 128 MiB at most 0.9 of 3.35 TB/s, about 44 us.
  EXPECT_NEAR(b.prologue_us, 2.0 * 4096 * 4096 * 4 / (h100().memory_bandwidth_gbs * 0.9 * 1e3), 1.0);
  EXPECT_NEAR(b.time_us - a.time_us, b.prologue_us, 1e-6);
}

// The whole path, emulated: the pre-pass into the copies, then the nt kernel on them; sizes that
// end inside the transpose's 32 x 32 tiles and the GEMM's, two batches, beta reading C.
TEST(wgmma_k_major_copies, emulated_pre_pass_and_gemm_match_a_host_gemm) {
  int ran = 0;
  for (const char* l : {"nn", "tn", "tt"}) {
    const prepared x = prepare(problem(136, 200, 168, 2, dtype::tf32, l), 81);
    for (tile_config c : {copies(wgmma_tile(128, 128, 32, 2, 4)), copies(wgmma_tile(64, 64, 32, 1, 3))}) {
      ASSERT_FALSE(check_constraints(c, x.p, h100())) << c.id() << ": " << check_constraints(c, x.p, h100())->message;
      EXPECT_EQ(run_and_compare(c, x, 0.75, 0.0, 5), "") << c.id() << " " << l;
      EXPECT_EQ(run_and_compare(c, x, 0.75, -0.5, 5, {}, 1), "") << c.id() << " stream-K " << l;
      ran += 2;
    }
  }
  for (const auto& [t, l] : {std::pair{dtype::e4m3, "nn"}, {dtype::e5m2, "tn"}, {dtype::e4m3, "tt"}}) {
    const prepared x = prepare(problem(72, 136, 400, 2, t, l), 82);
    tile_config c = copies(wgmma_tile(64, 128, 128, 1, 4));
    set_wgmma_promotion(c, 1);
    ASSERT_FALSE(check_constraints(c, x.p, h100())) << c.id() << ": " << check_constraints(c, x.p, h100())->message;
    EXPECT_EQ(run_and_compare(c, x, 1.0, 0.0, 4), "") << c.id() << " " << l;
    ++ran;
  }
  // A decode step's swap-AB tile on tf32 weights stored K x N.
  const prepared decode = prepare(problem(16, 200, 264, 1, dtype::tf32, "nn"), 83);
  tile_config swab = copies(wgmma_tile(16, 128, 32, 1, 4));
  set_wgmma_swap_ab(swab, true);
  ASSERT_FALSE(check_constraints(swab, decode.p, h100())) << check_constraints(swab, decode.p, h100())->message;
  EXPECT_EQ(run_and_compare(swab, decode, 1.0, 0.0, 4), "") << swab.id();
  ++ran;
  EXPECT_EQ(ran, 3 * 2 * 2 + 3 + 1);
}

TEST(wgmma_k_major_copies, planted_defects_are_caught) {
  const prepared x = prepare(problem(136, 200, 168, 2, dtype::tf32, "tn"), 84);
  const tile_config c = copies(wgmma_tile(128, 128, 32, 2, 4));
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 5), "");
  defects rows;
  rows.copy_rows_of_cols = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, rows), "") << "the copy's rows cols apart";
  defects unguarded;
  unguarded.copy_unguarded = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, unguarded), "") << "a partial tile moved whole";
  defects skipped;
  skipped.copy_skipped = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, skipped), "") << "the GEMM without its prologue";
  defects operand;
  operand.copy_maps_operand = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, operand), "") << "the maps on the operands, not the copies";
  // fp8 bytes: the same defects in one-byte elements.
  const prepared f = prepare(problem(72, 136, 400, 1, dtype::e4m3, "nn"), 85);
  tile_config q = copies(wgmma_tile(64, 128, 128, 1, 4));
  set_wgmma_promotion(q, 1);
  ASSERT_EQ(run_and_compare(q, f, 1.0, 0.0, 4), "");
  EXPECT_NE(run_and_compare(q, f, 1.0, 0.0, 4, rows), "");
  EXPECT_NE(run_and_compare(q, f, 1.0, 0.0, 4, unguarded), "");
}

// A grouped GEMM whose experts' weights are stored K x N (fp8 "nn"): each group's B copied K-major
// (one launch, grid z the groups; the batched pre-pass is emulated above), A never (a grouped A is
// stored M x K); B's map reads G matrices of N x K.
TEST(wgmma_k_major_copies, a_grouped_problem_copies_each_groups_b) {
  const gemm_problem p = grouped_problem(groups_of_rows({512, 0, 77, 1024}, group_layout::contiguous), 1000, 784,
                                         dtype::e4m3, parse_layout("nn"));
  int planned = 0;
  for (const tile_config& c : wgmma_family().problem_space(p, h100())) {
    if (check_constraints(c, p, h100())) continue;
    ASSERT_TRUE(wgmma_k_major_copies(c) && wgmma_grouped(c)) << c.id();
    const kernel_launch l = wgmma_family().describe_launch(c, p, h100());
    ASSERT_EQ(l.prologue.size(), 1u) << c.id();
    EXPECT_EQ(l.prologue[0].parameters.at(0).name, "B");
    EXPECT_EQ(l.prologue[0].grid[2], 4);
    EXPECT_EQ(l.prologue[0].parameters.at(1).buffer_bytes, 4 * 1000 * 784);
    const tensor_map_spec b = wgmma_family().tensor_map(p, c, 'b');
    EXPECT_EQ(b.dims[0], 784u);  // K-major: rows of K
    EXPECT_EQ(b.dims[1], 1000u);
    EXPECT_EQ(b.dims[2], 4u);
    ++planned;
  }
  EXPECT_GE(planned, 4);
}
