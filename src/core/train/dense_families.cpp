// The newer dense decoder families from their config.json. Field names and
// defaults are those of the transformers configuration classes; the layouts
// those of their modeling files:
// - phi3 (Phi3Config): fused qkv_proj (q + 2 kv rows) and gate_up_proj; the
//   same parameters as separate projections.
// - gemma2 / gemma3_text (Gemma2Config, Gemma3TextConfig): head_dim apart from
//   hidden / heads, four RMSNorms per layer (before and after attention and
//   MLP), tied embeddings, GeGLU (hidden_activation), local attention with a
//   sliding window on every other layer (Gemma 2) or five of six (Gemma 3,
//   sliding_window_pattern 6), logit soft-capping (Gemma 2: attention 50 and
//   final 30); Gemma 3 adds q_norm and k_norm over head_dim. "gemma3" (the
//   multimodal wrapper) is read from its text_config: the vision tower is not counted.
// - qwen3 (Qwen3Config): q_norm and k_norm over head_dim, head_dim from the config.
// - olmo2 (Olmo2Config): norms after attention and MLP, q_norm and k_norm over
//   the whole query and key widths.
// - gpt_neox (GPTNeoXConfig): one fused QKV projection with biases, LayerNorm
//   with bias, biased dense MLP, untied embed_out, parallel residual
//   (use_parallel_residual: attention and MLP both read the layer's input).
#include <cmath>
#include <cstdint>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/train/moe_model.hpp"

namespace tiletune {

std::string dense_family_types() { return "phi3, gemma2, gemma3, gemma3_text, qwen3, olmo2, gpt_neox"; }

namespace {

void read_llama_like(const config_reader& r, model_spec& m, bool tied_default) {
  read_llama_decoder(r, m, tied_default);
  const bool bias = r.boolean_or("attention_bias", false);
  m.qkv_bias = m.attn_out_bias = bias;
  m.hidden_act = r.string_or("hidden_act", "silu");
}

// The logits' soft cap, as transformers applies it: absent, the config class's default (Gemma2Config
// 30, Gemma3TextConfig none); null, none (the model skips it); otherwise cap * tanh(logits / cap), which
// a negative cap gives as its magnitude does and 0 makes a division by zero (every logit NaN): refused.
double final_logit_softcap(const config_reader& r, double absent) {
  if (!r.j.contains("final_logit_softcapping")) return absent;
  if (r.j["final_logit_softcapping"].is_null()) return 0.0;
  const double cap = r.number_or("final_logit_softcapping", absent);
  if (cap == 0 || !std::isfinite(cap))
    throw usage_error(fmt::format("{}: \"final_logit_softcapping\" {} divides the logits by itself (cap * "
                                  "tanh(logits / cap)): give a positive cap, or null for none",
                                  r.source, r.j["final_logit_softcapping"].dump()));
  return std::abs(cap);
}

void read_gemma(const std::string& type, const config_reader& r, model_spec& m) {
  read_llama_like(r, m, true);
  m.model_type = type;
  m.head_dim = r.at_most("head_dim", r.integer_or("head_dim", 256), max_head_dim);
  m.hidden_act = r.string_or("hidden_activation", r.string_or("hidden_act", "gelu_pytorch_tanh"));
  m.norms_per_layer = 4;
  // The sliding layers' window. Unlike Mistral's, Gemma's sliding layers are always built, and
  // transformers makes their mask from it whatever it is: null raises there
  // (create_sliding_window_causal_mask: "Could not find a `sliding_window` argument in the config, or
  // it is not set"), 0 masks every key (kv_idx > q_idx - 0), as for Mistral, where it is refused too.
  if (r.j.contains("sliding_window") && r.j["sliding_window"].is_null())
    throw usage_error(fmt::format("{}: \"sliding_window\" is null: {}'s sliding layers need a window (transformers "
                                  "builds their mask from it, and raises without one)",
                                  r.source, type));
  // Absent: the config class's default, 4096 for both (Gemma2Config, Gemma3TextConfig).
  m.sliding_window = r.positive_or("sliding_window", 4096);
  if (type == "gemma2") {
    m.sliding_layers = 0.5;
    m.final_logit_softcap = final_logit_softcap(r, 30.0);
  } else {
    m.qk_norm_params = 2 * m.head_dim;
    // Layer i slides unless (i + 1) % sliding_window_pattern is 0: a pattern of 0 is a ZeroDivisionError there.
    const std::int64_t pattern = r.positive_or("sliding_window_pattern", 6);
    m.sliding_layers = static_cast<double>(pattern - 1) / static_cast<double>(pattern);
    m.final_logit_softcap = final_logit_softcap(r, 0.0);
  }
}

// Gemma3TextConfig's defaults for the fields a config leaves out, as transformers fills them: the published
// multimodal checkpoints rely on them (google/gemma-3-4b-it's text_config gives its widths and layers, no
// vocabulary, heads nor head_dim), and had been refused for "vocab_size" missing.
nlohmann::json with_gemma3_text_defaults(const nlohmann::json& config) {
  nlohmann::json filled = config;
  const std::pair<const char*, std::int64_t> defaults[] = {
      {"vocab_size", 262208},      {"hidden_size", 2304}, {"intermediate_size", 9216}, {"num_hidden_layers", 26},
      {"num_attention_heads", 8},  {"num_key_value_heads", 4}, {"head_dim", 256}, {"max_position_embeddings", 131072}};
  for (const auto& [key, value] : defaults)
    if (!filled.contains(key)) filled[key] = value;
  return filled;
}

}  // namespace

bool read_dense_family(const std::string& type, const config_reader& r, model_spec& m) {
  if (type == "phi3") {
    read_llama_like(r, m, false);
    m.fused_qkv = true;
    m.fused_gate_up = true;
  } else if (type == "gemma2") {
    read_gemma(type, r, m);
  } else if (type == "gemma3_text") {
    const nlohmann::json filled = with_gemma3_text_defaults(r.j);
    read_gemma(type, config_reader{filled, r.source}, m);
  } else if (type == "gemma3") {
    if (!r.has("text_config") || !r.j["text_config"].is_object())
      throw usage_error(fmt::format("{}: a gemma3 config needs its \"text_config\" object", r.source));
    // Its fields named where they are: "config.json: text_config: \"head_dim\" ...".
    const std::string source = r.source + ": text_config";
    const nlohmann::json filled = with_gemma3_text_defaults(r.j["text_config"]);
    read_gemma("gemma3_text", config_reader{filled, source}, m);
    m.model_type = type;
  } else if (type == "qwen3") {
    read_llama_like(r, m, false);
    m.qk_norm_params = 2 * m.head_dim;
  } else if (type == "olmo2") {
    read_llama_like(r, m, false);
    m.qk_norm_params = m.q_size() + m.kv_size();
  } else if (type == "gpt_neox") {
    m.causal = true;
    m.vocab_size = r.integer("vocab_size");
    m.hidden_size = r.integer("hidden_size");
    m.num_layers = r.integer("num_hidden_layers");
    m.num_heads = m.num_kv_heads = r.integer("num_attention_heads");
    m.head_dim = m.num_heads ? m.hidden_size / m.num_heads : 0;
    check_heads_divide(m, r.source, "hidden_size", "num_attention_heads");
    m.intermediate_size = r.integer("intermediate_size");
    m.max_positions = r.positive_or("max_position_embeddings", 0);
    m.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
    m.qkv_bias = m.attn_out_bias = m.mlp_bias = m.layernorm_bias = r.boolean_or("attention_bias", true);
    m.mlp_bias = m.layernorm_bias = true;
    m.fused_qkv = true;
    m.parallel_residual = r.boolean_or("use_parallel_residual", true);
    m.hidden_act = r.string_or("hidden_act", "gelu");
    m.dropout = r.probability_or("attention_dropout", 0.0);
  } else {
    return false;
  }
  return true;
}

}  // namespace tiletune
