// --tensor-parallel T and --sequence-parallel (issue 37; Megatron-LM: Shoeybi et al. 2019,
// Korthikanti et al. 2022). Expected figures are arithmetic on Llama-3-8B's published shapes
// (8,030,261,248 parameters; hidden 4,096, 32 heads, 8 key-value heads, MLP 14,336, vocabulary
// 128,256, 32 layers, two RMSNorms of 4,096 per layer and a final one) and the H100 SXM's 450 GB/s
// NVLink at the rings' 80%, written out in each test.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/training_communication.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_plan.hpp"
#include "setup_refusal.hpp"

using namespace tiletune;
using tiletune::test::refusal;

namespace {
training_setup llama_tp(int t, int world = 1, bool sp = false) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = precision::bf16_mixed;
  s.tensor_parallel = t;
  s.world_size = world;
  s.sequence_parallel = sp;
  return s;
}
// The norms, replicated on every GPU: 32 x 2 x 4,096 + 4,096 = 266,240 parameters.
constexpr std::int64_t norms = 266'240;
}  // namespace

// Everything but the norms is split: (8,030,261,248 - 266,240) / 2 + 266,240 = 4,015,263,744 at T = 2
// (Megatron pads the vocabulary to a multiple of 128 x T: 128,256 is one of 256, 64,128 rows each).
// At T = 4 it is not one of 512: 128,512 rows, 32,128 a GPU, 64 more than 128,256 / 4 in the
// embedding and in the untied LM head: (8,030,261,248 - 266,240) / 4 + 2 x 64 x 4,096 + 266,240
// = 2,008,289,280. T = 8: 129,024 rows, 16,128 a GPU (96 more than 16,032).
// bf16-mixed without ZeRO: fp32 weights and gradients (4 bytes), AdamW's two fp32 states (8 bytes).
TEST(tensor_parallel, weights_gradients_and_states_are_split_but_the_norms) {
  const memory_breakdown t2 = estimate_memory(llama_tp(2, 2));
  EXPECT_EQ(t2.parameters, (8'030'261'248LL - norms) / 2 + norms);
  EXPECT_EQ(t2.parameters, 4'015'263'744LL);
  EXPECT_EQ(t2.weights_bytes, 16'061'054'976LL);
  EXPECT_EQ(t2.gradients_bytes, 16'061'054'976LL);
  EXPECT_EQ(t2.optimizer_bytes, 32'122'109'952LL);
  EXPECT_EQ(estimate_memory(llama_tp(4, 4)).parameters, 2'008'289'280LL);
  EXPECT_EQ(estimate_memory(llama_tp(8, 8)).parameters, (8'030'261'248LL - norms) / 8 + 2 * 96 * 4'096 + norms);
  EXPECT_EQ(megatron_vocab_rows_per_rank(128'256, 8), 16'128);
  EXPECT_EQ(megatron_vocab_rows_per_rank(50'257, 1), 50'257);  // one GPU: the model as transformers builds it
  EXPECT_EQ(megatron_vocab_rows_per_rank(50'257, 2), 25'216);  // GPT-2: 50,432 = 197 x 256
  const auto notes = tensor_parallel_notes(llama_tp(8, 8), find_preset("h100-sxm"));
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("16128 of the 128256 vocabulary rows (padded to 129024, Megatron's multiple of 128 x 8;"),
            std::string::npos)
      << notes[0];
  EXPECT_NE(tensor_parallel_notes(llama_tp(2, 2), find_preset("h100-sxm"))[0].find(
                "64128 of the 128256 vocabulary rows (embedding"),
            std::string::npos);
  EXPECT_EQ(estimate_memory(llama_tp(1)).parameters, 8'030'261'248LL);
}

// Korthikanti et al. 2022, Table 2: per layer sbh(10 + 24/t + 5as/(ht)) without sequence
// parallelism, a replicated part R and a split part S / t. So act(1) - act(2) = S/2 and
// act(2) - act(4) = S/4: the first difference is twice the second, and R = 2 act(2) - act(1) > 0
// (the residual stream and the norms' inputs stay whole). With sequence parallelism every part
// is / t: sbh(34/t + 5as/(ht)), act(1) / 2 at t = 2. The logits are vocab-parallel: / 2 exactly.
TEST(tensor_parallel, activations_follow_table_2) {
  for (const attention_impl a : {attention_impl::flash, attention_impl::eager}) {
    training_setup s1 = llama_tp(1), s2 = llama_tp(2, 2), s4 = llama_tp(4, 4), sp = llama_tp(2, 2, true);
    for (auto* s : {&s1, &s2, &s4, &sp}) s->attention = a;
    const memory_breakdown m1 = estimate_memory(s1), m2 = estimate_memory(s2), m4 = estimate_memory(s4),
                           msp = estimate_memory(sp);
    // Per sample, outside the blocks included: the embedding's output stays whole too (no SP).
    const double d12 = static_cast<double>(m1.activation_bytes_per_sample - m2.activation_bytes_per_sample);
    const double d24 = static_cast<double>(m2.activation_bytes_per_sample - m4.activation_bytes_per_sample);
    EXPECT_NEAR(d12, 2 * d24, 8) << to_string(a);  // integer truncation only
    EXPECT_GT(2 * m2.activation_bytes_per_sample - m1.activation_bytes_per_sample, 0) << to_string(a);
    EXPECT_EQ(msp.activation_bytes_per_sample, m1.activation_bytes_per_sample / 2) << to_string(a);
    EXPECT_EQ(msp.checkpointed_activation_bytes_per_sample, m1.checkpointed_activation_bytes_per_sample / 2);
    EXPECT_EQ(m2.logits_bytes_per_sample, m1.logits_bytes_per_sample / 2) << to_string(a);
  }
}

// Per layer and micro-batch 4 all-reduces (2 forward, 2 backward) of b x s x h x 2 bytes:
// 1 x 2,048 x 4,096 x 2 = 16,777,216 bytes; a ring moves 2 (t-1)/t of it per GPU: 16,777,216 at
// t = 2; x 4 x 32 layers = 2,147,483,648 bytes at 450 x 0.8 = 360 GB/s: 5.965232356 ms. Full
// recompute adds the forward's 2: x 6/4 = 8.947848533 ms. t = 8: x 7/4: 10.439156622 ms.
TEST(tensor_parallel, every_layer_all_reduces_its_activation_on_the_gpu_link) {
  const device_spec& h100 = find_preset("h100-sxm");
  EXPECT_NEAR(predict_step(llama_tp(2, 2), h100, 1, false).tensor_parallel_ms, 5.965232356, 1e-6);
  EXPECT_NEAR(predict_step(llama_tp(2, 2), h100, 1, true).tensor_parallel_ms, 8.947848533, 1e-6);
  EXPECT_NEAR(predict_step(llama_tp(8, 8), h100, 1, false).tensor_parallel_ms, 10.439156622, 1e-6);
  // Sequence parallelism: all-gathers and reduce-scatters of the same bytes.
  EXPECT_NEAR(predict_step(llama_tp(2, 2, true), h100, 1, false).tensor_parallel_ms, 5.965232356, 1e-6);
  EXPECT_EQ(predict_step(llama_tp(1), h100, 1, false).tensor_parallel_ms, 0);
  // Part of every micro-step: not overlapped.
  const step_time t = predict_step(llama_tp(2, 2), h100, 1, false);
  EXPECT_NEAR(t.micro_step_ms(), t.gemm_ms + t.memory_bound_ms + t.launch_ms + t.host_wait_ms + t.tensor_parallel_ms,
              1e-9);
}

// A GPU runs its shard's GEMMs: q_proj's output 4,096 / 2 = 2,048 columns, down_proj's input
// 14,336 / 2 = 7,168, the LM head's 64,128 vocabulary rows.
TEST(tensor_parallel, each_gpu_runs_its_shard_of_the_gemms) {
  bool q = false, down = false, head = false;
  for (const step_gemm& g : step_gemms(llama_tp(2, 2), 1, false)) {
    if (g.name == "layers.q_proj forward") q = g.n == 2'048 && g.k == 4'096;
    if (g.name == "layers.down_proj forward") down = g.k == 7'168 && g.n == 4'096;
    if (g.name.rfind("lm_head forward", 0) == 0) head = g.n == 64'128;
  }
  EXPECT_TRUE(q);
  EXPECT_TRUE(down);
  EXPECT_TRUE(head);
}

// World 8 at t = 2: 4 data-parallel ranks. Their gradient all-reduce moves 2 x 3/4 of one shard's
// fp32 gradients, 2 x 0.75 x 16,061,054,976 = 24,091,582,464 bytes, at 360 GB/s inside the node:
// 66.921062400 ms. A global batch of 64 is 16 samples per rank.
TEST(tensor_parallel, data_parallelism_runs_over_world_size_over_t) {
  const device_spec& h100 = find_preset("h100-sxm");
  training_setup s = llama_tp(2, 8);
  EXPECT_NEAR(estimate_communication(s, h100).per_global_step_ms, 66.9210624, 1e-6);
  s.global_batch = 64;
  s.zero_stage = 1;  // without it one shard's fp32 weights, gradients and states alone are 64 GB
  s.checkpointing = checkpoint_policy::on;
  const batch_plan plan = plan_batch(s, h100);
  ASSERT_TRUE(plan.recommended);
  const batch_candidate& r = plan.candidates[*plan.recommended];
  EXPECT_EQ(r.effective_global_batch, 64);
  EXPECT_EQ(r.micro_batch * r.grad_accum_steps, 16);
  // Across nodes the node's 8 network ports are shared by the t data-parallel groups it holds:
  // t = 8 on 16 GPUs leaves each group 8 / 8 x 50 = 50 GB/s (without tensor parallelism: 400).
  EXPECT_EQ(estimate_communication(llama_tp(8, 16), h100).link_gbs, 50);
  EXPECT_EQ(estimate_communication(llama_tp(1, 16), h100).link_gbs, 400);
}

TEST(tensor_parallel, refusals_name_the_value_or_combination) {
  EXPECT_NE(refusal(llama_tp(16, 16)).find("--tensor-parallel 16 is larger than --gpus-per-node 8"), std::string::npos);
  EXPECT_NE(refusal(llama_tp(4, 6)).find("--world-size 6 is not a multiple of --tensor-parallel 4"), std::string::npos);
  // Across nodes a group must not straddle two: 4 does not divide nodes of 6.
  auto straddling = llama_tp(4, 12);
  straddling.gpus_per_node = 6;
  EXPECT_NE(refusal(straddling).find("--tensor-parallel 4 does not divide --gpus-per-node 6"), std::string::npos);
  straddling.gpus_per_node = 4;
  EXPECT_EQ(refusal(straddling), "");
  EXPECT_NE(refusal(llama_tp(3, 3)).find("must divide"), std::string::npos);  // 8 key-value heads
  EXPECT_NE(refusal(llama_tp(1, 1, true)).find("--sequence-parallel needs --tensor-parallel"), std::string::npos);
  training_setup z3 = llama_tp(2, 8);
  z3.zero_stage = 3;
  EXPECT_NE(refusal(z3).find("--zero 3"), std::string::npos);
  training_setup lora = llama_tp(2, 2);
  lora.lora_rank = 16;
  EXPECT_NE(refusal(lora).find("LoRA"), std::string::npos);
  training_setup gb = llama_tp(2, 8);
  gb.global_batch = 3;  // 4 data-parallel ranks
  EXPECT_NE(refusal(gb).find("--world-size 8 / (tensor x pipeline parallel 2)"), std::string::npos);
  EXPECT_EQ(refusal(llama_tp(2, 8)), "");
}
