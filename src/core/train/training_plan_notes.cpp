// The batch plan's notes: what the recommendation rests on, what the model leaves out, and when
// nothing fits, why and what would.
#include "core/train/training_plan_notes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/lora_step.hpp"
#include "core/train/moe_parallel.hpp"
#include "core/train/optimizer_placement.hpp"
#include "core/train/quantized_base.hpp"
#include "core/train/training_fp8.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_pipeline.hpp"
#include "core/train/zero_buffers.hpp"

namespace tiletune {

namespace {
// Whose LoRA modules the plan runs (lora_module_of) and what they do beside the frozen base.
std::string lora_note(const training_setup& s) {
  const std::string where = s.lora_targets == lora_all_linear
                                ? "every linear layer of the blocks"
                                : fmt::format("the {} linears of the blocks", lora_targets_name(s.lora_targets));
  const std::string dropout =
      fmt::format("lora_dropout {} ({})", s.lora_dropout,
                  s.lora_dropout > 0 ? "each adapter drops out its own copy of the input and keeps the mask"
                                     : "none: set --lora-dropout to your config's");
  const char* measured = "no real LoRA step has been measured for this model (the LoRA figures are derived from what "
                         "the modules and autograd run, not calibrated)";
  const lora_module mod = lora_module_of(s);
  // peft's adapters take the 16-bit base's dtype, and get_peft_model's autocast_adapter_dtype (True by
  // default) upcasts them to fp32: bf16 adapters need it False, as the peft object says (peft_config.cpp).
  if (mod == lora_module::peft)
    return fmt::format(
        "LoRA {} {}: {} adapters on {}, the input cast to the adapters' dtype, {}; {}; {}",
        s.framework == training_framework::hf ? "as peft runs it" : "modelled as peft runs it",
        s.adapters == adapter_dtype::bf16
            ? "with get_peft_model's autocast_adapter_dtype=False (the peft object; its default True upcasts them to "
              "fp32)"
            : "with get_peft_model's default autocast_adapter_dtype=True (fp32 adapters)",
        to_string(s.adapters), where,
        lora_adapters_run_fp32(s)           ? "so without autocast the adapter GEMMs and their sum run in fp32"
        : s.adapters == adapter_dtype::bf16 ? "a no-op on a bf16 base: no casts, bf16 gradients and optimizer states"
                                            : "cast back to 16 bits by autocast for the adapter GEMMs",
        dropout, measured);
  const char* who = mod == lora_module::torchtune    ? "torchtune's LoRALinear"
                    : mod == lora_module::torchtitan ? "torchtitan's LoRALinear"
                                                     : "LitGPT's lora.py (LoRAQKVLinear on its one qkv linear)";
  const char* casts = sixteen_bit_model(s)      ? "no cast on the adapter path (FSDP2's policy gathers every parameter "
                                                  "in bf16, on one GPU too)"
                      : !runs_under_autocast(s) ? "no cast (the adapters compute in the model's dtype)"
                                              : "under autocast the fp32 input of an adapted q, k, v, gate or up cast "
                                                "to 16 bits for its adapter's matmul, the fp32 adapters once a forward";
  std::string extra;
  if (mod == lora_module::litgpt)
    extra = "; one lora_A for the adapted parts of q, k and v, zero_pad and the scale at the whole qkv width";
  if (lora_head_adapter(s))
    extra = "; its LoRAConverter (target_modules None) adapts the LM head too (a vocabulary-wide lora_B, its scale "
            "and add a chunk at a time)";
  return fmt::format("LoRA as {} runs it: {} adapters on {}, {}{}; {}; {}", who, to_string(s.adapters), where, casts,
                     extra, dropout, measured);
}
}  // namespace

void add_communication_notes(batch_plan& plan, const training_setup& s, const communication_estimate& comm) {
  if (data_parallel_degree(s) > 1) {
    // LitGPT accumulates under no_sync: its reduce-scatter runs once, in the last micro-step.
    const std::string reduce_scatter = fsdp_no_sync(s) ? "the gradients' reduce-scatter once per optimizer step (LitGPT "
                                                         "accumulates under no_sync)"
                                                       : "the gradients' reduce-scatter per micro-step";
    const std::string what =
        fsdp_replicated(s) ? "fp32 gradient all-reduce per micro-step (torchtitan's FSDP2 at shard degree 1, "
                             "data_parallel_replicate_degree; its gathers are local copies)"
        : s.zero_stage == 1 && deepspeed_zero(s)
            ? "gradients' reduce-scatter in the last micro-step's backward and the parameters' all-gather after each "
              "optimizer step (DeepSpeed's ZeRO-1)"
        : s.zero_stage < 2 ? "gradient all-reduce per optimizer step"
        : s.zero_stage == 2
            ? (fsdp_runs(s) ? "parameters' all-gather per micro-step (FSDP without resharding after forward still "
                              "reshards after backward) and " + reduce_scatter
                            : "gradients' reduce-scatter per micro-step and the parameters' all-gather after each "
                              "optimizer step (ZeRO-2)")
            : "ZeRO-3 parameter gathers per micro-step (forward and backward) and " + reduce_scatter;
    const std::string overlap =
        !s.overlap_comm ? "not overlapped with compute (--overlap-comm off): all of it after backward"
                        : std::string("overlapped with compute, one exchange after another on the link: what runs per "
                                      "micro-step under its time on the GPU (the gathers under it all, the "
                                      "reduce-scatters under its backward, two thirds of it), a once-a-step exchange "
                                      "of the gradients under the last micro-step's backward; the GPU's wait for its "
                                      "host counts as time the link runs on; the GPU waits for the rest and at least "
                                      "one layer's share") +
                              (comm.after_step_ms > 0
                                   ? fmt::format(" (ZeRO-{}'s all-gather after the optimizer step has nothing to run "
                                                 "under)",
                                                 s.zero_stage)
                                   : std::string());
    plan.notes.push_back(fmt::format(
        "communication across the {} GPUs is modelled from the bytes of the {} at {} (ring collectives at 80% of "
        "it), {}; not yet compared with a multi-GPU run",
        data_parallel_degree(s), what, comm.link, overlap));
  }
  for (auto& n : moe_notes(s, comm.alltoall_gbs)) plan.notes.push_back(std::move(n));
}

void add_host_wait_note(batch_plan& plan) {
  if (!plan.recommended) return;
  const step_time& t = plan.candidates[*plan.recommended].time;
  if (t.host_wait_ms > 0.1 * t.micro_step_ms())
    plan.notes.push_back(fmt::format(
        "the host issues this step slower than the GPU runs it: the GPU waits {:.1f} of {:.1f} ms per micro-step for "
        "Python and autograd to issue its ops (host_time in profiles/host_time: the H100 machine's host, PyTorch 2.11, "
        "transformers 5.17; a slower CPU waits longer). A larger micro-batch, torch.compile or CUDA graphs hide it",
        t.host_wait_ms, t.micro_step_ms()));
}

void add_model_notes(batch_plan& plan, const training_setup& s) {
  plan.notes.push_back(
      "not modelled: torch.compile (its fusion removes kernels and memory traffic, so compiled steps run faster than "
      "this eager estimate and may keep fewer activations), data-loading stalls (the next batch "
      "is assumed ready), and TrainingArguments.torch_empty_cache_steps (emptying the allocator's cache lowers reserved "
      "memory between steps and costs time; the peak within a step is unchanged)");
  if (s.optimizer == optimizer_kind::sgd_momentum)
    plan.notes.push_back(
        "--optimizer sgd-momentum: transformers' optim \"sgd\" (hf_training_args) is torch.optim.SGD without "
        "momentum and reads no optim_args; give the Trainer the planned one, optimizers=(torch.optim.SGD("
        "model.parameters(), lr=..., momentum=0.9), None), whose momentum state the plan counts");
  if (!activation_is_modelled(s.model))
    plan.notes.push_back(fmt::format(
        "activation \"{}\": transformers runs it as Python ops, each keeping its own tensors for backward; the "
        "activations are counted as for one fused op (silu, gelu), so the {} memory is under-counted",
        s.model.hidden_act, s.model.gated_mlp ? "gated MLP's" : "MLP's"));
  if (s.model.sliding_window > 0 || s.model.final_logit_softcap > 0)
    plan.notes.push_back(fmt::format(
        "{}: {:.0f}% of the layers attend within a {}-token window (counted in the flash attention work){}",
        s.model.model_type, s.model.sliding_layers * 100, s.model.sliding_window,
        s.model.final_logit_softcap > 0 ? "; the logits are soft-capped (tanh, kept for backward). transformers runs "
                                          "Gemma 2's attention soft-capping eagerly: plan it with --attention eager"
                                        : ""));
  if (s.lora_rank > 0) plan.notes.push_back(lora_note(s));
  const memory_breakdown& mem = plan.memory;
  if (s.optimizer_in_backward) plan.notes.push_back(optimizer_in_backward_note(s, mem));
  if (s.offload != offload_kind::none) plan.notes.push_back(offload_note(s, plan.device, mem));
  if (s.paged_optimizer) plan.notes.push_back(paged_optimizer_note(s, plan.device));
  if (s.quantize != quantize_kind::none) plan.notes.push_back(quantize_note(s, mem));
  plan.notes.push_back(fmt::format(
      "peak memory = weights, optimizer states and workspaces + the transient rest x (1 + {:.2f} allocator slack; "
      "with checkpointing + {:.2f} x the gradients, never more than without) + {:.2f} GiB CUDA context, as "
      "measured with PyTorch on an H100; the {:.0f}% safety margin covers what the model cannot know "
      "(other processes, other PyTorch or driver versions, allocator settings, tensors a script keeps beyond the step)",
      mem.allocator_overhead, mem.allocator_overhead_ckpt, static_cast<double>(mem.cuda_context_bytes) / (1LL << 30),
      s.safety_margin * 100));
}

namespace {
// A global batch that only slow micro-batches divide (a prime: only 1): what keeping it exactly
// costs against a fast plan (within 5% of the fastest) whose micro-batch comes nearest to it, said
// wherever the exact plan gives up more than 5% of the fastest's throughput. Where the ranks cannot
// reach it exactly, the same of the nearest global batch they reach, which the plan runs (131 on 4
// ranks: 132, whose per-rank 33 only 1, 3, 11 and 33 divide; 297 on 8: 296, only micro-batch 1).
void add_exact_batch_cost_note(batch_plan& plan, const training_setup& s) {
  const auto& r = plan.candidates[*plan.recommended];
  if (!s.global_batch) return;
  const std::int64_t asked = *s.global_batch;
  // Each fitting candidate at its own accumulation, the one whose global batch comes nearest the asked
  // one (micro_batches_per_step, a tie the larger), timed there. (Until 2026-12-04 the rows rounded down
  // from floor(asked / GPUs) and this note re-timed each at its nearest multiple, a tie the smaller.)
  struct option {
    const batch_candidate* c;
    std::int64_t global, accumulation;
    double samples_per_s;
  };
  std::vector<option> options;
  for (const auto& c : plan.candidates)
    if (c.fits) options.push_back({&c, c.effective_global_batch, c.grad_accum_steps, c.samples_per_s});
  double fastest = 0;
  for (const auto& o : options) fastest = std::max(fastest, o.samples_per_s);
  if (fastest <= 1.05 * r.samples_per_s) return;
  const option* pick = nullptr;
  for (const auto& o : options) {
    if (o.global == asked || o.global == r.effective_global_batch || o.samples_per_s < 0.95 * fastest) continue;
    const auto off = std::llabs(o.global - asked);
    if (!pick || off < std::llabs(pick->global - asked) ||
        (off == std::llabs(pick->global - asked) && o.samples_per_s > pick->samples_per_s))
      pick = &o;
  }
  if (!pick || pick->samples_per_s <= 1.05 * r.samples_per_s) return;
  const std::string reached =
      r.exact_global_batch
          ? fmt::format("--global-batch {} is reached exactly at", asked)
          : fmt::format(
                "--global-batch {} is not reached exactly; the nearest global batch the ranks reach, {} "
                "({:+.1f}%), runs at",
                asked, r.effective_global_batch, 100.0 * (r.effective_global_batch - asked) / asked);
  plan.notes.push_back(fmt::format(
      "{} {:.1f} samples/s at best (micro-batch {}, accumulation {}); a global batch of {} ({:+.1f}%) runs {:.0f}% "
      "more samples/s: micro-batch {}{}, accumulation {} (about {:.1f} samples/s)",
      reached, r.samples_per_s, r.micro_batch, r.grad_accum_steps, pick->global, 100.0 * (pick->global - asked) / asked,
      100.0 * (pick->samples_per_s / r.samples_per_s - 1), pick->c->micro_batch,
      pick->c->checkpointing ? " with checkpointing" : "", pick->accumulation, pick->samples_per_s));
}

}  // namespace

void add_recommendation_notes(batch_plan& plan, const training_setup& s) {
  const auto& r = plan.candidates[*plan.recommended];
  if (s.checkpoint_ops)
    plan.notes.push_back(
        "checkpointing is per op (torchtitan's selective \"op\" policy): each layer keeps its input, its attention "
        "output and the outputs of q, v, gate and down; k, o, up and the memory-bound ops are recomputed. Modelled "
        "from the policy, not traced or run here; hf_training_args' gradient_checkpointing wraps every layer instead "
        "(transformers has no per-op policy: torchtitan's activation_checkpoint.mode \"selective\", "
        "selective_ac_option \"op\")");
  if (s.checkpoint_every > 1)
    plan.notes.push_back(fmt::format(
        "checkpointing wraps one layer in every {} ({} of {} layers keep only their input, the rest every "
        "activation): torchtitan's selective layer checkpointing; Hugging Face's gradient_checkpointing wraps every layer",
        s.checkpoint_every, std::llround(recompute_share(s, true) * static_cast<double>(s.model.num_layers)),
        s.model.num_layers));
  // Only --checkpointing auto plans both and compares them; on or off (given, or a framework's
  // default) plans one, and the note says so rather than a comparison it did not make.
  const bool compared = s.checkpointing == checkpoint_policy::automatic;
  // (At the asked global batch: a micro-batch below the per-GPU batch accumulates and holds the
  // gradients, so the largest that fits without it is the accumulating one's there.)
  const std::int64_t without = r.checkpointing ? largest_fitting_micro_batch(plan, false) : 0;
  // With --micro-batch only that micro-batch was planned, with and without checkpointing: no other
  // micro-batch without it was timed, so the note says what that one needs, not what pays.
  if (r.checkpointing && without == 0)
    plan.notes.push_back("gradient checkpointing is needed: without it not even one sample fits");
  else if (r.checkpointing && compared && s.micro_batch)
    plan.notes.push_back(fmt::format("gradient checkpointing is needed for --micro-batch {}: without it the largest "
                                     "micro-batch that fits is {} (without --micro-batch the planner compares the "
                                     "micro-batches with and without it)",
                                     r.micro_batch, without));
  else if (r.checkpointing && compared)
    plan.notes.push_back(fmt::format("gradient checkpointing pays: micro-batch {} with it beats the best without "
                                     "(the largest that fits without it is {})",
                                     r.micro_batch, without));
  else if (r.checkpointing)
    plan.notes.push_back(fmt::format(
        "gradient checkpointing is on as set (--checkpointing, or the framework's default), not chosen: without it "
        "micro-batch {} would fit; --checkpointing auto plans both and keeps the faster",
        without));
  else if (compared && s.micro_batch)
    plan.notes.push_back(fmt::format("no gradient checkpointing: --micro-batch {} fits without it", r.micro_batch));
  else if (compared)
    plan.notes.push_back("no gradient checkpointing: the best micro-batch fits without it");
  else
    plan.notes.push_back("no gradient checkpointing, as set (--checkpointing off)");
  if (s.global_batch && !r.exact_global_batch)
    plan.notes.push_back(fmt::format(
        "--global-batch {} cannot be reached exactly with micro-batch {} on {} data-parallel rank(s); the step runs "
        "a global batch of {} ({:+.1f}%): micro-batch {} x accumulation {} x {} rank(s), the accumulation whose "
        "global batch comes nearest the asked one (a tie goes to the larger){}",
        *s.global_batch, r.micro_batch, data_parallel_degree(s), r.effective_global_batch,
        100.0 * static_cast<double>(r.effective_global_batch - *s.global_batch) / static_cast<double>(*s.global_batch),
        r.micro_batch, r.grad_accum_steps, data_parallel_degree(s),
        s.pipeline_parallel > 1 && s.virtual_stages > 1
            ? fmt::format(", a multiple of the {} pipeline stages under the interleaved schedule", s.pipeline_parallel)
            : ""));
  add_exact_batch_cost_note(plan, s);
}

void add_nothing_fits_note(batch_plan& plan, const training_setup& s) {
  const memory_breakdown& mem = plan.memory;
  constexpr double gib = double(1LL << 30);
  if (s.micro_batch && !plan.candidates.empty()) {
    // The user's micro-batch: its peak, the phase that sets it, and what does fit.
    for (const auto& c : plan.candidates) {
      const std::int64_t largest =
          largest_fitting_batch(mem, plan.memory_budget_bytes, c.checkpointing, c.grad_accum_steps > 1);
      plan.notes.push_back(fmt::format(
          "--micro-batch {} does not fit{}: its peak is {:.1f} GiB of the {:.1f} GiB budget, set by the {} phase; {}",
          c.micro_batch, c.checkpointing ? " with checkpointing" : " without checkpointing", c.peak_bytes / gib,
          plan.memory_budget_bytes / gib, c.peak_phase,
          largest > 0 ? fmt::format("the largest micro-batch that fits is {}", largest)
                      : std::string("no micro-batch fits (not even 1 sample)")));
    }
    return;
  }
  if (mem.peak_bytes(0, false) > plan.memory_budget_bytes)
    plan.notes.push_back(fmt::format("nothing fits: before any activation a step needs {:.1f} GiB of the {:.1f} GiB "
                                     "budget: the weights, gradients and optimizer states {:.1f} GiB, and what else it "
                                     "holds without a sample (autocast copies, workspaces, the CUDA context)",
                                     mem.peak_bytes(0, false) / gib, plan.memory_budget_bytes / gib,
                                     mem.fixed_tensor_bytes() / gib));
  else {  // the model's state fits; one sequence's activations do not (checkpointed, unless that is off)
    // As the table has micro-batch 1: with the gradients the earlier micro-steps keep where it accumulates.
    const bool accumulating = micro_batches_per_step(s.global_batch.value_or(0), data_parallel_degree(s), 1,
                                                     s.pipeline_parallel, s.virtual_stages) > 1;
    plan.notes.push_back(fmt::format(
        "nothing fits: micro-batch 1 {} needs {:.1f} GiB of the {:.1f} GiB budget; the weights, "
        "gradients and optimizer states take {:.1f} GiB of it, {}the activations of one {}-token sequence the rest",
        s.checkpointing == checkpoint_policy::off ? "without checkpointing (--checkpointing off)" : "with checkpointing",
        mem.peak_bytes(1, s.checkpointing != checkpoint_policy::off, accumulating) / gib,
        plan.memory_budget_bytes / gib, mem.fixed_tensor_bytes() / gib,
        accumulating ? "the gradients kept across accumulation and " : "", s.seq_len));
  }
}

// What would fit, smallest change first, each with the rest of what was asked kept: the
// micro-batch given (else 1), checkpointing unless it was turned off, accumulation where the
// step accumulates.
void add_suggestions(batch_plan& plan, const training_setup& s) {
  const std::int64_t b = s.micro_batch.value_or(1);
  const bool ckpt = s.checkpointing != checkpoint_policy::off;
  const bool accumulating = !plan.candidates.empty() && plan.candidates.front().grad_accum_steps > 1;
  // A suggestion is only offered where the setup it names is one tiletune plans (--zero 3 beside
  // pipeline parallelism, LoRA beside tensor parallelism or --fp8 were offered and then refused).
  auto fits_with = [&](training_setup alt, bool with_ckpt = false) {
    try {
      validate(alt);
      validate_fp8(alt, plan.device);
      refuse_unsupported_setup(alt);
    } catch (const usage_error&) {
      return false;
    }
    const memory_breakdown m2 = estimate_memory(alt);
    return m2.peak_bytes(b, ckpt || with_ckpt, accumulating) <= plan.memory_budget_bytes;
  };
  if (s.micro_batch) {
    const std::int64_t largest = largest_fitting_batch(plan.memory, plan.memory_budget_bytes, ckpt, accumulating);
    if (largest > 0) plan.suggestions.push_back(fmt::format("--micro-batch {}", largest));
  }
  if (!ckpt && fits_with(s, true)) plan.suggestions.push_back("--checkpointing on");
  if (s.optimizer == optimizer_kind::adamw || s.optimizer == optimizer_kind::sgd_momentum) {
    for (auto o : {optimizer_kind::adamw_8bit, optimizer_kind::adafactor}) {
      training_setup alt = s;
      alt.optimizer = o;
      if (fits_with(alt)) plan.suggestions.push_back(fmt::format("--optimizer {}", to_string(o)));
    }
  }
  // Pure bf16 weights, gradients and optimizer states (torchtune's dtype bf16, LitGPT's bf16-true,
  // transformers with the model loaded in bf16): no fp32 master copy; with an 8-bit AdamW beside it
  // where bf16 alone falls short. Only where the framework trains pure bf16 and the GPU has bf16.
  if (framework_trains(s.framework, precision::bf16) && s.prec != precision::bf16 && plan.device.peak_tflops_bf16 > 0) {
    training_setup alt = s;
    alt.prec = precision::bf16;
    if (fits_with(alt)) {
      plan.suggestions.push_back("--precision bf16 (no fp32 master weights: bf16 weights, gradients and optimizer "
                                 "states)");
    } else if (s.optimizer == optimizer_kind::adamw) {
      alt.optimizer = optimizer_kind::adamw_8bit;
      if (fits_with(alt)) plan.suggestions.push_back("--precision bf16 --optimizer adamw-8bit");
    }
  }
  // LoRA where the framework has it (Megatron-LM has none). A framework whose default per-op
  // checkpointing is modelled for full fine-tuning only refuses LoRA without a --checkpointing: the
  // suggestion then gives whole-layer checkpointing with it (each suggestion runs as it is written).
  if (s.lora_rank == 0 && s.framework != training_framework::megatron) {
    training_setup alt = s;
    alt.lora_rank = 16;
    if (alt.checkpoint_ops && selective_unmodelled(alt)) {
      alt.checkpoint_ops = false;
      alt.checkpointing = checkpoint_policy::on;
      if (fits_with(alt, true))
        plan.suggestions.push_back("--lora-rank 16 --checkpointing on (LoRA on every linear layer, each layer "
                                   "checkpointed whole)");
    } else if (fits_with(alt)) {
      plan.suggestions.push_back("--lora-rank 16 (LoRA on every linear layer)");
    }
  }
  if (s.world_size > 1 && s.zero_stage < 3 && s.tensor_parallel == 1) {
    training_setup alt = s;
    alt.zero_stage = 3;
    if (fits_with(alt)) plan.suggestions.push_back("--zero 3");
  }
  // The longest sequence that fits, halving down to 128 tokens (a long-context plan
  // can be several halvings away from fitting).
  for (std::int64_t len = s.seq_len / 2; len >= 128; len /= 2) {
    training_setup alt = s;
    alt.seq_len = len;
    if (fits_with(alt)) {
      plan.suggestions.push_back(fmt::format("--seq-len {}", len));
      break;
    }
  }
}

}  // namespace tiletune
