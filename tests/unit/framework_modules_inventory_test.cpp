// The frameworks' own modules and chunked losses (training_inventory_modules.cpp): torchtitan's,
// torchtune's and LitGPT's Llama blocks keep and move what their modules do, not what transformers'
// do, and each framework's chunked loss keeps what its loop allocates. Before, every one of them
// was planned with transformers' modules and one chunked loss (every 16-bit logit kept, an eighth
// of the fp32 temporaries): the figures below all differ from that.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_inventory.hpp"
#include "core/train/training_plan.hpp"

using namespace tiletune;

namespace {
// Llama-3-8B: h 4,096, q 4,096, k and v 1,024 each, MLP 14,336, 32 heads, vocabulary 128,256.
constexpr double h = 4096, q = 4096, kv = 1024, I = 14336, heads = 32, vocab = 128256;

token_inventory llama_inventory(layer_impl layers, bool autocast = false, loss_impl loss = loss_impl::eager,
                      chunked_loss chunks = chunked_loss::torchtune, std::int64_t seq = 2048) {
  return inventory(load_model("llama-3-8b"), seq, 2, autocast, attention_kernel::fused, false, loss, layers, chunks);
}

training_setup setup(training_framework f, const char* model = "llama-3-8b") {
  training_setup s;
  s.model = load_model(model);
  s.seq_len = 2048;
  s.prec = precision::bf16;
  s.framework = f;
  s.world_size = 1;
  return s;
}

// torchtitan's defaults on 8 GPUs: FSDP over all of them, gathering bf16 parameters (no autocast), the
// chunked loss.
training_setup torchtitan_on_8() {
  training_setup s = setup(training_framework::fsdp2);
  s.prec = precision::bf16_mixed;
  s.world_size = 8;
  s.zero_stage = 3;
  s.loss = loss_impl::chunked;
  return s;
}
}  // namespace

// torchtitan in bf16 (FSDP2's bf16 gathers; no autocast): each torch.nn.RMSNorm is one fused kernel
// keeping its input and rstd (2h + 4) beside its output, which the next linears keep (2h); SDPA keeps
// q, k, v and the log-sum-exp; o_proj its input; SwiGLU its gate, the activation, up and their
// product (8I): 168,072 bytes a token and layer. transformers' LlamaRMSNorm keeps the fp32 upcast (4h) and the
// bf16 normalised tensor (2h) instead of the input and rstd: 2 x (4h - 4) more.
TEST(framework_modules, torchtitans_fused_rms_norm_keeps_its_input_and_rstd) {
  const token_inventory titan = llama_inventory(layer_impl::torchtitan), hf = llama_inventory(layer_impl::transformers);
  const double titan_layer = 2 * (2 * h + 4 + 2 * h) + 2 * (q + 2 * kv) + 4 * heads + 2 * q + 8 * I;
  EXPECT_EQ(titan_layer, 168'072);
  EXPECT_EQ(titan.layer_saved, titan_layer);
  EXPECT_EQ(hf.layer_saved - titan.layer_saved, 2 * (4 * h - 4));
  // The final norm likewise; the LM head keeps its output.
  EXPECT_EQ(titan.outer_saved, 2 * h + 4 + 2 * h);
  // One kernel a norm where LlamaRMSNorm runs seven; the complex rotary three a tensor, not five.
  EXPECT_EQ(hf.layer_kernels - titan.layer_kernels, 2 * (7 - 1) + 2 * (5 - 3));
  EXPECT_LT(titan.layer_traffic, hf.layer_traffic);
  // Its backward writes the input's gradient in bf16: no fp32 gradient beside the cast.
  EXPECT_EQ(titan.norm_fp32_gradient, 0);
  EXPECT_EQ(hf.norm_fp32_gradient, 4 * h);
  // Under autocast (torchtitan on one GPU: fp32 weights) the residual stream and the norm are fp32.
  const token_inventory titan_amp = llama_inventory(layer_impl::torchtitan, true);
  EXPECT_EQ(titan_amp.layer_input, 4 * h);
  EXPECT_EQ(titan_amp.norm_fp32_gradient, 0);
}

// torchtune and LitGPT copy K and V to every query head before SDPA, which keeps the copies:
// 2 x (q - kv) x 2 = 12,288 bytes a token and layer more than transformers' enable_gqa. LitGPT's
// RMSNorm keeps its fp32 normalised tensor for the weight's gradient (4h, not transformers' 2h).
TEST(framework_modules, torchtune_and_litgpt_keep_k_and_v_at_every_query_head) {
  const token_inventory hf = llama_inventory(layer_impl::transformers);
  const double repeat = 2 * (q - kv) * 2;
  EXPECT_EQ(llama_inventory(layer_impl::torchtune).layer_saved - hf.layer_saved, repeat);
  EXPECT_EQ(llama_inventory(layer_impl::litgpt).layer_saved - hf.layer_saved, repeat + 2 * (4 * h - 2 * h));
  // LitGPT under -mixed (autocast, fp32 model): its norms return fp32 as transformers' do, and its one
  // qkv linear casts the output once where q, k and v cast it three times (2 x 2h less).
  const token_inventory hf_amp = llama_inventory(layer_impl::transformers, true);
  EXPECT_EQ(llama_inventory(layer_impl::litgpt, true).layer_saved - hf_amp.layer_saved, repeat - 2 * 2 * h);
  // Their norms are Python, as transformers' is.
  EXPECT_EQ(llama_inventory(layer_impl::torchtune).norm_fp32_gradient, 4 * h);
}

// The chunked losses per logit, Llama-3-8B in bf16 at 2,048 tokens:
// - torchtune's LinearCrossEntropyLoss, 8 chunks: every chunk's fp32 log-probabilities kept (4); the
//   current chunk's bf16 logits and fp32 copy at forward (6/8), nll's and log_softmax's gradients and
//   the cast back at backward (10/8); nothing held by the caller.
// - torchtitan's ChunkedLossWrapper, 8 chunks, each chunk's backward at once: its logits, copy and
//   log-probabilities (10/8), then with the gradients and cast (16/8); no logit outlives its chunk,
//   but an fp32 buffer of the hidden states' gradient (4h a token) is.
// - LitGPT's 128-token chunks (16 at 2,048 tokens): the caller holds every bf16 logit (2) and each
//   chunk keeps its log-probabilities, bf16 without autocast (2), fp32 with it (4; its input's cast
//   4/16 at forward, the gradients and the cast back 10/16 at backward).
TEST(framework_modules, each_chunked_loss_keeps_what_its_loop_allocates) {
  const token_inventory tune = llama_inventory(layer_impl::torchtune, false, loss_impl::chunked, chunked_loss::torchtune);
  EXPECT_EQ(tune.logit_forward_bytes, 4 + 6.0 / 8);
  EXPECT_EQ(tune.logit_backward_bytes, 4 + 10.0 / 8);
  EXPECT_EQ(tune.logit_held_bytes, 0);
  const token_inventory titan = llama_inventory(layer_impl::torchtitan, false, loss_impl::chunked, chunked_loss::torchtitan);
  EXPECT_EQ(titan.logit_forward_bytes, 10.0 / 8);
  EXPECT_EQ(titan.logit_backward_bytes, 16.0 / 8);
  EXPECT_EQ(titan.logit_held_bytes, 0);
  EXPECT_EQ(titan.loss_token_bytes, 4 * h);
  const token_inventory lit = llama_inventory(layer_impl::litgpt, false, loss_impl::chunked, chunked_loss::litgpt);
  EXPECT_EQ(lit.logit_forward_bytes, 4);
  EXPECT_EQ(lit.logit_backward_bytes, 4 + 4.0 / 16);
  EXPECT_EQ(lit.logit_held_bytes, 2);
  const token_inventory lit_amp = llama_inventory(layer_impl::litgpt, true, loss_impl::chunked, chunked_loss::litgpt);
  EXPECT_EQ(lit_amp.logit_forward_bytes, 6 + 4.0 / 16);
  EXPECT_EQ(lit_amp.logit_backward_bytes, 6 + 10.0 / 16);
  // The chunks are 128 tokens and the remainder: at 2,049 tokens the largest is 128 of them (not
  // 2,049 / 17), and a longer sequence never needs fewer bytes a sample.
  const token_inventory lit_2049 =
      llama_inventory(layer_impl::litgpt, true, loss_impl::chunked, chunked_loss::litgpt, 2049);
  EXPECT_DOUBLE_EQ(lit_2049.logit_backward_bytes, 6 + 10.0 * 128 / 2049);
  double before = 0;
  for (const std::int64_t seq : {100, 127, 128, 129, 200, 255, 256, 257, 1024, 1025}) {
    const token_inventory i = llama_inventory(layer_impl::litgpt, true, loss_impl::chunked, chunked_loss::litgpt, seq);
    const double per_sample = static_cast<double>(seq) * std::max(i.logit_forward_bytes, i.logit_backward_bytes);
    EXPECT_GE(per_sample, before) << seq << " tokens";
    before = per_sample;
  }
  // The plan's loss term: torchtitan's at 2,048 tokens, its buffer beside the logits.
  const memory_breakdown m = estimate_memory(torchtitan_on_8());
  EXPECT_NEAR(static_cast<double>(m.logits_bytes_per_sample), 2048 * (vocab * 16 / 8 + 4 * h), 1);
  EXPECT_EQ(m.logits_held_bytes_per_sample, 0);
}

// Which modules a plan runs: the framework's own on a Llama-style model with flash attention,
// transformers' for another model (GPT-2, an MoE, MLA), eager attention, or a framework without its
// own (hf, deepspeed, composer).
TEST(framework_modules, plans_run_the_frameworks_own_modules_where_they_cover_the_model) {
  EXPECT_EQ(layers_of(setup(training_framework::fsdp2)), layer_impl::torchtitan);
  EXPECT_EQ(layers_of(setup(training_framework::torchtune)), layer_impl::torchtune);
  EXPECT_EQ(layers_of(setup(training_framework::litgpt)), layer_impl::litgpt);
  EXPECT_EQ(layers_of(setup(training_framework::hf)), layer_impl::transformers);
  EXPECT_EQ(layers_of(setup(training_framework::composer)), layer_impl::transformers);
  EXPECT_EQ(layers_of(setup(training_framework::fsdp2, "gpt2")), layer_impl::transformers);
  training_setup eager = setup(training_framework::fsdp2);
  eager.attention = attention_impl::eager;
  EXPECT_EQ(layers_of(eager), layer_impl::transformers);
  const model_spec mixtral =
      load_model(std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/mixtral-8x7b.json");
  EXPECT_FALSE(framework_modules_cover(mixtral, layer_impl::torchtitan));
  EXPECT_EQ(chunked_loss_of(setup(training_framework::fsdp2)), chunked_loss::torchtitan);
  EXPECT_EQ(chunked_loss_of(setup(training_framework::litgpt)), chunked_loss::litgpt);
  EXPECT_EQ(chunked_loss_of(setup(training_framework::hf)), chunked_loss::torchtune);
  // The plan keeps what the modules keep: torchtitan's activations 2,048 x (32 x 168,072 + 16,388).
  EXPECT_EQ(estimate_memory(torchtitan_on_8()).activation_bytes_per_sample,
            2048LL * (32 * 168'072 + 16'388));
}

// LitGPT's LoRA default (q and v, lora_dropout 0.05) in bf16: its one qkv linear's adapter drops out
// the input once for both (a bf16 copy and a byte mask, 3h a token and layer), where peft's q_proj
// and v_proj adapters each keep their own. Beside it LitGPT's modules keep the repeated K and V
// (the frozen norms keep what transformers' do): the two differences, each counted.
TEST(framework_modules, litgpts_qkv_adapter_drops_out_its_input_once) {
  training_setup hf = setup(training_framework::hf);
  hf.lora_rank = 16;
  hf.lora_targets = lora_q | lora_v;
  hf.lora_dropout = 0.05;
  hf.adapters = adapter_dtype::bf16;
  training_setup lit = hf;
  lit.framework = training_framework::litgpt;
  ASSERT_EQ(layers_of(lit), layer_impl::litgpt);
  auto frozen_layer = [](layer_impl l) {
    return inventory(load_model("llama-3-8b"), 2048, 2, false, attention_kernel::fused, true, loss_impl::eager, l)
        .layer_saved;
  };
  const double modules = frozen_layer(layer_impl::litgpt) - frozen_layer(layer_impl::transformers);
  EXPECT_EQ(modules, 2 * (q - kv) * 2);
  EXPECT_EQ(estimate_memory(lit).activation_bytes_per_sample - estimate_memory(hf).activation_bytes_per_sample,
            static_cast<std::int64_t>(2048 * 32 * (modules - 3 * h)));
}

// torchtitan's Qwen3 normalises q and k with the same fused RMSNorm: each keeps its bf16 input and an
// fp32 rstd a head (2 x 5,120 + 4 x 40 for Qwen3-8B's 32 query and 8 key heads of 128), where
// transformers' Qwen3RMSNorm keeps the fp32 upcast and the bf16 normalised tensor (6 x 5,120).
TEST(framework_modules, torchtitans_qwen3_normalises_q_and_k_with_its_fused_norm) {
  const model_spec qwen3 = model_from_hf_config(
      nlohmann::json::parse(R"({"model_type":"qwen3","vocab_size":151936,"hidden_size":4096,"intermediate_size":12288,
        "num_hidden_layers":36,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,
        "max_position_embeddings":40960,"tie_word_embeddings":false})"),
      "config.json");
  ASSERT_TRUE(framework_modules_cover(qwen3, layer_impl::torchtitan));
  auto layer = [&](layer_impl l) {
    return inventory(qwen3, 2048, 2, false, attention_kernel::fused, false, loss_impl::eager, l).layer_saved;
  };
  const double n = 4096 + 1024;
  EXPECT_EQ(layer(layer_impl::transformers) - layer(layer_impl::torchtitan), 2 * (4 * h - 4) + 6 * n - (2 * n + 4 * 40));
}

// Qwen3's q/k norms in each framework's own RMSNorm, over each head (Qwen3-8B: 32 query and 8 key heads
// of 128, n = 5,120 values a token). What the norms add to a Llama block of the same widths: transformers'
// and torchtune's (the same ops; torchtune's after the rotary) keep the fp32 upcast, and the bf16
// normalised tensor only where the weight trains; LitGPT's keeps the fp32 upcast and, trained, its fp32
// normalised tensor; torchtitan's fused one its input and a rstd a head, trained or not. Before,
// torchtune and LitGPT planned Qwen3 with transformers' whole block, and every framework kept the
// normalised tensor of a frozen q/k norm.
TEST(framework_modules, each_frameworks_qk_norm_keeps_what_its_rms_norm_does) {
  const char* dims = R"("vocab_size":151936,"hidden_size":4096,"intermediate_size":12288,"num_hidden_layers":36,
      "num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"max_position_embeddings":40960,
      "tie_word_embeddings":false})";
  const model_spec qwen3 = model_from_hf_config(nlohmann::json::parse(std::string(R"({"model_type":"qwen3",)") + dims),
                                                "config.json");
  const model_spec llama = model_from_hf_config(nlohmann::json::parse(std::string(R"({"model_type":"llama",)") + dims),
                                                "config.json");
  const double n = 4096 + 1024, rows = 40;
  for (layer_impl l : {layer_impl::torchtune, layer_impl::litgpt}) EXPECT_TRUE(framework_modules_cover(qwen3, l));
  struct expected {
    layer_impl layers;
    double trained, frozen;
  };
  for (const expected& e : {expected{layer_impl::transformers, 4 * n + 2 * n, 4 * n},
                            expected{layer_impl::torchtune, 4 * n + 2 * n, 4 * n},
                            expected{layer_impl::litgpt, 4 * n + 4 * n, 4 * n},
                            expected{layer_impl::torchtitan, 2 * n + 4 * rows, 2 * n + 4 * rows}})
    for (bool frozen : {false, true}) {
      auto layer = [&](const model_spec& m) {
        return inventory(m, 2048, 2, false, attention_kernel::fused, frozen, loss_impl::eager, e.layers).layer_saved;
      };
      EXPECT_EQ(layer(qwen3) - layer(llama), frozen ? e.frozen : e.trained)
          << to_string(e.layers) << (frozen ? " frozen" : " trained");
    }
  // The plan of each framework picks its own modules for Qwen3.
  for (training_framework f : {training_framework::torchtune, training_framework::litgpt}) {
    training_setup s = setup(f);
    s.model = qwen3;
    EXPECT_NE(layers_of(s), layer_impl::transformers);
  }
}

// torchtitan's own MoE (moe_inventory.cpp) on Qwen3-30B-A3B (h 2,048, 128 experts, top-8, expert
// width 768), per token and MoE layer, by hand. In bf16: the fused norm's input and rstd (2h + 4),
// the fp32 cast of x the fp32 router keeps (4h), the softmax's fp32 scores (4 x 128), the top-k ids
// (8 x 8), route_norm's division its two inputs (4 x 8 + 4), the sort order and the rows (8 x 8
// each), the routed rows (2 x 8h), the experts' gate, activation, up and product (4 x 2 x 8 x 768),
// and at the combine the experts' outputs in fp32 (4 x 8h) with the sorted scores (4 x 8):
// 160,520 bytes. In fp32 the norm keeps 4h + 4, the router x itself, each grouped GEMM a bf16 cast
// of the rows (2 x 2 x 8h), the experts still in bf16: 197,384. transformers' MoE inventory was
// planned before; the MoE layer is what differs from a dense Qwen3 of the same attention.
TEST(framework_modules, torchtitans_moe_keeps_its_fp32_router_sorted_rows_and_fp32_expert_outputs) {
  auto config_of = [](const char* file) {
    std::ifstream in(std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/" + file);
    EXPECT_TRUE(in) << file;
    return nlohmann::json::parse(in);
  };
  nlohmann::json config = config_of("qwen3-30b-a3b.json");
  const model_spec moe = model_from_hf_config(config, "qwen3-30b-a3b.json");
  ASSERT_TRUE(framework_modules_cover(moe, layer_impl::torchtitan));
  EXPECT_FALSE(framework_modules_cover(moe, layer_impl::torchtune));
  config["model_type"] = "qwen3";
  const model_spec dense = model_from_hf_config(config, "qwen3.json");
  const double mh = 2048, I6 = 6144;
  for (const int bytes : {2, 4}) {
    auto layer = [&](const model_spec& m) {
      return inventory(m, 2048, bytes, false, attention_kernel::fused, false, loss_impl::eager, layer_impl::torchtitan)
          .layer_saved;
    };
    // The dense MLP block: the fused norm (input and rstd), its output kept by gate and up, 4 x I.
    const double dense_mlp = bytes * mh + 4 + bytes * mh + 4 * bytes * I6;
    EXPECT_EQ(layer(moe) - (layer(dense) - dense_mlp), bytes == 2 ? 160'520 : 197'384) << bytes;
  }
  // The plan runs it for --framework fsdp2; in fp32 the experts' bf16 weight casts are kept
  // (2 bytes an expert weight, over the expert-parallel ranks), none in bf16-mixed.
  training_setup s = setup(training_framework::fsdp2);
  s.model = moe;
  EXPECT_EQ(layers_of(s), layer_impl::torchtitan);
  // Its router's GEMMs run in fp32 (autocast(float32)); transformers' in the compute dtype.
  auto router_fp32 = [](const training_setup& x) {
    int fp32 = 0, all = 0;
    for (const step_gemm& g : step_gemms(x, 1, false))
      if (g.name.starts_with("layers.router ")) ++all, fp32 += g.fp32 ? 1 : 0;
    EXPECT_EQ(all, 3);
    return fp32;
  };
  EXPECT_EQ(router_fp32(s), 3);
  training_setup hf = s;
  hf.framework = training_framework::hf;
  EXPECT_EQ(router_fp32(hf), 0);
  s.prec = precision::fp32;
  const memory_breakdown fp32 = estimate_memory(s);
  EXPECT_EQ(fp32.autocast_weight_copies_bytes, 2 * fp32.expert_parameters);
  s.prec = precision::bf16_mixed;
  EXPECT_EQ(estimate_memory(s).autocast_weight_copies_bytes, 0);
  // Mixtral is no torchtitan model: transformers' modules, as before.
  s.model = model_from_hf_config(config_of("mixtral-8x7b.json"), "mixtral-8x7b.json");
  EXPECT_EQ(layers_of(s), layer_impl::transformers);
}
