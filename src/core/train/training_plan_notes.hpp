// Internal to src/core/train: the batch plan's notes and suggestions (training_plan_notes.cpp), and
// the planner's search for the largest micro-batch that fits, which they quote (training_plan.cpp).
#pragma once
#include <cstdint>

#include "core/train/training_communication.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune {

// The peak only grows with the micro-batch: the largest that fits the budget (0: none), by bisection.
// accumulating: the micro-steps hold the earlier ones' gradients (a per-GPU batch above the micro-batch).
std::int64_t largest_fitting_batch(const memory_breakdown& mem, std::int64_t budget_bytes, bool ckpt,
                                   bool accumulating);

// The largest micro-batch that fits as the plan would run it: at the asked global batch a smaller
// micro-batch accumulates, and holds the gradients (0: none fits). The notes quote it.
std::int64_t largest_fitting_micro_batch(const batch_plan& plan, bool ckpt);

void add_communication_notes(batch_plan& plan, const training_setup& s, const communication_estimate& comm);
// Where the host issues the recommended step slower than the GPU runs it.
void add_host_wait_note(batch_plan& plan);
// What the model assumes and leaves out, LoRA's path and the peak's formula.
void add_model_notes(batch_plan& plan, const training_setup& s);
// Why the recommendation is what it is (plan.recommended must be set).
void add_recommendation_notes(batch_plan& plan, const training_setup& s);
// When nothing fits: why, and what would (smallest change first).
void add_nothing_fits_note(batch_plan& plan, const training_setup& s);
void add_suggestions(batch_plan& plan, const training_setup& s);

}  // namespace tiletune
