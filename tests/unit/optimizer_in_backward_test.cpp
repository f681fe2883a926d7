// --optimizer-in-backward (issue 37): each parameter's step frees its gradient as soon as it is
// complete, so only the gradients in flight are alive; no gradient accumulation; ZeRO 1/2 and DDP
// refused. Expected figures are arithmetic on Llama-3-8B's published shapes (8,030,261,248
// parameters; hidden 4,096, MLP 14,336, 8 key/value heads of 128, vocabulary 128,256, 32 layers),
// written out in each test.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/training_plan.hpp"
#include "setup_refusal.hpp"
#include "llama3_8b.hpp"

using namespace tiletune;
using tiletune::test::refusal;

namespace {
// The embedding's and the untied LM head's parameters each: 128,256 x 4,096.
constexpr std::int64_t vocab_matrix = 128'256LL * 4'096;  // 525,336,576
training_setup llama_in_backward(precision p, bool in_backward) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = p;
  s.optimizer_in_backward = in_backward;
  s.grad_clip = !in_backward;  // a step inside backward cannot clip
  return s;
}
}  // namespace

// bf16-mixed keeps fp32 gradients: 4 x 8,030,261,248 = 32,121,044,992 bytes in all. One block holds
// q and o (4,096 x 4,096 each), k and v (1,024 x 4,096 each), gate, up and down (14,336 x 4,096 each)
// and two norms (4,096 each): 218,112,000 parameters, 872,448,000 bytes of gradients; the embedding
// and the LM head are larger, 525,336,576 x 4 = 2,101,346,304 bytes: that is what is in flight.
TEST(optimizer_in_backward, only_the_largest_group_of_gradients_is_in_flight) {
  const memory_breakdown plain = estimate_memory(llama_in_backward(precision::bf16_mixed, false));
  const memory_breakdown hooked = estimate_memory(llama_in_backward(precision::bf16_mixed, true));
  EXPECT_EQ(plain.gradients_bytes, 4 * llama3_8b_parameters);
  EXPECT_EQ(hooked.gradients_bytes, 32'121'044'992LL);  // the set is the same size, but never alive at once
  EXPECT_EQ(hooked.gradients_in_flight_bytes, 4 * vocab_matrix);
  EXPECT_EQ(hooked.alive_gradients_bytes(), 2'101'346'304LL);
  EXPECT_EQ(plain.alive_gradients_bytes(), plain.gradients_bytes);
  EXPECT_GT(hooked.gradients_in_flight_bytes, 4 * 218'112'000LL);  // more than one block's 872,448,000
}

// Pure bf16 at micro-batch 0 (no activations): the peak is weights + AdamW states + workspaces + the
// gradients alive. Every bf16 gradient is 2 x 8,030,261,248 = 16,060,522,496 bytes; in backward only
// the embedding's 2 x 525,336,576 = 1,050,673,152 are, so the peak falls by 15,009,849,344.
TEST(optimizer_in_backward, the_peak_drops_by_the_gradients_no_longer_alive) {
  const memory_breakdown plain = estimate_memory(llama_in_backward(precision::bf16, false));
  const memory_breakdown hooked = estimate_memory(llama_in_backward(precision::bf16, true));
  EXPECT_EQ(plain.peak_allocated_bytes(0, false) - hooked.peak_allocated_bytes(0, false), 15'009'849'344LL);
  EXPECT_EQ(plain.peak_allocated_bytes(0, true) - hooked.peak_allocated_bytes(0, true), 15'009'849'344LL);
  EXPECT_EQ(hooked.weights_bytes, plain.weights_bytes);
  EXPECT_EQ(hooked.optimizer_bytes, plain.optimizer_bytes);
}

// LoRA rank 16 on every linear: 32 layers x 16 x (in + out) summed over q, k, v, o, gate, up, down
// = 32 x 16 x 81,920 = 41,943,040 adapter parameters; bf16 adapters' gradients 83,886,080 bytes, all
// in the blocks, so one block's share, 83,886,080 / 32 = 2,621,440, is in flight.
TEST(optimizer_in_backward, lora_keeps_one_blocks_adapter_gradients) {
  training_setup s = llama_in_backward(precision::bf16, true);
  s.lora_rank = 16;
  s.adapters = adapter_dtype::bf16;
  const memory_breakdown m = estimate_memory(s);
  EXPECT_EQ(m.gradients_bytes, 83'886'080);
  EXPECT_EQ(m.gradients_in_flight_bytes, 2'621'440);
}

TEST(optimizer_in_backward, refuses_what_it_cannot_run) {
  training_setup s = llama_in_backward(precision::bf16_mixed, true);
  EXPECT_EQ(refusal(s), "");
  s.zero_stage = 2;
  EXPECT_NE(refusal(s).find("--optimizer-in-backward --zero 2: DeepSpeed's ZeRO-1 and ZeRO-2"), std::string::npos);
  s.zero_stage = 0;
  s.world_size = 8;
  EXPECT_NE(refusal(s).find("on 8 GPUs needs --zero 3: under DDP"), std::string::npos);
  s.zero_stage = 3;
  EXPECT_EQ(refusal(s), "");
  s.global_batch = 30;
  EXPECT_NE(refusal(s).find("--global-batch 30: without gradient accumulation"), std::string::npos);
  s.global_batch = 64;
  s.micro_batch = 4;  // 4 x 8 GPUs = 32, not 64: accumulation 2
  EXPECT_NE(refusal(s).find("--global-batch 64 on 8 GPU(s) needs --micro-batch 8, not 4"), std::string::npos);
  s.micro_batch = 8;
  EXPECT_EQ(refusal(s), "");
}

// GPT-2 on an H100 with --global-batch 16: every candidate is micro-batch 16 in one micro-step
// (without the flag the planner offers smaller micro-batches with accumulation). A global batch
// whose per-GPU share fits in neither policy is refused, naming why.
TEST(optimizer_in_backward, plans_one_micro_step_or_refuses_a_batch_that_needs_accumulation) {
  training_setup s;
  s.model = load_model("gpt2");
  s.seq_len = 1024;
  s.global_batch = 16;
  const batch_plan plain = plan_batch(s, find_preset("h100-sxm"));
  bool accumulates = false;
  for (const auto& c : plain.candidates) accumulates |= c.grad_accum_steps > 1;
  EXPECT_TRUE(accumulates);
  s.optimizer_in_backward = true;
  s.grad_clip = false;  // a step inside backward cannot clip
  const batch_plan hooked = plan_batch(s, find_preset("h100-sxm"));
  ASSERT_FALSE(hooked.candidates.empty());
  for (const auto& c : hooked.candidates) {
    EXPECT_EQ(c.micro_batch, 16);
    EXPECT_EQ(c.grad_accum_steps, 1);
  }
  ASSERT_TRUE(hooked.recommended);
  s.global_batch = 65536;
  try {
    plan_batch(s, find_preset("h100-sxm"));
    ADD_FAILURE() << "a global batch of 65536 on one GPU planned without accumulation";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot accumulate gradients"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("needs micro-batch 65536"), std::string::npos) << e.what();
  }
}

// With --checkpointing off the refusal quotes the largest micro-batch that fits without
// checkpointing (as the same setup without --global-batch reports it), not the checkpointed one.
TEST(optimizer_in_backward, the_refusal_quotes_what_fits_under_the_asked_checkpointing) {
  training_setup s;
  s.model = load_model("gpt2");
  s.seq_len = 1024;
  s.optimizer_in_backward = true;
  s.grad_clip = false;  // a step inside backward cannot clip
  set_checkpointing(s, "off");
  const batch_plan open = plan_batch(s, find_preset("h100-sxm"));
  ASSERT_LT(open.max_micro_batch_no_ckpt, open.max_micro_batch_ckpt);
  s.global_batch = 65536;
  try {
    plan_batch(s, find_preset("h100-sxm"));
    ADD_FAILURE() << "planned";
  } catch (const usage_error& e) {
    const std::string quoted = "the largest micro-batch that fits is " + std::to_string(open.max_micro_batch_no_ckpt) + ":";
    EXPECT_NE(std::string(e.what()).find(quoted), std::string::npos) << e.what();
  }
}
