// Pipeline parallelism with the 1F1B schedule: the stage one GPU holds, its memory (the worse of
// the first and the last stage), its point-to-point sends and the bubble. Source: Narayanan et al.
// 2021 (Megatron-LM's 1F1B: "the number of outstanding forward passes is at most the number of
// pipeline stages", the first stage's warm-up holds P micro-batches, or the step's m where fewer;
// bubble (p - 1) / m of the ideal time, (p - 1) / (m + p - 1) of the step).
#include "core/train/training_pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/training_communication.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

namespace {
constexpr double p2p_efficiency = 0.8;  // as the rings' (training_communication.cpp)
std::int64_t stage_layers(const training_setup& s) {
  const std::int64_t p = std::max(1, s.pipeline_parallel);
  return (s.model.num_layers + p - 1) / p;
}
// The GPUs of the whole setup: its world size, or a tensor-parallel shard's ranks (world / T) x T.
int setup_gpus(const training_setup& s) { return s.world_size * std::max(1, s.dp_span); }
// The stages are outermost in the rank order (Megatron-LM's tp-cp-ep-dp-pp, torchtitan's mesh
// [pp, dp, cp, tp], DeepSpeed's PipeModelDataParallelTopology): a stage's tensor-, context- and
// data-parallel ranks fill W / P consecutive GPUs, and the next stage's start W / P further on.
// Adjacent stages share a node only where all W GPUs do.
bool stages_in_node(const training_setup& s) { return setup_gpus(s) <= s.gpus_per_node; }
// A stage's sends: among the W GPUs the stages span (training_communication.hpp).
double stage_link_gbs(const training_setup& s, const device_spec& d) { return group_link_gbs(s, d, setup_gpus(s)); }
}  // namespace

void validate_pipeline_parallel(const training_setup& s) {
  const int p = s.pipeline_parallel;
  if (p < 1 || p > 1024) throw usage_error(fmt::format("--pipeline-parallel {} is invalid: 1 to 1024 stages", p));
  if (s.virtual_stages < 1)
    throw usage_error(fmt::format("--virtual-stages {} is invalid: 1 or more model chunks per pipeline stage",
                                  s.virtual_stages));
  if (p == 1) {
    if (s.virtual_stages != 1)
      throw usage_error(fmt::format("--virtual-stages {} interleaves pipeline stages: it needs --pipeline-parallel "
                                    "2 or more",
                                    s.virtual_stages));
    return;
  }
  if (p > s.model.num_layers)
    throw usage_error(fmt::format("--pipeline-parallel {} is more stages than {}'s {} layers", p, s.model.name,
                                  s.model.num_layers));
  const int tp = std::max(1, s.tensor_parallel);
  if (s.world_size % (tp * p))
    throw usage_error(fmt::format("--world-size {} is not a multiple of --tensor-parallel {} x --pipeline-parallel {}",
                                  s.world_size, tp, p));
  const model_spec& m = s.model;
  const char* why = m.is_moe() ? "a mixture of experts"
                    : m.is_mla() ? "multi-head latent attention"
                    : !m.causal ? "an encoder (its pooler and MLM head)"
                    : s.lora_rank > 0 ? "LoRA"
                    : s.zero_stage >= 3 ? "--zero 3"
                    : s.offload != offload_kind::none ? "--offload"
                    : s.optimizer_in_backward ? "--optimizer-in-backward"
                                              : nullptr;
  if (why) throw usage_error(fmt::format("--pipeline-parallel {} is not modelled with {}", p, why));
  const int v = s.virtual_stages;
  if (v < 1 || v > 64) throw usage_error(fmt::format("--virtual-stages {} is invalid: 1 to 64 model chunks a stage", v));
  if (v > 1 && s.model.num_layers % (static_cast<std::int64_t>(p) * v) != 0)
    throw usage_error(fmt::format("--virtual-stages {}: {}'s {} layers do not split into {} x {} equal model chunks "
                                  "(Megatron-LM's interleaved schedule needs L a multiple of P x V)",
                                  v, s.model.name, s.model.num_layers, p, v));
}

training_setup pipeline_stage(const training_setup& s) {
  training_setup stage = s;
  const int p = std::max(1, s.pipeline_parallel);
  stage.model.num_layers = stage_layers(s);
  stage.world_size = s.world_size / p;  // its data-parallel ranks, consecutive (the stages outermost)
  stage.pipeline_parallel = 1;
  return stage;
}

memory_breakdown pipeline_memory(const training_setup& s) {
  const training_setup stage = pipeline_stage(s);
  const memory_breakdown both = estimate_memory(stage);  // ceil(L / P) layers, the embedding and the LM head
  const model_spec& m = s.model;
  // An untied model's stages each lack one vocabulary matrix (the first the LM head, the last the
  // embedding); a tied one keeps it on both (Megatron's shared word embeddings, summed each step).
  const double vocab = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab_size * m.hidden_size);
  const double keep = 1 - vocab / static_cast<double>(both.parameters);
  auto scaled = [&](std::int64_t bytes) { return std::llround(static_cast<double>(bytes) * keep); };
  memory_breakdown last = both;
  last.parameters = both.parameters - static_cast<std::int64_t>(vocab);
  last.trainable_parameters = both.trainable_parameters - static_cast<std::int64_t>(vocab);
  last.weights_bytes = scaled(both.weights_bytes);
  last.gradients_bytes = scaled(both.gradients_bytes);
  last.optimizer_bytes = scaled(both.optimizer_bytes);
  last.stage_name = "last stage";
  memory_breakdown first = last;
  first.stage_name = "first stage";
  // The first stage: no logits, the LM head's autocast copy gone, the most micro-batches 1F1B holds in
  // flight (P, more interleaved); a step of fewer holds fewer (memory_breakdown::pipeline).
  first.autocast_weight_copies_bytes = std::max<std::int64_t>(0, both.autocast_weight_copies_bytes - both.lm_head_copy_bytes);
  if (!m.tied_embeddings) first.lm_head_copy_bytes = 0;
  first.logits_bytes_per_sample = first.logits_forward_bytes_per_sample = first.logits_held_bytes_per_sample = 0;
  first.pipeline = {s.pipeline_parallel, s.virtual_stages, s.global_batch.value_or(0), data_parallel_degree(s)};
  const double in_flight = pipeline_first_stage_most_in_flight(s.pipeline_parallel, s.virtual_stages);
  first.activation_bytes_per_sample =
      static_cast<std::int64_t>(in_flight * static_cast<double>(both.activation_bytes_per_sample));
  first.checkpointed_activation_bytes_per_sample =
      static_cast<std::int64_t>(in_flight * static_cast<double>(both.checkpointed_activation_bytes_per_sample));
  first.other_stages = {last};
  return first;
}

double pipeline_p2p_ms(const training_setup& s, const device_spec& d, std::int64_t micro_batch) {
  if (s.pipeline_parallel <= 1) return 0;
  const double link = stage_link_gbs(s, d);
  const double bytes = static_cast<double>(micro_batch) * static_cast<double>(s.seq_len) *
                      static_cast<double>(s.model.hidden_size) * activation_bytes(s.prec);
  // Interleaved: each micro-batch passes every rank V times each way.
  return 2 * std::max(1, s.virtual_stages) * bytes / (link * p2p_efficiency * 1e6);
}

std::int64_t micro_batches_per_step(std::int64_t global_batch, std::int64_t dp, std::int64_t b, int p, int v) {
  const std::int64_t multiple = p > 1 && v > 1 ? p : 1;
  if (global_batch <= 0) return multiple;
  // The global batch of one more `multiple` micro-batches a rank: below the asked one or past it.
  const std::int64_t unit = std::max<std::int64_t>(1, b) * std::max<std::int64_t>(1, dp) * multiple;
  const std::int64_t below = std::max<std::int64_t>(1, global_batch / unit);
  const std::int64_t k = below * unit >= global_batch || global_batch - below * unit < (below + 1) * unit - global_batch
                             ? below
                             : below + 1;  // a tie: the larger
  return k * multiple;
}

double pipeline_first_stage_in_flight(int p, int v, std::int64_t m) {
  const double steps = static_cast<double>(m);
  if (v <= 1) return std::min<double>(p, steps);
  // Rank 0's warm-up chunk forwards ((P - rank - 1) x 2 + (V - 1) x P, microbatch_group_size_per_vp_stage
  // being P by default), and the forward 1F1B runs before its first backward, at most the step's m x V.
  const double chunks = 2.0 * (p - 1) + (v - 1.0) * p + 1;
  return std::min(chunks, steps * v) / v;
}

double pipeline_first_stage_most_in_flight(int p, int v) {
  return pipeline_first_stage_in_flight(p, v, std::numeric_limits<std::int32_t>::max());
}

double pipeline_in_flight_share(const pipeline_schedule& ps, std::int64_t micro_batch, bool accumulating) {
  if (ps.stages <= 1) return 1;
  // Not accumulating: one micro-batch a step. Accumulating without a per-rank batch (no
  // --global-batch, 1F1B): an unknown count above 1, taken at the most.
  const std::int64_t m = !accumulating ? 1
                         : ps.global_batch > 0 || ps.virtual_stages > 1
                             ? micro_batches_per_step(ps.global_batch, ps.data_parallel, micro_batch, ps.stages,
                                                      ps.virtual_stages)
                             : std::numeric_limits<std::int32_t>::max();
  return pipeline_first_stage_in_flight(ps.stages, ps.virtual_stages, m) /
         pipeline_first_stage_most_in_flight(ps.stages, ps.virtual_stages);
}

double candidate_in_flight_share(const memory_breakdown& m, const batch_candidate& c) {
  return pipeline_in_flight_share(m.pipeline, c.micro_batch, c.grad_accum_steps > 1);
}

double pipeline_bubble_ms(const training_setup& s, double micro_step_ms) {
  return s.pipeline_parallel > 1 ? (s.pipeline_parallel - 1) * micro_step_ms / std::max(1, s.virtual_stages) : 0;
}

std::vector<std::string> pipeline_notes(const training_setup& s, const device_spec& d) {
  if (s.pipeline_parallel <= 1) return {};
  const int p = s.pipeline_parallel;
  // Layers that do not split evenly: the stages hold the ceiling or the floor of L / P, and the
  // step is timed by the largest (Megatron-LM asks for L a multiple of P unless told otherwise).
  const std::int64_t most = (s.model.num_layers + p - 1) / p, least = s.model.num_layers / p;
  const std::int64_t layers = s.model.num_layers;
  const std::string held =
      most == least ? fmt::format("each holds {} of the {} layers", most, layers)
                    : fmt::format("the stages hold {} or {} of the {} layers (an uneven split, timed as a stage of {}; "
                                  "Megatron-LM asks for L a multiple of P)",
                                  most, least, layers, most);
  std::vector<std::string> notes = {fmt::format(
      "pipeline parallelism over {} stages, 1F1B (Narayanan et al. 2021): {}, the first "
      "also the embedding, the last the final norm, the LM head and the loss; the memory is the worse of the first "
      "stage (the activations of min(P, m) micro-batches in flight, m a step's micro-batches: up to {}) and the last "
      "(one, and the logits). The bubble adds (P - 1) micro-steps to each global step of m (gradient accumulation) "
      "micro-steps, (P-1)/(m+P-1) of the step: more accumulation hides it. Each micro-step sends the stage's output forward and its input's gradient "
      "backward, micro-batch x {} x {} x {} bytes each, at {:g} GB/s x 0.8 ({}), not overlapped. The stages are "
      "outermost in the rank order (Megatron-LM's tp-cp-ep-dp-pp, torchtitan's [pp, dp, cp, tp]): each stage's "
      "ranks are {} consecutive GPUs, its data-parallel exchange among them. The stages are "
      "timed as the last, the slowest (its layers, the LM head and the loss)",
      p, held, p, s.seq_len, s.model.hidden_size,
      activation_bytes(s.prec),
      stage_link_gbs(s, d),
      s.link_gbs ? "--link-gbs" : stages_in_node(s) ? "inside a node" : "across nodes, the network port",
      setup_gpus(s) / p)};
  if (s.virtual_stages > 1)
    notes.push_back(fmt::format(
                    "interleaved 1F1B (--virtual-stages {0}, Megatron-LM's --num-virtual-stages-per-pipeline-rank; "
                    "Narayanan et al. 2021, section 2.2.2): each rank holds {0} chunks of {1} layers, so the bubble is "
                    "(P - 1) / {0} micro-steps, the sends {0} times as many, and the first rank's activations "
                    "1 + (P - 1) / (P x {0}) = {2:.3f} times 1F1B's once a step has 2P micro-batches (its warm-up "
                    "of 2(P - 1) + ({0} - 1)P + 1 chunk forwards, capped by the step's; P's at m = P). Megatron-LM "
                    "runs a multiple of P = {3} micro-batches a step with it (Narayanan et al. 2021): each candidate's accumulation is rounded "
                    "up to one, and the global batch it reaches is the candidate's",
                    s.virtual_stages, s.model.num_layers / (p * s.virtual_stages),
                    pipeline_first_stage_most_in_flight(p, s.virtual_stages) / p, p));
  return notes;
}

}  // namespace tiletune
