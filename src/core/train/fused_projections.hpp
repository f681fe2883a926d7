// Internal to src/core/train: a step's GEMMs as the model's modules run them. A model with one
// fused q, k, v projection (GPT-2's c_attn, Phi-3's qkv_proj, GPT-NeoX's query_key_value) or gate
// and up (Phi-3's gate_up_proj) runs one GEMM of their summed widths; GPT-2's Conv1D stores its
// weights in x out. `gemm --model` tunes these GEMMs and `batch` looks the same ones up.
#pragma once
#include <string>
#include <vector>

#include "core/train/training_plan.hpp"

namespace tiletune {

// The layer a step GEMM's name starts with, without "layers.", its pass and the experts'
// "(grouped ...)": "layers.q_proj forward" -> "q_proj".
std::string step_gemm_layer(const std::string& gemm_name);

// The fused projections' parts merged into one GEMM per pass ("layers.qkv_proj forward", its
// first_part the first part's name): forward and recompute add the parts' outputs (n), data-grad
// their inputs to the sum (k), weight-grad their rows (m). Every other GEMM as it was, in order.
std::vector<step_gemm> fuse_projections(const model_spec& m, std::vector<step_gemm> gemms);

// The layout the model runs g in (step_gemm_layout's, but for GPT-2's Conv1D linears: the
// forward reads the in x out weight as stored, nn; the data-grad transposed, nt; the weight-grad
// makes in x out, tn with m and n exchanged in g).
layout model_gemm_layout(const model_spec& m, step_gemm& g);

}  // namespace tiletune
