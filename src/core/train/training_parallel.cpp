// Tensor parallelism (Megatron-LM): the shard one GPU holds, its memory, its collectives and
// its refusals. Sources: Shoeybi et al. 2019 (Megatron-LM: column-parallel then row-parallel
// linears, an all-reduce after each pair in forward and its conjugate in backward, the
// vocab-parallel embedding), Korthikanti et al. 2022 (Reducing Activation Recomputation,
// Table 2: sbh(10 + 24/t + 5as/(ht)) activation bytes per layer with tensor parallelism,
// sbh(34/t + 5as/(ht)) with sequence parallelism; its all-gathers and reduce-scatters move the
// all-reduces' bytes).
#include "core/train/training_parallel.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/training_communication.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {


int data_parallel_degree(const training_setup& s) {
  return s.world_size /
         (std::max(1, s.tensor_parallel) * std::max(1, s.pipeline_parallel) * std::max(1, s.context_parallel));
}

std::int64_t per_rank_batch(const training_setup& s) {
  return s.global_batch ? std::max<std::int64_t>(1, *s.global_batch / data_parallel_degree(s)) : 0;
}

void validate_tensor_parallel(const training_setup& s) {
  const int t = s.tensor_parallel;
  const model_spec& m = s.model;
  if (t < 1 || t > 1024) throw usage_error(fmt::format("--tensor-parallel {} is invalid: 1 to 1024 GPUs", t));
  if (s.sequence_parallel && t < 2)
    throw usage_error("--sequence-parallel needs --tensor-parallel 2 or more: it splits the tensor-parallel "
                      "group's replicated activations");
  if (t == 1) return;
  if (t > s.gpus_per_node)
    throw usage_error(fmt::format("--tensor-parallel {} is larger than --gpus-per-node {}: its all-reduces run "
                                  "every layer and are planned on the in-node GPU link only",
                                  t, s.gpus_per_node));
  if (s.world_size > s.gpus_per_node && s.gpus_per_node % t)
    throw usage_error(fmt::format("--tensor-parallel {} does not divide --gpus-per-node {}: a group would span two "
                                  "nodes, and its all-reduces are planned on the in-node GPU link only",
                                  t, s.gpus_per_node));
  if (s.world_size % t)
    throw usage_error(fmt::format("--world-size {} is not a multiple of --tensor-parallel {}: the data-parallel "
                                  "degree is world size / T",
                                  s.world_size, t));
  if (m.num_heads % t || m.num_kv_heads % t || m.intermediate_size % t)
    throw usage_error(fmt::format("--tensor-parallel {} must divide {}'s {} attention heads, {} key-value heads "
                                  "and MLP width {}",
                                  t, m.name, m.num_heads, m.num_kv_heads, m.intermediate_size));
  const char* why = m.is_moe() ? "a mixture of experts (use --expert-parallel)"
                    : m.is_mla() ? "multi-head latent attention"
                    : s.lora_rank > 0 ? "LoRA (peft's adapters on Megatron's parallel linears)"
                    : s.zero_stage >= 3 ? "--zero 3 (2-D FSDP x TP sharding)"
                    : s.offload != offload_kind::none ? "--offload"
                                                      : nullptr;
  if (why) throw usage_error(fmt::format("--tensor-parallel {} is not modelled with {}", t, why));
}

std::int64_t megatron_vocab_rows_per_rank(std::int64_t vocab, int t) {
  if (t <= 1) return vocab;
  const std::int64_t multiple = std::int64_t{128} * t;
  return (vocab + multiple - 1) / multiple * multiple / t;
}

training_setup tensor_parallel_shard(const training_setup& s) {
  training_setup shard = s;
  const std::int64_t t = std::max(1, s.tensor_parallel);
  model_spec& m = shard.model;
  m.num_heads /= t;
  m.num_kv_heads /= t;
  m.intermediate_size /= t;
  m.vocab_size = megatron_vocab_rows_per_rank(m.vocab_size, static_cast<int>(t));
  shard.world_size = s.world_size / static_cast<int>(t);  // its pipeline stages' and data-parallel ranks
  shard.dp_span = static_cast<int>(t);
  shard.cp_stride = static_cast<int>(t);
  shard.tensor_parallel = 1;
  shard.sequence_parallel = false;
  return shard;
}

memory_breakdown tensor_parallel_memory(const training_setup& s) {
  const training_setup shard = tensor_parallel_shard(s);
  memory_breakdown r = estimate_memory(shard);
  if (!s.sequence_parallel) return r;
  // Every activation of the whole model's inventory, split along the sequence or the heads: / T.
  training_setup whole = shard;
  whole.model = s.model;
  const memory_breakdown full = estimate_memory(whole);
  const double t = s.tensor_parallel;
  auto split = [&](std::int64_t bytes) { return static_cast<std::int64_t>(static_cast<double>(bytes) / t); };
  auto split_all = [&](memory_breakdown& into, const memory_breakdown& from) {
    into.activation_bytes_per_sample = split(from.activation_bytes_per_sample);
    into.checkpointed_activation_bytes_per_sample = split(from.checkpointed_activation_bytes_per_sample);
    into.recompute_layer_bytes_per_sample = split(from.recompute_layer_bytes_per_sample);
    into.outer_saved_bytes_per_sample = split(from.outer_saved_bytes_per_sample);
  };
  split_all(r, full);
  for (std::size_t i = 0; i < r.other_stages.size() && i < full.other_stages.size(); ++i)  // a pipeline's last stage
    split_all(r.other_stages[i], full.other_stages[i]);
  return r;
}

double tensor_parallel_link_gbs(const training_setup& s, const device_spec& d) {
  return group_link_gbs(s, d, s.tensor_parallel);  // inside a node (validate_tensor_parallel)
}

double tensor_parallel_comm_ms(const training_setup& s, const device_spec& d, std::int64_t micro_batch,
                               bool checkpointing) {
  const double t = s.tensor_parallel;
  if (t <= 1) return 0;
  const double bytes = static_cast<double>(micro_batch) * static_cast<double>(s.seq_len) *
                      static_cast<double>(s.model.hidden_size) * activation_bytes(s.prec);
  const double collectives = 4 + 2 * recompute_share(s, checkpointing);  // per layer
  const double per_gpu = bytes * 2 * (t - 1) / t;                         // a ring all-reduce's share
  return per_gpu * collectives * static_cast<double>(s.model.num_layers) /
         (tensor_parallel_link_gbs(s, d) * ring_efficiency * 1e6);
}

std::vector<std::string> tensor_parallel_notes(const training_setup& s, const device_spec& d) {
  if (s.tensor_parallel <= 1) return {};
  const int t = s.tensor_parallel;
  const model_spec& m = s.model;
  const std::int64_t vocab_rows = megatron_vocab_rows_per_rank(m.vocab_size, t);
  std::vector<std::string> notes;
  notes.push_back(fmt::format(
      "tensor parallelism over {} GPUs of a node (Megatron-LM): each holds {} of {} attention heads, {} of {} "
      "key-value heads, {} of the MLP's {} columns and {} of the {} vocabulary rows ({}embedding, LM head, cross "
      "entropy), with their gradients and optimizer states; the norms are replicated. Data parallelism over the "
      "other factor, {} (the global batch is split {} ways; ZeRO shards over those {})",
      t, m.num_heads / t, m.num_heads, m.num_kv_heads / t, m.num_kv_heads, m.intermediate_size / t,
      m.intermediate_size, vocab_rows, m.vocab_size,
      vocab_rows * t == m.vocab_size ? ""
                                     : fmt::format("padded to {}, Megatron's multiple of 128 x {}; ", vocab_rows * t, t),
      data_parallel_degree(s),
      data_parallel_degree(s), data_parallel_degree(s)));
  notes.push_back(fmt::format(
      "tensor-parallel communication: {} per layer and micro-batch, 2 in forward, 2 in backward (2 more in "
      "recompute), each of micro-batch x {} tokens x {} hidden x {} bytes, a ring moving 2 x {}/{} of it per GPU "
      "at {:g} GB/s x {:.1f}; counted in full in every micro-step: not overlapped with compute (Megatron overlaps "
      "some of it with --tp-comm-overlap: an upper bound)",
      s.sequence_parallel ? "2 all-gathers and 2 reduce-scatters" : "4 all-reduces", s.seq_len, m.hidden_size,
      activation_bytes(s.prec), t - 1, t, tensor_parallel_link_gbs(s, d), ring_efficiency));
  notes.push_back(
      s.sequence_parallel
          ? fmt::format("sequence parallelism: the norms', dropouts' and residual stream's activations are split "
                        "over the sequence too, so every activation is / {} (Korthikanti et al. 2022, Table 2); "
                        "the norms' memory-bound time is still counted whole",
                        t)
          : fmt::format("without --sequence-parallel the norms', dropouts' and residual stream's activations are "
                        "replicated on the {} GPUs; only attention's and the MLP's internals are / {} (Korthikanti "
                        "et al. 2022, Table 2)",
                        t, t));
  return notes;
}

}  // namespace tiletune
