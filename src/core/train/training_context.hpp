// Internal to src/core/train: context parallelism (--context-parallel C), ring attention as
// torchtitan's context_parallel and Megatron-LM's --context-parallel-size run it. Sources: Liu et
// al. 2023 (Ring Attention: each device holds a block of the sequence and passes the key and value
// blocks around a ring while it computes, the transfer overlapped with the blockwise attention);
// Megatron-LM's context parallelism docs (each GPU holds seq/CP tokens of every activation, the
// causal chunks load-balanced two per GPU, the weights replicated over the CP group and sharded
// with the data-parallel ones). The planner's shard: every token-wise op and activation on
// seq_len / C tokens, each of its queries attending to all seq_len keys.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/device/device_spec.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune {

// Throws usage_error naming the value or combination refused: C outside 1-1024, a sequence C
// does not split into 2C load-balanced chunks, a world size T x P x C does not divide, and the
// setups not modelled with it (packing, eager attention, MLA). Tensor and pipeline parallelism
// compose: each GPU runs the context-parallel shard of its tensor-parallel shard of its stage.
void validate_context_parallel(const training_setup& s);
// What one GPU of the context-parallel group holds and runs, as a setup of its own: seq_len / C
// tokens a sample, its attention's keys seq_len (attention_span C); the world size kept (ZeRO
// shards over the data- and context-parallel ranks together, as FSDP over torchtitan's dp x cp).
training_setup context_parallel_shard(const training_setup& s);
// Milliseconds per micro-step of the ring's transfers: per layer, C - 1 hops of each GPU's key and
// value chunk (micro-batch x seq_len / C tokens x key-value width x 2 x activation bytes) in
// forward, twice that in backward (the chunks again and their gradients), once more in recompute;
// over the in-node link (C within a node) or the network, at the rings' efficiency.
double context_parallel_comm_ms(const training_setup& s, const device_spec& d, std::int64_t micro_batch,
                                bool checkpointing);
std::vector<std::string> context_parallel_notes(const training_setup& s, const device_spec& d);

}  // namespace tiletune
