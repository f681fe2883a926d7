// Mixture-of-experts and multi-head latent attention models from their
// Hugging Face config.json, and their weight tensors. Field names and
// defaults are those of the transformers configuration classes
// (MixtralConfig, Qwen2MoeConfig, Qwen3MoeConfig, OlmoeConfig,
// DeepseekV2Config, DeepseekV3Config) and module layouts those of their
// modeling files: per MoE layer a router (nn.Linear(hidden, experts, bias=False)),
// the experts' gate/up/down projections, and where the family has one a
// shared expert (Qwen2-MoE: with a sigmoid gate nn.Linear(hidden, 1)).
#include "core/train/moe_model.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

namespace tiletune {

std::string moe_model_types() { return "mixtral, qwen2_moe, qwen3_moe, olmoe, deepseek_v2, deepseek_v3"; }

namespace {

// The decoder fields every one of these families shares with Llama.
void read_decoder(const config_reader& r, model_spec& m) {
  read_llama_decoder(r, m, false);
  m.hidden_act = r.string_or("hidden_act", "silu");
  m.capacity_factor = r.number_or("capacity_factor", 0.0);
  if (m.capacity_factor < 0)
    throw usage_error(fmt::format("{}: \"capacity_factor\" must be at least 0", r.source));
  // Each expert's buffer is capacity_factor x tokens x top-k / experts rows: past the experts' count it
  // holds more than every token, and a factor of 1e30 made the rows a count past 64 bits.
  if (m.capacity_factor > static_cast<double>(max_experts))
    throw usage_error(fmt::format("{}: \"capacity_factor\" {} is larger than any model's (at most {})", r.source,
                                  r.j["capacity_factor"].dump(), max_experts));
}

// A mixture-of-experts type without experts is a config error (a dense DeepSeek, which leaves
// n_routed_experts out, is the one exception and does not come here).
void check_experts(const config_reader& r, const model_spec& m, const char* experts_key) {
  if (m.num_experts < 1)
    throw usage_error(fmt::format("{}: \"{}\" must be at least 1 for model_type \"{}\" (a mixture of experts)",
                                  r.source, experts_key, m.model_type));
  if (m.experts_per_token < 1 || m.experts_per_token > m.num_experts)
    throw usage_error(fmt::format("{}: \"num_experts_per_tok\" {} must be 1 to \"{}\" {}", r.source,
                                  m.experts_per_token, experts_key, m.num_experts));
}

// Qwen-MoE: layer i is sparse unless listed in mlp_only_layers, and only
// every decoder_sparse_step-th ((i + 1) % step == 0).
std::int64_t qwen_dense_layers(const config_reader& r, const model_spec& m) {
  const std::int64_t step = r.integer_or("decoder_sparse_step", 1);
  if (step < 1) throw usage_error(fmt::format("{}: \"decoder_sparse_step\" must be at least 1", r.source));
  std::set<std::int64_t> mlp_only;
  if (r.has("mlp_only_layers")) {
    if (!r.j["mlp_only_layers"].is_array())
      throw usage_error(fmt::format("{}: \"mlp_only_layers\" must be a list of layer indices", r.source));
    for (const auto& v : r.j["mlp_only_layers"]) {
      if (!v.is_number_integer())
        throw usage_error(fmt::format("{}: \"mlp_only_layers\" holds {}, not a layer index", r.source, v.dump()));
      mlp_only.insert(v.get<std::int64_t>());
    }
  }
  std::int64_t dense = 0;
  for (std::int64_t i = 0; i < m.num_layers; ++i)
    if (mlp_only.count(i) || (i + 1) % step != 0) ++dense;
  return dense;
}

void read_qwen_moe(const std::string& type, const config_reader& r, model_spec& m) {
  read_decoder(r, m);
  // Qwen2MoeConfig's defaults: 60 experts, 4 a token; Qwen3MoeConfig's: 128, 8.
  const bool qwen3 = type == "qwen3_moe";
  m.num_experts = r.integer_or("num_experts", qwen3 ? 128 : 60);
  m.experts_per_token = r.integer_or("num_experts_per_tok", qwen3 ? 8 : 4);
  m.expert_intermediate_size = r.integer("moe_intermediate_size");
  if (type == "qwen2_moe") {
    // Qwen2MoeAttention: q/k/v with bias; a shared expert behind a sigmoid gate.
    m.qkv_bias = true;
    m.shared_intermediate_size = r.at_most("shared_expert_intermediate_size",
                                           r.integer_or("shared_expert_intermediate_size", 0), max_intermediate_size);
    m.shared_expert_gate = m.shared_intermediate_size > 0;
  } else {
    // Qwen3MoeAttention: RMSNorm over each head of q and of k (head_dim weights each).
    m.qkv_bias = r.boolean_or("attention_bias", false);
    m.attn_out_bias = m.qkv_bias;
    m.qk_norm_params = 2 * m.head_dim;
  }
  m.dense_layers = qwen_dense_layers(r, m);
  check_experts(r, m, "num_experts");
}

void read_deepseek(const std::string& type, const config_reader& r, model_spec& m) {
  read_decoder(r, m);
  m.num_experts = r.integer_or("n_routed_experts", 0);
  m.experts_per_token = r.integer_or("num_experts_per_tok", m.num_experts > 0 ? 1 : 0);
  // DeepseekV2Config's default expert width is 1407, DeepseekV3Config's 2048 (not the dense MLP's).
  m.expert_intermediate_size = r.at_most(
      "moe_intermediate_size", r.integer_or("moe_intermediate_size", type == "deepseek_v3" ? 2048 : 1407),
      max_intermediate_size);
  // The shared experts are one MLP of n_shared_experts x moe_intermediate_size (DeepseekV3MoE): each
  // factor bounded before the product, the product as any MLP's width.
  const std::int64_t shared = r.at_most("n_shared_experts", r.integer_or("n_shared_experts", 0), max_experts);
  m.shared_intermediate_size = shared * m.expert_intermediate_size;
  if (m.shared_intermediate_size > max_intermediate_size)
    throw usage_error(fmt::format("{}: \"n_shared_experts\" {} x \"moe_intermediate_size\" {} is a shared MLP {} wide, "
                                  "larger than any model's (at most {})",
                                  r.source, shared, m.expert_intermediate_size, m.shared_intermediate_size,
                                  max_intermediate_size));
  // Layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0.
  const std::int64_t first = r.integer_or("first_k_dense_replace", 0), freq = r.integer_or("moe_layer_freq", 1);
  if (freq < 1) throw usage_error(fmt::format("{}: \"moe_layer_freq\" must be at least 1", r.source));
  std::int64_t sparse = 0;
  for (std::int64_t i = 0; i < m.num_layers; ++i) sparse += i >= first && i % freq == 0;
  m.dense_layers = m.num_experts > 0 ? m.num_layers - sparse : m.num_layers;
  if (m.num_experts == 0) m.dense_layers = 0, m.experts_per_token = 0;  // a dense DeepSeek
  // MLA: the keys and values of every head come from one compressed
  // vector; attention runs with num_heads heads of qk_nope + qk_rope
  // (keys, queries) and v_head_dim (values).
  // Each width bounded under its own key before a sum or product of it (the ranks as a hidden
  // size, the head widths as a head_dim): the file has no "head_dim" for a bound to name.
  m.q_lora_rank = r.at_most("q_lora_rank", r.integer_or("q_lora_rank", 0), max_hidden_size);
  m.kv_lora_rank = r.at_most("kv_lora_rank", r.integer("kv_lora_rank"), max_hidden_size);
  m.qk_rope_head_dim = r.at_most("qk_rope_head_dim", r.integer("qk_rope_head_dim"), max_head_dim);
  const std::int64_t nope = r.at_most("qk_nope_head_dim", r.integer("qk_nope_head_dim"), max_head_dim);
  m.head_dim = nope + m.qk_rope_head_dim;
  if (m.head_dim < 1 || m.head_dim > max_head_dim)
    throw usage_error(fmt::format("{}: \"qk_nope_head_dim\" {} + \"qk_rope_head_dim\" {}: the queries' and keys' "
                                  "heads would have {} dimensions (1 to {})",
                                  r.source, nope, m.qk_rope_head_dim, m.head_dim, max_head_dim));
  m.v_head_dim = r.at_most("v_head_dim", r.integer("v_head_dim"), max_head_dim);
  m.num_kv_heads = m.num_heads;
  m.qkv_bias = m.attn_out_bias = false;  // attention_bias is q/kv_a only in DeepSeek; off in every release
  if (m.kv_lora_rank < 1 || m.v_head_dim < 1)
    throw usage_error(fmt::format("{}: \"kv_lora_rank\" and \"v_head_dim\" must be at least 1", r.source));
  // transformers builds DeepSeek's MoE layers whenever n_routed_experts is set (a dense DeepSeek
  // leaves it null or out): a value of 0 would be a layer of no experts.
  if (r.has("n_routed_experts")) check_experts(r, m, "n_routed_experts");
}

}  // namespace

bool read_moe_config(const std::string& type, const config_reader& r, model_spec& m) {
  if (type == "mixtral") {
    read_decoder(r, m);
    m.num_experts = r.integer_or("num_local_experts", 8);
    m.experts_per_token = r.integer_or("num_experts_per_tok", 2);
    m.expert_intermediate_size = m.intermediate_size;  // every layer is MoE; no dense MLP
    check_experts(r, m, "num_local_experts");
    read_sliding_window(r, m);
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    read_qwen_moe(type, r, m);
  } else if (type == "olmoe") {
    read_decoder(r, m);
    m.num_experts = r.integer_or("num_experts", 64);
    m.experts_per_token = r.integer_or("num_experts_per_tok", 8);
    m.expert_intermediate_size = m.intermediate_size;
    // OlmoeAttention: q_norm over the whole query (heads x head_dim), k_norm
    // over the whole key (kv heads x head_dim).
    m.qk_norm_params = m.q_size() + m.kv_size();
    m.qkv_bias = m.attn_out_bias = r.boolean_or("attention_bias", false);
    check_experts(r, m, "num_experts");
  } else if (type == "deepseek_v2" || type == "deepseek_v3") {
    read_deepseek(type, r, m);
  } else {
    return false;
  }
  // Named by the file's own keys (model_spec's bounds name the fields every model has).
  const bool own_width = type != "mixtral" && type != "olmoe";
  const char* experts_key =
      type == "mixtral" ? "num_local_experts" : type.rfind("deepseek", 0) == 0 ? "n_routed_experts" : "num_experts";
  r.at_most(experts_key, m.num_experts, max_experts);
  if (own_width) r.at_most("moe_intermediate_size", m.expert_intermediate_size, max_intermediate_size);
  if (m.num_experts > 0 && m.expert_intermediate_size < 1)
    throw usage_error(fmt::format("{}: \"{}\" is {}: the experts' intermediate size must be at least 1", r.source,
                                  own_width ? "moe_intermediate_size" : "intermediate_size", m.expert_intermediate_size));
  return true;
}

void add_moe_mlp_tensors(const model_spec& m, std::vector<weight_tensor>& w) {
  const std::int64_t h = m.hidden_size, E = m.num_experts, layers = m.moe_layers();
  if (layers < 1) return;
  const double share = static_cast<double>(m.experts_per_token) / static_cast<double>(E);
  const std::int64_t Ie = m.expert_intermediate_size, Is = m.shared_intermediate_size;
  w.push_back({"layers.router", E, h, layers, true});
  for (auto [name, rows, cols] : {std::tuple{"layers.experts.gate_proj", Ie, h}, std::tuple{"layers.experts.up_proj", Ie, h},
                                  std::tuple{"layers.experts.down_proj", h, Ie}}) {
    weight_tensor t{name, rows, cols, layers * E, true};
    t.group = E;
    t.token_share = share;
    w.push_back(t);
  }
  if (Is > 0) {
    w.push_back({"layers.shared_expert.gate_proj", Is, h, layers, true});
    w.push_back({"layers.shared_expert.up_proj", Is, h, layers, true});
    w.push_back({"layers.shared_expert.down_proj", h, Is, layers, true});
    if (m.shared_expert_gate) w.push_back({"layers.shared_expert_gate", 1, h, layers, true});
  }
}

void add_mla_attention_tensors(const model_spec& m, std::vector<weight_tensor>& w) {
  const std::int64_t h = m.hidden_size, L = m.num_layers, H = m.num_heads;
  const std::int64_t nope = m.head_dim - m.qk_rope_head_dim;
  if (m.q_lora_rank > 0) {
    w.push_back({"layers.q_a_proj", m.q_lora_rank, h, L, true});
    w.push_back({"layers.q_a_norm", m.q_lora_rank, 1, L, false});
    w.push_back({"layers.q_b_proj", H * m.head_dim, m.q_lora_rank, L, true});
  } else {
    w.push_back({"layers.q_proj", H * m.head_dim, h, L, true});
  }
  w.push_back({"layers.kv_a_proj", m.kv_lora_rank + m.qk_rope_head_dim, h, L, true});
  w.push_back({"layers.kv_a_norm", m.kv_lora_rank, 1, L, false});
  w.push_back({"layers.kv_b_proj", H * (nope + m.v_head_dim), m.kv_lora_rank, L, true});
  w.push_back({"layers.o_proj", h, H * m.v_head_dim, L, true});
}

void add_moe_json(const model_spec& m, nlohmann::json& j) {
  if (m.is_moe())
    j["moe"] = {{"experts", m.num_experts},
                {"experts_per_token", m.experts_per_token},
                {"expert_intermediate_size", m.expert_intermediate_size},
                {"shared_intermediate_size", m.shared_intermediate_size},
                {"moe_layers", m.moe_layers()},
                {"dense_layers", m.dense_layers},
                {"capacity_factor", m.capacity_factor > 0 ? nlohmann::json(m.capacity_factor) : nlohmann::json(nullptr)},
                {"expert_parameters", expert_parameter_count(m)},
                {"active_parameters", active_parameter_count(m)}};
  if (m.is_mla())
    j["mla"] = {{"q_lora_rank", m.q_lora_rank},
                {"kv_lora_rank", m.kv_lora_rank},
                {"qk_head_dim", m.head_dim},
                {"qk_rope_head_dim", m.qk_rope_head_dim},
                {"v_head_dim", m.v_head_dim}};
}

}  // namespace tiletune
