// The peft settings of a LoRA plan (to_json's "peft"): LoraConfig's r, target_modules and
// lora_dropout, and get_peft_model's autocast_adapter_dtype, so that the emitted configs train the
// adapters planned rather than a full fine-tuning. Read from peft 5d602fd (2026-08-21):
// - tuners_utils.py check_target_module_exists: a list's name matches a module whose name is it or
//   ends with "." + it; target_parameters (_inject_parameters) likewise "module.parameter".
// - tuners_utils.py BaseTunerLayer._move_adapter_to_device_of_base_layer: the adapters take the base
//   layer's float dtype (bitsandbytes' Linear4bit: its compute_dtype); cast_adapter_dtype then, with
//   autocast_adapter_dtype=True (get_peft_model's default), upcasts bf16 and fp16 adapters to fp32.
//   So False keeps the adapters in the 16-bit base's dtype, True makes them fp32.
// - lora/layer.py ParamWrapper (target_parameters, transformers' 3D expert weights): lora_A
//   in x (r x experts), lora_B (r x experts) x out, one for gate_up_proj's gate and up together;
//   lora_dropout above 0 raises there.
// The module names are transformers' (5.x): GPT-2's Conv1D c_attn, c_proj, c_fc; GPT-NeoX's
// query_key_value, dense, dense_h_to_4h, dense_4h_to_h; BERT's and RoBERTa's query, key, value,
// attention.output.dense, intermediate.dense, output.dense; Phi-3's qkv_proj and gate_up_proj;
// DeepSeek's MLA q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj; the MoE families' experts as
// 3D parameters (experts.gate_up_proj, experts.down_proj) and routers as bare parameters (no
// nn.Linear); the rest the Llama names (q_proj ... down_proj).
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/train/lora_step.hpp"

namespace tiletune {

namespace {

void add_once(std::vector<std::string>& names, const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

bool adapts_named(const training_setup& s, const std::string& name) {
  for (const weight_tensor& t : weight_tensors(s.model))
    if (t.name == name) return lora_adapts(s, t);
  return false;
}

}  // namespace

peft_targets peft_target_names(const training_setup& s) {
  peft_targets out;
  if (s.lora_rank <= 0) return out;
  const model_spec& m = s.model;
  const std::string& type = m.model_type;
  const bool gpt2 = type == "gpt2", neox = type == "gpt_neox", bert = type == "bert" || type == "roberta";
  const bool phi3 = type == "phi3";
  unsigned fused_qkv = 0, fused_gate_up = 0;  // the parts adapted of a fused linear
  for (const weight_tensor& t : weight_tensors(m)) {
    if (!lora_adapts(s, t)) continue;
    std::string n = t.name.substr(7);  // without "layers."
    if (n.starts_with("experts.")) {  // routed experts: transformers' 3D parameters
      add_once(out.parameters, n == "experts.down_proj" ? "experts.down_proj" : "experts.gate_up_proj");
      continue;
    }
    if (n == "router") {
      out.router = true;
      continue;
    }
    if (n.starts_with("shared_expert.")) n = n.substr(14);  // Qwen2-MoE's shared_expert, DeepSeek's shared_experts
    const bool qkv = n == "q_proj" || n == "k_proj" || n == "v_proj";
    if (qkv && (gpt2 || neox || phi3)) {
      fused_qkv |= n == "q_proj" ? 1u : n == "k_proj" ? 2u : 4u;
      add_once(out.modules, gpt2 ? "c_attn" : neox ? "query_key_value" : "qkv_proj");
    } else if ((n == "gate_proj" || n == "up_proj") && phi3) {
      fused_gate_up |= n == "gate_proj" ? 1u : 2u;
      add_once(out.modules, "gate_up_proj");
    } else if (gpt2 || neox) {
      if (n == "o_proj") add_once(out.modules, gpt2 ? "attn.c_proj" : "attention.dense");
      if (n == "up_proj") add_once(out.modules, gpt2 ? "c_fc" : "dense_h_to_4h");
      if (n == "down_proj") add_once(out.modules, gpt2 ? "mlp.c_proj" : "dense_4h_to_h");
    } else if (bert) {
      if (qkv) add_once(out.modules, n == "q_proj" ? "query" : n == "k_proj" ? "key" : "value");
      if (n == "o_proj") add_once(out.modules, "attention.output.dense");
      if (n == "up_proj") add_once(out.modules, "intermediate.dense");
      // "output.dense" names the attention's output too: alone, each layer's own.
      if (n == "down_proj") {
        if (adapts_named(s, "layers.o_proj")) {
          add_once(out.modules, "output.dense");
        } else {
          for (std::int64_t i = 0; i < m.num_layers; ++i) add_once(out.modules, fmt::format("layer.{}.output.dense", i));
        }
      }
    } else {
      add_once(out.modules, n == "kv_a_proj" ? "kv_a_proj_with_mqa" : n);
    }
  }
  if (lora_head_adapter(s)) add_once(out.modules, "lm_head");  // torchtitan's LoRAConverter adapts it too
  out.fused_wider = (fused_qkv != 0 && fused_qkv != 7u) || (fused_gate_up != 0 && fused_gate_up != 3u);
  return out;
}

nlohmann::json peft_json(const training_setup& s) {
  if (s.lora_rank <= 0) return nullptr;
  const peft_targets t = peft_target_names(s);
  nlohmann::json lora = {{"r", s.lora_rank}, {"target_modules", t.modules}, {"lora_dropout", s.lora_dropout}};
  if (!t.parameters.empty()) lora["target_parameters"] = t.parameters;
  // False keeps the adapters in the 16-bit base's dtype (bf16, as planned); peft's default True upcasts
  // them to fp32, the plan's fp32 adapters.
  return {{"lora_config", lora},
          {"get_peft_model", {{"autocast_adapter_dtype", s.adapters == adapter_dtype::fp32}}},
          {"adapter_dtype", to_string(s.adapters)}};
}

}  // namespace tiletune
