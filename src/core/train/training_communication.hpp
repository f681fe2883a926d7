#pragma once
#include <string>

#include "core/device/device_spec.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune {

// The bus bandwidth NCCL's ring collectives reach against the link's (every ring here).
inline constexpr double ring_efficiency = 0.8;

// Data-parallel communication of one training step across world_size GPUs,
// from the bytes the collectives move and the bandwidth each GPU has to its
// peers. Ring collectives move (W-1)/W of a buffer per GPU for a
// reduce-scatter or an all-gather, twice that for an all-reduce (NCCL's
// "bus bandwidth" accounting).
//   ZeRO 0-2: the gradients are all-reduced (ZeRO 1/2: reduce-scattered, and
//     the updated parameters all-gathered: the same volume) once per optimizer step;
//     ZeRO-2 reduce-scatters every micro-step, and FSDP's stage 2 gathers every micro-step.
//   ZeRO 3: the 16-bit parameters are all-gathered in forward and again in
//     backward, and the gradients reduce-scattered, every micro-step.
// The volumes here; what the GPU waits for is exposed_communication_ms.
struct communication_estimate {
  double per_global_step_ms = 0;  // gradient all-reduce, once per optimizer step (DeepSpeed's ZeRO-1: its reduce-scatter)
  double per_micro_step_ms = 0;   // ZeRO-3 gathers and reduce-scatters
  // ZeRO-2: the gradients' reduce-scatter, every micro-step (each rank keeps only its shard's
  // gradients, so it cannot wait for the last micro-step as DDP's no_sync and ZeRO-1 do);
  // torchtitan at --zero 0: their all-reduce across the replicas, every micro-step (fsdp_replicated).
  double per_micro_step_reduce_ms = 0;
  // DeepSpeed's ZeRO-1 and ZeRO-2: the updated parameters' all-gather after the optimizer step
  // (stage_1_and_2.py's all_gather_dp_groups), which nothing runs beside.
  double after_step_ms = 0;
  double link_gbs = 0;            // the collectives' bus bandwidth per GPU, one direction, as assumed
  std::string link;               // where that figure comes from
  // An all-to-all (MoE token dispatch) has no ring to share ports: across nodes each GPU's
  // own network port carries what leaves the node.
  double alltoall_gbs = 0;
};

// The link: inside one node (world size up to gpus_per_node) the preset's
// GPU-to-GPU bandwidth; across nodes NCCL runs one ring channel per network
// port with the in-node hops on the GPU link, each channel leaving the node
// once, so a GPU's collectives see min(GPU link, gpus_per_node x network port)
// (H100 with 8 NDR ports: 400 GB/s; nccl-tests reach 400-450 GB/s bus
// bandwidth across nodes); s.link_gbs when given, for all. Ring collectives
// reach about 80% of it.
communication_estimate estimate_communication(const training_setup& s, const device_spec& d);

// The bandwidth per GPU, one direction, of a group of `gpus` GPUs that talk among themselves (a
// tensor-parallel group, a context-parallel ring, a pipeline's stages): --link-gbs when given;
// inside a node the GPU link among them (device_spec::link_gbs_among: an H100 NVL's PCIe between
// its bridged pairs); across nodes, or without a GPU link, the network port.
double group_link_gbs(const training_setup& s, const device_spec& d, int gpus);

// What of an exchange of comm_ms the GPU waits for when it runs beside window_ms
// of compute layer by layer: the rest beyond the window, and never less than one
// layer's share (the first gather, the last reduction, wait with nothing to hide
// them). DDP buckets its all-reduce under backward; FSDP and ZeRO-3 prefetch the
// next layer's gather and reduce the last layer's gradients during compute.
double exposed_communication_ms(double comm_ms, double window_ms, std::int64_t layers);

}  // namespace tiletune
