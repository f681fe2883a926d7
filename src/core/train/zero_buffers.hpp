// Internal to src/core/train: the working buffers of ZeRO beside the sharded states, and the
// DeepSpeed settings that hold DeepSpeed to them.
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
// A gathered unit's parameters: FSDP's units are each block and the embedding and LM head (their
// own units or the root's); the largest of them, with a block's routed experts divided over the
// expert-parallel ranks (a rank gathers its share).
double gathered_unit_parameters(const training_setup& s);
// ZeRO-3 gathers each unit whole while it runs and the next ahead of it: two units unsharded, at
// the parameters' width (2 bytes, 4 in fp32), beside the shard. With --offload optimizer+params
// they are all the parameters the GPU holds.
std::int64_t gathered_weights_bytes(const training_setup& s);
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
