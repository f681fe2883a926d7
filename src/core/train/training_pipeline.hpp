// Internal to src/core/train: pipeline parallelism (--pipeline-parallel P) with Megatron-LM's
// 1F1B schedule (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
// Clusters Using Megatron-LM"). Each stage holds ceil(L / P) layers, the first also the embedding,
// the last also the final norm, the LM head and the loss; the plan's memory is the worse of those two.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/device/device_spec.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune {

// Throws usage_error for P < 1, P above the layers, a world size T x P does not divide, and the
// setups not modelled with it (experts, MLA, LoRA, --zero 3, --offload, the optimizer in backward).
void validate_pipeline_parallel(const training_setup& s);
// One stage as a setup of its own: the model with ceil(L / P) layers (and both vocabulary
// matrices: pipeline_memory takes the one a stage lacks off), world_size / P, dp_span x P.
training_setup pipeline_stage(const training_setup& s);
// The first stage's memory (the embedding, no LM head or logits, P micro-batches' activations in
// flight under 1F1B), with the last stage's (the LM head, its logits, one micro-batch in flight)
// in other_stages: the plan's peak is the larger.
memory_breakdown pipeline_memory(const training_setup& s);
// Milliseconds per micro-step of a stage's point-to-point sends: its output activation forward and
// its input's gradient backward, b x s x h x (activation bytes) each, at 80% of the GPU link while
// the T x P GPUs fit in a node, else of the network port. Not overlapped.
double pipeline_p2p_ms(const training_setup& s, const device_spec& d, std::int64_t micro_batch);
// 1F1B's bubble: (P - 1) x the micro-step time, per global step of m micro-steps, i.e. a share of
// (P - 1) / (m + P - 1) of the step; interleaved over V chunks a rank (--virtual-stages), (P - 1) / V
// micro-steps, whose first rank holds 1 + (P - 1) / (PV) times 1F1B's activations and whose sends are
// V times as many.
double pipeline_bubble_ms(const training_setup& s, double micro_step_ms);
std::vector<std::string> pipeline_notes(const training_setup& s, const device_spec& d);
// The first rank's activations in flight, in micro-batches of its stage: P under 1F1B, P (1 + (P - 1)
// / (PV)) interleaved over V > 1 chunks (Megatron-LM's warm-up of 2(P - 1) + (V - 1)P + 1 chunk
// forwards of L / (PV) layers; Korthikanti et al. 2022, section 4.2.3).
double pipeline_first_stage_in_flight(int p, int v);

}  // namespace tiletune
