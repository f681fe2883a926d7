// The peak of a step: the bytes allocated in each of its phases and what the
// caching allocator reserves for them.
#include "core/train/training_plan.hpp"
#include "core/train/training_pipeline.hpp"

#include <algorithm>
#include <limits>

namespace tiletune {

std::int64_t memory_breakdown::per_sample_bytes(bool checkpointing) const {
  return (checkpointing ? checkpointed_activation_bytes_per_sample : activation_bytes_per_sample) +
         logits_bytes_per_sample;
}

namespace {
// Allocated bytes in each phase of a step, the largest of which PyTorch
// reports as its peak. Gradients are None in forward (zero_grad(set_to_none)).
// Through backward, layer by layer, kept activations and 16-bit weight copies
// are freed as gradients appear: the sum moves linearly from the loss's
// backward to the optimizer step, so those two ends bound it, with the
// first layer's backward between them (all gradients but its own, its
// activations, the incoming and outgoing gradients). Under checkpointing the
// sum at layer l is the gradients of the layers above it, the inputs of
// those below and one layer recomputed: linear in l, so its two ends, the
// last layer's backward and the first's, bound it; the first's holds what
// the plain step's does then (the recomputed layer in place of the kept
// one; the layer's input is the tensor its first norm keeps).
// In floating point: a sample is at most 2^50 bytes (sample_bytes), the micro-batch up to 2^20, so
// a product can pass 64-bit integers; peak_bytes saturates where it does.
struct phase_bytes {
  const char* name;
  double bytes;
};
// Bytes as a 64-bit count, the largest where the double is past it (never fits any budget).
std::int64_t saturated_bytes(double bytes) {
  return bytes < 9.0e18 ? static_cast<std::int64_t>(bytes) : std::numeric_limits<std::int64_t>::max();
}

std::vector<phase_bytes> phases(const memory_breakdown& m, std::int64_t micro_batch, bool ckpt, bool accumulating) {
  const double b = static_cast<double>(micro_batch);
  // (--paged-optimizer: the optimizer states in managed memory, outside PyTorch's pool: paged_optimizer_bytes.)
  const double states = static_cast<double>(m.held_bytes());
  // The gradients alive from backward's end on: all of them, or with the optimizer step in backward
  // only those in flight (each is freed by its parameter's step as soon as it is complete).
  const double grads = static_cast<double>(m.alive_gradients_bytes());
  // Accumulating: every gradient is allocated from the forward on (the earlier micro-steps'); so is
  // Megatron-LM's grad buffer in every step.
  const bool allocated = accumulating || m.gradients_allocated_throughout;
  // LitGPT's no_sync while accumulating: the unsharded gradients beside them, until the optimizer step.
  const double no_sync = accumulating ? static_cast<double>(m.no_sync_gradient_bytes) : 0;
  const double earlier = (allocated ? grads : 0) + no_sync;
  // At the last layer's recompute, the gradients of what backward has passed: outside the blocks,
  // all of them when accumulating, those in flight with the optimizer step in backward.
  const double grads_above = no_sync + (allocated || m.optimizer_in_backward
                                            ? grads
                                            : static_cast<double>(m.gradients_bytes - m.layer_gradients_bytes));
  // (A pipeline's first stage: the micro-batches this step leaves in flight.)
  const double kept = static_cast<double>(ckpt ? m.checkpointed_activation_bytes_per_sample : m.activation_bytes_per_sample) *
                      pipeline_in_flight_share(m.pipeline, micro_batch, accumulating);
  std::vector<phase_bytes> out;
  // The forward's peak: its logits, or with LoRA an adapter's temporaries in
  // the last layer, over everything kept, if larger.
  // --quantize nf4: a block's linear dequantizes its weight while it runs (forward, recompute, backward).
  const double dequantized = static_cast<double>(m.dequantized_weight_bytes);
  // Autocast's cached copies stay to the forward's end; under checkpointing the uncached ones of the
  // blocks do not.
  const double forward_copies =
      static_cast<double>(std::max<std::int64_t>(0, m.autocast_weight_copies_bytes - (ckpt ? m.uncached_block_copies_bytes : 0)));
  out.push_back({"forward", states + earlier + forward_copies + dequantized +
                                b * (kept + std::max(m.logits_forward_bytes_per_sample, m.lora_transient_bytes_per_sample))});
  // Under checkpointing only the LM head still holds its autocast copy in backward.
  // FSDP: a unit's unsharded gradients wait for their reduce-scatter in every backward phase, the
  // LM head's beside the logits' (the largest unit's counted in each).
  const double unit_gradients = static_cast<double>(m.fsdp_unit_gradient_bytes);
  out.push_back({"loss backward", states + earlier + unit_gradients +
                                      (ckpt ? m.lm_head_copy_bytes : m.autocast_weight_copies_bytes) +
                                      b * (kept + m.logits_bytes_per_sample)});
  // The caller keeps the model output (its logits) through backward.
  const double layer_backward = static_cast<double>(m.recompute_layer_bytes_per_sample + m.logits_held_bytes_per_sample);
  if (ckpt)
    out.push_back({"recompute", states + grads_above + unit_gradients + dequantized + b * (kept + layer_backward)});
  out.push_back({"first layer backward", states + grads + no_sync + unit_gradients + dequantized +
                                             b * (m.outer_saved_bytes_per_sample + layer_backward)});
  // The end of backward with a tied embedding (GPT-2, Qwen2.5-0.5B, Gemma):
  // every other gradient is in place, the LM head's share of the tied
  // gradient waits in autograd's input buffer for the embedding's (a dense
  // V x h from embedding_dense_backward), which are summed before
  // AccumulateGrad; the model output's logits are still held by the caller.
  if (m.tied_embedding_grad_bytes > 0)
    out.push_back({"embedding backward", states + grads + no_sync + m.tied_embedding_grad_bytes +
                                             b * m.logits_held_bytes_per_sample});
  // Fused AdamW updates in place (torch._fused_adamw_ over tensor lists): no temporaries. DeepSpeed's
  // 16-bit wrappers first give the fp32 masters fp32 gradients.
  out.push_back({"optimizer step", states + grads + static_cast<double>(m.optimizer_step_gradient_bytes)});
  return out;
}
}  // namespace

namespace {
double reserved_bytes(const memory_breakdown& m, std::int64_t b, bool ckpt, bool accumulating);
// This stage's own peak, without a pipeline's other stages.
std::int64_t own_peak_bytes(const memory_breakdown& m, std::int64_t b, bool ckpt, bool accumulating) {
  return saturated_bytes(reserved_bytes(m, b, ckpt, accumulating) + static_cast<double>(m.cuda_context_bytes));
}
}  // namespace

std::string memory_breakdown::peak_phase(std::int64_t micro_batch, bool checkpointing, bool accumulating) const {
  // A pipeline's other stage, where it peaks higher than this one (peak_bytes counts both: compared
  // with it, the last stage's peak was never higher and the first stage was always named).
  for (const memory_breakdown& o : other_stages)
    if (o.peak_bytes(micro_batch, checkpointing, accumulating) > own_peak_bytes(*this, micro_batch, checkpointing, accumulating))
      return o.peak_phase(micro_batch, checkpointing, accumulating);
  const auto all = phases(*this, micro_batch, checkpointing, accumulating);
  const std::string name =
      std::max_element(all.begin(), all.end(), [](auto& x, auto& y) { return x.bytes < y.bytes; })->name;
  return stage_name.empty() ? name : stage_name + ": " + name;
}

std::int64_t memory_breakdown::peak_allocated_bytes(std::int64_t micro_batch, bool checkpointing,
                                                   bool accumulating) const {
  std::int64_t peak = 0;
  for (const auto& p : phases(*this, micro_batch, checkpointing, accumulating))
    peak = std::max(peak, saturated_bytes(p.bytes));
  for (const memory_breakdown& o : other_stages)
    peak = std::max(peak, o.peak_allocated_bytes(micro_batch, checkpointing, accumulating));
  return peak;
}

std::int64_t memory_breakdown::held_bytes() const {
  return weights_bytes + (paged_optimizer ? 0 : optimizer_bytes) + library_workspace_bytes + deepspeed_bucket_bytes;
}

namespace {
// What the caching allocator reserves at the step's peak: the tensors held
// for the whole run (weights, optimizer states, workspaces: no slack), the
// transient rest of each phase with its slack, and under checkpointing the
// gradients' share on top (training_calibration.hpp has the sources).
double reserved_bytes(const memory_breakdown& m, std::int64_t b, bool ckpt, bool accumulating) {
  const double held = static_cast<double>(m.held_bytes());
  double reserved = 0;
  for (const auto& p : phases(m, b, ckpt, accumulating))
    reserved = std::max(reserved, held + static_cast<double>(p.bytes - m.held_bytes()) * (1 + m.allocator_overhead));
  if (ckpt) {
    reserved += m.allocator_overhead_ckpt * static_cast<double>(m.alive_gradients_bytes());
    // Checkpointing only drops kept activations and re-creates one layer's
    // of them at a time in backward: at every moment it holds a subset of
    // what the plain step holds at the same micro-batch, allocated in the
    // same order, so it never needs a larger pool than the plain step's.
    reserved = std::min(reserved, reserved_bytes(m, b, false, accumulating));
  }
  return reserved;
}
}  // namespace

std::int64_t memory_breakdown::peak_bytes(std::int64_t micro_batch, bool checkpointing, bool accumulating) const {
  std::int64_t peak = own_peak_bytes(*this, micro_batch, checkpointing, accumulating);
  for (const memory_breakdown& o : other_stages) peak = std::max(peak, o.peak_bytes(micro_batch, checkpointing, accumulating));
  return peak;
}

}  // namespace tiletune
