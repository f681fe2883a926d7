#pragma once
#include <string>

#include "core/device/device_spec.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune {

// Data-parallel communication of one training step across world_size GPUs,
// from the bytes the collectives move and the bandwidth each GPU has to its
// peers. Ring collectives move (W-1)/W of a buffer per GPU for a
// reduce-scatter or an all-gather, twice that for an all-reduce (NCCL's
// "bus bandwidth" accounting).
//   ZeRO 0-2: the gradients are all-reduced (ZeRO 1/2: reduce-scattered, and
//     the updated parameters all-gathered: the same volume) once per optimizer step.
//   ZeRO 3: the 16-bit parameters are all-gathered in forward and again in
//     backward, and the gradients reduce-scattered, every micro-step.
// Counted as not overlapped with compute: an upper bound, since DDP and
// DeepSpeed overlap much of it with backward.
struct communication_estimate {
  double per_global_step_ms = 0;  // gradient all-reduce, once per optimizer step
  double per_micro_step_ms = 0;   // ZeRO-3 gathers and reduce-scatters
  double link_gbs = 0;            // per GPU, one direction, as assumed
  std::string link;               // where that figure comes from
};

// The link: the preset's GPU-to-GPU bandwidth inside one node (8 GPUs), a
// 400 Gb/s network port per GPU across nodes, or s.link_gbs when given; ring
// collectives reach about 80% of it.
communication_estimate estimate_communication(const training_setup& s, const device_spec& d);

}  // namespace tiletune
