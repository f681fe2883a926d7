// Internal to src/core/train: the working buffers of ZeRO and of the frameworks' data parallelism
// beside the sharded states, and the DeepSpeed settings that hold DeepSpeed to them.
#pragma once
#include <cstdint>

#include <nlohmann/json_fwd.hpp>

#include "core/train/training_plan.hpp"

namespace tiletune {

// DeepSpeed runs the data parallelism: frameworks hf (the Trainer's DeepSpeed integration) and
// deepspeed, at ZeRO stage 1 and up. Its ZeRO keeps and reduces the gradients in the model's dtype
// (engine.py's get_data_types: grad_accum_dtype is the model's under ZeRO; stage_1_and_2.py's
// communication_data_type defaults to it): 2 bytes under bf16-mixed, not DDP's fp32.
bool deepspeed_zero(const training_setup& s);
// DeepSpeed runs the training at all: framework deepspeed at any stage, or deepspeed_zero.
bool deepspeed_runs(const training_setup& s);
// DeepSpeed's 16-bit mode (deepspeed_runs under fp16- or bf16-mixed). The engine casts the model to
// 16 bits (no autocast: its weights and gradients are 16-bit) and its optimizer wrapper keeps fp32
// master weights beside the states: at stage 0 FP16_UnfusedOptimizer for the Trainer's torch
// optimizer (engine.py: bf16 without ZeRO accumulates in bf16, DDP_BFLOAT16), ZeRO's at 1-3. At the
// step the wrapper gives the masters fp32 gradients: 4 bytes a trainable parameter of the rank's
// share (all of them at stage 0; at stage 3 a sub-group, 1e9 elements by default, at a time), on
// the host with --offload.
bool deepspeed_16bit(const training_setup& s);
// Megatron-LM's own data parallelism (--framework megatron at --zero 0, or 1: its distributed
// optimizer). Its DDP keeps every gradient in a grad buffer allocated once and zeroed each step
// (main_grad: fp32 under --bf16, whose gradients accumulate and reduce in fp32, and under fp32;
// the model's fp16 under --fp16). Under --bf16 and --fp16 the model is 16-bit (Float16Module, no
// autocast) and the optimizer keeps fp32 main params beside the states, sharded with them over the
// data-parallel ranks by the distributed optimizer; --fp16's step copies the gradients to fp32
// for them (_copy_model_grads_to_main_grads). Megatron-LM d98e8a6: megatron/training/arguments.py,
// megatron/core/distributed/distributed_data_parallel.py, megatron/core/optimizer/optimizer.py.
bool megatron_grad_buffer(const training_setup& s);
// Whether the framework makes the model 16-bit under a mixed precision, so that no autocast runs and
// its gradients are 16-bit: DeepSpeed's 16-bit mode, Megatron-LM's Float16Module, FSDP2's bf16
// param_dtype (torchtitan at every --zero: it applies fully_shard even replicated or on one GPU).
bool sixteen_bit_model(const training_setup& s);
// Whether the blocks run under autocast on fp32 weights, which keeps the residual stream in fp32
// (training_inventory.cpp): a mixed precision whose model stays fp32 (PyTorch's AMP, Composer,
// LitGPT, FSDP1's fp32 parameters). Not where the framework makes the model 16-bit: DeepSpeed's
// 16-bit mode, Megatron-LM's Float16Module, FSDP2's bf16 param_dtype (torchtitan);
// nor a LoRA base frozen in 16 bits. LitGPT's LoRA base is fp32 (fp32_model_under_autocast): it does.
bool runs_under_autocast(const training_setup& s);
// The width ZeRO-3 and FSDP gather each parameter at: 4 bytes in fp32, and under LitGPT's and
// Composer's mixed precision (FSDP1 with Lightning's FSDPPrecision or Composer's "DEFAULT" policy,
// param_dtype fp32; LitGPT's LoRA on FSDP2 without a policy), where autocast casts; 2 elsewhere
// (DeepSpeed's 16-bit model, FSDP2's param_dtype bf16).
double gathered_parameter_bytes(const training_setup& s);
// A gathered unit's parameters: FSDP's units are each block and the embedding and LM head (their
// own units or the root's); the largest of them, with a block's routed experts divided over the
// expert-parallel ranks (a rank gathers its share).
double gathered_unit_parameters(const training_setup& s);
// ZeRO-3 gathers each unit whole while it runs and the next ahead of it: two units unsharded, at
// the parameters' width (2 bytes, 4 in fp32), beside the shard. With --offload optimizer+params
// they are all the parameters the GPU holds.
std::int64_t gathered_weights_bytes(const training_setup& s);
// torchtitan at --zero 0 (data_parallel_replicate_degree, shard degree 1): fully_shard still runs,
// over a mesh that shards over one GPU (HSDP). Each GPU keeps whole fp32 parameters, gradients and
// optimizer states, as at --zero 3 on one GPU: each unit's bf16 copy gathered (a local copy) for its
// forward and again for its backward, its gradients reduced in fp32 (an all-reduce across the
// replicas) at the end of each micro-step's backward, the trainer disabling no gradient sync
// (torchtitan b5bcd76: llama3/parallelize.py, distributed/fsdp.py resolve_fsdp_mesh, trainer.py).
bool fsdp_replicated(const training_setup& s);
// LitGPT's scripts accumulate under fabric.no_backward_sync, which Lightning's FSDP strategy turns into
// FSDP1's no_sync (FSDP2's set_requires_gradient_sync(False) for its LoRA): no reduce-scatter until the
// last micro-step, and meanwhile every trainable parameter's gradient unsharded, at the gathered
// parameters' width (fp32 under its mixed precision; the adapters' under LoRA), this width a
// trainable parameter (0 where FSDP does not run or one GPU holds it all). LitGPT 2685705:
// finetune/full.py, finetune/lora.py, pretrain.py. Composer does not: its ddp_sync_context applies
// no_sync only to a DistributedDataParallel model, so under FSDP each micro-step reduce-scatters
// (composer 6405188: trainer.py _train_microbatch, distributed/dist_strategy.py).
bool fsdp_no_sync(const training_setup& s);
// FSDP1 under a mixed precision (LitGPT's full fine-tuning, Composer) keeps fp32 parameters and
// reduces their gradients in 16 bits: Lightning's FSDPPrecision and Composer's "DEFAULT" policy set
// param_dtype float32 and reduce_dtype the 16-bit type. (LitGPT's LoRA runs FSDP2 without a policy:
// fp32 adapters, reduced in fp32.)
bool fsdp1_reduces_in_16_bits(const training_setup& s);
double fsdp_no_sync_gradient_width(const training_setup& s);
// FSDP runs the data parallelism: frameworks fsdp2 and torchtune (FSDP2), litgpt and composer (FSDP1)
// at --zero 2 and 3, and torchtitan at --zero 0 (fsdp_replicated). Under a mixed precision its sharded parameters keep their own fp32 (the
// mixed-precision policy casts what it gathers), so they are the optimizer's: no master copy, and
// fp32 sharded gradients (FSDP2 casts the reduce-scatter's output to the parameters' dtype).
bool fsdp_runs(const training_setup& s);
// FSDP (frameworks fsdp2 and torchtune: FSDP2; litgpt and composer: FSDP1) at --zero 2 and 3 reduce-
// scatters each unit's gradients at the end of its backward. Autograd leaves them unsharded, in the
// gathered parameters' dtype, and FSDP2 copies them into a reduce-scatter input of the reduce dtype
// before it frees them (foreach_reduce); FSDP1 casts them only where the two dtypes differ. The
// largest unit's (gathered_unit_parameters; under LoRA a block's adapters, the only gradients) at
// those widths: torchtitan's bf16 parameters and fp32 reduce 2 + 4 bytes, torchtune's pure
// precision twice its width, Lightning's and Composer's FSDP1 under AMP fp32 gradients cast to a
// 16-bit reduce 4 + 2, LitGPT's LoRA (FSDP2 without a policy) twice the adapters' width. 0 where
// FSDP does not run.
std::int64_t fsdp_unit_gradient_bytes(const training_setup& s);
// The same per trainable parameter of the unit: the gradient's width plus the reduce-scatter
// input's where FSDP copies into one (FSDP2; FSDP1 where it casts), the gradient's alone where it
// reduces the gradient itself (FSDP1 without a cast).
double fsdp_unit_gradient_bytes_per_parameter(const training_setup& s);
// DeepSpeed's gradient reduce buckets (frameworks hf and deepspeed, stage 1 and up): stage 1 and 2
// allocate reduce_bucket_size elements of the model's dtype for every backward, twice with
// overlap_comm (stage_1_and_2.py's ipg buffers); stage 3 one such buffer. reduce_bucket_size is
// what deepspeed_zero_settings emits (the hidden size squared, the Trainer's "auto"): DeepSpeed's
// own default, 5e8 elements, would hold 1 or 2 GB in 16 bits. 0 where DeepSpeed does not run.
std::int64_t deepspeed_bucket_bytes(const training_setup& s);
// The zero_optimization settings a DeepSpeed config needs for the plan's memory to hold:
// reduce_bucket_size, and at stage 3 a prefetch of one unit, at most two units live and a reuse
// distance of one unit (DeepSpeed's defaults, 1e9 elements each, keep the parameters reused within
// a billion elements gathered: up to 2 GB at the turn from forward to backward).
void add_deepspeed_zero_settings(const training_setup& s, nlohmann::json& zero_optimization);

}  // namespace tiletune
