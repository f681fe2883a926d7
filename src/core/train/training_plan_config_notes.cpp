// The notes on the configs a plan emits (hf_training_args, model_load, deepspeed: training_plan_json.cpp):
// what of the recommendation they run and what they do not. The JSON and the text output both carry them.
#include "core/train/training_plan.hpp"

#include <fmt/format.h>

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

}  // namespace

std::vector<std::string> emitted_config_notes(const batch_plan& plan) {
  if (!plan.recommended) return {};
  const training_setup& s = plan.setup;
  const batch_candidate& r = plan.candidates[*plan.recommended];
  std::vector<std::string> notes;
  // With tensor, pipeline or context parallelism not every GPU is a data-parallel rank: no DeepSpeed config.
  const bool model_parallel = data_parallel_degree(s) < s.world_size;
  const bool deepspeed_config = !model_parallel && s.prec != precision::bf16;
  if (model_parallel)
    notes.push_back(fmt::format(
        "hf_training_args describes the data parallelism only ({} ranks of the {} GPUs): the Trainer has no "
        "Megatron tensor, pipeline or context parallelism of its own (Megatron-LM: --tensor-model-parallel-size {} "
        "--pipeline-model-parallel-size {} --context-parallel-size {}); no DeepSpeed config, as DeepSpeed under the "
        "Trainer would count every GPU as a data-parallel rank and refuse its train_batch_size",
        data_parallel_degree(s), s.world_size, s.tensor_parallel, s.pipeline_parallel, s.context_parallel));
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
  if (!deepspeed_config && !model_parallel)
    notes.push_back(
        "no DeepSpeed config: DeepSpeed's bf16 mode keeps fp32 master weights and fp32 optimizer states, which is "
        "--precision bf16-mixed's memory, not this plan's; plan with bf16-mixed for DeepSpeed");
  return notes;
}

}  // namespace tiletune
