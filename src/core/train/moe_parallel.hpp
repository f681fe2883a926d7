// Internal to src/core/train: expert parallelism for mixture-of-experts
// training, the all-to-all it costs and what the plan says about MoE.
#pragma once
#include <string>
#include <vector>

#include "core/train/training_plan.hpp"

namespace tiletune {

// Ranks the routed experts are split over: s.expert_parallel when given, else 1,
// every framework's default (transformers' Trainer splits no experts; Megatron-LM's
// --expert-model-parallel-size, torchtitan's expert_parallel_degree default to 1);
// 1 for a dense model. Each rank holds experts / degree experts of every MoE layer.
int expert_parallel_degree(const training_setup& s);
// Throws usage_error when --expert-parallel does not divide the world size
// and the experts, or is asked of a dense model.
void validate_expert_parallel(const training_setup& s);

// Milliseconds per micro-step of the all-to-alls that send each token's
// hidden vector to its top-k experts' ranks and back: two per MoE layer in
// forward, two in backward (their gradients), two more in recompute.
double expert_alltoall_ms(const training_setup& s, double link_gbs, std::int64_t micro_batch, bool checkpointing);

// What the plan assumes of an MoE model, in words.
std::vector<std::string> moe_notes(const training_setup& s, double link_gbs);

}  // namespace tiletune
