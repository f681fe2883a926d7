#include "core/train/training_context.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/training_communication.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

namespace {

// The ring's peers sit cp_stride GPUs apart (the tensor-parallel group innermost, the pipeline
// stages outermost, as torchtitan's mesh [pp, dp, cp, tp] and Megatron-LM's rank order lay them
// out): in a node while C x cp_stride GPUs fit in one.
double ring_link_gbs(const training_setup& s, const device_spec& d) {
  return group_link_gbs(s, d, s.context_parallel * std::max(1, s.cp_stride));
}
}  // namespace

void validate_context_parallel(const training_setup& s) {
  const int c = s.context_parallel;
  if (c < 1 || c > 1024) throw usage_error(fmt::format("--context-parallel {} is invalid: 1 to 1024 GPUs", c));
  if (c == 1) return;
  if (s.seq_len % (2 * c))
    throw usage_error(fmt::format("--context-parallel {} splits each sequence into {} load-balanced chunks: "
                                  "--seq-len {} must be a multiple of {}",
                                  c, 2 * c, s.seq_len, 2 * c));
  const int t = std::max(1, s.tensor_parallel), p = std::max(1, s.pipeline_parallel);
  if (s.world_size % (c * t * p))
    throw usage_error(t * p > 1 ? fmt::format("--world-size {} is not a multiple of --tensor-parallel {} x "
                                              "--pipeline-parallel {} x --context-parallel {}",
                                              s.world_size, t, p, c)
                                : fmt::format("--world-size {} is not a multiple of --context-parallel {}", s.world_size, c));
  const char* why = s.packing > 0            ? "--packing (varlen attention across ring chunks)"
                    : s.attention != attention_impl::flash ? "--attention eager (ring attention is blockwise flash)"
                    : s.model.is_mla()         ? "multi-head latent attention"
                                               : nullptr;
  if (why) throw usage_error(fmt::format("--context-parallel {} is not modelled with {}", c, why));
}

training_setup context_parallel_shard(const training_setup& s) {
  training_setup shard = s;
  const int c = std::max(1, s.context_parallel);
  shard.seq_len = s.seq_len / c;
  shard.attention_span = c;
  shard.context_parallel = 1;
  return shard;
}

double context_parallel_comm_ms(const training_setup& s, const device_spec& d, std::int64_t micro_batch,
                                bool checkpointing) {
  const int c = std::max(1, s.context_parallel);
  if (c == 1) return 0;
  const model_spec& m = s.model;
  const double chunk = static_cast<double>(micro_batch) * static_cast<double>(s.seq_len / c) * 2.0 *
                       static_cast<double>(m.num_kv_heads * m.head_dim) * activation_bytes(s.prec);
  const double passes = 3 + recompute_share(context_parallel_shard(s), checkpointing);
  const double bytes = static_cast<double>(m.num_layers) * passes * (c - 1) * chunk;
  return bytes / (ring_link_gbs(s, d) * ring_efficiency * 1e9) * 1e3;
}

std::vector<std::string> context_parallel_notes(const training_setup& s, const device_spec& d) {
  if (s.context_parallel <= 1) return {};
  return {fmt::format(
      "context parallelism over {} GPUs (ring attention, as torchtitan's context_parallel and Megatron-LM's CP): "
      "each GPU holds {} of every sample's {} tokens (activations, logits and the token-wise work / {}), its "
      "queries attend to every key; the key and value chunks pass around a ring of {} hops a layer (forward, twice "
      "in backward, again in recompute) over {:g} GB/s, overlapped with the attention's own GEMMs (what exceeds "
      "them is added to the step); the weights and optimizer states shard over {} GPUs (data x context "
      "parallel{}); samples/s counts {} replicas. Not compared with a real context-parallel step",
      s.context_parallel, s.seq_len / s.context_parallel, s.seq_len, s.context_parallel, s.context_parallel - 1,
      ring_link_gbs(tensor_parallel_shard(s), d), s.world_size / std::max(1, s.tensor_parallel),
      s.tensor_parallel > 1 ? fmt::format("; each GPU's tensor-parallel shard: its ring carries 1/{} of the key-value "
                                          "heads, its tensor-parallel collectives 1/{} of the tokens",
                                          s.tensor_parallel, s.context_parallel)
                            : "",
      data_parallel_degree(s))};
}

}  // namespace tiletune
