#include "core/train/training_communication.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tiletune {

namespace {
constexpr int gpus_per_node = 8;
constexpr double network_gbs_per_gpu = 50;  // a 400 Gb/s port per GPU (DGX H100: ConnectX-7 per GPU)
constexpr double ring_efficiency = 0.8;     // NCCL ring bus bandwidth against the link's
}  // namespace

communication_estimate estimate_communication(const training_setup& s, const device_spec& d) {
  const std::optional<double> link_gbs = s.link_gbs;
  communication_estimate c;
  const double W = s.world_size;
  if (W <= 1) return c;
  if (link_gbs) {
    c.link_gbs = *link_gbs;
    c.link = fmt::format("{:g} GB/s per GPU (--link-gbs)", *link_gbs);
  } else if (s.world_size <= gpus_per_node && d.gpu_link_gbs > 0) {
    c.link_gbs = d.gpu_link_gbs;
    c.link = fmt::format("{:g} GB/s per GPU inside one node ({}'s GPU link)", d.gpu_link_gbs, d.name);
  } else {
    c.link_gbs = d.gpu_link_gbs > 0 ? std::min(d.gpu_link_gbs, network_gbs_per_gpu) : network_gbs_per_gpu;
    c.link = fmt::format("{:g} GB/s per GPU across nodes (a 400 Gb/s network port per GPU assumed)", c.link_gbs);
  }
  const double bytes_per_ms = c.link_gbs * ring_efficiency * 1e6;
  const memory_breakdown mem = estimate_memory(s);
  const bool lora = s.lora_rank > 0;
  // DDP reduces gradients in their own dtype: fp32 under AMP, fp32 LoRA adapters, bf16 in pure bf16.
  const double grad_elem = s.prec == precision::bf16 && !lora ? 2.0 : 4.0;
  const double param_elem = s.prec == precision::fp32 ? 4.0 : 2.0;
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
  if (s.zero_stage < 3) {
    c.per_global_step_ms = 2 * (share * Td + share_e * Te) * grad_elem / bytes_per_ms;
  } else {
    c.per_micro_step_ms = (2 * (share * Pd + share_e * Pe) * param_elem + (share * Td + share_e * Te) * grad_elem) /
                          bytes_per_ms;
  }
  return c;
}

}  // namespace tiletune
