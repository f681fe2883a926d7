// Internal to src/core/train: the host's side of an eager training step.
//
// Python, the dispatcher and autograd's engine issue an eager step op by op,
// and the GPU cannot run ahead of them. Per phase (forward to the loss,
// backward, optimizer step) the step takes the longer of what the host needs
// to issue the phase and what the GPU needs to run it: with short kernels
// (small micro-batches, checkpointing's second forward in Python, LoRA's many
// small adapter ops) the host decides the step (issue 19).
#pragma once

#include "core/train/lora_step.hpp"
#include "core/train/training_inventory.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune {

// The kernels an eager step launches, by phase: the forward to the loss,
// checkpointing's second forward of the layers (and their adapters), and the
// backward, about two kernels per forward op (the inventory's rule for time).
struct step_kernels {
  double forward = 0, recompute = 0, backward = 0;
  double total() const { return forward + recompute + backward; }
};
// inv: the step's inventory (its forward kernels per layer and outside the
// layers); lora: the adapter path's kernels (lora_path).
// recompute_share: the layers a checkpointed step recomputes (recompute_share in training_plan.hpp).
step_kernels count_step_kernels(const model_spec& m, const token_inventory& inv, const lora_path_cost& lora,
                                double recompute_share);

struct host_issue {
  double forward_ms = 0;    // to the loss
  double backward_ms = 0;   // checkpointing's recompute included
  double optimizer_ms = 0;  // the optimizer step and zero_grad
};
host_issue host_issue_time(const training_setup& s, const step_kernels& k, bool checkpointing);

}  // namespace tiletune
