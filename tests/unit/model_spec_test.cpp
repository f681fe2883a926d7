#include "core/train/model_spec.hpp"

#include <filesystem>
#include <fstream>
#include <limits>

#include <fmt/format.h>
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

namespace {
// The usage error a config is refused with, "" when it is read. Anything else (nlohmann's
// type_error, which `tiletune batch` reports as an internal error, exit 70) escapes to the test.
std::string spec_refusal(const nlohmann::json& j) {
  try {
    model_from_hf_config(j, "config.json");
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

const nlohmann::json spec_llama = {{"model_type", "llama"},      {"vocab_size", 32000},       {"hidden_size", 2048},
                                    {"num_hidden_layers", 16},    {"num_attention_heads", 16}, {"num_key_value_heads", 4},
                                    {"intermediate_size", 5632}, {"max_position_embeddings", 4096}};
const nlohmann::json spec_gpt2 = {{"model_type", "gpt2"}, {"vocab_size", 50257}, {"n_embd", 768},
                                   {"n_layer", 12},        {"n_head", 12},        {"n_positions", 1024}};
const nlohmann::json spec_roberta = {{"model_type", "roberta"},        {"vocab_size", 50265},
                                      {"hidden_size", 768},             {"num_hidden_layers", 12},
                                      {"num_attention_heads", 12},      {"intermediate_size", 3072},
                                      {"max_position_embeddings", 514}, {"type_vocab_size", 1}};
constexpr std::int64_t spec_int64_max = std::numeric_limits<std::int64_t>::max();
}  // namespace

// "_name_or_path" that is not a string (a number, a list) is refused naming it; it was read with
// json::value, whose type_error ended `tiletune batch` as an internal error (exit 70).
TEST(hf_config, a_name_or_path_that_is_not_a_string_is_refused_naming_it) {
  for (const nlohmann::json& bad : {nlohmann::json(123), nlohmann::json::array({"a", "b"}), nlohmann::json(true)}) {
    nlohmann::json j = spec_llama;
    j["_name_or_path"] = bad;
    const std::string e = spec_refusal(j);
    EXPECT_NE(e.find("\"_name_or_path\" must be a string"), std::string::npos) << bad.dump() << ": " << e;
  }
  nlohmann::json named = spec_llama;
  named["_name_or_path"] = "TinyLlama/TinyLlama-1.1B";
  EXPECT_EQ(model_from_hf_config(named, "config.json").name, "TinyLlama/TinyLlama-1.1B");
  named["_name_or_path"] = nullptr;  // null: no name, the file's
  EXPECT_EQ(model_from_hf_config(named, "config.json").name, "config.json");
}

// Learned tables (GPT-2's and BERT's positions, BERT's token types) are parameters: a size past any
// model's is refused naming its key, as the vocabulary is, not planned at trillions of parameters
// or with an overflowed count. RoBERTa's pad_token_id is a vocabulary row (nn.Embedding's padding_idx).
TEST(hf_config, learned_tables_and_the_padding_row_are_bounded_naming_their_keys) {
  for (const std::int64_t n : {std::int64_t{1'000'000'000'000}, spec_int64_max}) {
    nlohmann::json gpt2 = spec_gpt2;
    gpt2["n_positions"] = n;
    std::string e = spec_refusal(gpt2);
    EXPECT_NE(e.find(fmt::format("\"n_positions\" {} is larger than any model's", n)), std::string::npos) << e;
    nlohmann::json bert = spec_roberta;
    bert["model_type"] = "bert";
    bert["max_position_embeddings"] = n;
    e = spec_refusal(bert);
    EXPECT_NE(e.find(fmt::format("\"max_position_embeddings\" {} is larger", n)), std::string::npos) << e;
    nlohmann::json types = spec_roberta;
    types["type_vocab_size"] = n;
    e = spec_refusal(types);
    EXPECT_NE(e.find(fmt::format("\"type_vocab_size\" {} is larger", n)), std::string::npos) << e;
  }
  // GPT-2's n_embd is named as such (check_size would say hidden_size), and before 4 x n_embd overflows.
  nlohmann::json wide = spec_gpt2;
  wide["n_embd"] = spec_int64_max / 2;
  EXPECT_NE(spec_refusal(wide).find("\"n_embd\""), std::string::npos) << spec_refusal(wide);
  // pad_token_id 2^63 - 1 made pad + 1 overflow into a negative count of positions.
  for (const std::int64_t pad : {spec_int64_max, std::int64_t{50265}}) {
    nlohmann::json roberta = spec_roberta;
    roberta["pad_token_id"] = pad;
    const std::string e = spec_refusal(roberta);
    EXPECT_NE(e.find(fmt::format("\"pad_token_id\" {} is not a row of the vocabulary", pad)), std::string::npos) << e;
  }
  nlohmann::json last_row = spec_roberta;
  last_row["pad_token_id"] = 50264;  // a row of the vocabulary, but past the 514 positions
  EXPECT_NE(spec_refusal(last_row).find("leaves no position after pad_token_id 50264"), std::string::npos);
  // The largest tables any model has are still read.
  nlohmann::json longest = spec_gpt2;
  longest["n_positions"] = 16777216;
  EXPECT_EQ(model_from_hf_config(longest, "config.json").learned_positions, 16777216);
}

// The guard against a model no cluster can train counts every tensor: MLA's low-rank projections
// (and the learned tables, shared experts) too. Its formula counted attention as Llama's, so this
// DeepSeek of 2.0e15 parameters (q_b and kv_b 1,024 heads x 192 x 262,144 in 16,384 layers) passed.
TEST(hf_config, the_size_guard_counts_every_tensor) {
  const nlohmann::json mla = {{"model_type", "deepseek_v3"}, {"vocab_size", 32000},         {"hidden_size", 1024},
                              {"num_hidden_layers", 16384},  {"num_attention_heads", 1024}, {"intermediate_size", 256},
                              {"q_lora_rank", 262144},       {"kv_lora_rank", 262144},      {"qk_rope_head_dim", 64},
                              {"qk_nope_head_dim", 128},     {"v_head_dim", 128}};
  const std::string e = spec_refusal(mla);
  EXPECT_NE(e.find("more than any cluster can train"), std::string::npos) << e;
  nlohmann::json smaller = mla;
  smaller["num_hidden_layers"] = 4;
  EXPECT_EQ(spec_refusal(smaller), "");
}

// Dropout probabilities outside 0 to 1 are refused naming the key: torch's dropout raises on them
// (nn.Dropout, nn.functional.dropout: "dropout probability has to be between 0 and 1").
TEST(hf_config, dropout_probabilities_outside_zero_to_one_are_refused) {
  const std::pair<nlohmann::json, const char*> configs[] = {
      {spec_llama, "attention_dropout"}, {spec_gpt2, "attn_pdrop"}, {spec_roberta, "attention_probs_dropout_prob"}};
  for (const auto& [base, key] : configs) {
    for (const double p : {-1.0, 1.5, 1e30}) {
      nlohmann::json j = base;
      j[key] = p;
      const std::string e = spec_refusal(j);
      EXPECT_NE(e.find(fmt::format("\"{}\" {} is not a dropout probability", key, j[key].dump())), std::string::npos)
          << e;
    }
    for (const double p : {0.0, 0.1, 1.0}) {
      nlohmann::json j = base;
      j[key] = p;
      EXPECT_DOUBLE_EQ(model_from_hf_config(j, "config.json").dropout, p) << key;
    }
  }
}
