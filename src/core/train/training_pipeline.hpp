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
// The first stage's memory (the embedding, no LM head or logits, the activations of the most
// micro-batches 1F1B holds in flight, fewer in a step of fewer micro-batches: pipeline_in_flight_share),
// with the last stage's (the LM head, its logits, one micro-batch in flight) in other_stages: the
// plan's peak is the larger.
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
// Micro-batches a data-parallel rank runs per optimizer step at micro-batch b on dp data-parallel
// ranks: the count (at least 1) whose global batch, b x count x dp, is nearest to global_batch, a tie
// going to the larger; interleaved over v > 1 chunks, the nearest multiple of p (Megatron-LM's
// interleaved schedule runs no other count). 0 without --global-batch: one micro-batch (p under the
// interleaved schedule). (Until 2026-12-04: the rank's floor(global / dp) samples over b, rounded up,
// which rounded down from floor(global / dp): 31 on 8 GPUs ran 24 at micro-batch 1, not 32.)
std::int64_t micro_batches_per_step(std::int64_t global_batch, std::int64_t dp, std::int64_t b, int p, int v);
// The first rank's activations in flight, in micro-batches of its stage, in a step of m micro-batches
// (Megatron-LM's schedules.py, the warm-up forwards plus the one 1F1B runs before its first backward,
// capped by what the step has): min(P, m) under 1F1B; interleaved over V > 1 chunks of L / (PV)
// layers, min(2(P - 1) + (V - 1)P + 1, mV) chunk forwards, / V micro-batches: P (1 + (P - 1) / (PV))
// once m >= 2P (Korthikanti et al. 2022, section 4.2.3), P where m = P (all forwards first).
double pipeline_first_stage_in_flight(int p, int v, std::int64_t m);
// The most the first rank holds (m unbounded): the micro-batches pipeline_memory's activation terms hold.
double pipeline_first_stage_most_in_flight(int p, int v);
// The share of those the first rank holds at micro-batch b: in a step of its micro_batches_per_step
// where accumulating, else of one; 1 without a pipeline.
double pipeline_in_flight_share(const pipeline_schedule& ps, std::int64_t micro_batch, bool accumulating);

}  // namespace tiletune
