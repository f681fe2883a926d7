// The notes on the configs a plan emits (hf_training_args, model_load, deepspeed: training_plan_json.cpp):
// what of the recommendation they run and what they do not. The JSON and the text output both carry them.
#include "core/train/training_plan.hpp"

#include <fmt/format.h>

#include "core/train/lora_step.hpp"
#include "core/train/moe_parallel.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

namespace {

// --attention eager under a framework that builds its own model: what its attention is instead, and
// what comes nearest (the sources named in training_framework.cpp).
std::string own_model_eager_note(const training_setup& s) {
  const training_framework f = s.framework;
  const char* attention = f == training_framework::fsdp2 ? "SDPA, FlexAttention or varlen (models/common/attention.py)"
                          : f == training_framework::torchtune ? "SDPA (flex attention for packed samples)"
                          : f == training_framework::litgpt    ? "F.scaled_dot_product_attention"
                                                               : "Transformer Engine's (attention_backend auto)";
  const char* nearest = f == training_framework::megatron
                            ? "the nearest is --attention-backend local, Megatron-LM's unfused core attention, which "
                              "keeps the scores as eager attention does but is not the ops counted here"
                            : "it has no eager attention: plan it with --attention flash";
  return fmt::format("--attention eager: {} builds its own model, not transformers' (model_load's attn_implementation "
                     "is an argument of transformers' from_pretrained, so it is not emitted): its attention is {}, "
                     "while the plan counts transformers' modules with their eager attention; {}",
                     to_string(f), attention, nearest);
}

// What the peft object (peft_config.cpp) runs of the planned adapters, and what it leaves to the user.
std::vector<std::string> peft_notes(const training_setup& s) {
  if (s.lora_rank <= 0) return {};
  std::vector<std::string> notes;
  const peft_targets t = peft_target_names(s);
  const lora_module mod = lora_module_of(s);
  std::string how;
  if (mod != lora_module::peft)
    how = fmt::format("--framework {} runs its own LoRA modules ({}), not peft's: the peft object says the planned "
                      "adapters in peft's terms, for a transformers model; ",
                      to_string(s.framework), to_string(mod));
  notes.push_back(fmt::format(
      "{}peft: get_peft_model(model, LoraConfig(**peft.lora_config), {}) {}; target_modules are transformers' names of "
      "the linears planned (--lora-targets {}). lora_alpha is left out: it scales the adapters' output (alpha / r) and "
      "changes neither memory nor time; set your own (peft's default 8)",
      how, s.adapters == adapter_dtype::bf16 ? "autocast_adapter_dtype=False" : "autocast_adapter_dtype=True",
      s.adapters == adapter_dtype::bf16
          ? "keeps the adapters in the 16-bit base's bf16, as planned; without that argument peft's default (True) "
            "upcasts them to fp32, 4 bytes a weight, gradient and optimizer state instead of 2, which this plan did not "
            "count (--adapter-dtype fp32 plans it)"
          : "keeps the adapters in fp32 (peft's default, which upcasts 16-bit ones), as planned",
      lora_targets_name(s.lora_targets)));
  if (t.fused_wider)
    notes.push_back(fmt::format(
        "peft adapts a fused linear whole ({}): the plan adapts only the parts --lora-targets {} names, so peft's "
        "adapters are wider (more parameters, memory and time) than planned; --lora-targets naming all of its parts "
        "plans what peft runs",
        s.model.model_type == "phi3"   ? "Phi-3's qkv_proj, gate_up_proj"
        : s.model.model_type == "gpt2" ? "GPT-2's c_attn"
                                       : "GPT-NeoX's query_key_value",
        lora_targets_name(s.lora_targets)));
  if (!t.parameters.empty())
    notes.push_back(fmt::format(
        "transformers keeps each MoE layer's routed experts as 3D parameters (experts.gate_up_proj, experts.down_proj), "
        "which no target_modules name: peft adapts them through target_parameters (experimental), one adapter a "
        "parameter of rank r x experts, gate and up sharing one lora_A, not the separate per-expert gate, up and down "
        "adapters planned{}",
        s.lora_dropout > 0 ? "; and peft refuses lora_dropout above 0 there (its ParamWrapper): plan --lora-dropout 0"
                           : ""));
  if (t.router)
    notes.push_back("the plan adapts each MoE router too (--lora-targets all-linear), which transformers keeps as a bare "
                    "parameter, no nn.Linear: target_modules cannot name it and peft leaves it frozen (its adapter is "
                    "r x (experts + hidden) a layer, little memory or time)");
  return notes;
}

}  // namespace

std::vector<std::string> emitted_config_notes(const batch_plan& plan) {
  if (!plan.recommended) return {};
  const training_setup& s = plan.setup;
  const batch_candidate& r = plan.candidates[*plan.recommended];
  std::vector<std::string> notes;
  // With tensor, pipeline or context parallelism not every GPU is a data-parallel rank: no DeepSpeed config.
  const bool model_parallel = data_parallel_degree(s) < s.world_size;
  const int experts = expert_parallel_degree(s);
  const bool deepspeed_config = !model_parallel && experts == 1 && s.prec != precision::bf16;
  if (model_parallel)
    notes.push_back(fmt::format(
        "hf_training_args describes the data parallelism only ({} ranks of the {} GPUs): the Trainer has no "
        "Megatron tensor, pipeline or context parallelism of its own (Megatron-LM: --tensor-model-parallel-size {} "
        "--pipeline-model-parallel-size {} --context-parallel-size {}); no DeepSpeed config, as DeepSpeed under the "
        "Trainer would count every GPU as a data-parallel rank and refuse its train_batch_size",
        data_parallel_degree(s), s.world_size, s.tensor_parallel, s.pipeline_parallel, s.context_parallel));
  // Expert parallelism: the Trainer splits no experts, and DeepSpeed only its own deepspeed.moe layers'.
  if (experts > 1)
    notes.push_back(fmt::format(
        "hf_training_args describe no expert parallelism: each of the {} ranks would hold every expert, where the "
        "plan holds 1/{} of them a GPU (--expert-parallel {}: torchtitan's expert_parallel_degree, Megatron-LM's "
        "--expert-model-parallel-size {}); no DeepSpeed config, as its ZeRO would shard every expert over all the "
        "ranks and its expert parallelism runs only its own deepspeed.moe layers, which transformers' MoE blocks are "
        "not",
        data_parallel_degree(s), experts, experts, experts));
  for (std::string& n : peft_notes(s)) notes.push_back(std::move(n));
  // The other frameworks read neither config: they say the plan in the Trainer's and DeepSpeed's terms.
  if (s.framework != training_framework::hf && s.framework != training_framework::deepspeed)
    notes.push_back(fmt::format(
        "--framework {} reads neither hf_training_args nor deepspeed: they say the recommendation in the Trainer's "
        "and DeepSpeed's terms, and the Trainer would not run all of it as planned (its gradient_checkpointing wraps "
        "every layer, its loss is not chunked); set {}'s own config to the recommendation",
        to_string(s.framework), to_string(s.framework)));
  if (s.attention == attention_impl::eager && !loads_with_transformers(s.framework))
    notes.push_back(own_model_eager_note(s));
  // hf and deepspeed run the Trainer these arguments are for: what of the loss they do not run.
  const bool trainer = s.framework == training_framework::hf || s.framework == training_framework::deepspeed;
  if (trainer && s.loss == loss_impl::chunked)
    notes.push_back(fmt::format(
        "--loss chunked: hf_training_args do not run it: the Trainer has no argument for a chunked loss and computes "
        "transformers' loss over every logit, upcast to fp32, which micro-batch {} was not planned with; run "
        "torchtune's LinearCrossEntropyLoss in your own loop, or plan with --loss fused (Liger's, use_liger_kernel) "
        "or --loss eager",
        r.micro_batch));
  if (trainer && s.loss == loss_impl::fused)
    notes.push_back(
        "--loss fused: hf_training_args run Liger's fused linear cross-entropy (use_liger_kernel, its other kernels "
        "off in liger_kernel_config): it needs the liger-kernel package, and patches only the model types Liger "
        "knows (Llama, Mistral, Qwen, Gemma and others); on another the Trainer computes transformers' loss over "
        "every logit");
  // hf at stage 0 plans PyTorch's AMP; the DeepSpeed config runs DeepSpeed's 16-bit mode (zero_buffers.hpp).
  if (deepspeed_config && s.framework == training_framework::hf && s.zero_stage == 0 && is_mixed(s.prec))
    notes.push_back(
        "the DeepSpeed config at stage 0 runs DeepSpeed's 16-bit mode, not this plan's PyTorch AMP: a 16-bit model "
        "with fp32 master weights and fp32 gradients at the step (20 bytes a parameter at its step with AdamW, not "
        "16); plan it as framework deepspeed");
  // DeepSpeed's engine all-reduces after backward at stage 0, whatever overlap_comm says.
  if (deepspeed_config && s.zero_stage == 0 && s.overlap_comm && s.world_size > 1)
    notes.push_back(
        "the DeepSpeed config runs ZeRO stage 0, whose engine all-reduces the gradients after backward: this plan "
        "overlaps them with backward (PyTorch DDP's buckets); for DeepSpeed at stage 0 plan with --overlap-comm off");
  if (!deepspeed_config && !model_parallel && experts == 1)
    notes.push_back(
        "no DeepSpeed config: DeepSpeed's bf16 mode keeps fp32 master weights and fp32 optimizer states, which is "
        "--precision bf16-mixed's memory, not this plan's; plan with bf16-mixed for DeepSpeed");
  return notes;
}

}  // namespace tiletune
