#include "core/train/model_spec.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/results/json_file.hpp"
#include "core/train/model_config_reader.hpp"
#include "core/train/moe_model.hpp"

namespace tiletune {

std::vector<weight_tensor> weight_tensors(const model_spec& m) {
  const std::int64_t h = m.hidden_size, L = m.num_layers, I = m.intermediate_size;
  std::vector<weight_tensor> w;
  auto add = [&](std::string name, std::int64_t rows, std::int64_t cols, std::int64_t count, bool linear) {
    if (rows > 0 && cols > 0 && count > 0) w.push_back({std::move(name), rows, cols, count, linear});
  };
  const std::int64_t norm_vectors = m.layernorm_bias ? 2 : 1;
  add("embed_tokens", m.vocab_size, h, 1, false);
  add("embed_positions", m.learned_positions, h, 1, false);
  add("embed_token_types", m.token_types, h, 1, false);
  if (m.embedding_norm) add("embed_norm", h, 1, norm_vectors, false);
  if (m.is_mla()) {
    add_mla_attention_tensors(m, w);
  } else {
    add("layers.q_proj", m.q_size(), h, L, true);
    add("layers.k_proj", m.kv_size(), h, L, true);
    add("layers.v_proj", m.kv_size(), h, L, true);
    if (m.qkv_bias) add("layers.qkv_bias", m.q_size() + 2 * m.kv_size(), 1, L, false);
    add("layers.o_proj", h, m.q_size(), L, true);
  }
  if (m.attn_out_bias) add("layers.o_bias", h, 1, L, false);
  add("layers.qk_norm", m.qk_norm_params, 1, L, false);
  // The dense MLP: every layer, or those an MoE model keeps dense.
  const std::int64_t dense = m.is_moe() ? m.dense_layers : L;
  if (m.gated_mlp) add("layers.gate_proj", I, h, dense, true);
  add("layers.up_proj", I, h, dense, true);
  add("layers.down_proj", h, I, dense, true);
  if (m.mlp_bias) add("layers.mlp_bias", I + h, 1, dense, false);
  if (m.is_moe()) add_moe_mlp_tensors(m, w);
  add("layers.norms", h, 1, m.norms_per_layer * norm_vectors * L, false);
  // Decoders end in a norm; BERT-style encoders normalise inside each layer instead.
  if (m.causal) add("final_norm", h, 1, norm_vectors, false);
  if (m.pooler) add("pooler", h, h + 1, 1, false);
  if (m.causal && !m.tied_embeddings) add("lm_head", m.vocab_size, h, 1, true);
  return w;
}

std::int64_t parameter_count(const model_spec& m) {
  std::int64_t n = 0;
  for (const auto& t : weight_tensors(m)) n += t.parameters();
  return n;
}

std::int64_t active_parameter_count(const model_spec& m) {
  double n = 0;
  for (const auto& t : weight_tensors(m)) n += static_cast<double>(t.parameters()) * t.token_share;
  return static_cast<std::int64_t>(n + 0.5);
}

std::int64_t expert_parameter_count(const model_spec& m) {
  std::int64_t n = 0;
  for (const auto& t : weight_tensors(m))
    if (t.routed()) n += t.parameters();
  return n;
}

namespace {

model_spec gpt2(std::string name, std::int64_t h, std::int64_t layers, std::int64_t heads) {
  model_spec m;
  m.name = std::move(name);
  m.model_type = "gpt2";
  m.causal = true;
  m.vocab_size = 50257;
  m.hidden_size = h;
  m.num_layers = layers;
  m.num_heads = m.num_kv_heads = heads;
  m.head_dim = h / heads;
  m.intermediate_size = 4 * h;
  m.max_positions = m.learned_positions = 1024;
  m.tied_embeddings = true;
  m.qkv_bias = m.attn_out_bias = m.mlp_bias = m.layernorm_bias = true;
  m.dropout = 0.1;
  m.hidden_act = "gelu_new";
  m.fused_qkv = true;
  return m;
}

model_spec bert(std::string name, std::string type, std::int64_t vocab, std::int64_t h, std::int64_t layers,
                std::int64_t heads, std::int64_t positions, std::int64_t token_types) {
  model_spec m;
  m.name = std::move(name);
  m.model_type = std::move(type);
  m.causal = false;
  m.vocab_size = vocab;
  m.hidden_size = h;
  m.num_layers = layers;
  m.num_heads = m.num_kv_heads = heads;
  m.head_dim = h / heads;
  m.intermediate_size = 4 * h;
  m.max_positions = m.learned_positions = positions;
  m.token_types = token_types;
  m.qkv_bias = m.attn_out_bias = m.mlp_bias = m.layernorm_bias = true;
  m.embedding_norm = m.pooler = true;
  m.dropout = 0.1;
  m.hidden_act = "gelu";
  return m;
}

model_spec llama_like(std::string name, std::string type, std::int64_t vocab, std::int64_t h,
                      std::int64_t layers, std::int64_t heads, std::int64_t kv_heads, std::int64_t inter,
                      std::int64_t positions, bool tied) {
  model_spec m;
  m.name = std::move(name);
  m.model_type = std::move(type);
  m.causal = true;
  m.vocab_size = vocab;
  m.hidden_size = h;
  m.num_layers = layers;
  m.num_heads = heads;
  m.num_kv_heads = kv_heads;
  m.head_dim = h / heads;
  m.intermediate_size = inter;
  m.max_positions = positions;
  m.tied_embeddings = tied;
  m.gated_mlp = true;
  return m;
}

std::vector<model_spec> make_model_presets() {
  // The numbers of each model's published config.json on the Hugging Face hub.
  std::vector<model_spec> all;
  all.push_back(gpt2("gpt2", 768, 12, 12));
  all.push_back(gpt2("gpt2-medium", 1024, 24, 16));
  all.push_back(gpt2("gpt2-large", 1280, 36, 20));
  all.push_back(bert("bert-base-uncased", "bert", 30522, 768, 12, 12, 512, 2));
  all.push_back(bert("bert-large-uncased", "bert", 30522, 1024, 24, 16, 512, 2));
  all.push_back(llama_like("llama-3-8b", "llama", 128256, 4096, 32, 32, 8, 14336, 8192, false));
  all.push_back(llama_like("llama-3.2-1b", "llama", 128256, 2048, 16, 32, 8, 8192, 131072, true));
  all.push_back(llama_like("mistral-7b", "mistral", 32000, 4096, 32, 32, 8, 14336, 32768, false));
  auto qwen = llama_like("qwen2.5-0.5b", "qwen2", 151936, 896, 24, 14, 2, 4864, 32768, true);
  qwen.qkv_bias = true;
  all.push_back(qwen);
  all.push_back(llama_like("tinyllama-1.1b", "llama", 32000, 2048, 22, 32, 4, 5632, 2048, false));
  return all;
}

std::string supported_types() { return "llama, mistral, qwen2, gemma, gpt2, bert, roberta, " + dense_family_types() + ", " +
                                                    moe_model_types(); }

void check_positive(const model_spec& m, const nlohmann::json& j, const std::string& source) {
  auto need = [&](std::int64_t v, const char* what) {
    if (v <= 0) throw usage_error(fmt::format("{}: \"{}\" must be at least 1", source, what));
  };
  // The field as the config names it: GPT-2's configs say n_embd, n_layer, n_head and n_inner.
  auto written = [&](const char* name, const char* gpt2_name) {
    return j.is_object() && !j.contains(name) && j.contains(gpt2_name) ? gpt2_name : name;
  };
  need(m.hidden_size, written("hidden_size", "n_embd"));
  need(m.num_layers, written("num_hidden_layers", "n_layer"));
  need(m.num_heads, written("num_attention_heads", "n_head"));
  need(m.vocab_size, "vocab_size");
  need(m.intermediate_size, written("intermediate_size", "n_inner"));
  // Without "head_dim" the heads split the hidden size: fewer of it than heads leaves them none.
  if (m.head_dim <= 0 && !(j.contains("head_dim") && !j["head_dim"].is_null()))
    throw usage_error(fmt::format("{}: the hidden size {} is smaller than the {} heads it is split over (no "
                                  "\"head_dim\" given): each head would have {} dimensions",
                                  source, m.hidden_size, m.num_heads, m.head_dim));
  need(m.head_dim, "head_dim");
  if (m.num_kv_heads <= 0 || m.num_heads % m.num_kv_heads)
    throw usage_error(fmt::format("{}: num_key_value_heads {} must divide num_attention_heads {}", source,
                                  m.num_kv_heads, m.num_heads));
}

// transformers' ACT2FN (activations.py): an activation it does not have fails there with a KeyError.
// The first are one autograd op each (nn.functional's, or nn modules); the rest Python formulas.
constexpr std::array<std::string_view, 13> fused_activations = {
    "gelu", "gelu_pytorch_tanh", "silu", "swish", "relu", "relu6", "leaky_relu",
    "sigmoid", "tanh", "hardswish", "mish", "prelu", "linear"};
constexpr std::array<std::string_view, 11> python_activations = {
    "gelu_new", "gelu_10", "gelu_fast", "gelu_python", "gelu_python_tanh", "gelu_accurate",
    "laplace", "quick_gelu", "relu2", "sqrtsoftplus", "xielu"};

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view act) {
  return std::find(names.begin(), names.end(), act) != names.end();
}

void check_activation(const model_spec& m, const nlohmann::json& j, const std::string& source) {
  if (listed(fused_activations, m.hidden_act) || listed(python_activations, m.hidden_act)) return;
  const char* field = m.model_type == "gpt2" ? "activation_function"
                      : j.contains("hidden_activation") ? "hidden_activation"
                                                        : "hidden_act";
  std::string names;
  for (const auto& list : {std::span<const std::string_view>(fused_activations), std::span<const std::string_view>(python_activations)})
    for (std::string_view n : list) names += fmt::format("{}{}", names.empty() ? "" : ", ", n);
  throw usage_error(fmt::format("{}: \"{}\" \"{}\" is not an activation transformers has (its ACT2FN: {})", source,
                                field, m.hidden_act, names));
}

// Sizes past any model trained, and a model past what any cluster holds, are refused before a
// count overflows: every product of the planner stays exact in 64 bits below these.
void check_size(const model_spec& m, const config_reader& r) {
  r.at_most("hidden_size", m.hidden_size, max_hidden_size);
  r.at_most("num_hidden_layers", m.num_layers, max_layers);
  r.at_most("num_attention_heads", m.num_heads, max_heads);
  r.at_most("head_dim", m.head_dim, max_head_dim);
  r.at_most("vocab_size", m.vocab_size, max_table_rows);
  r.at_most("intermediate_size", m.intermediate_size, max_intermediate_size);
  // (The experts, the shared expert, MLA's widths, learned position and token-type tables are
  // bounded where they are read, under each family's own keys.)
  // Weights, gradients and two Adam states take 16 bytes a parameter: 1e15 parameters need 16 PB,
  // more than any cluster's GPU memory. Every tensor counted (embeddings, learned positions and
  // token types, shared experts, MLA's projections), in floating point, where nothing overflows.
  double estimate = 0;
  for (const weight_tensor& t : weight_tensors(m))
    estimate += static_cast<double>(t.rows) * static_cast<double>(t.cols) * static_cast<double>(t.count);
  const std::string& source = r.source;
  if (estimate > 1e15)
    throw usage_error(fmt::format("{}: the model has about {:.3g} parameters, more than any cluster can train (its "
                                  "weights, gradients and optimizer states alone would need {:.3g} PB)",
                                  source, estimate, estimate * 16 / 1e15));
}

}  // namespace

const std::vector<model_spec>& model_presets() {
  static const std::vector<model_spec> presets = make_model_presets();
  return presets;
}

model_spec model_from_hf_config(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw usage_error(fmt::format("{}: a config.json must hold a JSON object", source));
  if (!j.contains("model_type"))
    throw usage_error(fmt::format("{}: the field \"model_type\" is missing (supported: {})", source, supported_types()));
  if (!j["model_type"].is_string())
    throw usage_error(fmt::format("{}: \"model_type\" is {}, not a name (supported: {})", source, j["model_type"].dump(),
                                  supported_types()));
  // transformers' types are lower case; "LLAMA" is llama, as --model LLAMA-3-8B is a preset.
  std::string type = j["model_type"].get<std::string>();
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  const config_reader r{j, source};
  model_spec m;
  m.name = r.string_or("_name_or_path", "");
  if (m.name.empty()) m.name = source;
  m.model_type = type;
  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "gemma") {
    // Defaults of the transformers config classes: Gemma ties its embeddings.
    read_llama_decoder(r, m, type == "gemma");
    // Qwen2 always has q/k/v biases; Llama has them (and the o bias) with attention_bias.
    const bool attention_bias = r.boolean_or("attention_bias", false);
    m.qkv_bias = type == "qwen2" || attention_bias;
    m.attn_out_bias = attention_bias;
    m.mlp_bias = r.boolean_or("mlp_bias", false);
    m.hidden_act = r.string_or("hidden_act", type == "gemma" ? "gelu_pytorch_tanh" : "silu");
    if (type == "mistral") read_sliding_window(r, m);
  } else if (type == "gpt2") {
    m.causal = true;
    m.vocab_size = r.integer("vocab_size");
    // Bounded under GPT-2's own keys (check_size would name Llama's), n_embd before 4 x n_embd.
    m.hidden_size = r.at_most("n_embd", r.integer("n_embd"), max_hidden_size);
    m.num_layers = r.at_most("n_layer", r.integer("n_layer"), max_layers);
    m.num_heads = m.num_kv_heads = r.at_most("n_head", r.integer("n_head"), max_heads);
    m.head_dim = m.num_heads ? m.hidden_size / m.num_heads : 0;
    m.intermediate_size = r.at_most("n_inner", r.integer_or("n_inner", 4 * m.hidden_size), max_intermediate_size);
    // A learned table of n_positions rows (wpe): parameters, bounded as the vocabulary is.
    m.max_positions = m.learned_positions = r.at_most("n_positions", r.positive("n_positions"), max_table_rows);
    m.tied_embeddings = r.boolean_or("tie_word_embeddings", true);
    m.qkv_bias = m.attn_out_bias = m.mlp_bias = m.layernorm_bias = true;
    m.dropout = r.probability_or("attn_pdrop", 0.1);
    m.hidden_act = r.string_or("activation_function", "gelu_new");
    m.fused_qkv = true;
    check_heads_divide(m, source, "n_embd", "n_head");
  } else if (type == "bert" || type == "roberta") {
    m.causal = false;
    m.vocab_size = r.integer("vocab_size");
    m.hidden_size = r.integer("hidden_size");
    m.num_layers = r.integer("num_hidden_layers");
    m.num_heads = m.num_kv_heads = r.integer("num_attention_heads");
    m.head_dim = m.num_heads ? m.hidden_size / m.num_heads : 0;
    m.intermediate_size = r.integer("intermediate_size");
    // BERT's positions and token types are learned tables (parameters), bounded as the vocabulary is.
    m.max_positions = m.learned_positions =
        r.at_most("max_position_embeddings", r.positive("max_position_embeddings"), max_table_rows);
    if (type == "roberta") {
      // RoBERTa numbers positions from padding_idx + 1 (transformers' create_position_ids_from_input_ids):
      // of 514 positions, 512 tokens. The padding row is one of the vocabulary's (nn.Embedding
      // asserts padding_idx < num_embeddings), which keeps pad + 1 from overflowing.
      const std::int64_t pad = r.integer_or("pad_token_id", 1);
      if (m.vocab_size > 0 && pad >= m.vocab_size)
        throw usage_error(fmt::format("{}: \"pad_token_id\" {} is not a row of the vocabulary: nn.Embedding's "
                                      "padding_idx must be below \"vocab_size\" {}",
                                      source, pad, m.vocab_size));
      if (pad < 0 || m.max_positions <= pad + 1)
        throw usage_error(fmt::format("{}: max_position_embeddings {} leaves no position after pad_token_id {} "
                                      "(RoBERTa's positions start at pad_token_id + 1)",
                                      source, m.max_positions, pad));
      m.max_positions -= pad + 1;
    }
    // At least one row: every token reads row 0 of the table (token_type_ids default to zeros), which
    // nn.Embedding(0, hidden) has not.
    m.token_types = r.at_most("type_vocab_size", r.positive_or("type_vocab_size", 2), max_table_rows);
    m.qkv_bias = m.attn_out_bias = m.mlp_bias = m.layernorm_bias = true;
    m.embedding_norm = m.pooler = true;
    m.dropout = r.probability_or("attention_probs_dropout_prob", 0.1);
    m.hidden_act = r.string_or("hidden_act", "gelu");
    check_heads_divide(m, source, "hidden_size", "num_attention_heads");
  } else if (!read_moe_config(type, r, m) && !read_dense_family(type, r, m)) {
    throw usage_error(fmt::format("{}: model_type \"{}\" is not supported; supported: {}", source, type,
                                  supported_types()));
  }
  check_positive(m, j, source);
  check_size(m, r);
  check_activation(m, j, source);
  return m;
}

bool activation_is_modelled(const model_spec& m) {
  // One fused op, or the GPT-2 MLP's formula (training_inventory.cpp).
  return listed(fused_activations, m.hidden_act) || (m.hidden_act == "gelu_new" && !m.gated_mlp);
}

const model_spec* find_model_preset(std::string_view name) {
  // Preset names match as --gpu's do, in any case (GPT2, Llama-3-8B).
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string key = lower(name);
  for (const auto& m : model_presets())
    if (lower(m.name) == key) return &m;
  return nullptr;
}

model_spec load_model(std::string_view name_or_path) {
  // A preset wins over a path of the same name.
  if (const model_spec* preset = find_model_preset(name_or_path)) return *preset;
  std::filesystem::path path(name_or_path);
  std::error_code ec;
  // A downloaded model's folder (Hugging Face layout) holds its config.json.
  if (std::filesystem::is_directory(path, ec)) {
    if (!std::filesystem::exists(path / "config.json", ec))
      throw usage_error(fmt::format("--model {}: a folder without a config.json (no such file: {})", name_or_path,
                                    (path / "config.json").string()));
    path /= "config.json";
  }
  if (!std::filesystem::exists(path, ec)) {
    // A name that looks like a path is a file the user expected to be there; a bare word may be either.
    const bool path_like = name_or_path.find('/') != std::string_view::npos ||
                           name_or_path.find('\\') != std::string_view::npos || path.extension() == ".json";
    if (path_like) throw usage_error(fmt::format("--model {}: no such file", name_or_path));
    std::string names;
    for (const auto& m : model_presets()) names += (names.empty() ? "" : ", ") + m.name;
    throw usage_error(fmt::format("--model {}: not a preset ({}), and no such file", name_or_path, names));
  }
  const nlohmann::json j = read_json_file(path);
  return model_from_hf_config(j, path.string());
}

nlohmann::json to_json(const model_spec& m) {
  nlohmann::json j = {{"name", m.name},
          {"model_type", m.model_type},
          {"causal", m.causal},
          {"vocab_size", m.vocab_size},
          {"hidden_size", m.hidden_size},
          {"num_layers", m.num_layers},
          {"num_heads", m.num_heads},
          {"num_kv_heads", m.num_kv_heads},
          {"head_dim", m.head_dim},
          {"intermediate_size", m.intermediate_size},
          {"tied_embeddings", m.tied_embeddings},
          {"gated_mlp", m.gated_mlp},
          {"hidden_act", m.hidden_act}};
  add_moe_json(m, j);
  return j;
}

}  // namespace tiletune
