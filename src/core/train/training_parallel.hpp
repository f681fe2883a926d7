// Internal to src/core/train: Megatron-LM's tensor parallelism (--tensor-parallel T, Shoeybi et al.
// 2019), with its sequence parallelism (--sequence-parallel, Korthikanti et al. 2022). What one GPU
// of a tensor-parallel group holds and runs is planned as a "shard" of the model: each block's
// attention heads, key-value heads and MLP width and the vocabulary divided by T, the hidden size
// (the norms, the residual stream) whole.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/device/device_spec.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune {

// world size / T: the replicas of the model that split each global batch.
int data_parallel_degree(const training_setup& s);
// Samples each data-parallel rank runs per optimizer step: --global-batch / its degree, at least 1
// (0 without --global-batch).
std::int64_t per_rank_batch(const training_setup& s);
// Throws usage_error naming the value or combination refused (T > --gpus-per-node, a world size
// T does not divide, heads, key-value heads or MLP width T does not divide, and the setups not
// modelled with it: experts, MLA, LoRA, --zero 3, --offload).
void validate_tensor_parallel(const training_setup& s);
// Megatron-LM's vocabulary rows on each of T ranks: the vocabulary padded with dummy tokens to a
// multiple of 128 x T (--make-vocab-size-divisible-by 128; megatron/training/tokenizer/tokenizer.py,
// _vocab_size_with_padding), / T. T = 1: the model's own V (the plan of a model as transformers
// builds it).
std::int64_t megatron_vocab_rows_per_rank(std::int64_t vocab, int t);
// What one GPU of the tensor-parallel group holds and runs, as a setup of its own: the model's
// column- and row-parallel linears cut to 1/T (q, k, v and gate, up by output, o and down by
// input), the vocabulary to megatron_vocab_rows_per_rank (vocab-parallel embedding, LM head and
// cross entropy), the norms whole; world_size the data-parallel degree, dp_span T.
training_setup tensor_parallel_shard(const training_setup& s);
// The shard's memory, with --sequence-parallel's activations: every per-token activation of
// the blocks and outside them (the LayerNorm, dropout and residual ones too) / T, Table 2's
// sbh(34/t + 5as/(ht)); without it the shard's own inventory keeps the hidden-width ones whole.
memory_breakdown tensor_parallel_memory(const training_setup& s);
// Milliseconds per micro-step of the tensor-parallel collectives: per layer two all-reduces in
// forward (after attention's o and the MLP's down) and two in backward (their conjugates, before
// q, k, v and gate, up), two more in recompute, each of b x s x h x (activation bytes), a ring
// moving 2 (T-1)/T of it per GPU over the in-node link (sequence parallelism: an all-gather and a
// reduce-scatter in place of each, the same bytes). Not overlapped with compute.
double tensor_parallel_comm_ms(const training_setup& s, const device_spec& d, std::int64_t micro_batch,
                               bool checkpointing);
// The in-node link the collectives use, GB/s one direction.
double tensor_parallel_link_gbs(const training_setup& s, const device_spec& d);
std::vector<std::string> tensor_parallel_notes(const training_setup& s, const device_spec& d);

}  // namespace tiletune
