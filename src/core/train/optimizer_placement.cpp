// Where and when the optimizer step runs: --optimizer-in-backward (first) and --offload (below,
// with its own sources).
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
#include "core/train/lora_step.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

void validate_optimizer_placement(const training_setup& s) {
  if (!s.optimizer_in_backward) return;
  // Clipping scales every gradient by the global norm, known only once backward has finished.
  if (s.grad_clip)
    throw usage_error("--optimizer-in-backward --grad-clip on: each parameter steps as soon as its gradient is "
                      "complete, before the global norm clipping scales by exists (torchtune refuses "
                      "clip_grad_norm with optimizer_in_bwd); pass --grad-clip off or drop --optimizer-in-backward");
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

// --offload. Sources: DeepSpeed's zero_optimization.offload_optimizer (device "cpu": ZeRO-Offload,
// stages 1-3; DeepSpeedCPUAdam steps the fp32 partition on the host and the updated 16-bit
// parameters are copied back) and offload_param (stage 3 only: ZeRO-Infinity), in
// deepspeed/runtime/zero/offload_config.py; PyTorch's FSDP2 fully_shard(offload_policy=
// CPUOffloadPolicy()) (torch/distributed/fsdp/_fully_shard/_fsdp_api.py: sharded parameters,
// gradients and the optimizer step on the CPU, each parameter shard copied to the GPU before its
// all-gather).

void validate_offload(const training_setup& s) {
  if (s.pcie_gbs) require_bandwidth_gbs("--pcie-gbs", *s.pcie_gbs, "per GPU");
  if (s.host_memory_gbs) require_bandwidth_gbs("--host-memory-gbs", *s.host_memory_gbs, "of the host's memory");
  if (s.offload == offload_kind::none) {
    if (s.pcie_gbs && !s.paged_optimizer)
      throw usage_error(fmt::format("--pcie-gbs {} needs --offload optimizer or optimizer+params, or --paged-optimizer",
                                    *s.pcie_gbs));
    if (s.host_memory_gbs)
      throw usage_error(fmt::format("--host-memory-gbs {} needs --offload optimizer or optimizer+params", *s.host_memory_gbs));
    return;
  }
  const std::string name(to_string(s.offload));
  if (s.zero_stage == 0)
    throw usage_error(fmt::format(
        "--offload {} needs --zero 1, 2 or 3: DeepSpeed offloads a ZeRO stage's optimizer "
        "(zero_optimization.offload_optimizer, stages 1 to 3) and FSDP2's CPUOffloadPolicy (optimizer+params) is "
        "FSDP's (--zero 3)",
        name));
  if (s.offload == offload_kind::optimizer_params && s.zero_stage < 3)
    throw usage_error(fmt::format("--offload optimizer+params needs --zero 3, not {}: DeepSpeed's offload_param is "
                                  "ZeRO-3's and FSDP2's CPUOffloadPolicy shards with FSDP",
                                  s.zero_stage));
  if (s.optimizer == optimizer_kind::adamw_8bit)
    throw usage_error(fmt::format("--offload {} --optimizer adamw-8bit: bitsandbytes' 8-bit optimizers step on the "
                                  "GPU; DeepSpeed's CPU optimizers are Adam, Adagrad and Lion",
                                  name));
  if (s.optimizer_in_backward)
    throw usage_error(fmt::format("--offload {} --optimizer-in-backward: the step in backward runs on the GPU's "
                                  "gradients as they complete; no trainer runs it on the CPU",
                                  name));
}

// --paged-optimizer. Source: bitsandbytes' paged optimizers (bnb.optim.PagedAdamW, PagedAdamW8bit,
// PagedLion; transformers' optim "paged_adamw_32bit", "paged_adamw_8bit", "paged_lion_32bit"): the
// states are allocated with cudaMallocManaged (bitsandbytes' get_paged), so the driver evicts their
// pages to host memory when the GPU runs short and pages them back when the step touches them
// (Dettmers et al. 2023, "QLoRA", section 3: paged optimizers against memory spikes).
void validate_paged_optimizer(const training_setup& s) {
  if (!s.paged_optimizer) return;
  if (s.optimizer != optimizer_kind::adamw && s.optimizer != optimizer_kind::adamw_8bit &&
      s.optimizer != optimizer_kind::lion)
    throw usage_error(fmt::format("--paged-optimizer --optimizer {}: bitsandbytes pages AdamW (32- and 8-bit) and Lion, "
                                  "not {}",
                                  to_string(s.optimizer), to_string(s.optimizer)));
  if (s.offload != offload_kind::none)
    throw usage_error(fmt::format("--paged-optimizer --offload {}: the offloaded states already live on the host",
                                  to_string(s.offload)));
  if (s.optimizer_in_backward)
    throw usage_error("--paged-optimizer --optimizer-in-backward: not modelled (each parameter's step would page its "
                      "states in inside backward)");
}

std::int64_t paged_optimizer_bytes(const memory_breakdown& m, std::int64_t peak_bytes, std::int64_t budget_bytes) {
  if (!m.paged_optimizer) return 0;
  return std::clamp<std::int64_t>(peak_bytes + m.optimizer_bytes - budget_bytes, 0, m.optimizer_bytes);
}

double paged_optimizer_ms(const training_setup& s, const device_spec& d, std::int64_t bytes) {
  return 2 * static_cast<double>(bytes) / (pcie_gbs(s, d) * 1e6);
}

std::string paged_optimizer_note(const training_setup& s, const device_spec& d) {
  if (!s.paged_optimizer) return "";
  return fmt::format(
      "paged optimizer (--paged-optimizer, bitsandbytes' paged {}): the optimizer states live in CUDA managed memory, "
      "outside PyTorch's pool and its peak; the bytes of them the step's peak leaves no room for within the budget "
      "are evicted to the host and paged back for the optimizer step, twice over PCIe at {:g} GB/s{} each global step "
      "(optimizer_paging_ms_per_global_step). The driver's page migration is taken at the PCIe rate (no fault "
      "overhead) and has not been compared with a measured step",
      s.optimizer == optimizer_kind::adamw_8bit ? "AdamW8bit" : s.optimizer == optimizer_kind::lion ? "Lion" : "AdamW",
      pcie_gbs(s, d), s.pcie_gbs ? " (--pcie-gbs)" : "");
}

double default_pcie_gbs(const device_spec& d) {
  // Effective, one direction, about 80% of an x16 link's rate: PCIe Gen5 (64 GB/s) on Hopper and
  // Blackwell boards, Gen4 (32) on Ampere and Ada, Gen3 (16) before.
  return d.compute_capability >= 90 ? 50 : d.compute_capability >= 80 ? 25 : 12;
}

double pcie_gbs(const training_setup& s, const device_spec& d) { return s.pcie_gbs.value_or(default_pcie_gbs(d)); }
double host_memory_gbs(const training_setup& s) { return s.host_memory_gbs.value_or(default_host_memory_gbs); }

double optimizer_bytes_per_parameter(const training_setup& s) {
  const double state = optimizer_state_element_bytes(s);
  switch (s.optimizer) {
    case optimizer_kind::adamw: return 7 * state;  // read weight, gradient, m, v; write weight, m, v
    case optimizer_kind::adamw_8bit: return 3 * state + 4;
    case optimizer_kind::adafactor: return 4 * state;
    case optimizer_kind::sgd: return 3 * state;
    case optimizer_kind::sgd_momentum: return 5 * state;
    case optimizer_kind::lion: return 5 * state;  // read weight, gradient, momentum; write weight, momentum
  }
  return 7 * state;
}

namespace {
// What one GPU's rank updates (its ZeRO shard) and holds of the parameters: the dense ones over
// all N ranks, each expert-parallel share over the N / ep ranks holding it, so 1/N of each in all.
struct placement_share {
  double trainable = 0, parameters = 0;
};
placement_share rank_share_of(const training_setup& s, const memory_breakdown& m) {
  const double N = s.world_size;
  return {static_cast<double>(m.trainable_parameters) / N, static_cast<double>(m.parameters) / N};
}
}  // namespace

void add_offload_time(const training_setup& s, const device_spec& d, const memory_breakdown& m, step_time& t) {
  if (s.offload == offload_kind::none) return;
  const placement_share r = rank_share_of(s, m);
  const double wb = s.prec == precision::fp32 ? 4 : 2;  // the GPU's parameters and gradients
  const double link = pcie_gbs(s, d) * 1e9;
  if (s.offload == offload_kind::optimizer) {
    // Per optimizer step: the rank's reduced gradients down, its updated parameters up.
    t.offload_transfer_ms = 2 * wb * r.trainable / link * 1e3;
  } else {
    // Every micro-step: the parameter shard up for forward and again for backward (FSDP reshards
    // after forward), the gradient shard down.
    t.offload_micro_step_ms = (2 * wb * r.parameters + wb * r.trainable) / link * 1e3;
  }
  // The CPU step: the optimizer's bytes per parameter in the host's states (and, for mixed
  // precision, the 16-bit copy written for the GPU), over the host's memory bandwidth, which the
  // node's GPUs' ranks share.
  const double per_parameter = optimizer_bytes_per_parameter(s) + (is_mixed(s.prec) ? wb : 0);
  const double ranks_on_host = std::min(s.world_size, s.gpus_per_node);
  t.cpu_optimizer_ms = per_parameter * r.trainable * ranks_on_host / (host_memory_gbs(s) * 1e9) * 1e3;
  t.optimizer_ms = t.offload_transfer_ms + t.cpu_optimizer_ms;
}

std::string offload_note(const training_setup& s, const device_spec& d, const memory_breakdown& m) {
  if (s.offload == offload_kind::none) return "";
  constexpr double gib = double(1LL << 30);
  return fmt::format(
      "CPU offload ({}): {:.2f} GiB per GPU in host memory ({}); per {} PCIe moves {} at {:.0f} GB/s per GPU ({}), "
      "and the CPU steps {:.0f} bytes a parameter at {:.0f} GB/s of host memory bandwidth shared by the node's {} "
      "GPU(s) ({}); none of it overlapped with compute (an upper bound: DeepSpeed overlaps the gradient copies with "
      "backward; its one-step delayed update is not modelled). The gradients stay counted on the GPU as the ZeRO "
      "stage keeps them (both trainers move reduced gradient shards to the host as they arrive: an upper bound)",
      s.offload == offload_kind::optimizer_params ? "DeepSpeed offload_param + offload_optimizer, FSDP2 CPUOffloadPolicy"
      : s.framework == training_framework::megatron
          ? "Megatron-LM's --optimizer-cpu-offload, the distributed optimizer's shard"
          : "DeepSpeed offload_optimizer",
      static_cast<double>(m.offloaded_bytes) / gib,
      s.offload == offload_kind::optimizer
          ? "optimizer states and fp32 master weights"
          : "optimizer states, fp32 master weights and the 16-bit parameter shard; the GPU holds two gathered units",
      s.offload == offload_kind::optimizer ? "optimizer step" : "micro-step",
      s.offload == offload_kind::optimizer ? "the 16-bit gradients down and the updated 16-bit parameters up"
                                           : "the parameter shard up twice (forward, backward) and the gradients down",
      pcie_gbs(s, d),
      s.pcie_gbs ? "--pcie-gbs"
                 : d.compute_capability >= 90 ? "assumed: PCIe Gen5 x16, effective; --pcie-gbs overrides"
                 : d.compute_capability >= 80 ? "assumed: PCIe Gen4 x16, effective; --pcie-gbs overrides"
                                              : "assumed: PCIe Gen3 x16, effective; --pcie-gbs overrides",
      optimizer_bytes_per_parameter(s) + (is_mixed(s.prec) ? (s.prec == precision::fp32 ? 4 : 2) : 0),
      host_memory_gbs(s), std::min(s.world_size, s.gpus_per_node),
      s.host_memory_gbs ? "--host-memory-gbs"
                        : "assumed: a two-socket server's vectorised CPU Adam; --host-memory-gbs overrides");
}

}  // namespace tiletune
