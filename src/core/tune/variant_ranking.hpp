#pragma once
// How the analytical model's predictions rank variants, ties included.
//
// Many variants reach the model's efficiency cap and predict the same time to
// the last digit. The cheapest tile used to win such a tie (the smallest tile
// asks for the fewest registers and least shared memory), which is the tile a
// GPU runs slowest: it reuses each loaded byte least. Ties are now broken by
// what makes a tile faster on real hardware, in this order: fewer bytes served
// by L2 (more reuse per loaded byte), then fuller waves (less of the last wave
// idle), then fewer resources, then a mechanism measured to help that the model has no term for
// (gemm_family::tie_order); and a plan whose top is a tie says so.
#include <cstddef>
#include <string>

#include "core/tune/gemm_tuner.hpp"

namespace tiletune {

// Whether two predicted times are the same to the model (relative 1e-6).
bool times_tie(double a_us, double b_us);
bool predictions_tie(const prediction& a, const prediction& b);

// Whether `a` ranks before `b` on prediction: faster, or tied and ahead on
// L2 bytes, then wave efficiency, then registers and shared memory.
bool predicted_before(const variant_result& a, const variant_result& b);
// What a variant holds of an SM: its registers' bytes and its shared memory (the last tie-break).
double resource_cost(const variant_result& v);

// Sorts a plan's variants (ok ones first, best first; the rest by status),
// numbers the ok ones and recommends the first.
void rank_by_prediction(gemm_plan& plan);
// A plan not measured whose recommended variant uses a mechanism no GPU has run yet
// (gemm_family::untried_on_gpu) says so in its notes.
void note_untried_recommendation(gemm_plan& plan);
// A plan whose operands' rows start off 16 bytes, recommending a variant that copies them first or
// one element at a time, says which stride it is, what the copies cost in the prediction, and the
// padded leading dimension that lets kernels read the rows in place.
void note_unaligned_rows(gemm_plan& plan);
// A tf32 plan on a GPU whose tf32 tensor peak is no higher than its f32 peak (GeForce and A10-class
// parts) says that f32, exact and planned by other kernels, may be faster there.
void note_tf32_no_faster_than_f32(gemm_plan& plan);

// How many ok variants, from the first, tie with the first (1: no tie).
std::size_t top_tie_size(const gemm_plan& plan);

// For a predicted plan whose top is a tie: a sentence naming how many tie and
// how the tie was broken; empty otherwise (and for measured plans).
std::string top_tie_note(const gemm_plan& plan);

}  // namespace tiletune
