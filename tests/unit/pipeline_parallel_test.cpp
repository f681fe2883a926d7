// --pipeline-parallel P, 1F1B (issue 37; Narayanan et al. 2021). Expected figures are arithmetic on
// Llama-3-8B's published shapes (8,030,261,248 parameters = 32 blocks of 218,112,000 + the
// embedding and the untied LM head, 128,256 x 4,096 = 525,336,576 each, + the final norm's 4,096;
// hidden 4,096) and the H100 SXM's 450 GB/s NVLink at 80%, written out in each test.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/training_communication.hpp"
#include "core/train/training_pipeline.hpp"
#include "core/train/training_plan.hpp"
#include "setup_refusal.hpp"

using namespace tiletune;
using tiletune::test::refusal;

namespace {
training_setup llama_pp(int p, int world, int t = 1) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = precision::bf16_mixed;
  s.pipeline_parallel = p;
  s.tensor_parallel = t;
  s.world_size = world;
  return s;
}
// P 4 on 8 GPUs, global batch 32 in micro-batches of 2, ZeRO 1, checkpointing on.
training_setup bubble_setup() {
  training_setup s = llama_pp(4, 8);
  s.global_batch = 32;
  s.micro_batch = 2;
  s.zero_stage = 1;
  s.checkpointing = checkpoint_policy::on;
  return s;
}
}  // namespace

// P = 4: each stage 32 / 4 = 8 blocks, 8 x 218,112,000 = 1,744,896,000, with one vocabulary matrix
// (the first the embedding, the last the LM head) and the final norm: 2,270,236,672 parameters;
// bf16-mixed without ZeRO: 4 bytes of weights (9,080,946,688), 4 of gradients, 8 of AdamW states
// (18,161,893,376). The last stage's are the same size.
TEST(pipeline_parallel, each_stage_holds_its_layers_and_one_vocabulary_matrix) {
  const memory_breakdown m = estimate_memory(llama_pp(4, 4));
  EXPECT_EQ(m.parameters, 2'270'236'672LL);
  EXPECT_EQ(m.weights_bytes, 9'080'946'688LL);
  EXPECT_EQ(m.gradients_bytes, 9'080'946'688LL);
  EXPECT_EQ(m.optimizer_bytes, 18'161'893'376LL);
  ASSERT_EQ(m.other_stages.size(), 1u);
  EXPECT_EQ(m.other_stages[0].parameters, 2'270'236'672LL);
}

// The plan's note says how the layers split: evenly (32 / 4 = 8 each), or, where P does not divide
// L (32 over 5 stages: 7 or 6), both counts and the stage it is timed as.
TEST(pipeline_parallel, the_note_says_how_the_layers_split) {
  const device_spec& h100 = find_preset("h100-sxm");
  const std::vector<std::string> even = pipeline_notes(llama_pp(4, 4), h100);
  ASSERT_FALSE(even.empty());
  EXPECT_NE(even[0].find("each holds 8 of the 32 layers"), std::string::npos) << even[0];
  const std::vector<std::string> uneven = pipeline_notes(llama_pp(5, 5), h100);
  ASSERT_FALSE(uneven.empty());
  EXPECT_NE(uneven[0].find("the stages hold 7 or 6 of the 32 layers (an uneven split, timed as a stage of 7"),
            std::string::npos)
      << uneven[0];
  EXPECT_EQ(uneven[0].find("each holds"), std::string::npos) << uneven[0];
}

// 1F1B's first stage holds P micro-batches of its L / P layers: the activations of 4 x 8 = 32
// layers, the whole model's for one micro-batch, with 4 copies of what sits outside the blocks
// (the embedding's output) where the whole model has one: first - whole = 3 x outer. It has no
// logits; the last stage holds one micro-batch and the whole model's logits.
TEST(pipeline_parallel, the_first_stage_holds_p_micro_batches_and_the_last_the_logits) {
  const memory_breakdown whole = estimate_memory(llama_pp(1, 1));
  const memory_breakdown first = estimate_memory(llama_pp(4, 4));
  EXPECT_NEAR(static_cast<double>(first.activation_bytes_per_sample - whole.activation_bytes_per_sample),
              3.0 * static_cast<double>(whole.outer_saved_bytes_per_sample), 16);
  EXPECT_EQ(first.logits_bytes_per_sample, 0);
  const memory_breakdown& last = first.other_stages[0];
  EXPECT_EQ(last.logits_bytes_per_sample, whole.logits_bytes_per_sample);
  EXPECT_LT(last.activation_bytes_per_sample, whole.activation_bytes_per_sample / 3);  // 8 of 32 layers
  // The peak is the worse stage's.
  EXPECT_EQ(first.peak_bytes(4, false), std::max(last.peak_bytes(4, false), [&] {
              memory_breakdown alone = first;
              alone.other_stages.clear();
              return alone.peak_bytes(4, false);
            }()));
  EXPECT_NE(first.peak_phase(1, false).find(" stage: "), std::string::npos);
}

// 1F1B's first stage holds min(P, m) micro-batches in flight, m the step's (its P - 1 warm-up forwards
// and the one before its first backward, all m where the step has fewer; Megatron-LM's schedules.py).
// Interleaved (P 4, V 2): min(2(P - 1) + (V - 1)P + 1, m x V) = min(11, 2m) chunk forwards of half a
// stage, 4 micro-batches at m = 4 (every forward first), 5.5 from m = 8. Micro-batch 1 on 4 stages at
// global batches 2, 4 and 64 (m = 2, 4, 64): the first stage alone holds two micro-batches of its
// 8 layers more at 4 than at 2, and no more at 64. The plan at global batch 1 had the peak of 64's.
TEST(pipeline_parallel, the_first_stage_holds_no_more_micro_batches_than_a_step_has) {
  EXPECT_EQ(pipeline_first_stage_in_flight(4, 1, 1), 1);
  EXPECT_EQ(pipeline_first_stage_in_flight(4, 1, 3), 3);
  EXPECT_EQ(pipeline_first_stage_in_flight(4, 1, 64), 4);
  EXPECT_EQ(pipeline_first_stage_in_flight(4, 2, 4), 4);
  EXPECT_EQ(pipeline_first_stage_in_flight(4, 2, 8), 5.5);
  EXPECT_EQ(pipeline_first_stage_most_in_flight(4, 2), 5.5);
  auto first_stage = [](std::int64_t global) {
    training_setup s = llama_pp(4, 4);
    s.global_batch = global;
    memory_breakdown m = estimate_memory(s);
    m.other_stages.clear();
    return m;
  };
  const memory_breakdown two = first_stage(2), four = first_stage(4), many = first_stage(64);
  const double one = static_cast<double>(four.activation_bytes_per_sample) / 4;
  EXPECT_NEAR(static_cast<double>(four.peak_allocated_bytes(1, false, true) - two.peak_allocated_bytes(1, false, true)),
              2 * one, 16);
  EXPECT_EQ(many.peak_allocated_bytes(1, false, true), four.peak_allocated_bytes(1, false, true));
  auto candidate = [](std::int64_t global) {
    training_setup s = llama_pp(4, 4);
    s.global_batch = global;
    s.micro_batch = 1;
    s.checkpointing = checkpoint_policy::off;
    return plan_batch(s, find_preset("h100-sxm")).candidates.at(0);
  };
  const batch_candidate alone = candidate(1), full = candidate(64);
  EXPECT_LT(alone.peak_bytes, full.peak_bytes);
  // One micro-batch in flight: the last stage (its logits) peaks higher, and the plan names it.
  EXPECT_EQ(alone.peak_phase.rfind("last stage: ", 0), 0u) << alone.peak_phase;
  EXPECT_EQ(full.peak_phase.rfind("first stage: ", 0), 0u) << full.peak_phase;
}

// Each micro-step a stage sends its output forward and receives its gradient backward: 2 x 1 x
// 2,048 x 4,096 x 2 = 33,554,432 bytes at 360 GB/s inside a node, 0.093206756 ms; with 16 stages on
// 8-GPU nodes at the network's 50 x 0.8: 0.8388608 ms.
TEST(pipeline_parallel, stages_send_activations_and_gradients_point_to_point) {
  const device_spec& h100 = find_preset("h100-sxm");
  EXPECT_NEAR(predict_step(llama_pp(4, 4), h100, 1, false).p2p_ms, 0.093206756, 1e-8);
  EXPECT_NEAR(predict_step(llama_pp(16, 16), h100, 1, false).p2p_ms, 0.8388608, 1e-8);
  EXPECT_EQ(predict_step(llama_pp(1, 1), h100, 1, false).p2p_ms, 0);
  // The stages outermost (Megatron-LM's rank order): on 16 GPUs in nodes of 8, P = 2 puts each stage
  // on a node of its own. The sends cross nodes (50 x 0.8: 0.8388608 ms), and each stage's eight
  // data-parallel ranks exchange their gradients over NVLink, not the network.
  const training_setup two_nodes = llama_pp(2, 16);
  EXPECT_NEAR(predict_step(two_nodes, h100, 1, false).p2p_ms, 0.8388608, 1e-8);
  EXPECT_EQ(estimate_communication(two_nodes, h100).link_gbs, 450);
  EXPECT_EQ(estimate_communication(llama_pp(2, 32), h100).link_gbs, 400);  // a stage of 16: 8 ports x 50
  // Tensor parallel 2 x pipeline 2 on 4 GPUs: one node, the sends on NVLink.
  EXPECT_NEAR(predict_step(llama_pp(2, 4, 2), h100, 1, false).p2p_ms, 0.093206756, 1e-8);
}

// The bubble: (P - 1) micro-steps per global step of m. World 8, P 4: 2 data-parallel ranks; a
// global batch of 32 is 16 samples a rank, micro-batch 2: m = 8 micro-steps, a bubble of
// 3 / (8 + 3) of the micro-steps' and the bubble's time.
TEST(pipeline_parallel, the_bubble_is_p_minus_1_over_m_plus_p_minus_1) {
  training_setup s = bubble_setup();
  const batch_plan plan = plan_batch(s, find_preset("h100-sxm"));
  ASSERT_EQ(plan.candidates.size(), 1u);
  const batch_candidate& c = plan.candidates[0];
  EXPECT_EQ(c.grad_accum_steps, 8);
  EXPECT_EQ(c.effective_global_batch, 32);
  const double micro = c.time.micro_step_ms();
  EXPECT_NEAR(c.time.pipeline_bubble_ms, 3 * micro, 1e-9);
  EXPECT_NEAR(c.time.pipeline_bubble_ms / (8 * micro + c.time.pipeline_bubble_ms), 3.0 / 11, 1e-12);
}

TEST(pipeline_parallel, refusals_name_the_value_or_combination) {
  training_setup one_node_of_33 = llama_pp(33, 33);
  one_node_of_33.gpus_per_node = 33;  // whole nodes past one: the stages are what is refused here
  EXPECT_NE(refusal(one_node_of_33).find("--pipeline-parallel 33 is more stages than"), std::string::npos);
  EXPECT_NE(
      refusal(llama_pp(4, 6)).find("--world-size 6 is not a multiple of --tensor-parallel 1 x --pipeline-parallel 4"),
      std::string::npos);
  EXPECT_NE(refusal(llama_pp(2, 4, 4))
                .find("--world-size 4 is not a multiple of --tensor-parallel 4 x --pipeline-parallel 2"),
            std::string::npos);
  EXPECT_NE(refusal(llama_pp(0, 1)).find("--pipeline-parallel 0 is invalid"), std::string::npos);
  training_setup z3 = llama_pp(2, 4);
  z3.zero_stage = 3;
  EXPECT_NE(refusal(z3).find("not modelled with --zero 3"), std::string::npos);
  training_setup gb = llama_pp(4, 8);
  gb.global_batch = 1;  // 2 data-parallel ranks
  EXPECT_NE(refusal(gb).find("data-parallel rank needs a sample"), std::string::npos);
  EXPECT_EQ(refusal(llama_pp(2, 8, 2)), "");  // T 2 x P 2 x 2 data-parallel ranks
}

// --virtual-stages V, Megatron-LM's interleaved 1F1B (Narayanan et al. 2021, section 2.2.2: the
// bubble shrinks by a factor of V; each micro-batch crosses every rank V times each way). The setup
// of the bubble test with P 4, V 2: 32 / (4 x 2) = 4 layers a chunk; the bubble 3 / 2 micro-steps;
// the sends twice 1F1B's; the first rank's blocks' activations 1 + 3 / 8 = 1.375 times 1F1B's
// (Megatron-LM's warm-up of 2(P - 1) + (V - 1)P + 1 = 11 chunk forwards of 4 layers: 44 layers
// against 32).
TEST(pipeline_parallel, interleaving_divides_the_bubble_by_v_and_holds_more_in_flight) {
  training_setup s = bubble_setup();
  training_setup v = s;
  v.virtual_stages = 2;
  const device_spec& h100 = find_preset("h100-sxm");
  const batch_plan one = plan_batch(s, h100), two = plan_batch(v, h100);
  ASSERT_EQ(two.candidates.size(), 1u);
  const batch_candidate& c = two.candidates[0];
  EXPECT_NEAR(c.time.pipeline_bubble_ms, 1.5 * c.time.micro_step_ms(), 1e-9);
  EXPECT_NEAR(c.time.p2p_ms, 2 * one.candidates[0].time.p2p_ms, 1e-12);
  const memory_breakdown first = estimate_memory(s), interleaved = estimate_memory(v);
  EXPECT_NEAR(static_cast<double>(interleaved.activation_bytes_per_sample) /
                  static_cast<double>(first.activation_bytes_per_sample),
              1.375, 1e-6);
  EXPECT_EQ(interleaved.other_stages[0].activation_bytes_per_sample, first.other_stages[0].activation_bytes_per_sample);
  EXPECT_GT(c.tokens_per_s, one.candidates[0].tokens_per_s);
  // Refusals: chunks that do not split the layers, V without stages, V out of range.
  training_setup odd = llama_pp(4, 8);
  odd.virtual_stages = 3;  // 32 layers into 4 x 3 chunks
  EXPECT_NE(refusal(odd).find("do not split into 4 x 3 equal model chunks"), std::string::npos) << refusal(odd);
  training_setup alone = llama_pp(1, 1);
  alone.virtual_stages = 2;
  EXPECT_NE(refusal(alone).find("--virtual-stages 2 interleaves pipeline stages"), std::string::npos);
  training_setup zero = llama_pp(4, 8);
  zero.virtual_stages = 0;
  EXPECT_NE(refusal(zero).find("--virtual-stages 0 is invalid"), std::string::npos);
}

// Interleaving runs a multiple of P micro-batches a step (Narayanan et al. 2021, section 2.2.2):
// P 4, V 2 on 8 GPUs (2 data-parallel ranks), global batch 8: 4 samples a rank. Micro-batch 2
// would take 2 micro-steps, rounded up to 4 (a global batch of 2 x 4 x 2 = 16); micro-batch 1
// takes exactly 4 (8): the recommendation is micro-batch 1.
TEST(pipeline_parallel, interleaving_runs_a_multiple_of_p_micro_batches) {
  training_setup s = llama_pp(4, 8);
  s.virtual_stages = 2;
  s.global_batch = 8;
  s.zero_stage = 1;
  s.checkpointing = checkpoint_policy::on;
  const batch_plan plan = plan_batch(s, find_preset("h100-sxm"));
  bool saw_rounded = false;
  for (const batch_candidate& c : plan.candidates) {
    EXPECT_EQ(c.grad_accum_steps % 4, 0) << c.micro_batch;
    if (c.micro_batch == 2) {
      EXPECT_EQ(c.grad_accum_steps, 4);
      EXPECT_EQ(c.effective_global_batch, 16);
      saw_rounded = true;
    }
  }
  EXPECT_TRUE(saw_rounded);
  ASSERT_TRUE(plan.recommended.has_value());
  EXPECT_EQ(plan.candidates[*plan.recommended].micro_batch, 1);
  EXPECT_EQ(plan.candidates[*plan.recommended].effective_global_batch, 8);
}
