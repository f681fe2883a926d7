// Internal to src/core/train: reading a Hugging Face config.json field by
// field, with errors that name the file, the field and what is wrong.
#pragma once
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/train/model_spec.hpp"

namespace tiletune {

// The largest sizes any model has: past them a field is refused, naming it, before a count
// overflows (model_spec.cpp's check_size bounds the fields every model has, each family its own
// keys). Below them every row, column and layer count of weight_tensors() fits in 64 bits, and
// check_size sums their products in floating point against what a cluster can train.
inline constexpr std::int64_t max_hidden_size = 262144, max_layers = 16384, max_heads = 65536, max_head_dim = 65536,
                              max_table_rows = 16777216,  // a vocabulary, a learned position or token-type table
                              max_intermediate_size = 4194304, max_experts = 65536;

struct config_reader {
  const nlohmann::json& j;
  const std::string& source;
  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  std::int64_t integer(const char* key) const {
    if (!has(key)) throw usage_error(fmt::format("{}: the field \"{}\" is missing", source, key));
    if (!j[key].is_number_integer() || j[key].get<std::int64_t>() < 0)
      throw usage_error(fmt::format("{}: \"{}\" must be a non-negative integer, not {}", source, key, j[key].dump()));
    return j[key].get<std::int64_t>();
  }
  std::int64_t integer_or(const char* key, std::int64_t fallback) const { return has(key) ? integer(key) : fallback; }
  // A count that must be at least 1 where given (positions: 0 would read as "no table").
  std::int64_t positive(const char* key) const {
    const std::int64_t v = integer(key);
    if (v < 1) throw usage_error(fmt::format("{}: \"{}\" must be at least 1, not {}", source, key, v));
    return v;
  }
  std::int64_t positive_or(const char* key, std::int64_t fallback) const { return has(key) ? positive(key) : fallback; }
  bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean()) throw usage_error(fmt::format("{}: \"{}\" must be true or false", source, key));
    return j[key].get<bool>();
  }
  std::string string_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_string()) throw usage_error(fmt::format("{}: \"{}\" must be a string", source, key));
    return j[key].get<std::string>();
  }
  double number_or(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_number()) throw usage_error(fmt::format("{}: \"{}\" must be a number", source, key));
    return j[key].get<double>();
  }
  // v, the value of key, refused past the largest any model has (the limits above).
  std::int64_t at_most(const char* key, std::int64_t v, std::int64_t limit) const {
    if (v > limit)
      throw usage_error(fmt::format("{}: \"{}\" {} is larger than any model's (at most {})", source, key, v, limit));
    return v;
  }
  // A dropout probability: torch's nn.Dropout and nn.functional.dropout raise ValueError outside 0 to 1
  // (1 drops everything, and is taken).
  double probability_or(const char* key, double fallback) const {
    const double p = number_or(key, fallback);
    if (!(p >= 0 && p <= 1))
      throw usage_error(fmt::format("{}: \"{}\" {} is not a dropout probability (torch's dropout takes 0 to 1)",
                                    source, key, j[key].dump()));
    return p;
  }
};

// The decoder fields Llama's config shares with Mistral, Qwen, Gemma, Phi-3,
// OLMo 2 and the MoE families: sizes, heads, positions, tied embeddings (the
// config class's default when absent), a gated MLP, attention dropout. Each
// family then sets its biases, activation and what else differs.
inline void read_llama_decoder(const config_reader& r, model_spec& m, bool tied_default) {
  m.causal = true;
  m.vocab_size = r.integer("vocab_size");
  // Bounded as read: the families multiply them (2 x head_dim, heads x head_dim) and the MoE
  // families count layers one by one before check_size would see them.
  m.hidden_size = r.at_most("hidden_size", r.integer("hidden_size"), max_hidden_size);
  m.num_layers = r.at_most("num_hidden_layers", r.integer("num_hidden_layers"), max_layers);
  m.num_heads = r.at_most("num_attention_heads", r.integer("num_attention_heads"), max_heads);
  m.num_kv_heads = r.at_most("num_key_value_heads", r.integer_or("num_key_value_heads", m.num_heads), max_heads);
  m.intermediate_size = r.at_most("intermediate_size", r.integer("intermediate_size"), max_intermediate_size);
  m.head_dim = r.at_most("head_dim", r.integer_or("head_dim", m.num_heads ? m.hidden_size / m.num_heads : 0), max_head_dim);
  m.max_positions = r.positive_or("max_position_embeddings", 0);
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", tied_default);
  m.gated_mlp = true;
  m.dropout = r.probability_or("attention_dropout", 0.0);
}

// GPT-2, BERT and GPT-NeoX split the hidden size over the heads and refuse a remainder (transformers'
// GPT2Attention, BertSelfAttention and GPTNeoXConfig raise ValueError).
inline void check_heads_divide(const model_spec& m, const std::string& source, const char* hidden, const char* heads) {
  if (m.num_heads > 0 && m.hidden_size % m.num_heads)
    throw usage_error(fmt::format("{}: \"{}\" {} is not a multiple of \"{}\" {}: each head takes an equal share",
                                  source, hidden, m.hidden_size, heads, m.num_heads));
}

// Mistral's and Mixtral's sliding_window (MistralConfig, MixtralConfig: null for none): every layer
// attends within it, counted in the attention work as Gemma's windows are. It was read for Gemma
// only: a Mixtral config with a 128-token window planned as one without, and -5 was taken.
inline void read_sliding_window(const config_reader& r, model_spec& m) {
  if (!r.has("sliding_window")) return;
  m.sliding_window = r.positive("sliding_window");
  m.sliding_layers = 1;
}

}  // namespace tiletune
