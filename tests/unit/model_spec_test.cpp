#include "core/train/model_spec.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/errors.hpp"

using namespace tiletune;

TEST(model_spec, preset_parameter_counts_match_the_published_figures) {
  // model.num_parameters() of the transformers implementations (BERT: BertModel with its pooler).
  const std::pair<const char*, std::int64_t> published[] = {
      {"gpt2", 124'439'808},           {"gpt2-medium", 354'823'168},     {"gpt2-large", 774'030'080},
      {"bert-base-uncased", 109'482'240}, {"bert-large-uncased", 335'141'888}, {"llama-3-8b", 8'030'261'248},
      {"llama-3.2-1b", 1'235'814'400}, {"mistral-7b", 7'241'732'096},    {"qwen2.5-0.5b", 494'032'768},
      {"tinyllama-1.1b", 1'100'048'384}};
  for (auto [name, count] : published) EXPECT_EQ(parameter_count(load_model(name)), count) << name;
  EXPECT_EQ(model_presets().size(), 10u);
}

namespace {
struct temp_file {
  std::filesystem::path path;
  explicit temp_file(const std::string& text) {
    path = std::filesystem::temp_directory_path() /
           ("tiletune-config-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json");
    std::ofstream(path) << text;
  }
  ~temp_file() { std::filesystem::remove(path); }
};

std::string model_error_of(const std::string& text) {
  temp_file f(text);
  try {
    load_model(f.path.string());
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

const char* tinyllama_config = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
  "intermediate_size": 5632, "num_attention_heads": 32, "num_hidden_layers": 22,
  "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 2048,
  "tie_word_embeddings": false, "rms_norm_eps": 1e-05, "torch_dtype": "bfloat16"
})";
}  // namespace

TEST(hf_config, a_llama_config_counts_like_its_preset) {
  temp_file f(tinyllama_config);
  const model_spec m = load_model(f.path.string());
  EXPECT_EQ(parameter_count(m), 1'100'048'384);
  EXPECT_EQ(m.num_kv_heads, 4);
  EXPECT_TRUE(m.gated_mlp);
}

TEST(hf_config, families_and_their_details) {
  // Qwen2 has q/k/v biases whatever the config says; Gemma ties embeddings and sets head_dim.
  auto qwen = nlohmann::json::parse(R"({"model_type":"qwen2","vocab_size":151936,"hidden_size":896,
    "num_hidden_layers":24,"num_attention_heads":14,"num_key_value_heads":2,"intermediate_size":4864,
    "tie_word_embeddings":true,"max_position_embeddings":32768})");
  EXPECT_EQ(parameter_count(model_from_hf_config(qwen, "qwen")), 494'032'768);
  // Gemma-2B: 2,506,172,416 parameters.
  auto gemma = nlohmann::json::parse(R"({"model_type":"gemma","vocab_size":256000,"hidden_size":2048,
    "num_hidden_layers":18,"num_attention_heads":8,"num_key_value_heads":1,"head_dim":256,
    "intermediate_size":16384,"max_position_embeddings":8192})");
  EXPECT_EQ(parameter_count(model_from_hf_config(gemma, "gemma")), 2'506'172'416);
  auto gpt2 = nlohmann::json::parse(R"({"model_type":"gpt2","vocab_size":50257,"n_embd":768,"n_layer":12,
    "n_head":12,"n_positions":1024})");
  EXPECT_EQ(parameter_count(model_from_hf_config(gpt2, "gpt2")), 124'439'808);
  // roberta-base: 124,645,632 parameters (with its pooler).
  auto roberta = nlohmann::json::parse(R"({"model_type":"roberta","vocab_size":50265,"hidden_size":768,
    "num_hidden_layers":12,"num_attention_heads":12,"intermediate_size":3072,"max_position_embeddings":514,
    "type_vocab_size":1})");
  EXPECT_EQ(parameter_count(model_from_hf_config(roberta, "roberta")), 124'645'632);
  // Its positions start at pad_token_id + 1: 514 of them take 512 tokens (BERT's 512 take 512).
  EXPECT_EQ(model_from_hf_config(roberta, "roberta").max_positions, 512);
  roberta["pad_token_id"] = 0;
  EXPECT_EQ(model_from_hf_config(roberta, "roberta").max_positions, 513);
  roberta["max_position_embeddings"] = 1;
  EXPECT_THROW(model_from_hf_config(roberta, "roberta"), tiletune::usage_error);
  // Heads that do not split the hidden size are refused, as transformers does.
  gpt2["n_embd"] = 770;
  try {
    model_from_hf_config(gpt2, "gpt2");
    ADD_FAILURE() << "n_embd 770 over 12 heads was taken";
  } catch (const tiletune::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"n_embd\" 770 is not a multiple of \"n_head\" 12"), std::string::npos)
        << e.what();
  }
}

TEST(hf_config, errors_name_the_field_the_type_or_the_place) {
  std::string e = model_error_of(R"({"model_type": "llama", "vocab_size": 32000})");
  EXPECT_NE(e.find("\"hidden_size\" is missing"), std::string::npos) << e;
  e = model_error_of(R"({"model_type": "t5", "d_model": 512})");
  EXPECT_NE(e.find("\"t5\""), std::string::npos) << e;
  EXPECT_NE(e.find("llama, mistral"), std::string::npos) << e;
  e = model_error_of("{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 2048,,\n}");
  EXPECT_NE(e.find("line 3"), std::string::npos) << e;
  e = model_error_of(R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": "big"})");
  EXPECT_NE(e.find("hidden_size"), std::string::npos) << e;
  e = model_error_of(R"([1, 2])");
  EXPECT_NE(e.find("object"), std::string::npos) << e;
  e = model_error_of(R"({"hidden_size": 2})");
  EXPECT_NE(e.find("model_type"), std::string::npos) << e;
  e = model_error_of(R"({"model_type": 5})");
  EXPECT_NE(e.find("\"model_type\" is 5, not a name"), std::string::npos) << e;
  // A type in capitals is the type (transformers writes them in lower case).
  e = model_error_of(R"({"model_type": "LLAMA", "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 2,
    "num_attention_heads": 32, "num_key_value_heads": 5, "intermediate_size": 64})");
  EXPECT_NE(e.find("num_key_value_heads 5"), std::string::npos) << e;
  e = model_error_of(R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 2,
    "num_attention_heads": 32, "num_key_value_heads": 5, "intermediate_size": 64})");
  EXPECT_NE(e.find("num_key_value_heads 5"), std::string::npos) << e;
  // A hidden size below its heads, with no head_dim, names the two fields the user wrote, not a
  // head_dim the config never gave.
  e = model_error_of(R"({"model_type": "llama", "vocab_size": 32000, "num_hidden_layers": 2,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 64, "hidden_size": 8})");
  EXPECT_NE(e.find("hidden size 8 is smaller than the 32 heads"), std::string::npos) << e;
  // Two "hidden_size" keys: refused, naming the key (JSON would keep the last, a reader the first).
  e = model_error_of(R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 2,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 64, "hidden_size": 8})");
  EXPECT_NE(e.find("the key \"hidden_size\" is given twice"), std::string::npos) << e;
  e = model_error_of(R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 2,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 64, "head_dim": 0})");
  EXPECT_NE(e.find("\"head_dim\" must be at least 1"), std::string::npos) << e;
  try {
    load_model("no-such-model");
    FAIL();
  } catch (const usage_error& err) {
    EXPECT_NE(std::string(err.what()).find("llama-3-8b"), std::string::npos);
  }
}

// The activation decides what autograd keeps: GPT-2's "gelu_new" is a Python
// formula of nine ops, the others one fused kernel.
TEST(hf_config, activation_and_projection_layout) {
  const auto gpt2 = model_from_hf_config(
      nlohmann::json{{"model_type", "gpt2"}, {"vocab_size", 50257}, {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12},
                     {"n_positions", 1024}},
      "gpt2.json");
  EXPECT_EQ(gpt2.hidden_act, "gelu_new");
  EXPECT_TRUE(gpt2.fused_qkv);
  EXPECT_EQ(load_model("gpt2").hidden_act, "gelu_new");
  EXPECT_EQ(load_model("tinyllama-1.1b").hidden_act, "silu");
  EXPECT_FALSE(load_model("tinyllama-1.1b").fused_qkv);
  EXPECT_EQ(load_model("bert-base-uncased").hidden_act, "gelu");
  nlohmann::json bad = {{"model_type", "llama"}, {"vocab_size", 32000}, {"hidden_size", 64},
                        {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"intermediate_size", 128},
                        {"hidden_act", 3}};
  try {
    model_from_hf_config(bad, "bad.json");
    ADD_FAILURE() << "a numeric hidden_act was accepted";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("hidden_act"), std::string::npos);
  }
}

// An activation transformers does not have fails in its ACT2FN with a KeyError: refused here,
// naming the field and the value. One that is a Python formula other than GPT-2's is planned,
// and the plan says its activations are under-counted.
TEST(hf_config, activations_are_transformers_own_and_the_unmodelled_ones_say_so) {
  auto config = [](const char* field, const char* act) {
    return nlohmann::json{{"model_type", "llama"},        {"vocab_size", 32000},       {"hidden_size", 64},
                          {"num_hidden_layers", 2},       {"num_attention_heads", 4},  {"intermediate_size", 128},
                          {field, act}};
  };
  try {
    model_from_hf_config(config("hidden_act", "frobnicate"), "bad.json");
    ADD_FAILURE() << "an unknown activation was accepted";
  } catch (const usage_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("\"hidden_act\" \"frobnicate\""), std::string::npos) << what;
    EXPECT_NE(what.find("quick_gelu"), std::string::npos) << what;
  }
  nlohmann::json gpt2 = {{"model_type", "gpt2"}, {"vocab_size", 50257}, {"n_embd", 64}, {"n_layer", 2},
                         {"n_head", 4},          {"n_positions", 128},  {"activation_function", "Gelu"}};
  try {
    model_from_hf_config(gpt2, "gpt2.json");
    ADD_FAILURE() << "GPT-2's activation_function \"Gelu\" was accepted";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"activation_function\" \"Gelu\""), std::string::npos) << e.what();
  }
  for (const char* act : {"silu", "gelu", "gelu_pytorch_tanh", "relu", "swish"})
    EXPECT_TRUE(activation_is_modelled(model_from_hf_config(config("hidden_act", act), "ok.json"))) << act;
  for (const char* act : {"quick_gelu", "gelu_fast", "relu2", "xielu", "gelu_new"})
    EXPECT_FALSE(activation_is_modelled(model_from_hf_config(config("hidden_act", act), "ok.json"))) << act;
  EXPECT_TRUE(activation_is_modelled(load_model("gpt2")));  // gelu_new in GPT-2's MLP: its nine ops counted
  for (const auto& m : model_presets()) EXPECT_TRUE(activation_is_modelled(m)) << m.name;
}
