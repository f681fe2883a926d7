// The training frameworks' defaults (`batch --framework`, issue 37), each item with where it was
// read. Sources, read in 2026 at the commits named (each framework's newest stored snapshot):
//   transformers + peft (hf): today's plan, unchanged (docs/batch.md: Memory, LoRA).
//   torchtitan b5bcd76 (2026-08-21), https://github.com/pytorch/torchtitan/blob/b5bcd76c66d0acb1a08b176d9639425bc55e0b2a/
//     torchtitan/config/configs.py, torchtitan/trainer.py, torchtitan/components/{loss,lora}.py,
//     torchtitan/models/llama3/config_registry.py.
//   DeepSpeed: deepspeed/runtime/zero/config.py (DeepSpeedZeroConfig.stage = 0),
//     deepspeed/runtime/constants.py (BFLOAT16_ENABLED_DEFAULT = False; fp16 off unless enabled).
//   Megatron-LM d98e8a6 (2026-08-22), https://github.com/NVIDIA/Megatron-LM/blob/d98e8a64ddf34856e74b24714e3bedb2f5a39553/
//     megatron/core/model_parallel_config.py, megatron/core/transformer/transformer_config.py,
//     megatron/core/tensor_parallel/cross_entropy.py, megatron/training/arguments.py (--overlap-grad-reduce
//     store_true), megatron/core/distributed/distributed_data_parallel_config.py (overlap_grad_reduce False).
//   DeepSpeed edaa722 (2026-08-22): deepspeed/runtime/zero/config.py (overlap_comm_valid: None becomes
//     stage == 3), deepspeed/runtime/engine.py (_backward_epilogue: allreduce_gradients after backward).
//   torchtune bd2a0fc (2026-04-23), https://github.com/pytorch/torchtune/blob/bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1/
//     recipes/configs/llama3_1/8B_{lora_single_device,lora,full,full_single_device}.yaml,
//     recipes/lora_finetune_single_device.py (docstring: fp32 and bf16 only, bf16 falling back to fp32).
//   Composer: https://docs.mosaicml.com/projects/composer/en/stable/notes/numerics.html (amp_fp16 the GPU
//     default), .../notes/distributed_training.html (PyTorch DDP the default), composer.core.Precision
//     (FP32, AMP_FP16, AMP_BF16, AMP_FP8: no pure bf16).
//   LitGPT 2685705 (2026-06-29), https://github.com/Lightning-AI/litgpt/blob/26857050fe3ff627cd714fe92f5838f51a3d5efa/
//     litgpt/finetune/{lora,full}.py, litgpt/utils.py (get_default_supported_precision, chunked_cross_entropy).
// Not modelled: torch.compile, which no framework here enables by default (torchtitan CompileConfig.enable
// False, torchtune and LitGPT compile False): docs/batch.md#frameworks says why --compile is left out.
#include "core/train/training_framework.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/moe_parallel.hpp"
#include "core/train/training_precision.hpp"
#include "core/train/zero_buffers.hpp"

namespace tiletune {

namespace {

const std::pair<training_framework, const char*> framework_names[] = {
    {training_framework::hf, "hf"},           {training_framework::fsdp2, "fsdp2"},
    {training_framework::deepspeed, "deepspeed"}, {training_framework::megatron, "megatron"},
    {training_framework::torchtune, "torchtune"}, {training_framework::composer, "composer"},
    {training_framework::litgpt, "litgpt"}};

// The flags a framework sets, in the order they are applied (the adapter dtype follows the precision,
// the overlap of the exchange the ZeRO stage).
const char* const framework_flags[] = {"--precision",    "--attention",     "--loss",         "--checkpointing",
                                       "--zero",         "--lora-targets",  "--adapter-dtype", "--lora-dropout",
                                       "--overlap-comm", "--grad-clip",   "--expert-parallel"};

std::string tiletune_default(const std::string& flag, bool gpu_has_bf16, const training_setup& s) {
  if (flag == "--precision") return gpu_has_bf16 ? "bf16-mixed" : "fp16-mixed";
  if (flag == "--attention") return "flash";
  if (flag == "--loss") return "eager";
  if (flag == "--checkpointing") return "auto";
  if (flag == "--zero" || flag == "--lora-dropout") return "0";
  if (flag == "--overlap-comm") return "on";  // PyTorch DDP's bucketed all-reduce, FSDP's prefetch
  if (flag == "--expert-parallel") return "";  // expert_parallel_degree's default, 1 (moe_parallel.hpp)
  // The Trainer's max_grad_norm 1.0; a step inside backward cannot clip (no global norm yet).
  if (flag == "--grad-clip") return s.optimizer_in_backward ? "off" : "on";
  if (flag == "--lora-targets") return "all-linear";
  // --adapter-dtype: peft's fp32; QLoRA's bf16 adapters on a bf16 base (the QLoRA paper's setup).
  const bool bf16_base = s.prec == precision::bf16 || s.prec == precision::bf16_mixed;
  return s.quantize == quantize_kind::nf4 && bf16_base ? "bf16" : "fp32";
}

// Gradient clipping by the global norm, as the framework's default sets it; never with the step in
// backward, which runs before the norm is known (torchtune refuses the two together).
framework_setting clipping(const training_setup& s, bool on, const char* how) {
  if (s.optimizer_in_backward) return {"--grad-clip", "off", "the optimizer steps in backward: nothing to clip by"};
  return {"--grad-clip", on ? "on" : "off", how};
}

// FSDP (ZeRO-3 sharding) over every GPU where there are several (how: `how`); on one GPU nothing is sharded.
framework_setting sharded(const training_setup& s, const char* how) {
  if (s.world_size > 1) return {"--zero", "3", how};
  return {"--zero", "0", "one GPU: nothing to shard"};
}

// Whether the plan runs the framework's own modules (layers_of), and what they do that transformers' do not.
framework_note own_modules_note(const training_setup& s, layer_impl own, const char* who, const std::string& what) {
  if (layers_of(s) == own)
    return {"", fmt::format("{} runs its own modules ({}): the blocks keep and move what those do, not what "
                            "transformers' do; read from the sources, not traced",
                            who, what)};
  return {"", fmt::format("{}'s own modules are modelled for dense Llama-style blocks{} with flash attention; {}'s are "
                          "planned as transformers' eager ones",
                          who, own == layer_impl::torchtitan ? " and its Qwen3-MoE" : "", s.model.name)};
}

framework_bundle torchtitan(const training_setup& s) {
  framework_bundle b;
  b.settings = {
      {"--precision", "bf16-mixed", "TrainingConfig.mixed_precision_param bfloat16, mixed_precision_reduce float32"},
      {"--attention", "flash", "F.scaled_dot_product_attention"},
      // ChunkedLossWrapper(num_chunks=8) in every llama3 config of config_registry.py.
      {"--loss", "chunked", "ChunkedLossWrapper, 8 chunks, in its Llama 3 configs"},
      // Trainer.Config.activation_checkpoint defaults to SelectiveAC: per op, every second mm recomputed.
      {"--checkpointing", "selective", "Trainer.Config.activation_checkpoint SelectiveAC, per op"},
      // llama3/parallelize.py: "Always run apply_fsdp_to_decoder -- with shard_degree=1 it is a no-op for
      // the all-gather but still installs the MixedPrecisionPolicy".
      // get_fsdp_reshard_after_forward_policy("default", pp_enabled): no resharding after forward
      // under pipeline parallelism (FSDP's stage 2).
      s.pipeline_parallel > 1
          ? framework_setting{"--zero", "2",
                              "fsdp_reshard_after_forward \"default\": not resharded after forward under pipeline "
                              "parallelism"}
      : s.world_size > 1
          ? framework_setting{"--zero", "3", "ParallelismConfig.data_parallel_shard_degree -1: FSDP2 over every GPU"}
          : framework_setting{"--zero", "3", "one GPU: fully_shard still runs, for its MixedPrecisionPolicy"},
      clipping(s, true, "max_norm 1.0: dist_utils.clip_grad_norm_ before each step")};
  if (s.model.is_moe())  // its dispatcher then LocalTokenDispatcher, the experts sharded by FSDP with the rest
    b.settings.push_back({"--expert-parallel", "1", "ParallelismConfig.expert_parallel_degree 1"});
  if (s.lora_rank > 0)  // LoRAConverter: target_modules None converts every Linear; adapters in the params' fp32.
    b.settings.insert(b.settings.end(), {{"--lora-targets", "all-linear", "LoRAConverter target_modules None"},
                                         s.prec == precision::bf16
                                             ? framework_setting{"--adapter-dtype", "bf16", "training.dtype bfloat16"}
                                             : framework_setting{"--adapter-dtype", "fp32",
                                                                 "fp32 parameters, cast by the mixed-precision policy"}});
  // fp32: its SDPA backends (cuDNN, flash, math) leave the math kernel (attention_kernel_of).
  const std::string sdpa = s.prec == precision::fp32 ? "SDPA with enable_gqa, in fp32 its math kernel (its backends "
                                                        "cuDNN, flash and math: neither fused one takes fp32), which "
                                                        "keeps the s x s probabilities"
                                                      : "SDPA with enable_gqa";
  b.notes.push_back(own_modules_note(
      s, layer_impl::torchtitan, "torchtitan",
      s.model.is_moe() ? "torch.nn.RMSNorm, one fused kernel keeping its input and rstd; complex rotary; " + sdpa +
                             "; its MoE: an fp32 router, the routed rows sorted by expert (argsort), "
                             "torch._grouped_mm in bf16, the scores applied in fp32 at the combine, which keeps the "
                             "experts' outputs in fp32, and a deterministic scatter_add"
                       : "torch.nn.RMSNorm, one fused kernel keeping its input and rstd; complex rotary; " + sdpa));
  b.notes.push_back({"--loss", "torchtitan's ChunkedLossWrapper runs each chunk's backward at once: no logit outlives "
                               "its chunk, and an fp32 buffer of the hidden states' gradient is held through the loop "
                               "(components/loss.py, by our reading, not traced)"});
  return b;
}

framework_bundle deepspeed(const training_setup& s) {
  framework_bundle b;
  // overlap_comm None becomes stage == 3 (DeepSpeedZeroConfig.overlap_comm_valid, edaa722 2026-08-22);
  // at stage 0 the engine all-reduces the gradients after backward (engine.py, _backward_epilogue).
  b.settings = {{"--zero", "0", "DeepSpeedZeroConfig.stage 0"},
                {"--overlap-comm", s.zero_stage == 3 ? "on" : "off",
                 s.zero_stage == 3 ? "DeepSpeedZeroConfig.overlap_comm: on at stage 3"
                                   : "DeepSpeedZeroConfig.overlap_comm: off below stage 3"},
                clipping(s, true, "gradient_clipping 1.0, GRADIENT_CLIPPING_DEFAULT")};
  b.notes.push_back({"", "DeepSpeed trains fp32 unless its config enables bf16 or fp16 (BFLOAT16_ENABLED_DEFAULT "
                         "False): the plan keeps tiletune's precision, and the DeepSpeed config it writes enables it"});
  b.notes.push_back({"", "DeepSpeed wraps the model it is given: attention, loss, checkpointing and LoRA are the "
                         "transformers and peft model's, as with hf"});
  return b;
}

framework_bundle megatron(const training_setup& s) {
  framework_bundle b;
  // TransformerConfig.attention_backend auto (Transformer Engine picks flash or fused attention);
  // cross_entropy_loss_fusion False: tensor_parallel.vocab_parallel_cross_entropy on fp32 logits;
  // recompute_granularity None: no recompute; --use-distributed-optimizer off: no sharding.
  b.settings = {{"--attention", "flash", "TransformerConfig.attention_backend auto"},
                {"--loss", "eager", "cross_entropy_loss_fusion False: vocab-parallel cross-entropy on fp32 logits"},
                {"--checkpointing", "auto", "recompute_granularity None"},
                {"--zero", "0", "--use-distributed-optimizer off"},
                {"--overlap-comm", "off", "DistributedDataParallelConfig.overlap_grad_reduce False"},
                clipping(s, true, "--clip-grad 1.0")};
  b.notes.push_back({"", "Megatron-LM trains fp32 unless --bf16 or --fp16 (ModelParallelConfig bf16, fp16 False): "
                         "the plan keeps tiletune's precision"});
  b.notes.push_back({"", "Megatron-LM's parallelism defaults are the plan's own: tensor and pipeline parallel 1, no "
                         "virtual stages, sequence parallel off, context parallel 1 (ModelParallelConfig); "
                         "--tensor-parallel, --pipeline-parallel, --virtual-stages, --sequence-parallel and "
                         "--context-parallel plan others"});
  if (layers_of(s) == layer_impl::transformer_engine)
    b.notes.push_back({"", "Megatron-LM runs Transformer Engine's fused layers (transformer_impl transformer_engine, with "
                           "its rope, swiglu and bias-dropout-add fusions): each norm fused before its linear, one "
                           "kernel for rotary, attention and the activation, so the blocks keep and move what those "
                           "kernels do (for a GPT block Korthikanti et al.'s 34 bytes a token and hidden value), "
                           "not what transformers' eager ops do; read from the sources, not traced"});
  else
    b.notes.push_back({"", fmt::format("Megatron-LM runs Transformer Engine's fused layers, modelled for dense and MoE "
                                       "blocks without MLA or q/k norms, with flash attention, not in fp32 with "
                                       "grouped-query attention (no fused fp32 kernel takes it); {}'s are planned as "
                                       "transformers' eager ones (more activations and memory-bound traffic than "
                                       "Megatron-LM's)",
                                       s.model.name)});
  // megatron/training/arguments.py: --sgd-momentum defaults to 0.9, so its sgd keeps a momentum buffer.
  if (s.optimizer == optimizer_kind::sgd)
    b.notes.push_back({"", "--optimizer sgd: Megatron-LM's --optimizer sgd runs with --sgd-momentum 0.9 unless told, "
                           "one momentum buffer a parameter that this plan of plain SGD does not hold: pass "
                           "--sgd-momentum 0 to Megatron-LM, or plan --optimizer sgd-momentum"});
  if (s.model.is_moe())
    b.notes.push_back({"", "Megatron-LM without --moe-grouped-gemm (its default, a store_true flag) runs SequentialMLP: "
                           "each local expert's fc1, activation and fc2 in turn, three launches an expert; the plan "
                           "counts one grouped kernel of each (TEGroupedMLP, with --moe-grouped-gemm); "
                           "--expert-model-parallel-size defaults to 1, as --expert-parallel here"});
  b.notes.push_back({"--loss", "Megatron-LM's unfused cross-entropy keeps its fp32 softmax (4 bytes a logit: "
                               "cross_entropy.py saves exp_logits) where the eager loss counts 14 at its backward "
                               "peak: the logits term is high"});
  return b;
}

framework_bundle torchtune(const training_setup& s, bool bf16) {
  framework_bundle b;
  const bool lora = s.lora_rank > 0;
  // dtype: bf16 in every Llama 3.1 8B config; the recipes fall back to fp32 without bf16.
  b.settings = {{"--precision", bf16 ? "bf16" : "fp32", "dtype: bf16, fp32 where the GPU has no bf16"},
                {"--attention", "flash", "SDPA; flex attention only for packed samples"},
                {"--loss", "chunked", "LinearCrossEntropyLoss, 8 output chunks"}};
  // enable_activation_checkpointing: True in 8B_lora_single_device, 8B_full_single_device and 8B_full;
  // False in 8B_lora (LoRA on several GPUs), where the planner decides as for hf.
  if (lora && s.world_size > 1)
    b.settings.push_back({"--checkpointing", "auto", "enable_activation_checkpointing: False in 8B_lora.yaml"});
  else
    b.settings.push_back({"--checkpointing", "on", "enable_activation_checkpointing: True"});
  b.settings.push_back(sharded(s, "the distributed recipes shard with FSDP2, training.shard_model"));
  b.settings.push_back(clipping(s, false, "clip_grad_norm: null in the Llama 3.1 8B configs"));
  if (lora) {
    b.settings.insert(b.settings.end(),
                      {{"--lora-targets", "q,v,o,gate,up,down",
                        "lora_attn_modules [q_proj, v_proj, output_proj], apply_lora_to_mlp: True"},
                       // The model, adapters included, is built under training.set_default_dtype(dtype).
                       {"--adapter-dtype", s.prec == precision::bf16 ? "bf16" : "fp32", "the model's dtype"},
                       {"--lora-dropout", "0", "lora_dropout: 0.0"}});
  } else if (s.world_size == 1) {
    b.notes.push_back({"", "torchtune's single-GPU full fine-tuning configs use bitsandbytes' PagedAdamW8bit with "
                           "optimizer_in_bwd: not set here (pass --optimizer adamw-8bit, the nearest, and "
                           "--optimizer-in-backward)"});
  }
  b.notes.push_back(own_modules_note(s, layer_impl::torchtune, "torchtune",
                                     "K and V copied to every query head before SDPA, which keeps the copies; rotary "
                                     "in fp32"));
  b.notes.push_back({"--loss", "torchtune's LinearCrossEntropyLoss keeps every chunk's fp32 log-probabilities to "
                               "backward (4 bytes a logit) and frees each chunk's 16-bit logits (by our reading, not "
                               "traced)"});
  return b;
}

framework_bundle composer(const training_setup& s) {
  framework_bundle b;
  b.settings = {{"--precision", "fp16-mixed", "Trainer precision default amp_fp16 on GPUs"},
                {"--zero", "0", "PyTorch DDP, the default (FSDP only when configured)"},
                {"--checkpointing", "auto", "activation_checkpointing off unless configured"},
                clipping(s, false, "no GradientClipping algorithm unless configured")};
  b.notes.push_back({"", "Composer trains the transformers (HuggingFaceModel) and peft model it is given: "
                         "attention, loss and LoRA are hf's"});
  return b;
}

framework_bundle litgpt(const training_setup& s, bool bf16) {
  framework_bundle b;
  const bool several = s.world_size > 1;
  b.settings = {{"--precision", bf16 ? "bf16-mixed" : "fp16-mixed", "get_default_supported_precision(training=True)"},
                {"--attention", "flash", "F.scaled_dot_product_attention"},
                {"--loss", "chunked", "lm_head_chunk_size=128 and chunked_cross_entropy"}};
  // One GPU: strategy "auto"; several: FSDP with every Block checkpointed (full.py
  // activation_checkpointing_policy={Block}, lora.py parallelize_fn's checkpoint_wrapper).
  b.settings.push_back({"--checkpointing", several ? "on" : "auto",
                        several ? "every Block checkpointed under FSDP" : "no checkpointing on one GPU"});
  b.settings.push_back(sharded(s, "FSDP over every GPU"));
  // TrainArgs.max_norm None; finetune/{full,lora}.py list max_norm as unsupported (pretrain.py sets 1.0).
  b.settings.push_back(clipping(s, false, "fine-tuning's TrainArgs.max_norm None"));
  if (s.lora_rank > 0)
    b.settings.insert(b.settings.end(),
                      {{"--lora-targets", "q,v", "lora_query, lora_value True; key, projection, mlp, head False"},
                       // Fabric keeps the model (adapters too) in fp32 under *-mixed, in bf16 under bf16-true.
                       {"--adapter-dtype", s.prec == precision::bf16 ? "bf16" : "fp32", "the model's dtype"},
                       {"--lora-dropout", "0.05", "lora_dropout 0.05"}});
  b.notes.push_back(own_modules_note(s, layer_impl::litgpt, "LitGPT",
                                     "one qkv linear; K and V repeat_interleave'd to every query head before SDPA; an "
                                     "RMSNorm whose weight keeps its fp32 normalised input"));
  b.notes.push_back({"--loss", "LitGPT's loss runs in 128-token chunks, the caller holding every 16-bit logit and each "
                               "chunk keeping its log-probabilities to backward (utils.py chunked_cross_entropy, by "
                               "our reading, not traced)"});
  return b;
}

}  // namespace

bool framework_trains(training_framework f, precision p) {
  switch (f) {
    case training_framework::fsdp2: return p == precision::bf16_mixed || p == precision::bf16 || p == precision::fp32;
    case training_framework::torchtune: return p == precision::bf16 || p == precision::fp32;
    case training_framework::composer:
    case training_framework::deepspeed:
    case training_framework::megatron: return p != precision::bf16;
    case training_framework::hf:
    case training_framework::litgpt: return true;
  }
  return true;
}

bool fp32_model_under_autocast(const training_setup& s) {
  return s.framework == training_framework::litgpt && is_mixed(s.prec);
}

bool loads_with_transformers(training_framework f) {
  return f == training_framework::hf || f == training_framework::deepspeed || f == training_framework::composer;
}

layer_impl layers_of(const training_setup& s) {
  const layer_impl own = s.framework == training_framework::megatron  ? layer_impl::transformer_engine
                         : s.framework == training_framework::fsdp2    ? layer_impl::torchtitan
                         : s.framework == training_framework::torchtune ? layer_impl::torchtune
                         : s.framework == training_framework::litgpt   ? layer_impl::litgpt
                                                                       : layer_impl::transformers;
  if (s.attention != attention_impl::flash || !framework_modules_cover(s.model, own)) return layer_impl::transformers;
  // Transformer Engine's layers are modelled with its fused attention only: fp32 with grouped-query
  // attention is planned as transformers' modules on SDPA's math fallback (and named so).
  const bool gqa = s.model.num_kv_heads < s.model.num_heads && !s.model.is_mla();
  return own == layer_impl::transformer_engine && s.prec == precision::fp32 && gqa ? layer_impl::transformers : own;
}

attention_kernel attention_kernel_of(const training_setup& s) {
  if (s.attention == attention_impl::eager) return attention_kernel::eager;
  const bool gqa = s.model.num_kv_heads < s.model.num_heads && !s.model.is_mla();
  // torchtitan's ScaledDotProductAttention allows cuDNN, flash and math only (its sdpa_backends, b5bcd76
  // models/common/attention.py), and neither fused one takes fp32: its fp32 step runs the math kernel
  // on its own modules, grouped-query or not. (It had been planned on transformers' modules.)
  if (s.prec == precision::fp32 && layers_of(s) == layer_impl::torchtitan) return attention_kernel::math;
  // (Planned as transformers' math fallback, torchtune's and LitGPT's fp32 steps had counted the s x s
  // probabilities their SDPA never keeps: 14.55 GiB a sample for Llama-3.2-1B where they keep 6.55.)
  return s.prec == precision::fp32 && gqa && !repeats_kv_before_sdpa(layers_of(s)) ? attention_kernel::math
                                                                                  : attention_kernel::fused;
}

chunked_loss chunked_loss_of(const training_setup& s) {
  return s.framework == training_framework::fsdp2    ? chunked_loss::torchtitan
         : s.framework == training_framework::litgpt ? chunked_loss::litgpt
                                                     : chunked_loss::torchtune;
}

token_inventory plan_inventory(const training_setup& s) {
  // LoRA's base is frozen: its linears and norms keep nothing for weight gradients.
  return inventory(s.model, s.seq_len, activation_bytes(s.prec), runs_under_autocast(s), attention_kernel_of(s),
                   s.lora_rank > 0, s.loss, layers_of(s), chunked_loss_of(s));
}

std::string_view to_string(layer_impl l) {
  switch (l) {
    case layer_impl::transformers: return "transformers";
    case layer_impl::torchtitan: return "torchtitan";
    case layer_impl::torchtune: return "torchtune";
    case layer_impl::litgpt: return "litgpt";
    case layer_impl::transformer_engine: return "transformer_engine";
  }
  return "?";
}

std::string_view to_string(training_framework f) {
  for (const auto& [v, name] : framework_names)
    if (v == f) return name;
  return "?";
}

training_framework parse_framework(std::string_view s) {
  std::string all;
  for (const auto& [f, name] : framework_names) {
    if (s == name) return f;
    all += (all.empty() ? "" : ", ") + std::string(name);
  }
  throw usage_error(fmt::format("--framework '{}' is not one of {}", s, all));
}

framework_bundle framework_defaults(training_framework f, const training_setup& s, bool gpu_has_bf16) {
  switch (f) {
    case training_framework::hf: return {};
    case training_framework::fsdp2: return torchtitan(s);  // its bf16 default on a GPU without: refused
    case training_framework::deepspeed: return deepspeed(s);
    case training_framework::megatron: return megatron(s);
    case training_framework::torchtune: return torchtune(s, gpu_has_bf16);
    case training_framework::composer: return composer(s);
    case training_framework::litgpt: return litgpt(s, gpu_has_bf16);
  }
  return {};
}

namespace {

// One option from its flag's text (--zero and --lora-dropout arrive as the numbers' shortest text).
void set_option(training_setup& s, const std::string& flag, const std::string& text) {
  if (flag == "--precision") s.prec = parse_precision(text);
  else if (flag == "--attention") s.attention = parse_attention(text);
  else if (flag == "--loss") s.loss = parse_loss(text);
  else if (flag == "--checkpointing") set_checkpointing(s, text);
  else if (flag == "--zero") std::from_chars(text.data(), text.data() + text.size(), s.zero_stage);
  else if (flag == "--lora-targets") s.lora_targets = parse_lora_targets(text);
  else if (flag == "--adapter-dtype") s.adapters = parse_adapter_dtype(text);
  else if (flag == "--lora-dropout") std::from_chars(text.data(), text.data() + text.size(), s.lora_dropout);
  else if (flag == "--expert-parallel") {
    s.expert_parallel.reset();
    if (int ep = 0; !text.empty() && std::from_chars(text.data(), text.data() + text.size(), ep).ec == std::errc())
      s.expert_parallel = ep;
  }
  else if (flag == "--overlap-comm" || flag == "--grad-clip") {
    std::string lower = text;  // in any case, as every other choice
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower != "on" && lower != "off") throw usage_error(fmt::format("{} '{}' is not on or off", flag, text));
    (flag == "--overlap-comm" ? s.overlap_comm : s.grad_clip) = lower == "on";
  }
}

}  // namespace

namespace {

void refuse_unsupported(training_framework f, const std::map<std::string, std::string>& given, bool gpu_has_bf16,
                        const training_setup& s) {
  refuse_unsupported_setup(s);
  const std::string name(to_string(f));
  if (f == training_framework::fsdp2 && !given.contains("--precision") && !gpu_has_bf16)
    throw usage_error("--framework fsdp2 trains bf16-mixed by default (torchtitan's mixed_precision_param bfloat16) "
                      "and this GPU has no bf16: pass --precision fp32");
  if (s.checkpoint_ops && !given.contains("--checkpointing"))
    if (const char* why = selective_unmodelled(s))
      throw usage_error(fmt::format("--framework {} checkpoints per op by default (torchtitan's SelectiveAC), which "
                                    "tiletune models for Llama-style blocks, flash attention and full fine-tuning "
                                    "only; {} has {}: pass --checkpointing on, off, every-N or auto",
                                    name, s.model.name, why));
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : "; ") + i;
  return out;
}

}  // namespace

void check_framework_flags(const std::map<std::string, std::string>& explicit_flags) {
  training_setup scratch;
  for (const auto& [flag, text] : explicit_flags) set_option(scratch, flag, text);
}

void apply_framework(training_framework f, const std::map<std::string, std::string>& given, bool gpu_has_bf16,
                     training_setup& s) {
  s.framework = f;
  std::vector<std::string> applied, replaced, from_framework;
  auto resolve = [&](const framework_bundle& b, const std::string& flag) {
    const framework_setting* fw = nullptr;
    for (const auto& setting : b.settings)
      if (setting.flag == flag) fw = &setting;
    if (const auto it = given.find(flag); it != given.end()) {
      if (fw && fw->value != it->second) replaced.push_back(fmt::format("{} {} ({}'s: {})", flag, it->second, to_string(f), fw->value));
      set_option(s, flag, it->second);
    } else if (fw) {
      applied.push_back(fmt::format("{} {} ({})", flag, fw->value, fw->source));
      from_framework.push_back(flag);
      set_option(s, flag, fw->value);
    } else {
      set_option(s, flag, tiletune_default(flag, gpu_has_bf16, s));
    }
  };
  // Each flag from the defaults of the setup resolved so far, in framework_flags' order: the
  // adapter dtype follows the precision, DeepSpeed's overlap the ZeRO stage.
  for (const char* flag : framework_flags) resolve(framework_defaults(f, s, gpu_has_bf16), flag);
  const framework_bundle b = framework_defaults(f, s, gpu_has_bf16);
  refuse_unsupported(f, given, gpu_has_bf16, s);

  s.framework_notes.clear();
  if (f == training_framework::hf) return;  // today's plan, unchanged
  s.framework_notes.push_back(fmt::format(
      "--framework {} set {}{}; each has its own flag, which wins", to_string(f),
      applied.empty() ? "nothing of its own" : joined(applied),
      replaced.empty() ? "" : "; your flags replaced " + joined(replaced)));
  for (const auto& n : b.notes)
    if (n.flag.empty() || std::find(from_framework.begin(), from_framework.end(), n.flag) != from_framework.end())
      s.framework_notes.push_back(n.text);
}

}  // namespace tiletune
