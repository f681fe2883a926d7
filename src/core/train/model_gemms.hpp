#pragma once
// Every distinct GEMM of one step of a model, as a suite to tune
// (`tiletune gemm --model`): the linear layers' forward GEMMs, and for training
// their data- and weight-gradient GEMMs, with how often each runs per step.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/gemm/gemm_suite.hpp"
#include "core/gemm/grouped_rows.hpp"
#include "core/train/model_spec.hpp"
#include "core/train/training_plan.hpp"  // fp8_recipe

namespace tiletune {

enum class model_phase { train, prefill, decode };
model_phase parse_model_phase(std::string_view s);  // throws usage_error naming the value
std::string_view to_string(model_phase p);

struct model_gemm_suite {
  gemm_suite suite;                  // one problem per distinct shape, dtype and layout
  std::vector<std::int64_t> counts;  // per problem: how many times one step runs it
  std::vector<std::string> notes;    // what the suite leaves out or approximates
};

// tokens: rows of the step's activations (train and prefill: sequences x length;
// decode: the sequences that each decode one token). Attention's own GEMMs are
// left out (a fused attention kernel runs them), so are LoRA's thin adapters.
//
// tensor_parallel: the GEMMs one of that many ranks runs under Megatron-style
// tensor parallelism: column-parallel layers (q, k, v, gate, up, MLA's q_b and
// kv_b, lm_head over the vocabulary) keep 1/tp of their outputs, row-parallel
// ones (o, down) 1/tp of their inputs, routed experts split like the MLP; the
// low-rank projections and the router are replicated. Key/value heads fewer
// than the ranks are replicated (one head a rank). Throws usage_error naming a
// count tp does not divide (attention heads, an MLP's width).
//
// routing: routed experts' forward and data-gradient GEMMs as grouped GEMMs (problem.groups),
// the step's tokens routed to top-k of the experts as it says (routed_rows), contiguous; none:
// a batched GEMM of each expert's average rows. Their weight-gradient GEMMs (grouped along K)
// stay batched either way.
//
// fp8: with tensorwise, the step as `batch --fp8 tensorwise` runs it (training_fp8.hpp): the blocks'
// linears' forward GEMMs in e4m3 and their gradients in e5m2_e4m3, the rest in t (which must be
// bf16), each problem keyed as batch looks it up in the tuning database.
//
// sequences (prefill only): how many sequences the tokens are; the LM head then runs on each one's
// last token, as a serving engine's prefill does. None: on every token (a pass that returns every
// logit), with a note saying so. Throws usage_error for another phase, or more sequences than tokens.
model_gemm_suite model_gemms(const model_spec& m, std::int64_t tokens, model_phase phase, dtype t,
                             int tensor_parallel = 1, std::optional<expert_routing> routing = std::nullopt,
                             fp8_recipe fp8 = fp8_recipe::none, std::optional<std::int64_t> sequences = std::nullopt);

}  // namespace tiletune
