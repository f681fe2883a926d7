#include "core/tune/variant_ranking.hpp"

#include <gtest/gtest.h>

#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/device/device_spec.hpp"
#include "core/plan_mode.hpp"

using namespace tiletune;

namespace {
variant_result ok_variant(int bm, int bn, double time_us, double l2_bytes, double waves, int registers) {
  variant_result v;
  v.config = mma_tile(bm, bn, 32, 2, 2, 3);
  v.status = variant_status::ok;
  v.predicted.time_us = time_us;
  v.predicted.l2_bytes = l2_bytes;
  v.predicted.wave_efficiency = waves;
  v.resources.registers = registers;
  return v;
}
}  // namespace

TEST(variant_ranking, a_faster_prediction_wins_whatever_it_costs) {
  gemm_plan plan;
  plan.variants = {ok_variant(64, 64, 100, 1e6, 1.0, 64), ok_variant(128, 128, 90, 9e9, 0.1, 255)};
  rank_by_prediction(plan);
  EXPECT_EQ(plan.variants[0].config.block_m, 128);
  EXPECT_EQ(plan.variants[0].rank, 1);
  EXPECT_EQ(top_tie_size(plan), 1u);
  EXPECT_TRUE(top_tie_note(plan).empty());
}

// A tie at the model's efficiency cap goes to the tile that reuses more (fewer
// L2 bytes), not to the smallest: the cheapest tile used to win it.
TEST(variant_ranking, a_tie_goes_to_fewer_l2_bytes_then_fuller_waves_then_fewer_resources) {
  gemm_plan plan;
  plan.variants = {ok_variant(64, 64, 100, 4e9, 1.0, 64),            // small tile: most bytes
                   ok_variant(128, 128, 100 * (1 + 1e-9), 2e9, 0.5, 128),  // more reuse, half a wave idle
                   ok_variant(128, 256, 100, 1.5e9, 0.8, 200),       // most reuse
                   ok_variant(256, 128, 100, 1.5e9, 0.9, 200),       // same reuse, fuller waves
                   ok_variant(64, 128, 101, 1e9, 1.0, 32)};          // slower: last
  plan.variants.back().status = variant_status::ok;
  rank_by_prediction(plan);
  ASSERT_EQ(plan.variants.size(), 5u);
  EXPECT_EQ(plan.variants[0].config.block_m, 256);
  EXPECT_EQ(plan.variants[1].config.block_n, 256);
  EXPECT_EQ(plan.variants[2].config.block_m, 128);
  EXPECT_EQ(plan.variants[3].config.block_m, 64);
  EXPECT_EQ(plan.variants[3].config.block_n, 64);
  EXPECT_EQ(plan.variants[4].config.block_n, 128);
  EXPECT_EQ(top_tie_size(plan), 4u);
  ASSERT_TRUE(plan.recommended);
  EXPECT_EQ(*plan.recommended, 0u);
  // Equal in time, bytes and waves: the variant asking for less wins.
  gemm_plan same;
  same.variants = {ok_variant(128, 128, 100, 2e9, 1.0, 200), ok_variant(128, 128, 100, 2e9, 1.0, 96)};
  rank_by_prediction(same);
  EXPECT_EQ(same.variants[0].resources.registers, 96);
}

// Twins the model cannot tell apart (the same time, bytes, waves and resources): a mechanism measured to
// help where the model has no term for it comes first (gemm_family::tie_order: wgmma's evict-first on B,
// faster in every pair the H200 timed), whichever order they were generated in.
TEST(variant_ranking, twins_the_model_ties_go_to_the_mechanism_measured_to_help) {
  for (const bool efb_first : {false, true}) {
    gemm_plan plan;
    variant_result plain = ok_variant(64, 128, 100, 2e9, 1.0, 152), efb = plain;
    plain.config = wgmma_tile(64, 128, 64, 1, 7);
    plain.config.split_k = 2;
    efb.config = plain.config;
    set_wgmma_evict_first_b(efb.config, true);
    plan.variants = efb_first ? std::vector<variant_result>{efb, plain} : std::vector<variant_result>{plain, efb};
    rank_by_prediction(plan);
    EXPECT_TRUE(wgmma_evict_first_b(plan.variants[0].config)) << efb_first;
    EXPECT_FALSE(wgmma_evict_first_b(plan.variants[1].config)) << efb_first;
  }
  // The order rests on the mechanism, nothing else: plain twins keep theirs.
  EXPECT_EQ(family_named("mma")->tie_order(mma_tile(64, 64, 32, 2, 2, 3)), 0);
  EXPECT_EQ(family_named("wgmma")->tie_order(wgmma_tile(64, 128, 64, 1, 7)), 0);
}

TEST(variant_ranking, a_predicted_plan_whose_top_is_a_tie_says_so_and_a_measured_one_does_not) {
  gemm_plan plan;
  plan.variants = {ok_variant(64, 64, 100, 4e9, 1.0, 64), ok_variant(128, 128, 100, 2e9, 1.0, 128),
                   ok_variant(128, 64, 120, 3e9, 1.0, 96)};
  rank_by_prediction(plan);
  const std::string note = top_tie_note(plan);
  EXPECT_NE(note.find("2 variants at the same best time"), std::string::npos) << note;
  EXPECT_NE(note.find("L2"), std::string::npos) << note;
  plan.mode = plan_mode::measured;
  EXPECT_TRUE(top_tie_note(plan).empty());
}

TEST(variant_ranking, variants_that_are_not_ok_follow_by_status_and_have_no_rank) {
  gemm_plan plan;
  plan.variants = {ok_variant(64, 64, 100, 4e9, 1.0, 64), ok_variant(128, 128, 50, 2e9, 1.0, 128)};
  plan.variants[1].status = variant_status::compile_error;
  plan.variants.push_back(plan.variants[1]);
  plan.variants.back().status = variant_status::pruned;
  rank_by_prediction(plan);
  EXPECT_EQ(plan.variants[0].status, variant_status::ok);
  EXPECT_EQ(plan.variants[0].rank, 1);
  EXPECT_EQ(plan.variants[1].status, variant_status::pruned);
  EXPECT_EQ(plan.variants[2].status, variant_status::compile_error);
  EXPECT_EQ(plan.variants[2].rank, 0);
}

// A recommendation that copies rows off 16 bytes says which stride, what the copies cost in the
// prediction, and the padded leading dimension that reads them in place; an aligned problem, or one
// whose recommendation reads the rows where they are, has no such note.
TEST(variant_ranking, unaligned_rows_are_named_with_their_cost_and_the_padding_that_avoids_it) {
  auto plan_of = [](std::int64_t m, std::int64_t n, std::int64_t k, const char* layout, bool copies) {
    gemm_plan plan;
    plan.problem.m = m;
    plan.problem.n = n;
    plan.problem.k = k;
    plan.problem.type = dtype::bf16;
    plan.problem.layout = parse_layout(layout);
    plan.mode = plan_mode::predicted;
    variant_result v = ok_variant(128, 128, 758, 1e9, 1.0, 128);
    set_mma_k_major_copies(v.config, copies);
    v.predicted.prologue_us = copies ? 326 : 0;
    plan.variants = {v};
    plan.recommended = 0;
    return plan;
  };
  auto note_of = [](gemm_plan plan) {
    note_unaligned_rows(plan);
    return plan.notes.empty() ? std::string() : plan.notes.back();
  };
  // GPT-2's lm_head backward: A (4096 x 50257, nn) has rows 100514 bytes apart.
  const std::string k = note_of(plan_of(4096, 768, 50257, "nn", true));
  EXPECT_NE(k.find("A's rows (K 50257 bf16 elements, 100514 bytes apart)"), std::string::npos) << k;
  EXPECT_NE(k.find("326 us of the 758 us predicted"), std::string::npos) << k;
  EXPECT_NE(k.find("padded to K 50264"), std::string::npos) << k;
  EXPECT_NE(k.find("`--k 50264`"), std::string::npos) << k;
  // B stored K x N (nn) with an odd N: B's rows, padded along N.
  const std::string n = note_of(plan_of(4096, 201, 4096, "nn", true));
  EXPECT_NE(n.find("B's rows (N 201"), std::string::npos) << n;
  EXPECT_NE(n.find("`--n 208`"), std::string::npos) << n;
  // The element-wise path (mma without copies) loads the rows one element at a time: no pre-pass figure.
  const std::string serial = note_of(plan_of(4096, 768, 50257, "nn", false));
  EXPECT_NE(serial.find("one element at a time"), std::string::npos) << serial;
  EXPECT_EQ(serial.find("pre-pass"), std::string::npos) << serial;
  // Aligned rows: no note, whatever the recommendation.
  EXPECT_EQ(note_of(plan_of(4096, 768, 50264, "nn", true)), "");
  EXPECT_EQ(note_of(plan_of(4096, 4096, 4096, "nt", false)), "");
}

// On a GPU whose tf32 tensor peak is f32's (the RTX 5090: 104.8 TFLOP/s each), a tf32 plan says f32
// may be faster (it was predicted 1.5x faster on 2048^3); where tf32's peak is higher, or for
// another type, nothing is said.
TEST(variant_ranking, a_tf32_plan_says_when_the_gpus_tf32_peak_is_no_higher_than_f32s) {
  auto note_of = [](const char* gpu, dtype t) {
    gemm_plan plan;
    plan.problem.m = plan.problem.n = plan.problem.k = 2048;
    plan.problem.type = t;
    plan.device = find_preset(gpu);
    note_tf32_no_faster_than_f32(plan);
    return plan.notes.empty() ? std::string() : plan.notes.back();
  };
  const std::string geforce = note_of("rtx-5090", dtype::tf32);
  EXPECT_NE(geforce.find("tf32's tensor peak (104.8 TFLOP/s) is no higher than f32's (104.8)"), std::string::npos)
      << geforce;
  EXPECT_NE(geforce.find("`--dtype f32`"), std::string::npos) << geforce;
  EXPECT_NE(note_of("a10g", dtype::tf32), "");
  EXPECT_EQ(note_of("h100-sxm", dtype::tf32), "");
  EXPECT_EQ(note_of("rtx-5090", dtype::f32), "");
  EXPECT_EQ(note_of("v100-sxm2", dtype::tf32), "");  // no tf32 at all: gemm refuses it before
}

// The calibrated floor (the best DRAM draw and FLOP rate measured) can set many variants' time alike,
// every decode tile of a problem held out of the fit: their own time, under the floor, orders them
// before L2 bytes do (the H200's 16-row pick 1.22x -> 1.14x the best). A plan without own times (the
// physical model, or one read back) keeps the L2 bytes' order.
TEST(variant_ranking, variants_the_floor_ties_go_by_their_own_time) {
  gemm_plan plan;
  plan.variants = {ok_variant(64, 64, 15.3, 1e6, 1.0, 64), ok_variant(128, 128, 15.3, 9e6, 1.0, 64),
                   ok_variant(256, 128, 15.3, 5e6, 1.0, 64)};
  plan.variants[0].predicted.own_us = 12.1;  // fewest L2 bytes, slowest own terms
  plan.variants[1].predicted.own_us = 10.9;
  plan.variants[2].predicted.own_us = 11.5;
  for (auto& v : plan.variants) v.predicted.bound = "floor";
  rank_by_prediction(plan);
  EXPECT_EQ(plan.variants[0].config.block_m, 128);
  EXPECT_EQ(plan.variants[1].config.block_m, 256);
  EXPECT_EQ(plan.variants[2].config.block_m, 64);
  EXPECT_EQ(top_tie_size(plan), 3u);  // still tied in time: the note says so, and by what
  plan.mode = plan_mode::predicted;
  const std::string note = top_tie_note(plan);
  EXPECT_NE(note.find("the floor the measured kernels set"), std::string::npos) << note;
  EXPECT_NE(note.find("own time under that floor, then fewer bytes"), std::string::npos) << note;
  for (auto& v : plan.variants) v.predicted.own_us = 0;
  rank_by_prediction(plan);
  EXPECT_EQ(plan.variants[0].config.block_m, 64);
  EXPECT_EQ(top_tie_note(plan).find("floor"), std::string::npos);
}
