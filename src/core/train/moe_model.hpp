// Internal to src/core/train: the mixture-of-experts families and
// multi-head latent attention as model_spec reads and counts them.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/train/model_config_reader.hpp"
#include "core/train/model_spec.hpp"

namespace tiletune {

// "mixtral, qwen2_moe, qwen3_moe, olmoe, deepseek_v2, deepseek_v3"
std::string moe_model_types();
// Fills m from a config.json of one of those types; false for any other type.
bool read_moe_config(const std::string& type, const config_reader& r, model_spec& m);
// The routed experts (grouped: count = MoE layers x experts), the router and
// any shared expert, for the layers that are MoE.
void add_moe_mlp_tensors(const model_spec& m, std::vector<weight_tensor>& w);
// DeepSeek's q (or q_a/q_b), kv_a (compressed KV and the rotary key),
// kv_b and o projections with their two low-rank norms.
void add_mla_attention_tensors(const model_spec& m, std::vector<weight_tensor>& w);
// The newer dense families (dense_families.cpp): phi3, gemma2, gemma3,
// gemma3_text, qwen3, olmo2, gpt_neox.
std::string dense_family_types();
bool read_dense_family(const std::string& type, const config_reader& r, model_spec& m);

// The experts' and MLA's fields for the plan's JSON ("moe", "mla").
void add_moe_json(const model_spec& m, nlohmann::json& j);

}  // namespace tiletune
