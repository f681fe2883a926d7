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
};

// The decoder fields Llama's config shares with Mistral, Qwen, Gemma, Phi-3,
// OLMo 2 and the MoE families: sizes, heads, positions, tied embeddings (the
// config class's default when absent), a gated MLP, attention dropout. Each
// family then sets its biases, activation and what else differs.
inline void read_llama_decoder(const config_reader& r, model_spec& m, bool tied_default) {
  m.causal = true;
  m.vocab_size = r.integer("vocab_size");
  m.hidden_size = r.integer("hidden_size");
  m.num_layers = r.integer("num_hidden_layers");
  m.num_heads = r.integer("num_attention_heads");
  m.num_kv_heads = r.integer_or("num_key_value_heads", m.num_heads);
  m.intermediate_size = r.integer("intermediate_size");
  m.head_dim = r.integer_or("head_dim", m.num_heads ? m.hidden_size / m.num_heads : 0);
  m.max_positions = r.positive_or("max_position_embeddings", 0);
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", tied_default);
  m.gated_mlp = true;
  m.dropout = r.number_or("attention_dropout", 0.0);
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
