#include "core/train/moe_parallel.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

namespace {
// The share of the link an all-to-all reaches: taken equal to the ring
// collectives' in training_communication.cpp (NCCL's all-to-all over
// NVSwitch reaches a bus bandwidth of the same order; across nodes it is
// lower, which the --link-gbs figure must then carry).
constexpr double alltoall_efficiency = 0.8;
}  // namespace

int expert_parallel_degree(const training_setup& s) {
  if (!s.model.is_moe() || s.model.moe_layers() < 1) return 1;
  return s.expert_parallel.value_or(1);
}

void validate_expert_parallel(const training_setup& s) {
  if (!s.expert_parallel) return;
  const int ep = *s.expert_parallel;
  if (ep < 1) throw usage_error(fmt::format("--expert-parallel {} is invalid: at least 1", ep));
  if (ep == 1) return;
  if (!s.model.is_moe())
    throw usage_error(fmt::format("--expert-parallel {}: {} has no experts to split", ep, s.model.name));
  // Experts in the config but no layer that routes to them (DeepSeek's first_k_dense_replace past the
  // layers, Qwen-MoE's mlp_only_layers listing all): as dense, not planned silently at 1.
  if (s.model.moe_layers() < 1)
    throw usage_error(fmt::format("--expert-parallel {}: {} has no experts to split: none of its {} layers is a "
                                  "mixture-of-experts layer (every one has a dense MLP)",
                                  ep, s.model.name, s.model.num_layers));
  if (s.world_size % ep || s.model.num_experts % ep)
    throw usage_error(fmt::format("--expert-parallel {} must divide --world-size {} and the {} experts", ep,
                                  s.world_size, s.model.num_experts));
}

double expert_alltoall_ms(const training_setup& s, double link_gbs, std::int64_t micro_batch, bool checkpointing) {
  const int ep = expert_parallel_degree(s);
  if (ep <= 1 || link_gbs <= 0) return 0;
  const model_spec& m = s.model;
  const double tokens = static_cast<double>(micro_batch) * static_cast<double>(s.seq_len);
  const double routed = tokens * static_cast<double>(m.experts_per_token) * std::max(1.0, m.capacity_factor);
  // Uniform routing: (ep - 1) / ep of a rank's routed rows live elsewhere.
  const double bytes = routed * static_cast<double>(m.hidden_size) * activation_bytes(s.prec) * (ep - 1.0) / ep;
  const double per_layer = 4 + 2 * recompute_share(s, checkpointing);  // recompute's dispatch and combine
  return bytes * per_layer * static_cast<double>(m.moe_layers()) / (link_gbs * alltoall_efficiency * 1e6);
}

std::vector<std::string> moe_notes(const training_setup& s, double link_gbs) {
  const model_spec& m = s.model;
  std::vector<std::string> notes;
  if (m.is_mla())
    notes.push_back(fmt::format("multi-head latent attention: keys and values from a {}-wide compressed vector; "
                                "attention runs with {} heads of {} (queries, keys) and {} (values)",
                                m.kv_lora_rank, m.num_heads, m.head_dim, m.v_dim()));
  if (!m.is_moe()) return notes;
  const int ep = expert_parallel_degree(s);
  notes.push_back(fmt::format(
      "mixture of experts: {} of {} layers route each token to {} of {} experts{}; {:.2f} B of {:.2f} B parameters "
      "are active per token. The experts' GEMMs are counted as grouped GEMMs (one per projection and layer) over "
      "{} expert(s) per GPU with tokens x {} x {} / {} rows each (tokens from every expert-parallel GPU): the average "
      "under balanced routing. A real router is "
      "less even, and the busiest expert sets the pace",
      m.moe_layers(), m.num_layers, m.experts_per_token, m.num_experts,
      m.shared_intermediate_size > 0 ? " plus a shared expert" : "", active_parameter_count(m) / 1e9,
      parameter_count(m) / 1e9, m.num_experts / ep, m.experts_per_token, ep, m.num_experts));
  if (layers_of(s) == layer_impl::torchtitan)
    notes.push_back("torchtitan's MoE multiplies every expert's rows in one torch._grouped_mm a projection, as the plan "
                    "counts them");
  else
    notes.push_back(
        "transformers' eager MoE blocks loop over the experts (a gather, three GEMMs, the activation, the product, "
        "the weighting and an index_add per expert hit); the plan counts one grouped kernel of each instead "
        "(torch._grouped_mm, or a fused MoE kernel): with the eager loop, launches add about 8 x experts per layer");
  notes.push_back(m.capacity_factor > 0
                      ? fmt::format("capacity factor {:g} (from the config): each expert's rows are padded to {:g} x "
                                    "the average and the tokens beyond it dropped",
                                    m.capacity_factor, m.capacity_factor)
                      : "dropless routing (the config sets no capacity factor): no token is dropped and no buffer "
                        "padded");
  if (ep > 1)
    notes.push_back(fmt::format(
        "expert parallelism over {} GPUs: each holds {} of the {} experts of every MoE layer with their gradients "
        "and optimizer states (ZeRO shards them only among the {} GPU(s) holding the same experts); the dense "
        "weights are replicated (or ZeRO-sharded) over all {}. Each MoE layer's all-to-alls (dispatch and combine "
        "in forward, their gradients in backward, again in recompute) move tokens x top-k x hidden x {} bytes x "
        "{}/{} per GPU at {:g} GB/s x {:.1f}, uniform routing, not overlapped with compute: an upper bound",
        ep, m.num_experts / ep, m.num_experts, s.world_size / ep, s.world_size, activation_bytes(s.prec), ep - 1, ep,
        link_gbs, alltoall_efficiency));
  else if (s.world_size > 1)
    notes.push_back(fmt::format(
        "no expert parallelism (--expert-parallel 1, every framework's default): every GPU holds every expert, as "
        "dense weights (ZeRO or FSDP shards them with the rest); --expert-parallel N splits them over N GPUs "
        "(it must divide {} and the {} experts), trading their memory for the tokens' all-to-all",
        s.world_size, m.num_experts));
  return notes;
}

}  // namespace tiletune
