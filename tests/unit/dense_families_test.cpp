// The newer dense families read from their config.json (issue 19): the
// parameter counts derived by hand from each config, against the figures
// their model cards publish, and the structure the planner uses.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/train/model_spec.hpp"
#include "core/train/training_plan.hpp"

using namespace tiletune;

namespace {
model_spec read(const char* text) { return model_from_hf_config(nlohmann::json::parse(text), "config.json"); }
}  // namespace

TEST(dense_families, parameters_of_the_published_configs) {
  struct row {
    const char* name;
    const char* config;
    std::int64_t exact;  // derived by hand: embeddings, per layer attention + MLP + norms, head
    double published;    // the model card's figure
    double digit;        // its last published digit
  };
  const row rows[] = {
      // microsoft/Phi-3-mini-4k-instruct: 3.8 B.
      {"phi-3-mini", R"({"model_type":"phi3","vocab_size":32064,"hidden_size":3072,"intermediate_size":8192,
        "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":32,"max_position_embeddings":4096,
        "tie_word_embeddings":false})",
       3'821'079'552, 3.8e9, 0.1e9},
      // google/gemma-2-2b: 2.61 B (2.6 B in the Gemma 2 report).
      {"gemma-2-2b", R"({"model_type":"gemma2","vocab_size":256000,"hidden_size":2304,"intermediate_size":9216,
        "num_hidden_layers":26,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,
        "max_position_embeddings":8192,"sliding_window":4096,"final_logit_softcapping":30.0,
        "attn_logit_softcapping":50.0})",
       2'614'341'888, 2.61e9, 0.01e9},
      // google/gemma-3-1b-pt: 1 B.
      {"gemma-3-1b", R"({"model_type":"gemma3_text","vocab_size":262144,"hidden_size":1152,
        "intermediate_size":6912,"num_hidden_layers":26,"num_attention_heads":4,"num_key_value_heads":1,
        "head_dim":256,"max_position_embeddings":32768,"sliding_window":512,"sliding_window_pattern":6})",
       999'885'952, 1.0e9, 0.1e9},
      // Qwen/Qwen3-0.6B: 0.6 B, 0.44 B without the (tied) embedding.
      {"qwen3-0.6b", R"({"model_type":"qwen3","vocab_size":151936,"hidden_size":1024,"intermediate_size":3072,
        "num_hidden_layers":28,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,
        "max_position_embeddings":40960,"tie_word_embeddings":true})",
       596'049'920, 0.6e9, 0.1e9},
      // allenai/OLMo-2-1124-7B: 7.3 B.
      {"olmo-2-7b", R"({"model_type":"olmo2","vocab_size":100352,"hidden_size":4096,"intermediate_size":11008,
        "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":32,"max_position_embeddings":4096,
        "tie_word_embeddings":false})",
       7'298'617'344, 7.3e9, 0.1e9},
      // EleutherAI/pythia-1b: 1,011,781,632 (the Pythia paper's table of models).
      {"pythia-1b", R"({"model_type":"gpt_neox","vocab_size":50304,"hidden_size":2048,"intermediate_size":8192,
        "num_hidden_layers":16,"num_attention_heads":8,"max_position_embeddings":2048,"rotary_pct":0.25,
        "use_parallel_residual":true,"tie_word_embeddings":false})",
       1'011'781'632, 1'011'781'632, 1}};
  for (const auto& r : rows) {
    const std::int64_t n = parameter_count(read(r.config));
    EXPECT_EQ(n, r.exact) << r.name;
    EXPECT_LE(std::abs(static_cast<double>(n) - r.published), r.digit / 2) << r.name;
  }
  const model_spec qwen3 = read(rows[3].config);
  EXPECT_NEAR((parameter_count(qwen3) - 151936.0 * 1024) / 0.44e9, 1.0, 0.005);
}

TEST(dense_families, structure) {
  const model_spec g2 = read(R"({"model_type":"gemma2","vocab_size":256000,"hidden_size":2304,
    "intermediate_size":9216,"num_hidden_layers":26,"num_attention_heads":8,"num_key_value_heads":4,
    "head_dim":256})");
  EXPECT_TRUE(g2.tied_embeddings);
  EXPECT_EQ(g2.head_dim, 256);
  EXPECT_EQ(g2.q_size(), 2048);  // not the hidden size
  EXPECT_EQ(g2.norms_per_layer, 4);
  EXPECT_EQ(g2.sliding_window, 4096);
  EXPECT_DOUBLE_EQ(g2.final_logit_softcap, 30.0);
  EXPECT_EQ(g2.hidden_act, "gelu_pytorch_tanh");
  const model_spec neox = read(R"({"model_type":"gpt_neox","vocab_size":50304,"hidden_size":2048,
    "intermediate_size":8192,"num_hidden_layers":16,"num_attention_heads":8})");
  EXPECT_TRUE(neox.fused_qkv);
  EXPECT_TRUE(neox.parallel_residual);
  EXPECT_TRUE(neox.layernorm_bias);
  // The multimodal gemma3 wrapper is read from its text_config.
  const model_spec g3 = read(R"({"model_type":"gemma3","text_config":{"vocab_size":262208,"hidden_size":2560,
    "intermediate_size":10240,"num_hidden_layers":34,"num_attention_heads":8,"num_key_value_heads":4,
    "head_dim":256}})");
  EXPECT_EQ(g3.num_layers, 34);
  EXPECT_EQ(g3.qk_norm_params, 512);
  EXPECT_THROW(read(R"({"model_type":"gemma3"})"), usage_error);
}

// The published Gemma 3 checkpoints leave to Gemma3TextConfig's defaults what transformers fills in:
// google/gemma-3-4b-it's text_config has no vocabulary, heads nor head_dim (262208, 8, 4 and 256).
TEST(dense_families, a_gemma3_text_config_takes_the_config_class_defaults_for_what_it_leaves_out) {
  const model_spec g3 = read(R"({"model_type":"gemma3","mm_tokens_per_image":256,"text_config":{"hidden_size":2560,
    "intermediate_size":10240,"model_type":"gemma3_text","num_hidden_layers":34,"sliding_window":1024,
    "rope_scaling":{"factor":8.0,"rope_type":"linear"}},"vision_config":{"hidden_size":1152}})");
  EXPECT_EQ(g3.vocab_size, 262208);
  EXPECT_EQ(g3.hidden_size, 2560);
  EXPECT_EQ(g3.num_layers, 34);
  EXPECT_EQ(g3.num_heads, 8);
  EXPECT_EQ(g3.num_kv_heads, 4);
  EXPECT_EQ(g3.head_dim, 256);
  EXPECT_EQ(g3.sliding_window, 1024);
  EXPECT_TRUE(g3.tied_embeddings);
  // The class's defaults whole: a Gemma 3 of 26 layers, 2304 wide.
  const model_spec bare = read(R"({"model_type":"gemma3_text"})");
  EXPECT_EQ(bare.hidden_size, 2304);
  EXPECT_EQ(bare.intermediate_size, 9216);
  EXPECT_EQ(bare.num_layers, 26);
  // A field given is read as given, and a bad one named where it is.
  try {
    read(R"({"model_type":"gemma3","text_config":{"num_attention_heads":-8}})");
    ADD_FAILURE() << "negative heads read";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("config.json: text_config: \"num_attention_heads\""), std::string::npos)
        << e.what();
  }
}

// Soft-capped logits keep more at the loss; sliding windows cut attention work.
TEST(dense_families, soft_capping_and_sliding_windows_reach_the_plan) {
  training_setup s;
  s.model = read(R"({"model_type":"gemma2","vocab_size":256000,"hidden_size":2304,"intermediate_size":9216,
    "num_hidden_layers":26,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,
    "sliding_window":4096})");
  s.seq_len = 8192;
  training_setup plain = s;
  plain.model.final_logit_softcap = 0;
  plain.model.sliding_window = 0;
  EXPECT_GT(estimate_memory(s).logits_forward_bytes_per_sample, estimate_memory(plain).logits_forward_bytes_per_sample);
  auto attention_scale = [](const training_setup& x) {
    for (const auto& g : step_gemms(x, 1, false))
      if (g.name == "attention scores") return g.flop_scale;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(attention_scale(plain), 0.5);
  EXPECT_LT(attention_scale(s), 0.5);
  EXPECT_GT(attention_scale(s), 0.25);
}

TEST(dense_families, an_unsupported_type_names_itself_and_the_supported_ones) {
  try {
    read(R"({"model_type":"mamba","hidden_size":768})");
    FAIL();
  } catch (const usage_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("\"mamba\""), std::string::npos) << what;
    for (const char* t : {"phi3", "gemma2", "qwen3", "olmo2", "gpt_neox", "mixtral", "deepseek_v3"})
      EXPECT_NE(what.find(t), std::string::npos) << t;
  }
}

// fp32 with a 152k tied vocabulary: the end of backward holds the LM head's
// share of the tied gradient, the embedding's and their sum (3 x V x h x 4
// bytes beside the other gradients, two of them beyond the gradient itself)
// and the output's fp32 logits.
TEST(fp32_loss, a_tied_embedding_s_last_backward_is_a_phase) {
  training_setup s;
  s.model = load_model("qwen2.5-0.5b");
  s.seq_len = 1024;
  s.prec = precision::fp32;
  const memory_breakdown m = estimate_memory(s);
  EXPECT_EQ(m.tied_embedding_grad_bytes, 2LL * 4 * 151936 * 896);
  EXPECT_EQ(m.logits_held_bytes_per_sample, 4LL * 151936 * 1024);
  // The phase exceeds the optimizer step by exactly those terms.
  const std::int64_t optimizer_step =
      m.weights_bytes + m.optimizer_bytes + m.library_workspace_bytes + m.gradients_bytes;
  EXPECT_GE(m.peak_allocated_bytes(1, false), optimizer_step + m.tied_embedding_grad_bytes + m.logits_held_bytes_per_sample);
  // Untied models and LoRA (a frozen embedding) have no such phase.
  s.lora_rank = 8;
  EXPECT_EQ(estimate_memory(s).tied_embedding_grad_bytes, 0);
  s.lora_rank = 0;
  s.model = load_model("llama-3-8b");
  EXPECT_EQ(estimate_memory(s).tied_embedding_grad_bytes, 0);
}

// Mistral's and Mixtral's sliding_window is every layer's (null: none): read as Gemma's windows are
// (it was read for Gemma only, and a negative one was taken).
TEST(dense_families, mistral_and_mixtral_read_their_sliding_window) {
  const std::string dims = R"("vocab_size":32000,"hidden_size":4096,"intermediate_size":14336,
      "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"max_position_embeddings":32768)";
  for (const char* type : {"mistral", "mixtral"}) {
    const std::string head = std::string(R"({"model_type":")") + type + "\"," + dims;
    const model_spec windowed = read((head + R"(,"sliding_window":4096})").c_str());
    EXPECT_EQ(windowed.sliding_window, 4096) << type;
    EXPECT_EQ(windowed.sliding_layers, 1) << type;
    const model_spec none = read((head + R"(,"sliding_window":null})").c_str());
    EXPECT_EQ(none.sliding_window, 0) << type;
    EXPECT_THROW(read((head + R"(,"sliding_window":-5})").c_str()), usage_error) << type;
    EXPECT_THROW(read((head + R"(,"sliding_window":0})").c_str()), usage_error) << type;
  }
}

// Gemma 2's and 3's sliding_window as transformers reads it: every sliding layer's mask is made from
// it, so 0 (a mask of no key, as refused for Mistral) and a negative window are refused, and so is
// null (create_sliding_window_causal_mask raises on it); left out, the config class's default.
// Gemma 3's sliding_window_pattern of 0 is a ZeroDivisionError there ((i + 1) % pattern).
TEST(dense_families, gemma_sliding_windows_are_refused_as_mistral_s_are) {
  const std::string dims = R"("vocab_size":256000,"hidden_size":2304,"intermediate_size":9216,
      "num_hidden_layers":26,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256)";
  auto refusal_of = [](const std::string& text) {
    try {
      read(text.c_str());
    } catch (const usage_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  for (const char* type : {"gemma2", "gemma3_text"}) {
    const std::string head = std::string(R"({"model_type":")") + type + "\"," + dims;
    EXPECT_EQ(read((head + R"(,"sliding_window":1024})").c_str()).sliding_window, 1024) << type;
    EXPECT_EQ(read((head + "}").c_str()).sliding_window, 4096) << type;
    for (const char* window : {"0", "-5"}) {
      const std::string e = refusal_of(head + R"(,"sliding_window":)" + window + "}");
      EXPECT_NE(e.find("\"sliding_window\""), std::string::npos) << type << " " << window << ": " << e;
    }
    const std::string e = refusal_of(head + R"(,"sliding_window":null})");
    EXPECT_NE(e.find("\"sliding_window\" is null"), std::string::npos) << type << ": " << e;
  }
  // The multimodal wrapper reads them from its text_config.
  const std::string e = refusal_of(R"({"model_type":"gemma3","text_config":{)" + dims + R"(,"sliding_window":0}})");
  EXPECT_NE(e.find("\"sliding_window\" must be at least 1"), std::string::npos) << e;
  const std::string pattern = refusal_of(R"({"model_type":"gemma3_text",)" + dims + R"(,"sliding_window_pattern":0})");
  EXPECT_NE(pattern.find("\"sliding_window_pattern\" must be at least 1"), std::string::npos) << pattern;
  EXPECT_DOUBLE_EQ(read((R"({"model_type":"gemma3_text",)" + dims + R"(,"sliding_window_pattern":1})").c_str()).sliding_layers, 0);
}

// attention_dropout outside 0 to 1 is refused naming it in every family that reads it (torch's
// dropout raises there): Phi-3 through Llama's fields, GPT-NeoX on its own.
TEST(dense_families, attention_dropout_outside_zero_to_one_is_refused) {
  const std::string phi3 = R"({"model_type":"phi3","vocab_size":32064,"hidden_size":3072,"intermediate_size":8192,
      "num_hidden_layers":32,"num_attention_heads":32)";
  const std::string neox = R"({"model_type":"gpt_neox","vocab_size":50304,"hidden_size":2048,
      "intermediate_size":8192,"num_hidden_layers":16,"num_attention_heads":8)";
  for (const std::string& head : {phi3, neox}) {
    for (const char* p : {"-1", "1.5", "1e30"}) {
      try {
        read((head + R"(,"attention_dropout":)" + p + "}").c_str());
        ADD_FAILURE() << head << " took attention_dropout " << p;
      } catch (const usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("\"attention_dropout\""), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("not a dropout probability"), std::string::npos) << e.what();
      }
    }
    EXPECT_DOUBLE_EQ(read((head + R"(,"attention_dropout":1})").c_str()).dropout, 1.0);
  }
}

// Configs transformers cannot build or train are refused, naming the field, as for GPT-2 and BERT: a
// GPT-NeoX hidden size the heads do not divide (GPTNeoXConfig raises), a BERT of no token types
// (every token reads row 0), a Gemma soft cap of 0 (cap * tanh(logits / cap) divides by it). A cap
// of null is none, a negative one acts as its magnitude.
TEST(dense_families, configs_transformers_cannot_build_are_refused_naming_the_field) {
  auto dense_refusal = [](const std::string& text) -> std::string {
    try {
      read(text.c_str());
    } catch (const usage_error& e) {
      return e.what();
    }
    return "accepted";
  };
  const std::string neox = dense_refusal(R"({"model_type":"gpt_neox","vocab_size":50432,"hidden_size":2561,
    "num_hidden_layers":32,"num_attention_heads":32,"intermediate_size":10240})");
  EXPECT_NE(neox.find("\"hidden_size\" 2561 is not a multiple of \"num_attention_heads\" 32"), std::string::npos) << neox;
  const std::string bert = dense_refusal(R"({"model_type":"bert","vocab_size":30522,"hidden_size":768,
    "num_hidden_layers":12,"num_attention_heads":12,"intermediate_size":3072,"max_position_embeddings":512,
    "type_vocab_size":0})");
  EXPECT_NE(bert.find("\"type_vocab_size\" must be at least 1"), std::string::npos) << bert;
  const std::string gemma2 = R"({"model_type":"gemma2","vocab_size":256000,"hidden_size":2304,
    "intermediate_size":9216,"num_hidden_layers":26,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256)";
  const std::string zero = dense_refusal(gemma2 + R"(,"final_logit_softcapping":0})");
  EXPECT_NE(zero.find("\"final_logit_softcapping\" 0 divides the logits"), std::string::npos) << zero;
  EXPECT_NE(dense_refusal(R"({"model_type":"gemma3_text","final_logit_softcapping":0.0})").find("final_logit_softcapping"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(read((gemma2 + "}").c_str()).final_logit_softcap, 30.0);
  EXPECT_DOUBLE_EQ(read((gemma2 + R"(,"final_logit_softcapping":null})").c_str()).final_logit_softcap, 0.0);
  EXPECT_DOUBLE_EQ(read((gemma2 + R"(,"final_logit_softcapping":-20})").c_str()).final_logit_softcap, 20.0);
}
