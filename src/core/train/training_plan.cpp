// The batch plan: the micro-batches that fit, with and without gradient
// checkpointing, their throughput and the recommendation (its notes: training_plan_notes.cpp).
#include "core/train/training_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/lora_step.hpp"
#include "core/train/moe_parallel.hpp"
#include "core/train/optimizer_placement.hpp"
#include "core/train/training_communication.hpp"
#include "core/train/training_context.hpp"
#include "core/train/training_fp8.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_pipeline.hpp"
#include "core/train/training_plan_notes.hpp"

namespace tiletune {

// The peak is a maximum of phases, each linear in the micro-batch, so it
// only grows with it: the largest that fits is found by bisection.
// accumulating: the micro-steps hold the earlier ones' gradients (a per-GPU batch above the micro-batch).
std::int64_t largest_fitting_batch(const memory_breakdown& mem, std::int64_t budget_bytes, bool ckpt,
                                   bool accumulating) {
  auto fits = [&](std::int64_t b) { return mem.peak_bytes(b, ckpt, accumulating) <= budget_bytes; };
  if (!fits(1)) return 0;
  std::int64_t lo = 1, hi = 2;
  while (hi <= (1 << 20) && fits(hi)) lo = hi, hi *= 2;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return std::min<std::int64_t>(lo, 1 << 20);
}

std::int64_t largest_fitting_micro_batch(const batch_plan& plan, bool ckpt) {
  const training_setup& s = plan.setup;
  const std::int64_t per_gpu = per_rank_batch(s);
  // Megatron-LM's interleaved schedule always accumulates (make_candidate).
  const bool always_accumulating = s.virtual_stages > 1 && s.pipeline_parallel > 1;
  // The per-GPU batch accumulates too where two of it come nearer the global batch (1 a GPU, 24 on 16).
  const bool whole_accumulates =
      per_gpu > 0 && micro_batches_per_step(*s.global_batch, data_parallel_degree(s), per_gpu, 1, 1) > 1;
  if (!always_accumulating && !whole_accumulates) {
    // The whole per-GPU batch or more in one micro-step: no accumulation.
    const std::int64_t whole = largest_fitting_batch(plan.memory, plan.memory_budget_bytes, ckpt, false);
    if (per_gpu == 0 || whole >= per_gpu) return whole;
  }
  // Below it, each micro-step holds the earlier ones' gradients.
  const std::int64_t accumulating = largest_fitting_batch(plan.memory, plan.memory_budget_bytes, ckpt, true);
  return always_accumulating ? accumulating : std::min(accumulating, whole_accumulates ? per_gpu : per_gpu - 1);
}

namespace {

// The per-rank batches of the global batches nearest the asked one that the data-parallel ranks can
// reach: the asked one's where they divide it, else the multiples of the ranks below and above it
// (131 on 4 ranks: 32 and 33, for 128 and 132). Empty without --global-batch.
std::vector<std::int64_t> nearest_per_rank_batches(const training_setup& s) {
  if (!s.global_batch) return {};
  const std::int64_t dp = std::max(1, data_parallel_degree(s)), below = *s.global_batch / dp;
  if (*s.global_batch % dp == 0) return {below};
  std::vector<std::int64_t> batches{below + 1};
  if (below > 0) batches.push_back(below);
  return batches;
}

// Powers of two up to twice the limit, the limit itself, the limit when accumulating (0: none) and,
// with a per-GPU batch, the divisors of the per-rank batches of the nearest reachable global batches
// (nearest_per_rank_batches). (Until 2026-12-04 only floor(global / ranks)'s divisors: 131 on 4 ranks
// reaches 132 = 3 x 11 x 4, and micro-batch 3 was never planned: micro-batch 1 x 33 was recommended
// at 72% of its samples/s.)
std::vector<std::int64_t> candidate_sizes(std::int64_t limit, std::int64_t per_gpu, std::int64_t accumulating_limit,
                                          const std::vector<std::int64_t>& per_rank_batches) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t b = 1; b <= std::max<std::int64_t>(limit, 1) * 2 && b <= (1 << 20); b *= 2) sizes.push_back(b);
  if (limit > 0) sizes.push_back(limit);
  if (accumulating_limit > 0) sizes.push_back(accumulating_limit);
  if (per_gpu > 0) {
    // No micro-batch beyond the per-GPU batch; the divisors reach those global batches exactly.
    std::erase_if(sizes, [&](std::int64_t b) { return b > per_gpu; });
    for (const std::int64_t batch : per_rank_batches)
      for (std::int64_t b = 1; b <= std::min(per_gpu, limit); ++b)
        if (batch % b == 0) sizes.push_back(b);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// What the planner knows before it times a candidate.
struct candidate_inputs {
  const training_setup& s;
  const device_spec& d;
  const gemm_time_fn& gemm_time;
  const device_rates& rates;
  const communication_estimate& comm;
  std::int64_t per_gpu;
};

batch_candidate make_candidate(const batch_plan& plan, const candidate_inputs& in, std::int64_t b, bool ckpt) {
  const training_setup& s = in.s;
  const memory_breakdown& mem = plan.memory;
  batch_candidate c;
  c.micro_batch = b;
  c.checkpointing = ckpt;
  // The accumulation whose global batch comes nearest the asked one, a tie the larger (interleaved, a
  // multiple of P): the global batch it then reaches is the candidate's; recommend prefers the asked one.
  c.grad_accum_steps = micro_batches_per_step(s.global_batch.value_or(0), data_parallel_degree(s), b,
                                              s.pipeline_parallel, s.virtual_stages);
  const bool accumulating = c.grad_accum_steps > 1;
  c.peak_bytes = mem.peak_bytes(b, ckpt, accumulating);
  // A peak past 64-bit byte counts (memory_breakdown::peak_bytes saturates) is no GPU's: the input is absurd.
  if (c.peak_bytes == std::numeric_limits<std::int64_t>::max())
    throw usage_error(fmt::format("micro-batch {} of {} at --seq-len {}{}: the step's peak would pass 8 EiB a GPU, "
                                  "more than any GPU holds",
                                  b, s.model.name, s.seq_len, s.micro_batch ? " (--micro-batch)" : ""));
  c.peak_allocated_bytes = mem.peak_allocated_bytes(b, ckpt, accumulating);
  c.peak_phase = mem.peak_phase(b, ckpt, accumulating);
  c.fits = c.peak_bytes <= plan.memory_budget_bytes;
  c.effective_global_batch = b * c.grad_accum_steps * data_parallel_degree(s);
  c.exact_global_batch = !s.global_batch || c.effective_global_batch == *s.global_batch;
  // Only a candidate that fits is worth timing on the GPU.
  c.measured = c.fits && in.gemm_time;
  c.time = predict_step(s, in.d, b, ckpt, c.measured ? in.gemm_time : gemm_time_fn{}, in.rates);
  c.time.alltoall_ms = expert_alltoall_ms(s, in.comm.alltoall_gbs, b, ckpt);
  // More work never takes less GEMM time: a timing that says so (noise,
  // a shape timed in parts) is raised to the smaller batch's.
  if (!plan.candidates.empty() && plan.candidates.back().checkpointing == ckpt)
    c.time.gemm_ms = std::max(c.time.gemm_ms, plan.candidates.back().time.gemm_ms);
  // What of the exchange the GPU waits for: DDP's bucketed all-reduce runs under the last
  // micro-step's backward, ZeRO-3's prefetched gathers and reduce-scatters under each micro-step;
  // without --overlap-comm, all of it after the compute. The last micro-step's backward also copies
  // the gradients into DDP's buckets (gradient_boundary_ms), which the all-reduce runs beside.
  // The window is the micro-step's whole time on the GPU's own streams: its kernels, their launches,
  // its tensor-, context- and pipeline-parallel transfers and the time it waits for the host to issue
  // them. The link runs on while the GPU waits (counted apart, the host's wait and the exposed
  // exchange were both added: a B200 waiting on its host was predicted slower than an H100, and
  // 256-token sequences slower than 2,048-token ones). The bucket copies first fill the last
  // backward's wait for the host; what they add lengthens its window.
  const double window_ms = s.overlap_comm ? c.time.gemm_ms + c.time.memory_bound_ms + c.time.launch_ms +
                                                c.time.host_wait_ms + c.time.context_parallel_ms + c.time.tensor_parallel_ms +
                                                c.time.p2p_ms
                                          : 0;
  const double last_window_ms = s.overlap_comm ? window_ms + c.time.gradient_boundary_added_ms : 0;
  // One link carries the exchanges one after another: what hides under a micro-step is its window's
  // worth in all, not each kind's own window (hidden each under the whole window, ZeRO-3's gathers and
  // the all-reduce under checkpointing's longer backward made a checkpointed step faster than one
  // without). The gathers run first (forward and backward), the reduce-scatters and the all-reduce
  // in backward (the last two thirds of the window) beside them; each is what the link adds.
  const std::int64_t layers = s.model.num_layers;
  const double gathers = in.comm.per_micro_step_ms, reduces = in.comm.per_micro_step_reduce_ms;
  const double all_reduce = in.comm.per_global_step_ms;
  auto added_to_gathers = [&](double ms, double window, double backward_window) {
    if (ms <= 0) return 0.0;
    return std::max(exposed_communication_ms(ms, backward_window, layers),
                    exposed_communication_ms(gathers + ms, window, layers) -
                        exposed_communication_ms(gathers, window, layers));
  };
  c.time.gather_ms = exposed_communication_ms(gathers, window_ms, layers);
  c.time.reduce_scatter_ms = added_to_gathers(reduces, window_ms, window_ms * 2 / 3);
  // (DeepSpeed's ZeRO-1 and 2 then all-gather the updated parameters after the optimizer step:
  // nothing to hide under.)
  c.time.allreduce_ms = added_to_gathers(all_reduce, last_window_ms, last_window_ms * 2 / 3) + in.comm.after_step_ms;
  // 1F1B: (P - 1) micro-steps of bubble per global step.
  c.time.pipeline_bubble_ms = pipeline_bubble_ms(s, c.time.micro_step_ms());
  // --paged-optimizer: the states the peak evicts, paged out and back once a global step.
  c.time.paging_ms = paged_optimizer_ms(s, in.d, paged_optimizer_bytes(mem, c.peak_bytes, plan.memory_budget_bytes));
  const double global_step_ms = static_cast<double>(c.grad_accum_steps) * c.time.micro_step_ms() +
                                c.time.gradient_boundary_added_ms + c.time.optimizer_ms + c.time.allreduce_ms +
                                c.time.pipeline_bubble_ms +
                                c.time.paging_ms;
  c.global_step_ms = global_step_ms;
  c.step_ms = global_step_ms / static_cast<double>(c.grad_accum_steps);
  c.samples_per_s = static_cast<double>(b * c.grad_accum_steps * data_parallel_degree(s)) / (global_step_ms * 1e-3);
  c.tokens_per_s = c.samples_per_s * static_cast<double>(s.seq_len);
  // --packing N: a row holds seq_len / N samples, every token of them useful.
  if (s.packing > 0) c.samples_per_s *= static_cast<double>(s.seq_len / s.packing);
  return c;
}

void add_candidates(batch_plan& plan, const candidate_inputs& in) {
  std::vector<bool> policies;
  if (in.s.checkpointing != checkpoint_policy::on) policies.push_back(false);
  if (in.s.checkpointing != checkpoint_policy::off) policies.push_back(true);
  for (bool ckpt : policies) {
    const std::int64_t limit = ckpt ? plan.max_micro_batch_ckpt : plan.max_micro_batch_no_ckpt;
    std::vector<std::int64_t> sizes{in.s.micro_batch.value_or(0)};
    if (!in.s.micro_batch && in.s.optimizer_in_backward && in.per_gpu > 0) {
      sizes = {in.per_gpu};  // no accumulation: the per-GPU batch is the micro-batch
    } else if (!in.s.micro_batch) {
      // Accumulating holds every gradient through the forward: its own largest micro-batch is smaller.
      const std::int64_t acc =
          in.per_gpu > 0 ? largest_fitting_batch(plan.memory, plan.memory_budget_bytes, ckpt, true) : 0;
      sizes = candidate_sizes(limit, in.per_gpu, acc < in.per_gpu ? acc : 0, nearest_per_rank_batches(in.s));
    }
    for (std::int64_t b : sizes) plan.candidates.push_back(make_candidate(plan, in, b, ckpt));
  }
}

// The throughput-best candidate that fits and reaches the asked global batch
// exactly; when none can, the nearest one (the asked batch is the user's
// choice, not a few percent of speed's). Without checkpointing preferred
// while within 1%.
std::optional<std::size_t> recommend(const batch_plan& plan, const training_setup& s) {
  std::optional<std::size_t> best;
  auto better = [&](std::size_t i, std::size_t j) {
    const auto &a = plan.candidates[i], &b = plan.candidates[j];
    if (s.global_batch) {
      const auto off = [&](const batch_candidate& c) { return std::llabs(c.effective_global_batch - *s.global_batch); };
      if (off(a) != off(b)) return off(a) < off(b);
    }
    if (a.checkpointing != b.checkpointing) {
      const auto& plain = a.checkpointing ? b : a;
      const auto& ckpt = a.checkpointing ? a : b;
      const bool plain_wins = plain.samples_per_s >= 0.99 * ckpt.samples_per_s;
      return a.checkpointing != plain_wins;
    }
    return a.samples_per_s > b.samples_per_s;
  };
  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    if (!plan.candidates[i].fits) continue;
    if (!best || better(i, *best)) best = i;
  }
  return best;
}

}  // namespace

batch_plan plan_batch(const training_setup& s, const device_spec& d, const gemm_time_fn& gemm_time,
                      const device_rates& rates) {
  validate(s);
  validate_fp8(s, d);
  batch_plan plan;
  plan.rates = rates;
  if (gemm_time) plan.mode = plan_mode::measured;
  plan.setup = s;
  plan.device = d;
  plan.memory = estimate_memory(s);
  plan.notes = s.framework_notes;  // which defaults came from --framework (none for hf)
  plan.memory_budget_bytes = static_cast<std::int64_t>(static_cast<double>(d.memory_bytes) * (1 - s.safety_margin));
  plan.max_micro_batch_no_ckpt = largest_fitting_batch(plan.memory, plan.memory_budget_bytes, false, false);
  plan.max_micro_batch_ckpt = largest_fitting_batch(plan.memory, plan.memory_budget_bytes, true, false);

  const communication_estimate comm = estimate_communication(s, d);
  add_communication_notes(plan, s, comm);
  for (auto& n : tensor_parallel_notes(s, d)) plan.notes.push_back(std::move(n));
  for (auto& n : pipeline_notes(s, d)) plan.notes.push_back(std::move(n));
  for (auto& n : context_parallel_notes(s, d)) plan.notes.push_back(std::move(n));
  if (s.fp8 != fp8_recipe::none) plan.notes.push_back(fp8_note(s));
  if (s.packing > 0)
    plan.notes.push_back(fmt::format(
        "sequence packing: {} samples of {} tokens a row, attending only within themselves (FlashAttention varlen, "
        "a block-diagonal mask): attention costs {} / {} of an unpacked row's; memory unchanged. samples/s counts "
        "the packed samples; --global-batch, the micro-batch and accumulation count rows. Samples are taken as equal: "
        "a real mix of lengths costs the sum of their squares",
        s.seq_len / s.packing, s.packing, s.packing, s.seq_len));
  const std::int64_t per_gpu = per_rank_batch(s);
  add_candidates(plan, {s, d, gemm_time, rates, comm, per_gpu});
  // The largest micro-batch that fits under the checkpointing the setup allows.
  refuse_unfitting_in_backward_batch(
      plan, per_gpu,
      std::max(s.checkpointing != checkpoint_policy::on ? plan.max_micro_batch_no_ckpt : 0,
               s.checkpointing != checkpoint_policy::off ? plan.max_micro_batch_ckpt : 0));

  plan.recommended = recommend(plan, s);
  add_host_wait_note(plan);
  add_model_notes(plan, s);
  if (plan.recommended) {
    add_recommendation_notes(plan, s);
  } else {
    add_nothing_fits_note(plan, s);
    add_suggestions(plan, s);
  }
  return plan;
}

}  // namespace tiletune
