// Megatron-LM's Transformer Engine layers (training_inventory_te.cpp): what its fused blocks keep
// and move, planned for --framework megatron instead of transformers' eager ops. Before, a Megatron
// plan kept and moved what transformers' modules do: 200,832 bytes a token and layer for
// Llama-3-8B in bf16 against the fused blocks' 139,400 (+44%), and three times the kernels.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_inventory.hpp"
#include "core/train/training_plan.hpp"

using namespace tiletune;

namespace {
token_inventory te_inventory(const char* model, attention_kernel attention = attention_kernel::fused) {
  return inventory(load_model(model), 2048, 2, false, attention, false, loss_impl::eager,
                   layer_impl::transformer_engine);
}

training_setup megatron_llama(training_framework f) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = precision::bf16_mixed;
  s.framework = f;
  s.zero_stage = 1;
  s.world_size = 8;
  return s;
}
}  // namespace

// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models"), Table 2:
// a GPT block keeps 34 s b h bytes in 16 bits beside the s^2 terms, which flash attention removes
// (the formula of Megatron-LM's theoretical_memory_usage.py): each layer norm's input (2 + 2), the
// QKV and fc1 inputs (2 + 2), q, k and v (6), the projection's input (2), GeLU's input (8), fc2's
// input (8), and the two dropout masks (1 + 1). Beside them: each norm's mean and rstd (8 + 8 bytes a
// token) and flash attention's log-sum-exp (4 bytes a head). GPT-2: h 768, 12 heads, dropout 0.1.
TEST(transformer_engine_inventory, a_gpt_block_keeps_korthikantis_34_bytes_a_hidden_value) {
  const token_inventory inv = te_inventory("gpt2");
  EXPECT_EQ(inv.layer_saved, 34.0 * 768 + 16 + 4 * 12);
  EXPECT_EQ(inv.layer_input, 2.0 * 768);
  // Two norms, QKV, attention, projection, two bias-dropout-adds, fc1, GeLU, fc2 (learned positions:
  // no rotary).
  EXPECT_EQ(inv.layer_kernels, 10);
}

// Llama-3-8B (h 4,096, q 4,096, k and v 1,024 each, I 14,336, 32 heads, no dropout): the norms'
// inputs and outputs with their rstd, 2 x (4 x 4,096 + 4); q, k, v and the output, 2 x 10,240, and
// the log-sum-exp, 128; SwiGLU's input 4 x 14,336 and fc2's 2 x 14,336: 139,400 bytes a token.
// Rotary adds two kernels to GPT's ten.
TEST(transformer_engine_inventory, a_llama_block_keeps_139400_bytes_a_token) {
  const token_inventory inv = te_inventory("llama-3-8b");
  EXPECT_EQ(inv.layer_saved, 2 * (4.0 * 4096 + 4) + 2 * 10240.0 + 128 + 6 * 14336.0);
  EXPECT_EQ(inv.layer_kernels, 12);
  const token_inventory eager = inventory(load_model("llama-3-8b"), 2048, 2, false, attention_kernel::fused);
  EXPECT_GT(eager.layer_saved, 1.4 * inv.layer_saved);
  EXPECT_GT(eager.layer_kernels, 2 * inv.layer_kernels);
  EXPECT_GT(eager.layer_traffic, inv.layer_traffic);
  // Eager attention, or a model the fused layers are not modelled for (q/k norms, MLA): transformers' ops.
  const token_inventory eager_attention =
      inventory(load_model("llama-3-8b"), 2048, 2, false, attention_kernel::eager);
  EXPECT_EQ(te_inventory("llama-3-8b", attention_kernel::eager).layer_saved, eager_attention.layer_saved);
  for (const char* unmodelled : {"olmoe-1b-7b.json", "deepseek-v2-lite.json"}) {
    const model_spec m = load_model(std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/" + unmodelled);
    EXPECT_FALSE(transformer_engine_covers(m)) << unmodelled;
  }
}

// Mixtral-8x7B's MoE layer as Megatron-LM runs it (h 4,096, 8 experts, top-2, expert width 14,336,
// RMSNorm), from Megatron-LM's MoELayer with its defaults (training_inventory_te.cpp): the norm's
// input, rstd and output (4h + 4), the permuted rows fc1 keeps (2kh), SwiGLU's input and fc2's
// (6kI), masked_select's bf16 copy of the probabilities and its mask (3E), and of the top-k the
// int64 indices, the fp32 softmax, the sorted indices and the bf16 probabilities SwiGLU weights by
// (8k + 4k + 8k + 2k): 204,872 bytes a token, beside the attention's 36,996 of the dense block.
TEST(transformer_engine_inventory, a_mixtral_moe_layer_keeps_what_megatrons_moe_layer_saves) {
  const model_spec mixtral =
      load_model(std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/mixtral-8x7b.json");
  ASSERT_TRUE(transformer_engine_covers(mixtral));
  const token_inventory inv = inventory(mixtral, 2048, 2, false, attention_kernel::fused, false, loss_impl::eager,
                                        layer_impl::transformer_engine);
  const double h = 4096, k = 2, E = 8, I = 14336;
  const double moe = 4 * h + 4 + 2 * k * h + 6 * k * I + 3 * E + 22 * k;
  EXPECT_EQ(moe, 204'872);
  EXPECT_EQ(inv.layer_saved, 36'996 + moe);
  const token_inventory eager = inventory(mixtral, 2048, 2, false, attention_kernel::fused);
  EXPECT_LT(inv.layer_saved, eager.layer_saved);
}

// The plan: a Megatron-LM step keeps the fused blocks' activations, 2,048 tokens x (32 layers x
// 139,400 + the outer layers' 16,388: the final norm's input, rstd and output) bytes a sample, and
// moves fewer bytes and launches fewer kernels than DeepSpeed's 16-bit model of the same precision,
// which runs transformers' modules; a per-op selective policy is refused for it.
TEST(transformer_engine_inventory, megatron_plans_plan_with_it) {
  const training_setup megatron = megatron_llama(training_framework::megatron);
  const training_setup deepspeed = megatron_llama(training_framework::deepspeed);
  EXPECT_EQ(layers_of(megatron), layer_impl::transformer_engine);
  EXPECT_EQ(layers_of(deepspeed), layer_impl::transformers);
  EXPECT_EQ(estimate_memory(megatron).activation_bytes_per_sample, 2048LL * (32 * 139'400 + 16'388));
  const device_spec& h100 = find_preset("h100-sxm");
  const step_time m = predict_step(megatron, h100, 1, false), d = predict_step(deepspeed, h100, 1, false);
  EXPECT_LT(m.memory_bound_bytes, d.memory_bound_bytes);
  EXPECT_LT(m.kernels, d.kernels);
  training_setup selective = megatron;
  set_checkpointing(selective, "selective");
  try {
    validate(selective);
    ADD_FAILURE() << "a per-op policy planned on Megatron-LM's fused layers";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("Megatron-LM's Transformer Engine layers"), std::string::npos) << e.what();
  }
}
