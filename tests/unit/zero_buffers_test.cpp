// ZeRO's working buffers beside the sharded states: stage 3's gathered units and DeepSpeed's
// gradient reduce buckets, counted in the peak, and the DeepSpeed settings that hold DeepSpeed to
// them. Llama-3-8B: 8,030,261,248 parameters, hidden 4,096, a block 218,112,000 parameters, the
// embedding and the LM head 128,256 x 4,096 = 525,336,576 each.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/train/gradient_traffic.hpp"
#include "core/train/optimizer_placement.hpp"
#include "core/train/training_communication.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_plan.hpp"
#include "core/train/zero_buffers.hpp"

using namespace tiletune;

namespace {
constexpr std::int64_t llama_parameters = 8'030'261'248;
training_setup llama(training_framework f, int zero, int world) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = precision::bf16_mixed;
  s.framework = f;
  s.zero_stage = zero;
  s.world_size = world;
  s.overlap_comm = true;
  return s;
}
// The states' terms of a plan, and no autocast copies: a framework that holds the model in 16 bits.
void expect_16bit_model(const memory_breakdown& m, std::int64_t weights, std::int64_t gradients,
                        std::int64_t optimizer, std::int64_t step_gradients) {
  EXPECT_EQ(m.weights_bytes, weights);
  EXPECT_EQ(m.gradients_bytes, gradients);
  EXPECT_EQ(m.optimizer_bytes, optimizer);
  EXPECT_EQ(m.optimizer_step_gradient_bytes, step_gradients);
  EXPECT_EQ(m.autocast_weight_copies_bytes, 0);
}
}  // namespace

// Stage 3 on 8 GPUs: the shard (DeepSpeed's bf16 2P / 8; FSDP2's fp32 4P / 8 under bf16-mixed) and
// two units whole in bf16, the embedding the largest: 2 x 2 x 525,336,576 = 2,101,346,304 bytes.
// Before, the plan held the shard alone.
TEST(zero_buffers, stage_3_holds_two_gathered_units_beside_the_shard) {
  const training_setup s = llama(training_framework::fsdp2, 3, 8);
  EXPECT_EQ(gathered_unit_parameters(s), 525'336'576.0);
  EXPECT_EQ(gathered_weights_bytes(s), 2'101'346'304LL);
  EXPECT_EQ(estimate_memory(s).weights_bytes, 4 * llama_parameters / 8 + 2'101'346'304LL);
  EXPECT_EQ(estimate_memory(llama(training_framework::deepspeed, 3, 8)).weights_bytes,
            2 * llama_parameters / 8 + 2'101'346'304LL);
  // However many GPUs shard it, the gathered units stay: the weights never fall below them.
  EXPECT_EQ(estimate_memory(llama(training_framework::fsdp2, 3, 1024)).weights_bytes, 4 * llama_parameters / 1024 + 2'101'346'304LL);
  // Stage 2 keeps the weights whole, and gathers nothing: DeepSpeed's 16-bit model; FSDP2 without
  // resharding its fp32 shard and the 16-bit weights it keeps gathered from forward to backward.
  EXPECT_EQ(estimate_memory(llama(training_framework::hf, 2, 8)).weights_bytes, 2 * llama_parameters);
  EXPECT_EQ(estimate_memory(llama(training_framework::fsdp2, 2, 8)).weights_bytes,
            2 * llama_parameters + 4 * llama_parameters / 8);
  // FSDP1 under Lightning's or Composer's mixed precision gathers fp32 (param_dtype fp32, autocast
  // casting): two units of 4 bytes.
  EXPECT_EQ(gathered_weights_bytes(llama(training_framework::litgpt, 3, 8)), 2 * 2'101'346'304LL);
  EXPECT_EQ(gathered_parameter_bytes(llama(training_framework::composer, 3, 8)), 4);
  EXPECT_EQ(gathered_parameter_bytes(llama(training_framework::fsdp2, 3, 8)), 2);
  EXPECT_EQ(gathered_parameter_bytes(llama(training_framework::deepspeed, 3, 8)), 2);
  // The fp32 shard is the optimizer's: FSDP keeps no master copy, DeepSpeed 4 bytes of one.
  EXPECT_EQ(estimate_memory(llama(training_framework::fsdp2, 3, 8)).optimizer_bytes, 8 * llama_parameters / 8);
  EXPECT_EQ(estimate_memory(llama(training_framework::deepspeed, 3, 8)).optimizer_bytes, 12 * llama_parameters / 8);
}

// FSDP reduce-scatters a unit's gradients at the end of its backward; until then they are whole, with
// FSDP2's reduce-scatter input beside them. The largest unit, Llama-3-8B's LM head (525,336,576):
// torchtitan's bf16 gradients and fp32 reduce 6 bytes each, 3,152,019,456; torchtune's pure bf16
// 2 + 2; LitGPT's FSDP1 under bf16-mixed fp32 gradients cast to bf16, 4 + 2. Stage 2 (FSDP without
// resharding) reduce-scatters the same, and torchtitan at --zero 0 (shard degree 1) all-reduces the
// same; DeepSpeed (its buckets) and DDP have none.
TEST(zero_buffers, fsdp_holds_a_units_unsharded_gradients_until_their_reduce_scatter) {
  constexpr std::int64_t unit = 525'336'576;
  EXPECT_EQ(fsdp_unit_gradient_bytes(llama(training_framework::fsdp2, 3, 8)), 6 * unit);
  EXPECT_EQ(fsdp_unit_gradient_bytes(llama(training_framework::fsdp2, 2, 8)), 6 * unit);
  EXPECT_EQ(fsdp_unit_gradient_bytes(llama(training_framework::litgpt, 3, 8)), 6 * unit);
  training_setup tune = llama(training_framework::torchtune, 3, 8);
  tune.prec = precision::bf16;
  EXPECT_EQ(fsdp_unit_gradient_bytes(tune), 4 * unit);
  tune.prec = precision::fp32;
  EXPECT_EQ(fsdp_unit_gradient_bytes(tune), 8 * unit);
  training_setup fp32_fsdp1 = llama(training_framework::composer, 3, 8);
  fp32_fsdp1.prec = precision::fp32;
  EXPECT_EQ(fsdp_unit_gradient_bytes(fp32_fsdp1), 4 * unit);  // one dtype: reduced where it lies
  // LoRA: only the adapters have gradients. LitGPT's q and v at rank 16, 16 x (8,192 + 5,120) =
  // 212,992 fp32 parameters a block, copied in by FSDP2 without a policy: 8 bytes each.
  training_setup lit = llama(training_framework::litgpt, 3, 8);
  lit.lora_rank = 16;
  lit.lora_targets = parse_lora_targets("q,v");
  EXPECT_EQ(fsdp_unit_gradient_bytes(lit), 8 * 212'992);
  EXPECT_EQ(fsdp_unit_gradient_bytes(llama(training_framework::fsdp2, 0, 8)), 6 * unit);
  EXPECT_EQ(fsdp_unit_gradient_bytes(llama(training_framework::hf, 0, 8)), 0);
  EXPECT_EQ(fsdp_unit_gradient_bytes(llama(training_framework::deepspeed, 3, 8)), 0);
  EXPECT_EQ(fsdp_unit_gradient_bytes(llama(training_framework::hf, 3, 8)), 0);
  // In the peak: every backward phase holds them, the forward and the optimizer step do not.
  memory_breakdown m = estimate_memory(llama(training_framework::fsdp2, 3, 8));
  EXPECT_EQ(m.fsdp_unit_gradient_bytes, 6 * unit);
  for (const bool ckpt : {false, true})
    for (const std::int64_t b : {1, 4}) {
      const std::int64_t with = m.peak_allocated_bytes(b, ckpt);
      const std::string phase = m.peak_phase(b, ckpt);
      memory_breakdown without = m;
      without.fsdp_unit_gradient_bytes = 0;
      if (phase == "forward" || phase == "optimizer step")
        EXPECT_EQ(with, without.peak_allocated_bytes(b, ckpt)) << phase;
      else
        EXPECT_EQ(with - without.peak_allocated_bytes(b, ckpt), 6 * unit) << phase << " " << b << " " << ckpt;
    }
}

// DeepSpeed's bf16 mode without ZeRO (--framework deepspeed, stage 0) is not PyTorch's AMP: the engine
// casts the model to bf16 (2-byte weights and gradients, no autocast copies), its optimizer wrapper
// keeps fp32 masters beside AdamW's states (12 bytes), and its step first gives the masters fp32
// gradients (4 bytes, in the optimizer step only). ZeRO shards those step gradients with the masters
// (stage 3 a sub-group of at most 1e9 elements at a time); hf at stage 0 is PyTorch's AMP, as before.
TEST(zero_buffers, deepspeeds_bf16_mode_keeps_a_bf16_model_fp32_masters_and_fp32_step_gradients) {
  constexpr std::int64_t P = llama_parameters;
  const memory_breakdown ds = estimate_memory(llama(training_framework::deepspeed, 0, 8));
  expect_16bit_model(ds, 2 * P, 2 * P, 12 * P, 4 * P);
  EXPECT_EQ(ds.peak_phase(1, true), "optimizer step");
  EXPECT_EQ(ds.peak_allocated_bytes(1, true), ds.held_bytes() + 2 * P + 4 * P);
  const memory_breakdown amp = estimate_memory(llama(training_framework::hf, 0, 8));
  EXPECT_EQ(amp.weights_bytes, 4 * P);
  EXPECT_EQ(amp.gradients_bytes, 4 * P);
  EXPECT_EQ(amp.optimizer_bytes, 8 * P);
  EXPECT_EQ(amp.optimizer_step_gradient_bytes, 0);
  EXPECT_GT(amp.autocast_weight_copies_bytes, 0);
  // fp32: DeepSpeed wraps nothing; the plain optimizer steps the fp32 gradients in place.
  training_setup fp32 = llama(training_framework::deepspeed, 0, 8);
  fp32.prec = precision::fp32;
  EXPECT_EQ(estimate_memory(fp32).optimizer_step_gradient_bytes, 0);
  EXPECT_EQ(estimate_memory(fp32).weights_bytes, 4 * P);
  // ZeRO: the rank's share; at stage 3 one sub-group of 1e9 elements (P / 8 is just above it).
  EXPECT_EQ(estimate_memory(llama(training_framework::hf, 2, 8)).optimizer_step_gradient_bytes, 4 * P / 8);
  EXPECT_EQ(estimate_memory(llama(training_framework::deepspeed, 3, 8)).optimizer_step_gradient_bytes, 4'000'000'000LL);
  EXPECT_EQ(estimate_memory(llama(training_framework::deepspeed, 3, 16)).optimizer_step_gradient_bytes, 4 * P / 16);
  EXPECT_EQ(estimate_memory(llama(training_framework::fsdp2, 3, 8)).optimizer_step_gradient_bytes, 0);
  // ZeRO-Offload steps the masters on the host, with their fp32 gradients.
  training_setup offload = llama(training_framework::deepspeed, 2, 8);
  offload.offload = offload_kind::optimizer;
  EXPECT_EQ(estimate_memory(offload).optimizer_step_gradient_bytes, 0);
}

// Megatron-LM under --bf16 (bf16-mixed here): a bf16 model (no autocast copies), fp32 main params and
// AdamW's states (12 bytes, sharded by the distributed optimizer, --zero 1), and every gradient in
// the DDP's fp32 grad buffer (4 bytes), allocated in every phase as if accumulating. --fp16 keeps
// fp16 gradients and copies them to fp32 for the step; fp32 has no main params.
TEST(zero_buffers, megatrons_grad_buffer_and_main_params) {
  constexpr std::int64_t P = llama_parameters;
  const memory_breakdown bf16 = estimate_memory(llama(training_framework::megatron, 0, 8));
  expect_16bit_model(bf16, 2 * P, 4 * P, 12 * P, 0);
  EXPECT_TRUE(bf16.gradients_allocated_throughout);
  memory_breakdown freed = bf16;
  freed.gradients_allocated_throughout = false;
  for (const std::int64_t b : {1, 8}) {
    EXPECT_EQ(bf16.peak_allocated_bytes(b, true), freed.peak_allocated_bytes(b, true, /*accumulating=*/true)) << b;
    EXPECT_GT(bf16.peak_allocated_bytes(b, true), freed.peak_allocated_bytes(b, true)) << b;
  }
  EXPECT_EQ(estimate_memory(llama(training_framework::megatron, 1, 8)).optimizer_bytes, 12 * P / 8);
  training_setup offload = llama(training_framework::megatron, 1, 8);  // --optimizer-cpu-offload
  offload.offload = offload_kind::optimizer;
  EXPECT_EQ(estimate_memory(offload).optimizer_bytes, 0);
  EXPECT_EQ(estimate_memory(offload).offloaded_bytes, 12 * P / 8);
  EXPECT_NE(offload_note(offload, find_preset("h100-sxm"), estimate_memory(offload)).find("--optimizer-cpu-offload"),
            std::string::npos);
  training_setup fp16 = llama(training_framework::megatron, 1, 8);
  fp16.prec = precision::fp16_mixed;
  EXPECT_EQ(estimate_memory(fp16).gradients_bytes, 2 * P);
  EXPECT_EQ(estimate_memory(fp16).optimizer_step_gradient_bytes, 4 * P / 8);
  training_setup fp32 = llama(training_framework::megatron, 0, 8);
  fp32.prec = precision::fp32;
  EXPECT_EQ(estimate_memory(fp32).weights_bytes, 4 * P);
  EXPECT_EQ(estimate_memory(fp32).optimizer_bytes, 8 * P);
  EXPECT_TRUE(estimate_memory(fp32).gradients_allocated_throughout);
  // PyTorch's AMP (hf) frees its gradients with zero_grad: not allocated in the forward.
  EXPECT_FALSE(estimate_memory(llama(training_framework::hf, 0, 8)).gradients_allocated_throughout);
}

// Autocast on fp32 weights keeps an fp32 residual stream; a framework that makes the model 16-bit
// (DeepSpeed's bf16 mode, Megatron-LM, FSDP2's bf16 param_dtype) runs without it, so a sample keeps
// fewer bytes. A LoRA base is frozen in 16 bits: no autocast on it either, but for LitGPT's, which
// Fabric keeps fp32 under bf16-mixed: its residual stream is fp32 as under AMP, so a checkpointed
// sample keeps each layer's input at 4 bytes where the same LoRA on hf's 16-bit base (same targets,
// dropout and loss) keeps 2, and moves more bytes a step (a frozen base's layers keep the same:
// the norms' fp32 copies either way, nothing for the frozen weights).
TEST(zero_buffers, only_an_fp32_model_runs_under_autocast) {
  EXPECT_TRUE(runs_under_autocast(llama(training_framework::hf, 0, 8)));
  // torchtitan applies fully_shard on one GPU too (llama3/parallelize.py): its policy casts, no autocast.
  EXPECT_FALSE(runs_under_autocast(llama(training_framework::fsdp2, 0, 1)));
  EXPECT_TRUE(runs_under_autocast(llama(training_framework::composer, 3, 8)));  // FSDP1's fp32 parameters
  EXPECT_FALSE(runs_under_autocast(llama(training_framework::hf, 2, 8)));  // DeepSpeed
  EXPECT_FALSE(runs_under_autocast(llama(training_framework::deepspeed, 0, 8)));
  EXPECT_FALSE(runs_under_autocast(llama(training_framework::megatron, 0, 8)));
  EXPECT_FALSE(runs_under_autocast(llama(training_framework::fsdp2, 3, 8)));
  training_setup fp32 = llama(training_framework::hf, 0, 8);
  fp32.prec = precision::fp32;
  EXPECT_FALSE(runs_under_autocast(fp32));
  EXPECT_LT(estimate_memory(llama(training_framework::deepspeed, 0, 8)).activation_bytes_per_sample,
            estimate_memory(llama(training_framework::hf, 0, 8)).activation_bytes_per_sample);
  training_setup litgpt = llama(training_framework::litgpt, 0, 1), hf = llama(training_framework::hf, 0, 1);
  for (training_setup* lora : {&litgpt, &hf}) {
    lora->lora_rank = 8;
    lora->lora_targets = parse_lora_targets("q,v");
    lora->lora_dropout = 0.05;
    lora->loss = loss_impl::chunked;
  }
  EXPECT_TRUE(runs_under_autocast(litgpt));
  EXPECT_FALSE(runs_under_autocast(hf));
  const double layers_tokens = 32.0 * 2048;
  EXPECT_EQ(estimate_memory(litgpt).checkpointed_activation_bytes_per_sample -
                estimate_memory(hf).checkpointed_activation_bytes_per_sample,
            std::llround(layers_tokens * 2 * 4096));
  EXPECT_GT(predict_step(litgpt, find_preset("h100-sxm"), 1, false).memory_bound_bytes,
            predict_step(hf, find_preset("h100-sxm"), 1, false).memory_bound_bytes);
  litgpt.prec = hf.prec = precision::bf16;  // bf16-true: LitGPT's model is bf16, as hf's
  EXPECT_FALSE(runs_under_autocast(litgpt));
  EXPECT_EQ(estimate_memory(litgpt).checkpointed_activation_bytes_per_sample,
            estimate_memory(hf).checkpointed_activation_bytes_per_sample);
}

// DeepSpeed (hf's Trainer or deepspeed) allocates its reduce buckets every backward: at the emitted
// reduce_bucket_size, 4,096^2 = 16,777,216 elements of bf16, two with overlap_comm at stages 1 and
// 2 (67,108,864 bytes), one at stage 3 or without overlap (33,554,432). FSDP and stage 0 have none.
// DeepSpeed's own default, 5e8 elements, would hold 2 GB: the config sets the size the plan counts.
TEST(zero_buffers, deepspeeds_reduce_buckets_are_counted_at_the_size_its_config_sets) {
  EXPECT_EQ(deepspeed_bucket_bytes(llama(training_framework::hf, 2, 8)), 67'108'864);
  EXPECT_EQ(deepspeed_bucket_bytes(llama(training_framework::deepspeed, 1, 8)), 67'108'864);
  EXPECT_EQ(deepspeed_bucket_bytes(llama(training_framework::deepspeed, 3, 8)), 33'554'432);
  training_setup serial = llama(training_framework::deepspeed, 2, 8);
  serial.overlap_comm = false;
  EXPECT_EQ(deepspeed_bucket_bytes(serial), 33'554'432);
  EXPECT_EQ(deepspeed_bucket_bytes(llama(training_framework::fsdp2, 3, 8)), 0);
  EXPECT_EQ(deepspeed_bucket_bytes(llama(training_framework::hf, 0, 8)), 0);
  // In the peak: every phase holds them.
  const training_setup s = llama(training_framework::hf, 2, 8);
  memory_breakdown m = estimate_memory(s);
  EXPECT_EQ(m.deepspeed_bucket_bytes, 67'108'864);
  const std::int64_t with = m.peak_allocated_bytes(1, true);
  m.deepspeed_bucket_bytes = 0;
  EXPECT_EQ(with - m.peak_allocated_bytes(1, true), 67'108'864);

  nlohmann::json zero = {{"stage", 2}};
  add_deepspeed_zero_settings(s, zero);
  EXPECT_EQ(zero["reduce_bucket_size"], 16'777'216);
  EXPECT_FALSE(zero.contains("stage3_prefetch_bucket_size"));
}

// Stage 3's config bounds what DeepSpeed keeps gathered to the two units the plan counts: a unit
// prefetched, two live, and parameters kept for reuse only within a unit (DeepSpeed's default
// stage3_max_reuse_distance, 1e9 elements, keeps up to 2 GB of them at the turn into backward).
TEST(zero_buffers, the_stage_3_config_holds_deepspeed_to_two_units) {
  nlohmann::json zero = {{"stage", 3}};
  add_deepspeed_zero_settings(llama(training_framework::deepspeed, 3, 8), zero);
  EXPECT_EQ(zero["reduce_bucket_size"], 16'777'216);
  EXPECT_EQ(zero["stage3_prefetch_bucket_size"], 525'336'576);
  EXPECT_EQ(zero["stage3_max_live_parameters"], 2 * 525'336'576LL);
  EXPECT_EQ(zero["stage3_max_reuse_distance"], 525'336'576);
  nlohmann::json none = {{"stage", 0}};
  add_deepspeed_zero_settings(llama(training_framework::deepspeed, 0, 8), none);
  EXPECT_EQ(none, nlohmann::json({{"stage", 0}}));
}

// torchtitan at --zero 0 (data_parallel_replicate_degree 8, shard degree 1) still runs fully_shard:
// each GPU keeps what --zero 3 keeps on one GPU (fp32 parameters, gradients and AdamW's states
// whole, two units gathered in bf16, a unit's bf16 gradients and fp32 reduce input), and all-reduces
// its fp32 gradients at every micro-step's backward (no gradient sync is disabled), not DDP's once
// a step from its buckets. Before, it was planned as DDP: no gathered units, no unit gradients.
TEST(zero_buffers, torchtitan_replicated_keeps_what_one_gpu_keeps_and_all_reduces_every_micro_step) {
  const training_setup replicated = llama(training_framework::fsdp2, 0, 8);
  ASSERT_TRUE(fsdp_replicated(replicated));
  EXPECT_FALSE(fsdp_replicated(llama(training_framework::hf, 0, 8)));
  EXPECT_FALSE(fsdp_replicated(llama(training_framework::fsdp2, 3, 8)));
  const memory_breakdown m = estimate_memory(replicated), one = estimate_memory(llama(training_framework::fsdp2, 3, 1));
  EXPECT_EQ(m.weights_bytes, 4 * llama_parameters + 2'101'346'304LL);
  EXPECT_EQ(m.gradients_bytes, 4 * llama_parameters);
  EXPECT_EQ(m.optimizer_bytes, 8 * llama_parameters);
  EXPECT_EQ(m.fsdp_unit_gradient_bytes, 6 * 525'336'576LL);
  EXPECT_EQ(m.autocast_weight_copies_bytes, 0);
  for (auto field : {&memory_breakdown::weights_bytes, &memory_breakdown::gradients_bytes,
                     &memory_breakdown::optimizer_bytes, &memory_breakdown::fsdp_unit_gradient_bytes})
    EXPECT_EQ(m.*field, one.*field);
  // The exchange: 2 x 7/8 x P x 4 bytes over 450 GB/s at 80%, each micro-step; nothing once a step.
  const device_spec& h100 = find_preset("h100-sxm");
  const communication_estimate c = estimate_communication(replicated, h100);
  EXPECT_NEAR(c.per_micro_step_reduce_ms, 2 * 7.0 / 8 * 4 * static_cast<double>(llama_parameters) / (450 * 0.8 * 1e6),
              1e-9);
  EXPECT_EQ(c.per_global_step_ms, 0);
  EXPECT_EQ(c.per_micro_step_ms, 0);  // its gathers are local copies
  // No DDP bucket copies; FSDP2's copy into the reduce input (2 + 4) every micro-step.
  const gradient_traffic t = gradient_traffic_of(replicated);
  EXPECT_EQ(t.micro_step, 6);
  EXPECT_EQ(t.boundary, 0);
}

// FSDP at --zero 2 (FSDP2's reshard_after_forward False, FSDP1's SHARD_GRAD_OP) keeps the parameters
// gathered from forward to backward but reshards after backward: every micro-step gathers them once
// (2 x 7/8 x P bytes in bf16 on 8 GPUs) beside its gradients' reduce-scatter; DeepSpeed's ZeRO-2 holds
// its 16-bit weights whole and gathers once after the optimizer step. Before, FSDP's stage 2 was
// planned with DeepSpeed's once-a-step gather.
TEST(zero_buffers, fsdp_stage_2_gathers_every_micro_step) {
  const device_spec& h100 = find_preset("h100-sxm");
  const double bytes_per_ms = 450 * 0.8 * 1e6, P = static_cast<double>(llama_parameters);
  const communication_estimate fsdp = estimate_communication(llama(training_framework::fsdp2, 2, 8), h100);
  EXPECT_NEAR(fsdp.per_micro_step_ms, 7.0 / 8 * P * 2 / bytes_per_ms, 1e-9);
  EXPECT_NEAR(fsdp.per_micro_step_reduce_ms, 7.0 / 8 * P * 4 / bytes_per_ms, 1e-9);  // fp32 reduce
  EXPECT_EQ(fsdp.per_global_step_ms, 0);
  const communication_estimate ds = estimate_communication(llama(training_framework::deepspeed, 2, 8), h100);
  EXPECT_EQ(ds.per_micro_step_ms, 0);
  EXPECT_NEAR(ds.per_micro_step_reduce_ms, 7.0 / 8 * P * 2 / bytes_per_ms, 1e-9);  // its bf16 gradients
  EXPECT_EQ(ds.per_global_step_ms, 0);
  EXPECT_EQ(ds.after_step_ms, ds.per_micro_step_reduce_ms);  // the all-gather after the optimizer step
}

// LoRA under ZeRO and FSDP: the adapters are parameters beside the frozen base, held, sharded and
// gathered with it (they were left out of the weights, their gradients and states counted).
// DeepSpeed's bf16 model at stage 3 on 8 GPUs, q and v at rank 16: 2 bytes each, an eighth a GPU.
TEST(zero_buffers, lora_adapters_are_weights_under_zero_too) {
  training_setup s = llama(training_framework::deepspeed, 3, 8);
  s.lora_rank = 16;
  s.lora_targets = parse_lora_targets("q,v");
  const memory_breakdown m = estimate_memory(s);
  EXPECT_EQ(m.trainable_parameters, 32 * 212'992LL);
  EXPECT_EQ(m.weights_bytes, (2 * llama_parameters + 2 * m.trainable_parameters) / 8 + gathered_weights_bytes(s));
  s.zero_stage = 2;
  EXPECT_EQ(estimate_memory(s).weights_bytes, 2 * llama_parameters + 2 * m.trainable_parameters);
}

// LitGPT accumulates under fabric.no_backward_sync, which Lightning's FSDP strategy makes FSDP1's
// no_sync: until the last micro-step nothing is reduce-scattered and every parameter's gradient is
// held unsharded, at FSDP1's fp32 param_dtype under bf16-mixed: 4 x 8,030,261,248 bytes a GPU, in the
// peak of accumulating candidates only; its reduce-scatter runs once a step. Before, LitGPT's
// accumulating plans held the gradient shard alone and reduce-scattered every micro-step.
TEST(zero_buffers, litgpt_accumulates_unsharded_gradients_under_no_sync) {
  const training_setup lit = llama(training_framework::litgpt, 3, 8);
  ASSERT_TRUE(fsdp_no_sync(lit));
  const memory_breakdown m = estimate_memory(lit);
  EXPECT_EQ(m.no_sync_gradient_bytes, 4 * llama_parameters);
  for (const bool ckpt : {false, true})
    EXPECT_GE(m.peak_allocated_bytes(1, ckpt, true) - m.peak_allocated_bytes(1, ckpt, false), 4 * llama_parameters);
  EXPECT_EQ(estimate_memory(llama(training_framework::litgpt, 3, 1)).no_sync_gradient_bytes, 0);  // one GPU
  EXPECT_EQ(estimate_memory(llama(training_framework::fsdp2, 3, 8)).no_sync_gradient_bytes, 0);
  EXPECT_EQ(estimate_memory(llama(training_framework::litgpt, 0, 8)).no_sync_gradient_bytes, 0);  // DDP
  // Composer's no_sync is DDP's only: under FSDP it reduce-scatters every micro-step, sharded.
  const training_setup composer = llama(training_framework::composer, 3, 8);
  EXPECT_EQ(estimate_memory(composer).no_sync_gradient_bytes, 0);
  const communication_estimate cc = estimate_communication(composer, find_preset("h100-sxm"));
  EXPECT_EQ(cc.per_global_step_ms, 0);
  EXPECT_GT(cc.per_micro_step_ms, 2 * 7.0 / 8 * static_cast<double>(llama_parameters) * 4 / (450 * 0.8 * 1e6));
  training_setup lora = lit;  // LoRA: the fp32 adapters' gradients only
  lora.lora_rank = 16;
  lora.lora_targets = parse_lora_targets("q,v");
  EXPECT_EQ(estimate_memory(lora).no_sync_gradient_bytes, 4 * 32 * 212'992LL);
  // The exchange: two gathers a micro-step (fp32 under FSDP1's policy), one reduce-scatter a step.
  const communication_estimate c = estimate_communication(lit, find_preset("h100-sxm"));
  const double bytes_per_ms = 450 * 0.8 * 1e6, P = static_cast<double>(llama_parameters);
  EXPECT_NEAR(c.per_micro_step_ms, 2 * 7.0 / 8 * P * 4 / bytes_per_ms, 1e-9);
  EXPECT_GT(c.per_global_step_ms, 0);
  EXPECT_EQ(c.per_micro_step_reduce_ms, 0);
}

// FSDP1 under LitGPT's and Composer's mixed precision (param_dtype float32, reduce_dtype bf16):
// fp32 gathers, gradients reduced in 16 bits, and at stage 2 the gathered parameters kept whole at
// fp32 from forward to backward: Llama-3-8B on 8 GPUs holds 4 x P whole beside its 4 x P / 8 shard.
// They were reduced at fp32 (twice the bytes the memory model said) and kept whole at 2 bytes
// (15 GiB under the weights the gathers move). LitGPT's LoRA runs FSDP2 without a policy: fp32.
TEST(zero_buffers, fsdp1_gathers_fp32_and_reduces_16_bit_gradients) {
  const device_spec& h100 = find_preset("h100-sxm");
  const double bytes_per_ms = 450 * 0.8 * 1e6, P = static_cast<double>(llama_parameters);
  for (const auto f : {training_framework::composer, training_framework::litgpt}) {
    const training_setup s = llama(f, 2, 8);
    EXPECT_TRUE(fsdp1_reduces_in_16_bits(s));
    const communication_estimate c = estimate_communication(s, h100);
    EXPECT_NEAR(c.per_micro_step_ms, 7.0 / 8 * P * 4 / bytes_per_ms, 1e-9);  // fp32 gathers
    // Composer reduce-scatters every micro-step; LitGPT once a step (no_sync).
    EXPECT_NEAR(f == training_framework::composer ? c.per_micro_step_reduce_ms : c.per_global_step_ms,
                7.0 / 8 * P * 2 / bytes_per_ms, 1e-9);
    EXPECT_NEAR(static_cast<double>(estimate_memory(s).weights_bytes), 4 * P + 4 * P / 8, 1.0);
  }
  training_setup lora = llama(training_framework::litgpt, 3, 8);
  lora.lora_rank = 16;
  EXPECT_FALSE(fsdp1_reduces_in_16_bits(lora));
  training_setup ddp = llama(training_framework::composer, 0, 8);
  EXPECT_FALSE(fsdp1_reduces_in_16_bits(ddp));
}
