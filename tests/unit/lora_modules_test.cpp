// The frameworks' own LoRA modules (src/core/train/lora_modules.cpp): torchtune's and
// torchtitan's LoRALinear, LitGPT's LoRALinear and LoRAQKVLinear, where they move and keep other
// tensors than peft's, and torchtitan's fp32 model under autocast without FSDP.
#include <string>

#include <gtest/gtest.h>

#include "core/train/lora_step.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_plan.hpp"
#include "core/train/zero_buffers.hpp"

using namespace tiletune;

namespace {
training_setup own_lora_setup(training_framework f, precision p) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = p;
  s.lora_rank = 16;
  s.framework = f;
  return s;
}
const step_gemm* find_adapter_gemm(const std::vector<step_gemm>& all, const std::string& name) {
  for (const auto& g : all)
    if (g.name == name) return &g;
  return nullptr;
}
double kept_per_token_and_layer(const training_setup& s) {
  return static_cast<double>(estimate_memory(s).activation_bytes_per_sample) / 2048 / 32;
}
}  // namespace

// LitGPT's LoRAQKVLinear (lora.py at 2685705) on Llama-3-8B's one qkv linear, q and v adapted,
// bf16-mixed (an fp32 model under autocast), lora_dropout 0.05: x (fp32, the norm's output)
// dropped out, cast and multiplied by one lora_A of 2r rows once; lora_B a conv a part (8 kv
// heads for 32 query heads) and a cat; zero_pad at the whole qkv width W = 6144 and index_copy_
// of the V = 5120 adapted columns; the scale and the add at W. Per token and layer, derived by
// hand (bytes read + written): forward dropout 9 x 4096, cast 6 x 4096, cat 4 x 5120, zeros 2 x
// 6144 and index_copy_ 4 x 5120, scale 4 x 6144 and add 6 x 6144; backward the same dropout and
// cast, dx added into the frozen linear's 12 x 4096, the convs' gradients made contiguous 4 x
// 5120, index_select 4 x 5120, the scale's 4 x 6144. The adapters' weights (16 x (8192 + 5120)
// a layer) cast to bf16 a forward (6 bytes) and their gradients back (6).
TEST(lora_step, litgpt_runs_one_adapter_over_its_qkv_linear) {
  training_setup s = own_lora_setup(training_framework::litgpt, precision::bf16_mixed);
  s.lora_targets = lora_q | lora_v;
  s.lora_dropout = 0.05;
  const double E = 4096, W = 6144, V = 5120;
  const double forward = 9 * E + 6 * E + 4 * V + 2 * W + 4 * V + 10 * W;
  const double backward = 9 * E + 6 * E + 12 * E + 4 * V + 4 * V + 4 * W;
  const double weights = 16.0 * (8192 + 5120) * 32 * (6 + 6);
  const lora_path_cost c = lora_path(s, 2048, false);
  EXPECT_DOUBLE_EQ(c.bytes, 2048.0 * 32 * (forward + backward) + weights);
  // Forward: dropout, cast, lora_A, two convs, cat, zeros, index_copy_, scale, add, and the
  // three weight casts (lora_A's, lora_B's per conv). Backward: dropout, cast, dx's add,
  // lora_A's two GEMMs, the convs' four, the chunk's and the split's cats, two contiguous
  // copies, index_select, the scale, three weight-gradient casts.
  EXPECT_DOUBLE_EQ(c.forward_kernels, 32.0 * 13);
  EXPECT_DOUBLE_EQ(c.backward_kernels, 32.0 * 18);
  // One lora_A for q and v: its GEMMs once, 2r wide; lora_B's per part.
  const auto gemms = step_gemms(s, 1, false);
  const step_gemm* a = find_adapter_gemm(gemms, "layers.qkv lora_A forward");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->n, 32);
  EXPECT_EQ(a->k, 4096);
  EXPECT_EQ(find_adapter_gemm(gemms, "layers.q_proj lora_A forward"), nullptr);
  EXPECT_EQ(find_adapter_gemm(gemms, "layers.v_proj lora_A forward"), nullptr);
  EXPECT_EQ(find_adapter_gemm(gemms, "layers.v_proj lora_B forward")->n, 1024);
  EXPECT_EQ(find_adapter_gemm(gemms, "layers.qkv lora_A weight-grad")->m, 32);
  // peft's path on the same model (transformers' modules) moves x per adapter, twice over.
  training_setup hf = s;
  hf.framework = training_framework::hf;
  EXPECT_GT(lora_path(hf, 2048, false).bytes, c.bytes);
}

// torchtitan (b5bcd76) applies fully_shard at every --zero, one GPU included (llama3/parallelize.py:
// "with shard_degree=1 it is a no-op for the all-gather but still installs the MixedPrecisionPolicy"),
// and runs no autocast: its model, the frozen LoRA base included, is fp32 (4 bytes a weight), cast to
// bf16 by the policy, and nothing is cast by autocast. Beside it the two units the policy gathers in
// bf16, at --zero 3 on one GPU as at --zero 0 (shard degree 1; zero_buffers.hpp, fsdp_replicated).
TEST(lora_modules, torchtitans_fp32_base_is_cast_by_fsdp2_not_autocast) {
  const training_setup replicated = own_lora_setup(training_framework::fsdp2, precision::bf16_mixed);
  ASSERT_FALSE(runs_under_autocast(replicated));
  const memory_breakdown m = estimate_memory(replicated);
  double base = 0;
  for (const auto& t : weight_tensors(replicated.model)) base += static_cast<double>(t.parameters());
  EXPECT_DOUBLE_EQ(static_cast<double>(m.weights_bytes), 4 * base + 4 * static_cast<double>(m.trainable_parameters) +
                                                             static_cast<double>(gathered_weights_bytes(replicated)));
  EXPECT_EQ(gathered_weights_bytes(replicated), 2 * 2 * 128'256LL * 4096);  // the embedding, the largest unit
  EXPECT_EQ(m.autocast_weight_copies_bytes, 0);
  training_setup sharded = replicated;
  sharded.zero_stage = 3;
  EXPECT_EQ(estimate_memory(sharded).autocast_weight_copies_bytes, 0);
  EXPECT_EQ(estimate_memory(sharded).weights_bytes, m.weights_bytes);
}

// torchtitan's LoRALinear on q_proj alone, on one GPU or eight: no cast on the adapter path (the
// policy gathers the adapters in bf16): dx added into the frozen linear's gradient (6 bytes an
// input value), the scale and the add (4 + 6 an output value), the scale's gradient (4); four
// kernels forward (A, B, scale, add), six backward (the scale, four GEMMs, dx's add).
TEST(lora_modules, torchtitans_adapter_casts_nothing) {
  training_setup s = own_lora_setup(training_framework::fsdp2, precision::bf16_mixed);
  s.lora_targets = lora_q;
  const double E = 4096, W = 4096;
  for (const int gpus : {1, 8}) {
    s.world_size = gpus;
    s.zero_stage = 3;
    const lora_path_cost c = lora_path(s, 2048, false);
    EXPECT_DOUBLE_EQ(c.bytes, 2048.0 * 32 * (6 * E + 14 * W)) << gpus;
    EXPECT_DOUBLE_EQ(c.forward_kernels, 32.0 * 4) << gpus;
    EXPECT_DOUBLE_EQ(c.backward_kernels, 32.0 * 6) << gpus;
  }
  // peft's path on the same adapter casts x to fp32 and back, and the weights.
  training_setup hf = s;
  hf.framework = training_framework::hf;
  EXPECT_GT(lora_path(hf, 2048, false).bytes, lora_path(s, 2048, false).bytes);
}

// Adapters that read the same input without a copy of their own (no cast, no dropout) keep that
// one tensor between them: k and v adapted beside q add only their r-wide outputs (2 x 2 x 16
// bytes a token and layer). A cast (peft's fp32 adapters under autocast; LitGPT's fp32 input under
// autocast) or a dropout gives each adapter its own copy: 2 x (copy + r-wide output).
TEST(lora_modules, adapters_without_a_copy_of_their_own_share_their_input) {
  auto extra_for_k_and_v = [](training_setup s) {
    s.lora_targets = lora_q;
    const double q_only = kept_per_token_and_layer(s);
    s.lora_targets = lora_q | lora_k | lora_v;
    return kept_per_token_and_layer(s) - q_only;
  };
  const double r = 16, h = 4096;
  training_setup tune = own_lora_setup(training_framework::torchtune, precision::bf16);
  tune.adapters = adapter_dtype::bf16;
  EXPECT_NEAR(extra_for_k_and_v(tune), 2 * 2 * r, 1e-6);
  training_setup sharded = own_lora_setup(training_framework::fsdp2, precision::bf16_mixed);
  sharded.world_size = 8;
  sharded.zero_stage = 3;
  EXPECT_NEAR(extra_for_k_and_v(sharded), 2 * 2 * r, 1e-6);
  training_setup hf_bf16 = own_lora_setup(training_framework::hf, precision::bf16_mixed);
  hf_bf16.adapters = adapter_dtype::bf16;  // peft's cast and autocast's return x itself
  EXPECT_NEAR(extra_for_k_and_v(hf_bf16), 2 * 2 * r, 1e-6);
  EXPECT_NEAR(extra_for_k_and_v(own_lora_setup(training_framework::hf, precision::bf16_mixed)),
              2 * (2 * h + 2 * r), 1e-6);
  // LitGPT under autocast: up casts the norm's fp32 output for its own lora_A beside gate's.
  training_setup lit = own_lora_setup(training_framework::litgpt, precision::bf16_mixed);
  lit.lora_targets = lora_gate;
  const double gate_only = kept_per_token_and_layer(lit);
  lit.lora_targets = lora_gate | lora_up;
  EXPECT_NEAR(kept_per_token_and_layer(lit) - gate_only, 2 * h + 2 * r, 1e-6);
  tune.lora_dropout = 0.05;  // each its own dropped-out copy (2) and mask (1)
  EXPECT_NEAR(extra_for_k_and_v(tune), 2 * (3 * h + 2 * r), 1e-6);
}

// torchtitan's LoRAConverter without target_modules adapts every Linear, the LM head too: under
// FSDP2 (no cast) each adapted linear adds dx's add (6 bytes an input value), the scale and the add
// (10 an output value) and the scale's gradient (4). Llama-3-8B a layer: inputs 6 x 4096 + 14336,
// outputs 43,008; the head: 4096 in, 128,256 out, once a step, its kernels once a loss chunk (8),
// never recomputed. Its adapter's parameters count; with --lora-targets q,v there is none.
TEST(lora_modules, torchtitan_adapts_the_lm_head_too) {
  training_setup s = own_lora_setup(training_framework::fsdp2, precision::bf16_mixed);
  s.world_size = 8;
  s.zero_stage = 3;
  s.loss = loss_impl::chunked;
  const double in = 6 * 4096 + 14336, out = 43008, V = 128256, h = 4096;
  const lora_path_cost c = lora_path(s, 2048, false);
  EXPECT_DOUBLE_EQ(c.bytes, 2048.0 * (32 * (6 * in + 14 * out) + 6 * h + 14 * V));
  EXPECT_DOUBLE_EQ(c.forward_kernels, 32.0 * 7 * 4 + 8 * 4);
  EXPECT_DOUBLE_EQ(c.backward_kernels, 32.0 * 7 * 6 + 8 * 6);
  const auto gemms = step_gemms(s, 1, true);
  const step_gemm* b = find_adapter_gemm(gemms, "lm_head lora_B forward");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->n, 128256);
  EXPECT_EQ(b->k, 16);
  EXPECT_EQ(find_adapter_gemm(gemms, "lm_head lora_B recompute"), nullptr);
  EXPECT_NE(find_adapter_gemm(gemms, "layers.q_proj lora_B recompute"), nullptr);
  const std::int64_t with_head = estimate_memory(s).trainable_parameters;
  training_setup hf = s;
  hf.framework = training_framework::hf;
  EXPECT_EQ(with_head - estimate_memory(hf).trainable_parameters, 16 * (128256 + 4096));
  EXPECT_EQ(find_adapter_gemm(step_gemms(hf, 1, false), "lm_head lora_B forward"), nullptr);
  s.lora_targets = lora_q | lora_v;
  EXPECT_FALSE(lora_head_adapter(s).has_value());
}

// A layer's LoRA temporaries beyond what it keeps, in the frameworks' own modules: at up's add the
// frozen output, the scaled adapter output and their sum (a bytes each), less the sum (kept by the
// gate product) and the product (kept by down's lora_A): a x 14,336 a token, in bf16 2 bytes, under
// torchtitan's bf16 policy too; peft's fp32 copy at down_proj makes its 6 under autocast.
TEST(lora_modules, own_modules_hold_one_output_width_of_temporaries) {
  auto transient = [](const training_setup& s) {
    return static_cast<double>(estimate_memory(s).lora_transient_bytes_per_sample) / 2048;
  };
  EXPECT_DOUBLE_EQ(transient(own_lora_setup(training_framework::torchtune, precision::bf16)), 2 * 14336.0);
  EXPECT_DOUBLE_EQ(transient(own_lora_setup(training_framework::fsdp2, precision::bf16_mixed)), 2 * 14336.0);
  EXPECT_DOUBLE_EQ(transient(own_lora_setup(training_framework::fsdp2, precision::fp32)), 4 * 14336.0);
  EXPECT_DOUBLE_EQ(transient(own_lora_setup(training_framework::hf, precision::bf16_mixed)), 6 * 14336.0);
  // LitGPT's default q and v: its one qkv adapter adds at the whole qkv width, 4096 + 2 x 1024, not
  // at q's 4096; torchtune's q and v adapters each at their own.
  training_setup lit = own_lora_setup(training_framework::litgpt, precision::bf16_mixed);
  lit.lora_targets = lora_q | lora_v;
  EXPECT_DOUBLE_EQ(transient(lit), 2 * 6144.0);
  lit.lora_targets = lora_v;
  EXPECT_DOUBLE_EQ(transient(lit), 2 * 6144.0);
  training_setup tune = own_lora_setup(training_framework::torchtune, precision::bf16);
  tune.lora_targets = lora_q | lora_v;
  EXPECT_DOUBLE_EQ(transient(tune), 2 * 4096.0);
}
