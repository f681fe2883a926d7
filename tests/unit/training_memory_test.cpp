// The peak memory's allocator slack (issue 21): it applies to what a step
// allocates and frees, not to the weights and optimizer states held for the
// whole run, so turning checkpointing on never raises the predicted peak.
#include <string>

#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "core/train/training_plan.hpp"

using namespace tiletune;

namespace {
training_setup memory_setup(const std::string& model, std::int64_t seq, precision p, int lora_rank = 0) {
  training_setup s;
  s.model = load_model(model);
  s.seq_len = seq;
  s.prec = p;
  s.lora_rank = lora_rank;
  return s;
}
}  // namespace

// Over models whose peak is dominated by states (8B full fine-tuning at one
// sample), by activations (GPT-2 at 64 samples) or by the logits (Qwen2.5's
// 152k vocabulary), in every precision, with and without LoRA and ZeRO.
TEST(memory, checkpointing_never_raises_the_predicted_peak) {
  int checked = 0;
  for (const char* model : {"gpt2", "tinyllama-1.1b", "llama-3-8b", "qwen2.5-0.5b", "bert-base-uncased"}) {
    for (precision p : {precision::fp32, precision::bf16_mixed, precision::fp16_mixed, precision::bf16}) {
      for (int lora : {0, 16}) {
        for (int zero : {0, 2, 3}) {
          training_setup s = memory_setup(model, 512, p, lora);
          s.zero_stage = zero;
          s.world_size = zero > 0 ? 8 : 1;
          const memory_breakdown m = estimate_memory(s);
          for (std::int64_t b : {0, 1, 2, 3, 8, 64}) {
            // Allocated bytes too: the checkpointed backward's two ends (the
            // last layer's, the first's) against the plain step's phases.
            EXPECT_LE(m.peak_allocated_bytes(b, true), m.peak_allocated_bytes(b, false))
                << model << " " << to_string(p) << " lora " << lora << " zero " << zero << " micro-batch " << b;
            EXPECT_LE(m.peak_bytes(b, true), m.peak_bytes(b, false))
                << model << " " << to_string(p) << " lora " << lora << " zero " << zero << " micro-batch " << b;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 5 * 4 * 2 * 3 * 6);
}

// Weights and optimizer states get no allocator slack: two setups that differ
// only in the optimizer's states differ in peak memory by exactly those bytes
// (the fragmentation is the transient tensors', which are the same).
TEST(memory, optimizer_states_get_no_allocator_slack) {
  for (bool ckpt : {false, true}) {
    training_setup adamw = memory_setup("llama-3-8b", 2048, precision::bf16_mixed);
    training_setup sgd = adamw;
    sgd.optimizer = optimizer_kind::sgd;
    const memory_breakdown a = estimate_memory(adamw), b = estimate_memory(sgd);
    ASSERT_EQ(a.peak_phase(1, ckpt), b.peak_phase(1, ckpt));
    EXPECT_NEAR(static_cast<double>(a.peak_bytes(1, ckpt) - b.peak_bytes(1, ckpt)),
                static_cast<double>(a.optimizer_bytes - b.optimizer_bytes), 2)
        << ckpt;
  }
}

// The slack is on the transient part: a checkpointed 8B step at one sample
// no longer pays 20% of its 128 GB of states; with activations the plain
// step's slack is the share of its transient bytes.
TEST(memory, slack_is_a_share_of_the_transient_bytes) {
  const memory_breakdown m = estimate_memory(memory_setup("gpt2", 1024, precision::bf16_mixed));
  const double transient = static_cast<double>(m.peak_allocated_bytes(8, false) - m.held_bytes());
  EXPECT_NEAR(static_cast<double>(m.peak_bytes(8, false) - m.cuda_context_bytes - m.peak_allocated_bytes(8, false)),
              m.allocator_overhead * transient, 2);
  EXPECT_GT(m.held_bytes(), m.weights_bytes + m.optimizer_bytes);  // the workspaces too
}

// fp32 with grouped-query attention (Qwen2.5-0.5B: 14 query heads, 2
// key/value heads): SDPA has no fused kernel for enable_gqa in fp32 and runs
// its math fallback, which keeps the s x s probabilities (4 bytes x heads x s
// per token) and the repeated k and v. Against the same model with as many
// key/value heads as query heads (the memory-efficient kernel), it keeps
// 4 x heads x (s - 1) more bytes per token and layer, and its attention
// GEMMs skip no causal half.
TEST(memory, fp32_grouped_query_attention_runs_sdpa_math) {
  training_setup gqa = memory_setup("qwen2.5-0.5b", 1024, precision::fp32);
  training_setup mha = gqa;
  mha.model.num_kv_heads = mha.model.num_heads;
  const double per_token_layer = static_cast<double>(estimate_memory(gqa).activation_bytes_per_sample -
                                                     estimate_memory(mha).activation_bytes_per_sample) /
                                 1024 / 24;
  EXPECT_DOUBLE_EQ(per_token_layer, 4.0 * 14 * (1024 - 1));
  for (const auto& g : step_gemms(gqa, 1, false)) {
    if (g.name.rfind("attention", 0) == 0) {
      EXPECT_EQ(g.flop_scale, 1.0) << g.name;
    }
  }
  // In 16 bits flash takes enable_gqa; GPT-2 in fp32 has no GQA: both keep the fused kernel.
  training_setup bf16 = gqa;
  bf16.prec = precision::bf16;
  for (const auto& g : step_gemms(bf16, 1, false)) {
    if (g.name == "attention values") {
      EXPECT_EQ(g.flop_scale, 0.5);
    }
  }
  for (const auto& g : step_gemms(memory_setup("gpt2", 1024, precision::fp32), 1, false)) {
    if (g.name == "attention values") {
      EXPECT_EQ(g.flop_scale, 0.5);
    }
  }
}

// --loss: what each loss keeps per logit, by arithmetic for Llama-3-8B (hidden 4096,
// vocabulary 128256) in bf16-mixed at 2048 tokens (262,668,288 logits a sample).
// eager (transformers' upcast): 2 bytes of bf16 logits + 12 of fp32 temporaries at backward,
// 2 + 8 at forward; chunked (torchtune's LinearCrossEntropyLoss, 8 chunks, as hf runs it): every
// chunk's fp32 log-probabilities kept, a chunk's bf16 logits and fp32 copy at forward, its gradients
// and the cast back at backward: 4 + 6/8 and 4 + 10/8, nothing held by the caller; fused: no logits,
// the input's gradient (2048 x 4096 bf16) held from forward to backward and a chunk of logits the
// same size at forward.
TEST(memory, each_loss_keeps_what_its_implementation_allocates) {
  const double logits = 128256.0 * 2048, hidden = 4096.0 * 2048;
  auto breakdown = [](loss_impl l) {
    training_setup s = memory_setup("llama-3-8b", 2048, precision::bf16_mixed);
    s.loss = l;
    return estimate_memory(s);
  };
  const memory_breakdown eager = breakdown(loss_impl::eager), chunked = breakdown(loss_impl::chunked),
                         fused = breakdown(loss_impl::fused);
  EXPECT_NEAR(static_cast<double>(eager.logits_bytes_per_sample), 14 * logits, 1);
  EXPECT_NEAR(static_cast<double>(eager.logits_forward_bytes_per_sample), 10 * logits, 1);
  EXPECT_NEAR(static_cast<double>(eager.logits_held_bytes_per_sample), 2 * logits, 1);
  EXPECT_NEAR(static_cast<double>(chunked.logits_bytes_per_sample), 5.25 * logits, 1);
  EXPECT_NEAR(static_cast<double>(chunked.logits_forward_bytes_per_sample), 4.75 * logits, 1);
  EXPECT_EQ(chunked.logits_held_bytes_per_sample, 0);
  EXPECT_NEAR(static_cast<double>(fused.logits_bytes_per_sample), 2 * hidden, 1);
  EXPECT_NEAR(static_cast<double>(fused.logits_forward_bytes_per_sample), 4 * hidden, 1);
  EXPECT_EQ(fused.logits_held_bytes_per_sample, 0);
  // Everything else is the same model: the peak falls with the loss's share alone (where the loss
  // no longer sets it, chunked and fused peak alike).
  EXPECT_EQ(eager.weights_bytes + eager.optimizer_bytes, fused.weights_bytes + fused.optimizer_bytes);
  for (std::int64_t b : {1, 4}) {
    EXPECT_LT(chunked.peak_bytes(b, false, false), eager.peak_bytes(b, false, false)) << b;
    EXPECT_LE(fused.peak_bytes(b, false, false), chunked.peak_bytes(b, false, false)) << b;
  }
}

// --lora-targets: peft's print_trainable_parameters for Llama-3-8B at rank 16 reads
// 6,815,744 with target_modules q_proj,v_proj and 41,943,040 with all-linear
// (32 layers x 16 x ((4096+4096) + (1024+4096)) and x 16 x (2(4096+4096) + 2(1024+4096) + 3(14336+4096))).
TEST(memory, lora_targets_count_the_adapters_peft_counts) {
  training_setup s = memory_setup("llama-3-8b", 2048, precision::bf16_mixed, 16);
  EXPECT_EQ(estimate_memory(s).trainable_parameters, 41'943'040);
  s.lora_targets = parse_lora_targets("q,v");
  const memory_breakdown qv = estimate_memory(s);
  EXPECT_EQ(qv.trainable_parameters, 6'815'744);
  s.lora_targets = lora_all_linear;
  const memory_breakdown all = estimate_memory(s);
  EXPECT_LT(qv.peak_bytes(4, false, false), all.peak_bytes(4, false, false));
  EXPECT_LT(qv.activation_bytes_per_sample, all.activation_bytes_per_sample);
  EXPECT_EQ(lora_targets_name(parse_lora_targets("v,q")), "q,v");
  EXPECT_EQ(lora_targets_name(parse_lora_targets("q,k,v,o,gate,up,down")), "q,k,v,o,gate,up,down");
  EXPECT_EQ(lora_targets_name(parse_lora_targets("all-linear")), "all-linear");
  for (const char* bad : {"", "q,", "qkv", "q,,v", "all"}) EXPECT_THROW(parse_lora_targets(bad), usage_error) << bad;
}

// --adapter-dtype bf16 (torchtune's LoRA): adapters, their gradients and AdamW's two states in
// 2 bytes instead of 4, and no autocast copy; Llama-3-8B r16 all-linear has T = 41,943,040
// adapter parameters, so the weights and the gradients each drop by 2T, the states by 4T.
TEST(memory, bf16_adapters_halve_what_the_adapters_keep) {
  training_setup s = memory_setup("llama-3-8b", 2048, precision::bf16_mixed, 16);
  const memory_breakdown fp32 = estimate_memory(s);
  s.adapters = adapter_dtype::bf16;
  const memory_breakdown bf16 = estimate_memory(s);
  const std::int64_t T = 41'943'040;
  EXPECT_EQ(fp32.weights_bytes - bf16.weights_bytes, 2 * T);
  EXPECT_EQ(fp32.gradients_bytes - bf16.gradients_bytes, 2 * T);
  EXPECT_EQ(fp32.optimizer_bytes - bf16.optimizer_bytes, 4 * T);
  EXPECT_EQ(fp32.autocast_weight_copies_bytes, 2 * T);
  EXPECT_EQ(bf16.autocast_weight_copies_bytes, 0);
  s.prec = precision::fp16_mixed;
  EXPECT_THROW(validate(s), usage_error);
  EXPECT_EQ(parse_adapter_dtype("bf16"), adapter_dtype::bf16);
  EXPECT_THROW(parse_adapter_dtype("fp16"), usage_error);
}
