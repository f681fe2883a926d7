// Internal to src/core/train: what LoRA adds to a training step beside the
// frozen base (lora_step.cpp): the adapters' GEMMs and their memory-bound path.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/train/training_plan.hpp"

namespace tiletune {

// True where peft runs the adapters in fp32: its adapters are fp32
// (get_peft_model's autocast_adapter_dtype upcasts 16-bit ones) and peft
// casts each adapted linear's input to the adapter's dtype, so without
// torch.autocast (pure bf16, fp32) the adapter GEMMs are fp32 GEMMs.
bool lora_adapters_run_fp32(const training_setup& s);

// The weights LoRA adapts: the linear layers of the blocks that --lora-targets names (all of
// them by default, "all-linear" as in the QLoRA paper; each expert's too where it is an nn.Linear).
bool lora_adapts(const training_setup& s, const weight_tensor& t);

// torchtitan's LoRAConverter with target_modules None (--lora-targets all-linear) converts every
// Linear, the LM head too, tied to the embedding or not: that adapter (vocab x hidden, once a step,
// outside the blocks: never recomputed, run a chunk at a time under the chunked loss); none elsewhere.
std::optional<weight_tensor> lora_head_adapter(const training_setup& s);

// Bytes of a LoRA adapter's element (its weights, gradients and states): 2 with --adapter-dtype
// bf16, else 4.
double adapter_element_bytes(const training_setup& s);

// Bytes of an optimizer state element: PyTorch keeps the states in the
// parameters' dtype, bf16 in pure bf16 training and fp32 otherwise, and
// for LoRA the adapters' (fp32 as peft keeps them, get_peft_model(autocast_adapter_dtype=True),
// or bf16 with --adapter-dtype bf16).
double optimizer_state_element_bytes(const training_setup& s);

// The six GEMMs of every adapter per step: A (tokens x r x in) and B (tokens
// x out x r) forward, B's data- and weight-gradient, A's data- and
// weight-gradient; A and B again in recompute.
void add_lora_gemms(const training_setup& s, std::int64_t tokens, bool checkpointing, std::vector<step_gemm>& out);

// Offline time of an adapter GEMM (one dimension the rank r): at most r/2
// FLOP per byte moved in 16 bits (r/4 in fp32), far below the H100's
// ridge (about 300 FLOP/B for bf16, 20 for fp32), so it is memory-bound:
// its operands' and result's bytes over the bandwidth the memory-bound
// kernels reach, or its FLOPs at the dtype's peak where that is longer. The
// library model's tiles (built for wide GEMMs) do not fit such shapes.
double thin_gemm_us(const gemm_problem& p, const device_spec& d, double bandwidth_gbs);

struct lora_path_cost {
  double bytes = 0;             // moved by the adapter path's memory-bound kernels per micro-step
  double forward_kernels = 0;   // their launches in one forward pass, the adapter GEMMs' included
  double backward_kernels = 0;  // and in the backward
};
lora_path_cost lora_path(const training_setup& s, std::int64_t tokens, bool checkpointing);

// Whose LoRA modules the step runs: peft's (transformers, Composer, DeepSpeed), torchtune's and
// torchtitan's LoRALinear, LitGPT's LoRALinear and LoRAQKVLinear where its own blocks are planned
// (layers_of; elsewhere its blocks are planned as transformers', and LoRA as peft's).
enum class lora_module { peft, torchtune, torchtitan, litgpt };
lora_module lora_module_of(const training_setup& s);
std::string_view to_string(lora_module m);

// Whether the adapter of t keeps a copy of its input of its own (a dropped-out or cast one) rather
// than the input itself, which the adapters of linears reading the same input then share.
bool lora_copies_input(const training_setup& s, const weight_tensor& t);

// The names peft adapts for the planned adapters (peft_config.cpp), as transformers names this
// model's modules: LoraConfig.target_modules, and target_parameters for the routed experts, which
// transformers keeps as 3D parameters (experts.gate_up_proj, experts.down_proj), not nn.Linear.
struct peft_targets {
  std::vector<std::string> modules, parameters;
  // A fused linear (GPT-2's c_attn, GPT-NeoX's query_key_value, Phi-3's qkv_proj or gate_up_proj)
  // of which the plan adapts some parts: peft adapts it whole.
  bool fused_wider = false;
  bool router = false;  // the plan adapts the MoE router, a bare parameter in transformers: no module to name
};
peft_targets peft_target_names(const training_setup& s);
// to_json's "peft": {"lora_config": {r, target_modules, lora_dropout[, target_parameters]},
// "get_peft_model": {autocast_adapter_dtype: the planned adapters fp32}, "adapter_dtype"}; null
// without LoRA. lora_alpha is left out: it scales the adapters' output, no memory or time.
nlohmann::json peft_json(const training_setup& s);

// The frameworks' own modules' path (lora_modules.cpp), where lora_path does not run peft's.
lora_path_cost own_lora_path(const training_setup& s, std::int64_t tokens, bool checkpointing);

// True for the q, k and v projections where LitGPT's LoRAQKVLinear adapts its one qkv linear:
// one lora_A (r rows for each adapted part) serves them all.
bool one_qkv_adapter(const training_setup& s, const weight_tensor& t);

// The whole qkv width where one_qkv_adapter holds for any part (its zero_pad, scale and add run at
// that width, q, k and v adapted or not), else 0.
double one_qkv_adapter_width(const training_setup& s);

}  // namespace tiletune
