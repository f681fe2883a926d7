// Padded copies in the wgmma family: a problem whose rows start off 16 bytes (K = 50257 in a
// vocabulary's backward, an odd N stored K x N), which TMA cannot read where it is, runs on K-major
// copies (_kc) whose rows are K padded to 16 bytes with zeros: the pre-pass transposes an operand
// stored MN-major and pads one stored K-major, and the GEMM's maps read the copies (rows of the
// padded K). Here: what the tuner sees (space, constraints, launch, maps) and the whole data path
// through the host emulation (wgmma_emulation.hpp) with planted defects.
#include "wgmma_emulation.hpp"

#include "core/tune/perf_model.hpp"
#include "core/tune/variant_ranking.hpp"
#include "problem_spaces.hpp"

using namespace tiletune;
using namespace wgmma_emu;

namespace {
std::int64_t scalar(const kernel_launch& l, const char* name) {
  for (const kernel_parameter& k : l.parameters)
    if (k.name == name) return k.value.get<std::int64_t>();
  ADD_FAILURE() << l.entry << " has no " << name;
  return -1;
}
}  // namespace

TEST(wgmma_padded_copies, rows_off_16_bytes_plan_padded_copies_and_aligned_rows_do_not) {
  // bf16 nt with K 777 (1554-byte rows), bf16 nn with N 3001 (B stored K x N), tf32 nt K 777, e4m3 nt K 744.
  for (const auto& [t, l, n, k] : {std::tuple{dtype::bf16, "nt", 3000, 777}, {dtype::bf16, "nn", 3001, 776},
                                   {dtype::tf32, "nt", 3000, 777}, {dtype::e4m3, "nt", 3000, 744}}) {
    const gemm_problem p = problem(1000, n, k, 1, t, l);
    ASSERT_TRUE(operands_misaligned(p)) << to_string(t) << " " << l;
    const std::vector<tile_config> ok = tiletune_test::runnable_space(wgmma_family(), p, h100());
    ASSERT_GT(ok.size(), 10u) << to_string(t) << " " << l;
    for (const tile_config& c : ok) EXPECT_TRUE(wgmma_k_major_copies(c)) << c.id();
    tile_config without = ok.front();
    set_wgmma_k_major_copies(without, false);
    const auto v = check_constraints(without, p, h100());
    ASSERT_TRUE(v) << without.id();
    EXPECT_EQ(v->constraint, "tma_alignment") << v->message;
    EXPECT_NE(v->message.find("_kc"), std::string::npos) << v->message;
  }
  // Rows on 16 bytes: read where they are, no copies.
  for (const auto& [t, l, k] : {std::tuple{dtype::bf16, "nt", 776}, {dtype::f16, "tn", 4096}, {dtype::e4m3, "nt", 752}}) {
    const gemm_problem p = problem(1000, 3000, k, 1, t, l);
    EXPECT_FALSE(operands_misaligned(p)) << to_string(t) << " " << l;
    for (const tile_config& c : tiletune_test::runnable_space(wgmma_family(), p, h100()))
      EXPECT_FALSE(wgmma_k_major_copies(c)) << c.id();
  }
}

// bf16 nt, K 777: both operands are stored K-major in 1554-byte rows. Both are copied (not
// transposed: k_major 1) into rows of 784 elements, the last 7 zeros; the maps read the copies'
// rows of 784 and the kernel's K stays 777.
TEST(wgmma_padded_copies, the_launch_pads_both_k_major_operands_and_maps_the_copies) {
  const gemm_problem p = problem(1000, 3000, 777, 2, dtype::bf16, "nt");
  const tile_config c = copies(wgmma_tile(128, 256, 64, 2, 4));
  ASSERT_FALSE(check_constraints(c, p, h100())) << check_constraints(c, p, h100())->message;
  EXPECT_EQ(k_major_copy_row(p), 784);
  const gemm_problem on = problem_on_k_major_copies(p);
  EXPECT_EQ(on.k, 784);
  EXPECT_EQ(on.layout.name(), "nt");
  const kernel_launch l = wgmma_family().describe_launch(c, p, h100());
  ASSERT_EQ(l.prologue.size(), 2u);
  const std::int64_t a_bytes = 2 * 1000 * 784 * 2, b_bytes = 2 * 3000 * 784 * 2;
  for (const kernel_launch& pre : l.prologue) {
    const bool a = pre.parameters.at(0).name == "A";
    EXPECT_EQ(pre.parameters.at(1).buffer_bytes, a ? a_bytes : b_bytes);
    EXPECT_EQ(scalar(pre, "k_major"), 1);
    EXPECT_EQ(scalar(pre, "rows"), 777);
    EXPECT_EQ(scalar(pre, "row"), 784);
    EXPECT_EQ(scalar(pre, "ld"), 777);  // the rows as stored
    EXPECT_EQ(scalar(pre, "matrix_stride"), (a ? 1000 : 3000) * 777);
    // A row copy, not a transpose: one thread per 16 bytes of the copy, 256 a block.
    EXPECT_EQ(pre.grid[0], ((a ? 1000 : 3000) * 784 * 2 / 16 + 255) / 256);
    EXPECT_EQ(pre.grid[1], 1);
    EXPECT_EQ(pre.grid[2], 2);
    EXPECT_NE(pre.parameters.at(1).meaning.find("zeros to 16 bytes"), std::string::npos);
  }
  ASSERT_EQ(l.tensor_maps.size(), 2u);
  for (const tensor_map_description& m : l.tensor_maps) {
    EXPECT_EQ(m.tensor.substr(1), "_k_major");
    EXPECT_EQ(m.global_dims[0], 784);
    EXPECT_EQ(m.global_strides_bytes[0], 784 * 2);
  }
  EXPECT_EQ(scalar(l, "K"), 777);
  EXPECT_EQ(scratch_bytes(l), a_bytes + b_bytes);
  EXPECT_EQ(wgmma_family().scratch_bytes(c, p, h100()), a_bytes + b_bytes);
  // nn, N odd: A (K-major, K on 16 bytes) read as stored; B transposed (k_major 0).
  const kernel_launch nn = wgmma_family().describe_launch(c, problem(1000, 3001, 776, 1, dtype::bf16, "nn"), h100());
  ASSERT_EQ(nn.prologue.size(), 1u);
  EXPECT_EQ(nn.prologue[0].parameters.at(0).name, "B");
  EXPECT_EQ(scalar(nn.prologue[0], "k_major"), 0);
  EXPECT_EQ(scalar(nn.prologue[0], "row"), 776);
  EXPECT_EQ(nn.tensor_maps[0].tensor, "A");
}

// The model charges the pre-pass, and the copies beat nothing: on the aligned twin of the same size
// the GEMM alone; with K 50257 the GEMM plus a pass over both operands at DRAM bandwidth.
TEST(wgmma_padded_copies, the_model_adds_the_padding_pass) {
  const gemm_problem odd = problem(4096, 768, 50257, 1, dtype::bf16, "nt");
  const gemm_problem even = problem(4096, 768, 50264, 1, dtype::bf16, "nt");
  const tile_config plain = wgmma_tile(128, 256, 64, 2, 4), kc = copies(plain);
  occupancy_estimate occ;
  occ.blocks_per_sm = 1;
  const prediction a = predict(h100(), even, plain, occ), b = predict(h100(), odd, kc, occ);
  EXPECT_EQ(a.prologue_us, 0);
  const double bytes = 2.0 * (4096 + 768) * 50264 * 2;  // each padded copy written, each operand read
  EXPECT_NEAR(b.prologue_us, bytes / (h100().memory_bandwidth_gbs * 0.9 * 1e3), 0.02 * b.prologue_us);
  EXPECT_NEAR(b.time_us - a.time_us, b.prologue_us, 0.01 * a.time_us);
}

// The whole path, emulated: sizes whose K ends inside a 16-byte chunk, a 32 x 32 transpose tile
// and a k-tile, two batches, beta reading C, stream-K; the pad read by the GEMM's last k-tile.
TEST(wgmma_padded_copies, emulated_padding_and_gemm_match_a_host_gemm) {
  int ran = 0;
  // bf16 nt K 167 (both padded), f16 tn M 135 (A transposed), bf16 nn N 201 (B transposed), tf32 nt K 166.
  for (const auto& [t, l, m, n, k] :
       {std::tuple{dtype::bf16, "nt", 136, 200, 167}, {dtype::f16, "tn", 135, 200, 171},
        {dtype::bf16, "nn", 136, 201, 168}, {dtype::tf32, "nt", 136, 136, 166}}) {
    const prepared x = prepare(problem(m, n, k, 2, t, l), 91 + static_cast<std::uint32_t>(ran));
    ASSERT_TRUE(operands_misaligned(x.p));
    const int bk = t == dtype::tf32 ? 32 : 64;
    for (tile_config c : {copies(wgmma_tile(128, 128, bk, 2, 4)), copies(wgmma_tile(64, 64, bk, 1, 3))}) {
      ASSERT_FALSE(check_constraints(c, x.p, h100())) << c.id() << ": " << check_constraints(c, x.p, h100())->message;
      EXPECT_EQ(run_and_compare(c, x, 0.75, 0.0, 5), "") << c.id() << " " << to_string(t) << " " << l;
      EXPECT_EQ(run_and_compare(c, x, 0.75, -0.5, 5, {}, 1), "") << c.id() << " stream-K " << l;
      ran += 2;
    }
  }
  // fp8 bytes: K 407 pads to 416.
  const prepared f = prepare(problem(72, 136, 407, 1, dtype::e4m3, "nt"), 97);
  tile_config q = copies(wgmma_tile(64, 128, 128, 1, 4));
  set_wgmma_promotion(q, 1);
  ASSERT_FALSE(check_constraints(q, f.p, h100())) << check_constraints(q, f.p, h100())->message;
  EXPECT_EQ(run_and_compare(q, f, 1.0, 0.0, 4), "") << q.id();
  ++ran;
  EXPECT_EQ(ran, 4 * 2 * 2 + 1);
}

TEST(wgmma_padded_copies, planted_defects_are_caught) {
  const prepared x = prepare(problem(136, 200, 167, 2, dtype::bf16, "nt"), 98);
  const tile_config c = copies(wgmma_tile(128, 128, 64, 2, 4));
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 5), "");
  defects pad;
  pad.copy_pad_unwritten = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, pad), "") << "the pad left as the buffer held it";
  defects as_mn;
  as_mn.copy_k_major_as_mn = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, as_mn), "") << "K-major rows read as MN-major";
  defects rows;
  rows.copy_rows_of_cols = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, rows), "") << "the copy's rows cols apart";
  defects operand;
  operand.copy_maps_operand = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, operand), "") << "the maps on the operands, not the copies";
}

// The padded row copy ran correct on an H200 (2026-12-04, third session: 713 variant checks on odd
// K-major and MN-major rows, memcheck clean): an offline plan recommending it, or a transposing copy,
// no longer says it has not run.
TEST(wgmma_padded_copies, an_offline_plan_with_a_padded_row_copy_no_longer_says_it_has_not_run) {
  gemm_plan plan;
  plan.mode = plan_mode::predicted;
  variant_result v;
  v.config = copies(wgmma_tile(128, 128, 64, 2, 4));
  plan.variants.push_back(v);
  plan.recommended = 0;
  for (const auto& p : {problem(1000, 3000, 777, 1, dtype::bf16, "nt"), problem(1000, 3000, 776, 1, dtype::tf32, "nn")}) {
    plan.problem = p;
    plan.notes.clear();
    note_untried_recommendation(plan);
    EXPECT_TRUE(plan.notes.empty()) << plan.notes[0];
  }
}
