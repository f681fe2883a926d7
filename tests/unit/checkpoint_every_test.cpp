// `batch --checkpointing every-N` (issue 37, mechanism 4): every N-th layer checkpointed, the
// others keeping all their activations (torchtitan's selective layer checkpointing: the blocks whose
// count from 1 is a multiple of N, floor(L / N) of L; it had been taken as ceil(L / N), blocks 0, N, ...). The expected figures are arithmetic on the planner's
// two ends, written out in each test, not the planner's own every-N output.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/model_spec.hpp"
#include "core/train/training_plan.hpp"

using namespace tiletune;

namespace {
training_setup llama_every(int every = 1) {
  training_setup s;
  s.model = load_model("llama-3-8b");  // 32 layers
  s.seq_len = 2048;
  s.prec = precision::bf16_mixed;
  s.checkpoint_every = every;
  return s;
}
}  // namespace

TEST(checkpoint_every, parses_every_n_full_and_names_a_bad_n) {
  EXPECT_EQ(parse_checkpointing("every-2"), checkpoint_policy::on);
  EXPECT_EQ(parse_checkpoint_every("every-2"), 2);
  EXPECT_EQ(parse_checkpointing("full"), checkpoint_policy::on);
  EXPECT_EQ(parse_checkpoint_every("full"), 1);
  EXPECT_EQ(parse_checkpointing("every-1"), checkpoint_policy::on);
  EXPECT_EQ(parse_checkpoint_every("off"), 1);
  for (const char* bad : {"every-0", "every-", "every-x", "every-2x", "every-1001"}) {
    try {
      parse_checkpointing(bad);
      ADD_FAILURE() << bad;
    } catch (const usage_error& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(checkpoint_every, the_share_recomputed_is_the_checkpointed_layers) {
  EXPECT_DOUBLE_EQ(recompute_share(llama_every(1), true), 1.0);
  EXPECT_DOUBLE_EQ(recompute_share(llama_every(2), true), 16.0 / 32);
  EXPECT_DOUBLE_EQ(recompute_share(llama_every(5), true), 6.0 / 32);  // blocks 5, 10, ..., 30 counted from 1
  EXPECT_DOUBLE_EQ(recompute_share(llama_every(32), true), 1.0 / 32);
  EXPECT_DOUBLE_EQ(recompute_share(llama_every(64), true), 1.0 / 32);  // (validate refuses N past the layers)
  EXPECT_DOUBLE_EQ(recompute_share(llama_every(2), false), 0.0);
  EXPECT_EQ(recomputed_count(llama_every(2), 32), 16);
  EXPECT_EQ(recomputed_count(llama_every(5), 64), 12);
}

// Every 2nd of 32 layers: 16 keep their input, 16 everything, so the kept bytes are the mean of
// no checkpointing (32 x everything) and full checkpointing (32 x input), the outer activations
// (embedding, final norm) kept either way: (a + b) / 2 = 16 x input + 16 x everything + outer.
TEST(checkpoint_every, every_second_layer_keeps_the_mean_of_off_and_full) {
  const memory_breakdown full = estimate_memory(llama_every(1)), half = estimate_memory(llama_every(2));
  const double off = static_cast<double>(full.activation_bytes_per_sample);
  const double on = static_cast<double>(full.checkpointed_activation_bytes_per_sample);
  EXPECT_NEAR(static_cast<double>(half.checkpointed_activation_bytes_per_sample), (off + on) / 2, 2.0);
  EXPECT_EQ(half.activation_bytes_per_sample, full.activation_bytes_per_sample);
  // Every 32nd: one layer keeps its input, 31 everything: off - (off - on) / 32.
  const memory_breakdown one = estimate_memory(llama_every(32));
  EXPECT_NEAR(static_cast<double>(one.checkpointed_activation_bytes_per_sample), off - (off - on) / 32, 2.0);
}

// The recompute's GEMMs run in the checkpointed layers only: every 2nd layer adds half the GEMM
// time full checkpointing adds; its memory-bound passes 3.5 instead of 4 (3 without).
TEST(checkpoint_every, recompute_time_follows_the_checkpointed_layers) {
  const device_spec& h100 = find_preset("h100-sxm");
  const step_time off = predict_step(llama_every(1), h100, 2, false),
                  full = predict_step(llama_every(1), h100, 2, true);
  const step_time half = predict_step(llama_every(2), h100, 2, true);
  EXPECT_NEAR(half.gemm_ms, off.gemm_ms + (full.gemm_ms - off.gemm_ms) / 2, 1e-9 * full.gemm_ms);
  EXPECT_NEAR(half.memory_bound_bytes, off.memory_bound_bytes + (full.memory_bound_bytes - off.memory_bound_bytes) / 2,
              1e-9 * full.memory_bound_bytes);
  EXPECT_GT(full.gemm_ms, half.gemm_ms);
  EXPECT_GT(half.gemm_ms, off.gemm_ms);
  // every-1 is full checkpointing exactly.
  const step_time one = predict_step(llama_every(1), h100, 2, true);
  EXPECT_DOUBLE_EQ(one.gemm_ms, full.gemm_ms);
}

// The planner offers it: a checkpointed candidate of every-2 fits more than none and less than full.
TEST(checkpoint_every, the_plan_fits_between_off_and_full) {
  const device_spec& h100 = find_preset("h100-sxm");
  training_setup s = llama_every(2);
  s.checkpointing = checkpoint_policy::on;
  s.lora_rank = 16;  // frozen bf16 base: fits one H100
  s.prec = precision::bf16;
  const batch_plan half = plan_batch(s, h100);
  s.checkpoint_every = 1;
  const batch_plan full = plan_batch(s, h100);
  s.checkpointing = checkpoint_policy::off;
  const batch_plan off = plan_batch(s, h100);
  EXPECT_GT(half.max_micro_batch_ckpt, off.max_micro_batch_no_ckpt);
  EXPECT_LT(half.max_micro_batch_ckpt, full.max_micro_batch_ckpt);
}

// --checkpointing selective (torchtitan's per-op policy): the outputs of aten.mm are saved except
// every second one counted per block, and the attention kernel's. In a Llama block's order q, k,
// v, o, gate, up, down: q, v, gate and down saved; k, o and up recomputed.
namespace {
training_setup llama_selective() {
  training_setup s = llama_every();
  s.prec = precision::bf16;  // no autocast: 16-bit activations and residual stream
  s.checkpointing = checkpoint_policy::on;
  s.checkpoint_ops = true;
  return s;
}
}  // namespace

// Beyond full checkpointing's layer input, each Llama-3-8B layer keeps per token: the outputs of
// q (4096), v (1024), gate (14336) and down (4096) and the attention's output (4096) at 2 bytes,
// and its log-sum-exp (32 heads x 4 bytes): 2 x 27648 + 128 = 55424 bytes. 2048 tokens, 32 layers.
TEST(checkpoint_selective, keeps_the_saved_outputs_beyond_each_layers_input) {
  training_setup full = llama_selective();
  full.checkpoint_ops = false;
  const double sel = static_cast<double>(estimate_memory(llama_selective()).checkpointed_activation_bytes_per_sample);
  const double on = static_cast<double>(estimate_memory(full).checkpointed_activation_bytes_per_sample);
  const double off = static_cast<double>(estimate_memory(full).activation_bytes_per_sample);
  EXPECT_NEAR(sel - on, 2048.0 * 32 * 55424, 2.0);
  EXPECT_LT(sel, off);  // below keeping everything
}

TEST(checkpoint_selective, recomputes_k_o_and_up_and_no_attention) {
  const training_setup s = llama_selective();
  std::vector<std::string> recomputed;
  for (const step_gemm& g : step_gemms(s, 1, true))
    if (g.name.ends_with(" recompute")) recomputed.push_back(g.name);
  EXPECT_EQ(recomputed, (std::vector<std::string>{"layers.k_proj recompute", "layers.o_proj recompute",
                                                  "layers.up_proj recompute"}));
  training_setup plain = s;
  plain.checkpoint_ops = false;
  for (const step_gemm& g : step_gemms(s, 1, true))
    if (g.name == "attention values") {
      EXPECT_EQ(g.count, 32);  // forward once: the kernel's output is saved
    }
  for (const step_gemm& g : step_gemms(plain, 1, true))
    if (g.name == "attention values") {
      EXPECT_EQ(g.count, 64);
    }
}

TEST(checkpoint_selective, other_blocks_are_usage_errors_naming_why) {
  auto why = [](training_setup s) {
    try {
      validate(s);
    } catch (const usage_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  training_setup s = llama_selective();
  EXPECT_EQ(why(s), "");
  s.model = load_model("gpt2");
  s.seq_len = 1024;
  EXPECT_NE(why(s).find("an MLP without a gate"), std::string::npos) << why(s);
  s = llama_selective();
  s.lora_rank = 16;
  EXPECT_NE(why(s).find("LoRA"), std::string::npos);
  s = llama_selective();
  s.attention = attention_impl::eager;
  EXPECT_NE(why(s).find("eager attention"), std::string::npos);
  EXPECT_EQ(parse_checkpointing("selective"), checkpoint_policy::on);
}
