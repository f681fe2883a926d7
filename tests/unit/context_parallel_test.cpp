// --context-parallel C (issue 37): ring attention, each sequence over C GPUs. Expected figures are
// arithmetic on Llama-3-8B's published shapes (32 layers, 32 heads and 8 key-value heads of 128,
// hidden 4,096) at --seq-len 8,192, written out in each test, not the planner's output.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/training_context.hpp"
#include "core/train/training_plan.hpp"
#include "setup_refusal.hpp"

using namespace tiletune;
using tiletune::test::refusal;

namespace {
training_setup llama_cp(int cp, std::int64_t seq = 8192) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = seq;
  s.prec = precision::bf16_mixed;
  s.world_size = 8;
  s.zero_stage = 3;
  s.context_parallel = cp;
  s.micro_batch = 1;
  return s;
}
const step_gemm* named(const std::vector<step_gemm>& gemms, const std::string& name) {
  for (const step_gemm& g : gemms)
    if (g.name == name) return &g;
  return nullptr;
}
}  // namespace

// C 4: each GPU runs 8,192 / 4 = 2,048 tokens through every linear, and its 2,048 queries against
// all 8,192 keys (scores 2,048 x 8,192 per head, batch 32 heads).
TEST(context_parallel, each_gpu_runs_its_tokens_and_attends_to_every_key) {
  const std::vector<step_gemm> gemms = step_gemms(llama_cp(4), 1, false);
  const step_gemm* q = named(gemms, "layers.q_proj forward");
  const step_gemm* scores = named(gemms, "attention scores");
  const step_gemm* values = named(gemms, "attention values");
  ASSERT_TRUE(q && scores && values);
  EXPECT_EQ(q->m, 2048);
  EXPECT_EQ(scores->m, 2048);
  EXPECT_EQ(scores->n, 8192);
  EXPECT_EQ(scores->k, 128);
  EXPECT_EQ(scores->batch, 32);
  EXPECT_EQ(values->k, 8192);
  // A quarter of the unsplit step's attention work: 2,048 x 8,192 against 8,192 x 8,192.
  const std::vector<step_gemm> unsplit = step_gemms(llama_cp(1), 1, false);  // held: named() points into it
  const step_gemm* whole = named(unsplit, "attention scores");
  ASSERT_TRUE(whole);
  EXPECT_EQ(4 * scores->m * scores->n, whole->m * whole->n);
}

// The shard keeps a 2,048-token sequence's activations; the weights, gradients and optimizer states
// shard over all 8 GPUs as without it (FSDP over data x context parallel).
TEST(context_parallel, activations_are_the_shards_tokens_and_the_states_shard_over_every_gpu) {
  const memory_breakdown cp = estimate_memory(llama_cp(4)), plain = estimate_memory(llama_cp(1)),
                         short_seq = estimate_memory(llama_cp(1, 2048));
  EXPECT_EQ(cp.activation_bytes_per_sample, short_seq.activation_bytes_per_sample);
  EXPECT_LT(4 * cp.activation_bytes_per_sample, plain.activation_bytes_per_sample * 1.05);
  EXPECT_EQ(cp.weights_bytes, plain.weights_bytes);
  EXPECT_EQ(cp.optimizer_bytes, plain.optimizer_bytes);
}

// The ring: per layer 3 hops of each GPU's key and value chunk, 1 x 2,048 tokens x 2 x (8 x 128) x
// 2 bytes = 8,388,608 bytes, in forward, backward twice: 3 passes x 3 hops x 32 layers =
// 2,415,919,104 bytes at the H100's 450 GB/s x 0.8 = 6.711 ms per micro-step.
TEST(context_parallel, the_ring_moves_each_chunk_c_minus_1_hops_a_pass) {
  EXPECT_NEAR(context_parallel_comm_ms(llama_cp(4), find_preset("h100-sxm"), 1, false), 2'415'919'104.0 / 360e9 * 1e3,
              1e-6);
  EXPECT_EQ(context_parallel_comm_ms(llama_cp(1), find_preset("h100-sxm"), 1, false), 0);
  // The step adds only what the attention GEMMs do not hide, and counts 8 / 4 = 2 replicas.
  const batch_plan p = plan_batch(llama_cp(4), find_preset("h100-sxm"));
  ASSERT_TRUE(p.recommended);
  const batch_candidate& c = p.candidates[*p.recommended];
  EXPECT_GE(c.time.context_parallel_ms, 0);
  EXPECT_LE(c.time.context_parallel_ms, 6.72);
  EXPECT_EQ(c.effective_global_batch % 2, 0);
  EXPECT_NEAR(c.tokens_per_s, c.samples_per_s * 8192, 1e-6);
}

TEST(context_parallel, what_it_cannot_split_is_refused_naming_why) {
  EXPECT_EQ(refusal(llama_cp(4)), "");
  training_setup three = llama_cp(3, 6144);  // 6,144 splits into 6 chunks; 8 GPUs do not into groups of 3
  EXPECT_NE(refusal(three).find("--world-size 8 is not a multiple of --context-parallel 3"), std::string::npos)
      << refusal(three);
  EXPECT_NE(refusal(llama_cp(4, 4100)).find("must be a multiple of 8"), std::string::npos)
      << refusal(llama_cp(4, 4100));
  training_setup tp = llama_cp(2);
  tp.zero_stage = 1;
  tp.tensor_parallel = 2;
  EXPECT_EQ(refusal(tp), "");  // T 2 x C 2 x 2 data-parallel ranks
  tp.tensor_parallel = 8;
  EXPECT_NE(refusal(tp).find("--world-size 8 is not a multiple of --tensor-parallel 8 x --pipeline-parallel 1 x "
                             "--context-parallel 2"),
            std::string::npos)
      << refusal(tp);
  training_setup pp = llama_cp(2);
  pp.zero_stage = 1;
  pp.pipeline_parallel = 2;
  pp.tensor_parallel = 4;
  EXPECT_NE(refusal(pp).find("--world-size 8 is not a multiple of --tensor-parallel 4 x --pipeline-parallel 2 x "
                             "--context-parallel 2"),
            std::string::npos)
      << refusal(pp);
  training_setup eager = llama_cp(2);
  eager.attention = attention_impl::eager;
  EXPECT_NE(refusal(eager).find("--attention eager"), std::string::npos) << refusal(eager);
  training_setup zero = llama_cp(0);
  EXPECT_NE(refusal(zero).find("--context-parallel 0 is invalid"), std::string::npos);
}

// --tensor-parallel 2 with --context-parallel 2 (torchtitan's TP x CP) on 8 GPUs, Llama-3-8B at 8,192
// tokens: each GPU holds a tensor-parallel shard (16 of 32 heads, 4 of 8 key-value heads) of 4,096
// tokens, so its activations and its tensor-parallel collectives are those of TP 2 at 4,096 tokens;
// its ring passes key and value chunks of 1 x 4,096 tokens x 2 x (4 x 128) x 2 bytes = 8,388,608
// bytes, one hop a pass, 3 passes (no recompute) x 32 layers = 805,306,368 bytes at 450 GB/s x 0.8
// (2 x 2 GPUs fit a node) = 2.236962133 ms; 8 / (2 x 2) = 2 data-parallel ranks.
TEST(context_parallel, composes_with_tensor_parallelism) {
  training_setup both = llama_cp(2, 8192);
  both.zero_stage = 1;
  both.tensor_parallel = 2;
  training_setup tp_only = llama_cp(1, 4096);
  tp_only.zero_stage = 1;
  tp_only.tensor_parallel = 2;
  tp_only.world_size = 4;  // the same 2 data-parallel ranks
  const memory_breakdown m = estimate_memory(both), ref = estimate_memory(tp_only);
  EXPECT_EQ(m.activation_bytes_per_sample, ref.activation_bytes_per_sample);
  EXPECT_EQ(m.weights_bytes, ref.weights_bytes);
  const device_spec& h100 = find_preset("h100-sxm");
  EXPECT_NEAR(predict_step(both, h100, 1, false).tensor_parallel_ms, predict_step(tp_only, h100, 1, false).tensor_parallel_ms,
              1e-9);
  training_setup shard = both;
  shard.model.num_kv_heads /= 2;
  shard.tensor_parallel = 1;
  shard.cp_stride = 2;
  EXPECT_NEAR(context_parallel_comm_ms(shard, h100, 1, false), 2.236962133, 1e-6);
  const batch_plan plan = plan_batch(both, h100);
  ASSERT_FALSE(plan.candidates.empty());
  EXPECT_EQ(plan.candidates[0].effective_global_batch % 2, 0);
  bool noted = false;
  for (const std::string& n : plan.notes) noted = noted || n.find("its ring carries 1/2 of the key-value heads") != std::string::npos;
  EXPECT_TRUE(noted);
}

// --pipeline-parallel 2 with --context-parallel 2 on 8 GPUs, Llama-3-8B at 8,192 tokens: each stage's
// GPU holds 16 of the 32 layers for 4,096 tokens, so its first stage's activations are those of P 2
// at 4,096 tokens, and its sends are 1 x 4,096 x 4,096 x 2 bytes each way, 67,108,864 bytes at 450
// GB/s x 0.8 = 0.186413511 ms (half of P 2's at 8,192); 8 / (2 x 2) = 2 data-parallel ranks.
TEST(context_parallel, composes_with_pipeline_parallelism) {
  training_setup both = llama_cp(2, 8192);
  both.zero_stage = 1;
  both.pipeline_parallel = 2;
  training_setup pp_only = llama_cp(1, 4096);
  pp_only.zero_stage = 1;
  pp_only.pipeline_parallel = 2;
  pp_only.world_size = 4;
  EXPECT_EQ(estimate_memory(both).activation_bytes_per_sample, estimate_memory(pp_only).activation_bytes_per_sample);
  const device_spec& h100 = find_preset("h100-sxm");
  EXPECT_NEAR(predict_step(both, h100, 1, false).p2p_ms, 0.186413511, 1e-8);
  const batch_plan plan = plan_batch(both, h100);
  ASSERT_FALSE(plan.candidates.empty());
  EXPECT_EQ(plan.candidates[0].effective_global_batch % 2, 0);
}

// A global batch below the data-parallel ranks says what divides the world: with --context-parallel
// 4 alone it said "tensor x pipeline parallel 4", though both were 1.
TEST(context_parallel, a_global_batch_below_the_data_parallel_ranks_names_context_parallel) {
  training_setup s = llama_cp(4);
  s.global_batch = 1;
  EXPECT_NE(refusal(s).find("--global-batch 1 is smaller than --world-size 8 / (tensor x pipeline x context parallel 4): "
                            "each data-parallel rank needs a sample"),
            std::string::npos)
      << refusal(s);
  s.context_parallel = 1;
  s.zero_stage = 0;  // tensor parallelism runs with ZeRO 0 to 2
  s.tensor_parallel = 4;
  EXPECT_NE(refusal(s).find("--world-size 8 / (tensor x pipeline parallel 4)"), std::string::npos) << refusal(s);
}
