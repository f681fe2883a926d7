// What each training framework cannot run (`batch --framework`), named with the options that ask for it:
// the sources training_framework.cpp's head cites.
#include "core/train/training_framework.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/moe_parallel.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

// What a framework cannot run, named (the precisions each offers: the sources at the top).
void refuse_unsupported_setup(const training_setup& s) {
  const training_framework f = s.framework;
  const std::string name(to_string(f));
  // Megatron-LM's --optimizer takes adam (AdamW's decoupled decay, Apex's or Transformer Engine's
  // fused Adam) or sgd (--sgd-momentum); torchtitan's build_optimizers takes Adam and AdamW
  // (components/optimizer.py optimizer_classes). Neither runs bitsandbytes' paged optimizers.
  const bool megatron = f == training_framework::megatron, torchtitan = f == training_framework::fsdp2;
  if ((megatron && s.optimizer != optimizer_kind::adamw && s.optimizer != optimizer_kind::sgd &&
       s.optimizer != optimizer_kind::sgd_momentum) ||
      (torchtitan && s.optimizer != optimizer_kind::adamw))
    throw usage_error(fmt::format("--framework {} --optimizer {}: {} offers {} only", name, to_string(s.optimizer),
                                  megatron ? "Megatron-LM's --optimizer" : "torchtitan's optimizer.name",
                                  megatron ? "adam (--optimizer adamw here) and sgd" : "Adam and AdamW (--optimizer adamw)"));
  if ((megatron || torchtitan) && s.paged_optimizer)
    throw usage_error(fmt::format("--framework {} --paged-optimizer: {} has no bitsandbytes paged optimizer", name,
                                  megatron ? "Megatron-LM" : "torchtitan"));
  // Megatron-LM's sharding as modelled here is its distributed optimizer (--use-distributed-optimizer:
  // the optimizer states and fp32 main params, ZeRO-1) beside its fp32 grad buffer. Planned at --zero 2
  // or 3 it took DeepSpeed's memory (2-byte gradients, sharded), which Megatron-LM does not run; its
  // Megatron-FSDP (--use-megatron-fsdp, sharding strategy optim_grads or optim_grads_params) keeps
  // buffers of its own, not modelled.
  if (megatron && s.zero_stage >= 2)
    throw usage_error(fmt::format(
        "--framework megatron --zero {}: tiletune models Megatron-LM's distributed optimizer "
        "(--use-distributed-optimizer, --zero 1) only; Megatron-FSDP (--use-megatron-fsdp, "
        "--data-parallel-sharding-strategy {}) is not modelled: pass --zero 0 or 1, or plan ZeRO-{} with "
        "--framework deepspeed",
        s.zero_stage, s.zero_stage == 2 ? "optim_grads" : "optim_grads_params", s.zero_stage));
  if (f == training_framework::megatron && s.lora_rank > 0)
    throw usage_error(fmt::format("--framework megatron --lora-rank {}: Megatron-LM has no LoRA (NeMo and Megatron "
                                  "Bridge add PEFT on top of it); plan LoRA with --framework hf, torchtune or litgpt",
                                  s.lora_rank));
  // --fp8 plans torchao's float8 linears (torchtitan's converter); Megatron-LM's fp8 is Transformer
  // Engine's (--fp8-format, its casts fused into the norms and kept in fp8), another memory and step.
  if (f == training_framework::megatron && s.fp8 != fp8_recipe::none)
    throw usage_error(fmt::format("--framework megatron --fp8 {}: --fp8 plans torchao's float8 training as torchtitan "
                                  "runs it; Megatron-LM trains fp8 through Transformer Engine (--fp8-format), whose "
                                  "casts and kept tensors are its own and not modelled: plan it with --framework "
                                  "fsdp2, or without --fp8",
                                  to_string(s.fp8)));
  // The other frameworks' fp8 is not torchao's float8 linears, or none of their configs sets it: the
  // Trainer's arguments and DeepSpeed's config have no fp8 key (Accelerate configures its own fp8 at
  // launch), Composer's amp_fp8 and LitGPT's transformer-engine precision are Transformer Engine's.
  if (s.fp8 != fp8_recipe::none && f != training_framework::fsdp2 && f != training_framework::torchtune &&
      f != training_framework::megatron)
    throw usage_error(fmt::format(
        "--framework {} --fp8 {}: --fp8 plans torchao's float8 training as torchtitan runs it (torchtune's "
        "enable_fp8_training likewise); {}: plan it with --framework fsdp2 or torchtune, or without --fp8",
        name, to_string(s.fp8),
        f == training_framework::hf || f == training_framework::deepspeed
            ? "the Trainer's arguments and DeepSpeed's config the plan emits hold no fp8 setting, so they would train "
              "bf16 at bf16's speed"
            : f == training_framework::composer ? "Composer's fp8 (precision amp_fp8) is Transformer Engine's, not modelled"
                                                : "LitGPT's fp8 (precision transformer-engine) is Transformer Engine's, not modelled"));
  // Expert parallelism is torchtitan's expert_parallel_degree and Megatron-LM's
  // --expert-model-parallel-size: the Trainer splits no experts (DeepSpeed's expert parallelism runs
  // only its own deepspeed.moe layers, which transformers' MoE blocks are not), nor do LitGPT and Composer.
  if (expert_parallel_degree(s) > 1 && f != training_framework::fsdp2 && f != training_framework::megatron &&
      f != training_framework::torchtune)
    throw usage_error(fmt::format(
        "--framework {} --expert-parallel {}: {} splits no experts over GPUs{}: plan expert parallelism with "
        "--framework fsdp2 (torchtitan's expert_parallel_degree) or megatron (--expert-model-parallel-size), or "
        "without --expert-parallel",
        name, expert_parallel_degree(s),
        f == training_framework::hf ? "transformers' Trainer" : f == training_framework::deepspeed ? "DeepSpeed"
                                    : f == training_framework::litgpt ? "LitGPT" : "Composer",
        f == training_framework::deepspeed || f == training_framework::hf
            ? " (DeepSpeed's expert parallelism runs its own deepspeed.moe layers only, which transformers' MoE "
              "blocks are not)"
            : ""));
  const char* offered = f == training_framework::fsdp2
                            ? "bf16-mixed, bf16 and fp32 (mixed_precision_param bfloat16 or float32; training.dtype "
                              "bfloat16 for pure bf16)"
                        : f == training_framework::torchtune ? "bf16 and fp32 (dtype; no autocast, no fp16)"
                        : f == training_framework::composer  ? "fp32, fp16-mixed and bf16-mixed (amp_fp16, amp_bf16; no pure bf16)"
                        : f == training_framework::deepspeed
                            ? "fp32, fp16-mixed and bf16-mixed (its fp16 and bf16 modes keep fp32 master weights and "
                              "optimizer states; no pure bf16)"
                        : f == training_framework::megatron
                            ? "fp32, fp16-mixed and bf16-mixed (--fp16 and --bf16 keep fp32 main params and "
                              "optimizer states; no pure bf16)"
                            : nullptr;
  if (!framework_trains(f, s.prec))
    throw usage_error(fmt::format("--framework {} --precision {}: {} trains {} only", name, to_string(s.prec), name,
                                  offered));
  // The Trainer shards through DeepSpeed (its deepspeed argument, the config plans emit), whose bf16
  // mode keeps fp32 master weights and optimizer states: a pure-bf16 ZeRO plan is what no emitted
  // config runs (it had been planned, and the Trainer's arguments carried no DeepSpeed config). With
  // tensor or pipeline parallelism the plan is Megatron-LM's layout, not the Trainer's.
  if (f == training_framework::hf && s.zero_stage > 0 && s.prec == precision::bf16 && s.tensor_parallel == 1 &&
      s.pipeline_parallel == 1)
    throw usage_error(fmt::format(
        "--framework hf --zero {} --precision bf16: the Trainer shards through DeepSpeed, whose bf16 mode keeps fp32 "
        "master weights and optimizer states (--precision bf16-mixed's memory); no DeepSpeed setting trains pure "
        "bf16 states: pass --precision bf16-mixed, or --zero 0 for pure bf16 (a model loaded in bf16)",
        s.zero_stage));
  // FSDP's CPU offload (FSDP2's CPUOffloadPolicy; FSDP1's CPUOffload(offload_params=True), LitGPT's and
  // Composer's) keeps the parameter shards, their gradients and the optimizer step on the host together.
  const bool fsdp_based = f == training_framework::fsdp2 || f == training_framework::torchtune ||
                          f == training_framework::litgpt || f == training_framework::composer;
  if (fsdp_based && s.offload == offload_kind::optimizer)
    throw usage_error(fmt::format(
        "--framework {} --offload optimizer: FSDP's CPU offload (FSDP2's CPUOffloadPolicy, FSDP's "
        "CPUOffload(offload_params=True)) keeps the parameter shards, their gradients and the optimizer step on the "
        "host together, with no optimizer-only mode: plan it with --offload optimizer+params --zero 3 (DeepSpeed's "
        "offload_optimizer alone is --framework deepspeed or hf)",
        name));
  // FSDP2 shards the parameters with their gradients and states (ZeRO-3), or keeps them gathered
  // after forward (fsdp_reshard_after_forward: ZeRO-2), or replicates (DDP): no stage shards the
  // optimizer states alone. (LitGPT and Composer also run DeepSpeed's strategies.)
  if ((f == training_framework::fsdp2 || f == training_framework::torchtune) && s.zero_stage == 1)
    throw usage_error(fmt::format(
        "--framework {} --zero 1: {} shards with FSDP2, whose stages are 3 (fully_shard), 2 "
        "(fsdp_reshard_after_forward {}) and 0 (replicated, {}); none shards the optimizer states alone: "
        "pass --zero 2 or 3, or plan ZeRO-1 with --framework deepspeed or megatron (its distributed optimizer)",
        name, f == training_framework::fsdp2 ? "torchtitan" : "torchtune",
        f == training_framework::fsdp2 ? "\"never\"" : "False",
        f == training_framework::fsdp2 ? "data_parallel_replicate_degree" : "one GPU"));
  // LitGPT and Composer shard with FSDP1 (FULL_SHARD, SHARD_GRAD_OP) or replicate (DDP): planned at
  // --zero 1, their model took DeepSpeed's 16-bit weights and master copy, which neither runs.
  if ((f == training_framework::litgpt || f == training_framework::composer) && s.zero_stage == 1)
    throw usage_error(fmt::format(
        "--framework {} --zero 1: {} shards with FSDP, whose sharding strategies are FULL_SHARD (--zero 3), "
        "SHARD_GRAD_OP (--zero 2) and NO_SHARD or DDP (--zero 0); none shards the optimizer states alone: pass "
        "--zero 0, 2 or 3, or plan ZeRO-1 with --framework deepspeed or megatron (its distributed optimizer)",
        name, f == training_framework::litgpt ? "LitGPT" : "Composer"));
  // Replicated (shard degree 1) and, under pipeline parallelism, not resharded after forward: each
  // stage's whole bf16 copy beside its fp32 parameters, which fsdp_replicated does not model.
  if (f == training_framework::fsdp2 && s.zero_stage == 0 && s.pipeline_parallel > 1)
    throw usage_error(fmt::format(
        "--framework fsdp2 --zero 0 --pipeline-parallel {}: torchtitan's replicated FSDP (shard degree 1) does not "
        "reshard after forward under pipeline parallelism, keeping each stage's whole bf16 copy, which is not "
        "modelled: pass --zero 2 (its default there) or leave --zero out",
        s.pipeline_parallel));
}

}  // namespace tiletune
