#include "core/train/training_communication.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/train/moe_parallel.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_context.hpp"
#include "core/train/training_fp8.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_pipeline.hpp"
#include "core/train/zero_buffers.hpp"

namespace tiletune {

communication_estimate estimate_communication(const training_setup& s, const device_spec& d) {
  // Tensor parallelism: the data-parallel exchange of one GPU's shard among its world size / T peers.
  if (s.tensor_parallel > 1) return estimate_communication(tensor_parallel_shard(s), d);
  if (s.pipeline_parallel > 1) return estimate_communication(pipeline_stage(s), d);  // a stage's, over its dp ranks
  if (s.context_parallel > 1) return estimate_communication(context_parallel_shard(s), d);  // gradients over all ranks
  const std::optional<double> link_gbs = s.link_gbs;
  communication_estimate c;
  const double W = s.world_size;
  if (W <= 1) return c;
  const int per_node = s.gpus_per_node;
  const double net = s.network_gbs;
  if (link_gbs) {
    c.link_gbs = c.alltoall_gbs = *link_gbs;
    c.link = fmt::format("{:g} GB/s per GPU (--link-gbs)", *link_gbs);
  } else if (s.world_size * s.dp_span <= per_node) {
    // The ring's GPUs (an H100 NVL's pairs over PCIe beyond one pair); the experts' all-to-all among
    // the expert-parallel group's.
    const double ring = d.link_gbs_among(static_cast<int>(s.world_size * s.dp_span));
    c.link_gbs = ring > 0 ? ring : net;
    const double among_experts = d.link_gbs_among(expert_parallel_degree(s));
    c.alltoall_gbs = among_experts > 0 ? among_experts : net;
    c.link = ring > 0 ? fmt::format("{:g} GB/s per GPU inside one node ({}'s GPU link{})", ring, d.name,
                                    ring < d.gpu_link_gbs ? fmt::format(", which joins {} GPUs: PCIe between them",
                                                                        d.gpu_link_group)
                                                          : "")
                      : fmt::format("{:g} GB/s per GPU (the network: the {} has no GPU link)", net, d.name);
  } else {
    // One ring channel per network port of the node, shared by the dp_span data-parallel groups it holds.
    const double rings = static_cast<double>(per_node) / s.dp_span * net;
    const double node = d.link_gbs_among(per_node);
    c.link_gbs = node > 0 ? std::min(node, rings) : net;
    // Expert-parallel ranks are neighbours: a group that fits in a node exchanges over its GPU link.
    const double among_experts = d.link_gbs_among(expert_parallel_degree(s));
    const bool group_in_node = expert_parallel_degree(s) <= per_node && among_experts > 0;
    c.alltoall_gbs = group_in_node ? among_experts : node > 0 ? std::min(node, net) : net;
    c.link = fmt::format(
        "{:g} GB/s per GPU across {} nodes of {}: NCCL's rings, one per network port ({} x {:g} GB/s), with the "
        "in-node hops on the GPU link{}{}",
        c.link_gbs, (s.world_size * s.dp_span + per_node - 1) / per_node, per_node, per_node, net,
        node > 0 ? fmt::format(" ({:g} GB/s)", node) : " (none: the network alone)",
        s.model.is_moe() ? fmt::format("; the experts' all-to-all {:g} GB/s", c.alltoall_gbs) : "");
  }
  const double bytes_per_ms = c.link_gbs * ring_efficiency * 1e6;
  const memory_breakdown mem = estimate_memory(s);
  const bool lora = s.lora_rank > 0;
  // DDP and FSDP reduce gradients in their own dtype: fp32 under AMP, fp32 LoRA adapters, bf16 in
  // pure bf16, but torchtitan always in fp32 (mixed_precision_reduce float32, its only value), and
  // FSDP1 under LitGPT's and Composer's mixed precision in 16 bits (reduce_dtype). DeepSpeed (ZeRO or
  // not) in the 16-bit model's (zero_buffers.hpp).
  const bool reduce_fp32 = s.framework == training_framework::fsdp2;
  const double grad_elem = s.prec == precision::fp32 ? 4.0
                           : deepspeed_runs(s) || fsdp1_reduces_in_16_bits(s) ||
                                   (s.prec == precision::bf16 && !lora && !reduce_fp32)
                               ? 2.0
                               : 4.0;
  const double param_elem = gathered_parameter_bytes(s);  // what ZeRO-3 and FSDP gather (zero_buffers.hpp)
  // Dense tensors are exchanged among all W GPUs; an MoE model's routed
  // experts, split over ep ranks, only among the W / ep holding the same
  // ones (moe_parallel.hpp). A dense model has no experts' share.
  const double ep = mem.expert_parallel;
  const double We = W / ep;
  const double Td = static_cast<double>(mem.trainable_parameters - mem.expert_trainable_parameters);
  const double Te = static_cast<double>(mem.expert_trainable_parameters) / ep;
  const double Pd = static_cast<double>(mem.parameters - mem.expert_parameters);
  const double Pe = static_cast<double>(mem.expert_parameters) / ep;
  const double share = (W - 1) / W, share_e = (We - 1) / We;
  // The gradients' reduce-scatter, and whether it runs once a step: LitGPT accumulating under
  // no_sync (zero_buffers.hpp) reduces in the last micro-step's backward only.
  const double reduce = (share * Td + share_e * Te) * grad_elem / bytes_per_ms;
  const bool reduce_once = fsdp_no_sync(s);
  if (fsdp_replicated(s)) {
    // torchtitan at --zero 0: each unit's fp32 gradients all-reduced across the replicas at the end of
    // its backward, every micro-step (zero_buffers.hpp); its gathers are local copies.
    c.per_micro_step_reduce_ms = 2 * reduce;
  } else if (s.zero_stage == 1 && deepspeed_zero(s)) {
    // DeepSpeed's ZeRO-1 reduces each gradient bucket to the rank whose partition holds it in the
    // last micro-step's backward (a reduce-scatter), then all-gathers the updated parameters after
    // the step, as ZeRO-2 does (stage_1_and_2.py, partition_gradients False): an all-reduce's bytes,
    // half of them after the step.
    c.per_global_step_ms = reduce;
    c.after_step_ms = reduce;
  } else if (s.zero_stage < 2) {
    c.per_global_step_ms = 2 * reduce;
  } else if (s.zero_stage == 2) {
    // DeepSpeed stage 2 reduces its gradient buckets in every backward (stage_1_and_2.py: with
    // partition_gradients, not only at the accumulation boundary; its no_sync refuses stage 2),
    // as FSDP's SHARD_GRAD_OP does; the all-gather of the updated parameters follows the step.
    (reduce_once ? c.per_global_step_ms : c.per_micro_step_reduce_ms) = reduce;
    // FSDP without resharding after forward (FSDP2's reshard_after_forward False, FSDP1's
    // SHARD_GRAD_OP) still reshards after backward: each micro-step's forward gathers the
    // parameters again, once (ZeRO-3 gathers in backward too).
    if (fsdp_runs(s))
      c.per_micro_step_ms = (share * Pd + share_e * Pe) * param_elem / bytes_per_ms;
    else
      c.after_step_ms = reduce;
  } else {
    // --fp8-all-gather: the fp8 linears' weights gather at one byte (training_fp8.hpp).
    const double P8 = fp8_all_gather_parameters(s);
    const double gathers = 2 * (share * ((Pd - P8) * param_elem + P8) + share_e * Pe * param_elem) / bytes_per_ms;
    c.per_micro_step_ms = gathers + (reduce_once ? 0 : reduce);
    if (reduce_once) c.per_global_step_ms = reduce;
  }
  return c;
}

double group_link_gbs(const training_setup& s, const device_spec& d, int gpus) {
  if (s.link_gbs) return *s.link_gbs;
  const double among = d.link_gbs_among(gpus);
  return gpus <= s.gpus_per_node && among > 0 ? among : s.network_gbs;
}

double exposed_communication_ms(double comm_ms, double window_ms, std::int64_t layers) {
  if (comm_ms <= 0) return 0;
  const double one_layer = comm_ms / static_cast<double>(std::max<std::int64_t>(1, layers));
  return std::max(one_layer, comm_ms - std::max(0.0, window_ms));
}

}  // namespace tiletune
