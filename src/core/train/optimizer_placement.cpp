// --optimizer-in-backward: each parameter's optimizer step runs as soon as its gradient is
// complete, and frees it. Sources, read at torchtune bd2a0fc (2026-04-23),
// https://github.com/pytorch/torchtune/blob/bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1/:
//   recipes/full_finetune_single_device.py and recipes/full_finetune_distributed.py (optimizer_in_bwd:
//     one optimizer per parameter, training.register_optim_in_bwd_hooks; RuntimeError "Gradient
//     accumulation is not supported with optimizer in bwd" where gradient_accumulation_steps > 1, and
//     the same for clip_grad_norm); torchtune/training/memory.py (register_optim_in_bwd_hooks: a
//     register_post_accumulate_grad_hook per parameter that steps its optimizer and zeroes its
//     gradient); the distributed recipe shards the model with FSDP2 (fully_shard), so its hooks step
//     the reduce-scattered gradient shard. PyTorch's tutorial "How to save memory by fusing the
//     optimizer step into the backward pass" is the same recipe without torchtune.
#include "core/train/optimizer_placement.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace tiletune {

void validate_optimizer_placement(const training_setup& s) {
  if (!s.optimizer_in_backward) return;
  // DeepSpeed's ZeRO-1 and ZeRO-2 own the step over their flat fp32 partitions (the engine's
  // optimizer.step after the reduction): there is no per-parameter step inside backward.
  if (s.zero_stage == 1 || s.zero_stage == 2)
    throw usage_error(fmt::format(
        "--optimizer-in-backward --zero {}: DeepSpeed's ZeRO-1 and ZeRO-2 step their flat optimizer partitions after "
        "the gradient reduction, not per parameter in backward; use --zero 3 (FSDP2, as torchtune's "
        "full_finetune_distributed shards) or --zero 0 on one GPU",
        s.zero_stage));
  // Under DDP a parameter's post-accumulate-grad hook fires before its bucket is all-reduced: each
  // rank would step on its own gradient. torchtune runs optimizer_in_bwd on one GPU or under FSDP2.
  if (s.zero_stage == 0 && s.world_size > 1)
    throw usage_error(fmt::format(
        "--optimizer-in-backward on {} GPUs needs --zero 3: under DDP (--zero 0) a parameter's hook would step "
        "before its gradient is all-reduced; torchtune's distributed recipe runs it under FSDP2",
        s.world_size));
  if (!s.global_batch) return;
  if (*s.global_batch % s.world_size != 0)
    throw usage_error(fmt::format(
        "--optimizer-in-backward --global-batch {}: without gradient accumulation each of the {} GPUs runs "
        "global batch / GPUs samples, and {} is not a multiple of {}",
        *s.global_batch, s.world_size, *s.global_batch, s.world_size));
  if (s.micro_batch && *s.micro_batch * s.world_size != *s.global_batch)
    throw usage_error(fmt::format(
        "--optimizer-in-backward cannot accumulate gradients (torchtune refuses gradient_accumulation_steps > 1 "
        "with optimizer_in_bwd): --global-batch {} on {} GPU(s) needs --micro-batch {}, not {}",
        *s.global_batch, s.world_size, *s.global_batch / s.world_size, *s.micro_batch));
}

std::int64_t gradients_in_flight_bytes(const training_setup& s, const memory_breakdown& r) {
  if (!s.optimizer_in_backward) return 0;
  const double layers = std::max<double>(1, static_cast<double>(s.model.num_layers));
  if (s.lora_rank > 0)  // every adapter sits in the blocks: one block's share
    return static_cast<std::int64_t>(static_cast<double>(r.gradients_bytes) / layers);
  double all = 0, blocks = 0, largest_outer = 0;
  for (const auto& t : weight_tensors(s.model)) {
    double n = static_cast<double>(t.parameters());
    if (t.routed()) n /= r.expert_parallel;  // this GPU's experts
    all += n;
    if (t.name.rfind("layers.", 0) == 0) blocks += n;
    else largest_outer = std::max(largest_outer, n);
  }
  if (all <= 0) return 0;
  const double largest = std::max(blocks / layers, largest_outer);
  return std::llround(static_cast<double>(r.gradients_bytes) / all * largest);  // bytes a gradient element, times the largest
}

void refuse_unfitting_in_backward_batch(const batch_plan& plan, std::int64_t per_gpu, std::int64_t largest_fitting) {
  const training_setup& s = plan.setup;
  if (!s.optimizer_in_backward || !s.global_batch || s.micro_batch || per_gpu <= 0) return;
  for (const auto& c : plan.candidates)
    if (c.fits) return;
  constexpr double gib = double(1LL << 30);
  std::int64_t peak = 0;
  for (const auto& c : plan.candidates) peak = peak == 0 ? c.peak_bytes : std::min(peak, c.peak_bytes);
  throw usage_error(fmt::format(
      "--optimizer-in-backward cannot accumulate gradients (torchtune refuses gradient_accumulation_steps > 1 with "
      "optimizer_in_bwd), and --global-batch {} on {} GPU(s) needs micro-batch {}, whose peak is {:.1f} GiB of the "
      "{:.1f} GiB budget; {}",
      *s.global_batch, s.world_size, per_gpu, static_cast<double>(peak) / gib,
      static_cast<double>(plan.memory_budget_bytes) / gib,
      largest_fitting > 0 ? fmt::format("the largest micro-batch that fits is {}: lower --global-batch to {} or drop "
                                        "--optimizer-in-backward",
                                        largest_fitting, largest_fitting * s.world_size)
                          : std::string("not even micro-batch 1 fits")));
}

std::string optimizer_in_backward_note(const training_setup& s, const memory_breakdown& m) {
  if (!s.optimizer_in_backward) return "";
  constexpr double gib = double(1LL << 30);
  return fmt::format(
      "optimizer in backward (torchtune's optimizer_in_bwd): each parameter's step runs as its gradient completes "
      "and frees it, so {:.2f} GiB of the {:.2f} GiB of gradients is alive at most (one block's, or the largest "
      "tensor outside the blocks); no gradient accumulation and no gradient clipping (torchtune refuses both). The "
      "step's time is unchanged (the same optimizer traffic, in backward's stream); one optimizer per parameter "
      "launches its own kernels, not counted. hf_training_args and the DeepSpeed config cannot express it: set "
      "optimizer_in_bwd: True in a torchtune config, or register the hooks yourself",
      static_cast<double>(m.gradients_in_flight_bytes) / gib, static_cast<double>(m.gradients_bytes) / gib);
}

}  // namespace tiletune
