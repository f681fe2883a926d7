#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tiletune {

// A transformer as far as its parameter count, activations and GEMMs go.
struct model_spec {
  std::string name;
  std::string model_type;  // llama, mistral, qwen2, gemma, gpt2, bert, roberta, the MoE families
  bool causal = true;      // decoder (causal LM) or encoder (masked LM)
  std::int64_t vocab_size = 0;
  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;  // GQA; equal to num_heads without it
  std::int64_t head_dim = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t max_positions = 0;
  std::int64_t learned_positions = 0;  // rows of a learned position table (0 with rotary)
  std::int64_t token_types = 0;        // BERT's segment embeddings
  bool tied_embeddings = false;
  bool gated_mlp = false;      // SwiGLU/GeGLU: gate, up and down projections
  bool qkv_bias = false;
  bool attn_out_bias = false;
  bool mlp_bias = false;
  bool layernorm_bias = false;  // LayerNorm (weight and bias) or RMSNorm (weight)
  bool embedding_norm = false;  // BERT's LayerNorm after the embeddings
  bool pooler = false;          // BERT's pooler (hidden x hidden + bias)
  double dropout = 0;           // >0: dropout masks are kept for backward
  // transformers' ACT2FN name: "gelu_new" (GPT-2) is a Python tanh formula of
  // 9 elementwise ops; "gelu", "gelu_pytorch_tanh", "silu" are one fused kernel.
  std::string hidden_act = "silu";
  bool fused_qkv = false;  // one QKV projection (GPT-2's c_attn) rather than q, k, v
  bool fused_gate_up = false;  // one gate_up_proj (Phi-3) rather than gate and up

  // Mixture of experts (moe_model.cpp); num_experts 0: a dense model.
  std::int64_t num_experts = 0;              // routed experts per MoE layer
  std::int64_t experts_per_token = 0;        // top-k
  std::int64_t expert_intermediate_size = 0;
  std::int64_t shared_intermediate_size = 0;  // always-on shared expert(s) (Qwen2-MoE, DeepSeek), 0: none
  bool shared_expert_gate = false;            // Qwen2-MoE's sigmoid gate (1 x hidden) on the shared expert
  std::int64_t dense_layers = 0;              // layers with a dense MLP of intermediate_size (DeepSeek's first_k_dense_replace)
  double capacity_factor = 0;                 // > 0: each expert takes at most cf x its average tokens, padded to it
  // Multi-head latent attention (DeepSeek-V2/V3), when kv_lora_rank > 0:
  // head_dim is qk_nope_head_dim + qk_rope_head_dim, v_head_dim the values'.
  std::int64_t norms_per_layer = 2;  // Gemma 2/3: 4 (pre and post norms around attention and MLP)
  bool parallel_residual = false;   // GPT-NeoX: attention and MLP both read the layer's input
  double final_logit_softcap = 0;   // Gemma 2: logits = cap * tanh(logits / cap)
  std::int64_t sliding_window = 0;  // local attention window of some layers (Gemma 2/3)
  double sliding_layers = 0;        // share of the layers with the window
  std::int64_t qk_norm_params = 0;  // per layer: RMSNorm weights on q and k (Qwen3: 2 x head_dim; OLMoE: q and k widths)
  std::int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_rope_head_dim = 0, v_head_dim = 0;

  std::int64_t q_size() const { return num_heads * head_dim; }
  std::int64_t kv_size() const { return num_kv_heads * head_dim; }
  std::int64_t v_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
  bool is_moe() const { return num_experts > 0; }
  bool is_mla() const { return kv_lora_rank > 0; }
  std::int64_t moe_layers() const { return is_moe() ? num_layers - dense_layers : 0; }
};

// One weight tensor: the linear layers are what the GEMMs and LoRA act on.
struct weight_tensor {
  std::string name;  // "layers.q_proj"
  std::int64_t rows = 0, cols = 0;  // cols = 1 for a vector
  std::int64_t count = 1;           // how many layers have it
  bool linear = false;              // a GEMM weight (in_features = cols, out_features = rows)
  // A routed expert's weight: `group` experts per layer (count = layers x
  // group), each seeing `token_share` (top-k / experts) of the tokens.
  std::int64_t group = 1;
  double token_share = 1;
  bool routed() const { return group > 1 || token_share < 1; }
  std::int64_t parameters() const { return rows * cols * count; }
};

std::vector<weight_tensor> weight_tensors(const model_spec& m);
std::int64_t parameter_count(const model_spec& m);
// The parameters one token's forward uses: routed experts at top-k / experts
// (Mixtral-8x7B: 12.9 B of 46.7 B), everything else whole, embeddings included.
std::int64_t active_parameter_count(const model_spec& m);
// The routed experts' parameters (what expert parallelism splits).
std::int64_t expert_parameter_count(const model_spec& m);

// The presets --model accepts.
const std::vector<model_spec>& model_presets();
// The preset of that name, in any case (GPT2 is gpt2, as --gpu H100-SXM is h100-sxm); null if none.
const model_spec* find_model_preset(std::string_view name);
// A preset name, or a path to a Hugging Face config.json. Throws usage_error
// naming an unknown preset, an unsupported model_type (with the supported
// ones), a missing field, or where a malformed file breaks.
model_spec load_model(std::string_view name_or_path);
model_spec model_from_hf_config(const nlohmann::json& config, const std::string& name);
// Whether the activations the plan counts are what transformers keeps for m's activation: one
// fused op (gelu, silu, relu, ...) keeps one tensor, and GPT-2's MLP counts "gelu_new"'s Python
// ops; the other Python formulas of ACT2FN (quick_gelu, gelu_fast, relu2, ...) keep more.
bool activation_is_modelled(const model_spec& m);

nlohmann::json to_json(const model_spec& m);

}  // namespace tiletune
