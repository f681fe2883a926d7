// The batch plan as JSON (schema tiletune.batch/1), with the Hugging Face
// TrainingArguments and DeepSpeed settings of its recommendation.
#include "core/train/training_plan.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/train/training_calibration.hpp"
#include "core/train/optimizer_placement.hpp"
#include "core/train/lora_step.hpp"
#include "core/train/moe_parallel.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_precision.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_pipeline.hpp"
#include "core/train/training_plan_notes.hpp"
#include "core/train/zero_buffers.hpp"
#include "core/version.hpp"

namespace tiletune {

namespace {

nlohmann::json step_json(const step_time& t, const training_setup& s) {
  const bool offloaded = s.offload != offload_kind::none, tensor_parallel = s.tensor_parallel > 1;
  nlohmann::json j = {{"gemm_ms", t.gemm_ms},
          {"memory_bound_ms", t.memory_bound_ms},
          {"launch_ms", t.launch_ms},
          {"optimizer_ms_per_global_step", t.optimizer_ms},
          {"gradient_boundary_ms_per_global_step", t.gradient_boundary_added_ms},
          {"allreduce_ms_per_global_step", t.allreduce_ms},
          {"zero3_gather_ms", t.gather_ms},
          {"expert_alltoall_ms", t.alltoall_ms},
          {"memory_bound_bytes", t.memory_bound_bytes},
          {"kernels", t.kernels},
          {"host_forward_ms", t.host_forward_ms},
          {"host_backward_ms", t.host_backward_ms},
          {"host_optimizer_ms", t.host_optimizer_ms},
          {"host_wait_ms", t.host_wait_ms}};
  if (tensor_parallel) j["tensor_parallel_ms"] = t.tensor_parallel_ms;  // per micro-step, not overlapped
  if (t.reduce_scatter_ms > 0)  // per micro-step
    j[fsdp_replicated(s) ? "replicated_all_reduce_ms" : "zero2_reduce_scatter_ms"] = t.reduce_scatter_ms;
  if (s.paged_optimizer) j["optimizer_paging_ms_per_global_step"] = t.paging_ms;     // --paged-optimizer
  if (t.context_parallel_ms > 0) j["context_parallel_ms"] = t.context_parallel_ms;  // the ring beyond attention
  if (t.pipeline_bubble_ms > 0) {  // --pipeline-parallel
    j["pipeline_p2p_ms"] = t.p2p_ms;
    j["pipeline_bubble_ms_per_global_step"] = t.pipeline_bubble_ms;
  }
  if (offloaded) {  // --offload: the parts of optimizer_ms, and the parameters' transfers per micro-step
    j["offload_transfer_ms_per_global_step"] = t.offload_transfer_ms;
    j["cpu_optimizer_ms_per_global_step"] = t.cpu_optimizer_ms;
    j["offload_transfer_ms_per_micro_step"] = t.offload_micro_step_ms;
  }
  return j;
}

std::string hf_optim(optimizer_kind o, bool paged) {
  if (paged)  // transformers' OptimizerNames for bitsandbytes' paged optimizers
    return o == optimizer_kind::adamw_8bit ? "paged_adamw_8bit" : o == optimizer_kind::lion ? "paged_lion_32bit" : "paged_adamw_32bit";
  switch (o) {
    case optimizer_kind::adamw: return "adamw_torch_fused";
    case optimizer_kind::adamw_8bit: return "adamw_bnb_8bit";
    case optimizer_kind::adafactor: return "adafactor";
    case optimizer_kind::sgd:
    case optimizer_kind::sgd_momentum: return "sgd";
    case optimizer_kind::lion: return "lion_32bit";  // transformers' OptimizerNames.LION (bitsandbytes' Lion)
  }
  return "adamw_torch";
}

nlohmann::json memory_json(const batch_plan& plan) {
  const memory_breakdown& m = plan.memory;
  return {{"weights_bytes", m.weights_bytes},
          {"gradients_bytes", m.gradients_bytes},
          {"optimizer_bytes", m.optimizer_bytes},
          {"activation_bytes_per_sample", m.activation_bytes_per_sample},
          {"checkpointed_activation_bytes_per_sample", m.checkpointed_activation_bytes_per_sample},
          {"logits_bytes_per_sample", m.logits_bytes_per_sample},
          {"overhead_bytes", m.cuda_context_bytes},
          {"allocator_overhead_fraction", m.allocator_overhead},
          {"allocator_overhead_fraction_checkpointing", m.allocator_overhead_ckpt},
          {"autocast_weight_copies_bytes", m.autocast_weight_copies_bytes},
          {"lm_head_copy_bytes", m.lm_head_copy_bytes},
          {"recompute_layer_bytes_per_sample", m.recompute_layer_bytes_per_sample},
          {"lora_transient_bytes_per_sample", m.lora_transient_bytes_per_sample},
          {"logits_forward_bytes_per_sample", m.logits_forward_bytes_per_sample},
          {"library_workspace_bytes", m.library_workspace_bytes},
          {"deepspeed_bucket_bytes", m.deepspeed_bucket_bytes},
          {"fsdp_unit_gradient_bytes", m.fsdp_unit_gradient_bytes},
          {"no_sync_gradient_bytes", m.no_sync_gradient_bytes},
          {"optimizer_step_gradient_bytes", m.optimizer_step_gradient_bytes},
          {"gradients_allocated_throughout", m.gradients_allocated_throughout},
          {"tied_embedding_grad_bytes", m.tied_embedding_grad_bytes},
          {"logits_held_bytes_per_sample", m.logits_held_bytes_per_sample},
          {"expert_parameters", m.expert_parameters},
          {"expert_trainable_parameters", m.expert_trainable_parameters},
          {"expert_parallel", m.expert_parallel},
          {"terms_are", "per GPU: routed experts divided over the expert-parallel ranks, then ZeRO's sharding"},
          {"safety_margin_covers",
           "peak_bytes adds to the modelled tensors the caching allocator's slack on what is allocated and "
           "freed within a step (largest seen in real training) and the CUDA context measured on an H100; the safety margin "
           "covers the rest the model cannot know: other processes, a different PyTorch or driver, "
           "allocator settings, tensors a training script keeps beyond the step"},
          {"budget_bytes", plan.memory_budget_bytes},
          {"max_micro_batch",
           {{"no_checkpointing", plan.max_micro_batch_no_ckpt},
            {"checkpointing", plan.max_micro_batch_ckpt},
            // Accumulating, every micro-step but the first holds the earlier ones' gradients.
            {"accumulating",
             {{"no_checkpointing", largest_fitting_batch(plan.memory, plan.memory_budget_bytes, false, true)},
              {"checkpointing", largest_fitting_batch(plan.memory, plan.memory_budget_bytes, true, true)}}}}},
          {"peak_bytes_means",
           "allocated tensors (torch.cuda.max_memory_allocated) plus allocator slack on the transient part (not on "
           "weights, optimizer states and workspaces; with checkpointing also a share of the gradients, never "
           "more than without checkpointing) plus the CUDA context"}};
}

// --pipeline-parallel: memory's terms are the first stage's, its activations at the recommendation's
// micro-batches in flight (the most 1F1B keeps, where nothing fits); each stage's own here, labelled.
void add_pipeline_stages(const batch_plan& plan, nlohmann::json& memory) {
  const memory_breakdown& m = plan.memory;
  if (plan.setup.pipeline_parallel <= 1 || m.other_stages.empty()) return;
  const double most = pipeline_first_stage_most_in_flight(plan.setup.pipeline_parallel, plan.setup.virtual_stages);
  const double share = plan.recommended ? candidate_in_flight_share(m, plan.candidates[*plan.recommended]) : 1;
  auto held = [&](std::int64_t bytes) { return std::llround(share * static_cast<double>(bytes)); };
  memory["activation_bytes_per_sample"] = held(m.activation_bytes_per_sample);
  memory["checkpointed_activation_bytes_per_sample"] = held(m.checkpointed_activation_bytes_per_sample);
  memory["terms_are"] = "per GPU of the first pipeline stage (the embedding, no LM head or logits), its activations "
                        "at the micro-batches in flight that pipeline_stages names; pipeline_stages has the last "
                        "stage's";
  const memory_breakdown& last = m.other_stages.front();
  memory["pipeline_stages"] = {
      {"activations_at", plan.recommended ? "the recommendation's micro-batches in flight" : "the most in flight"},
      {"first_stage_micro_batches_in_flight", share * most},
      {"first_stage_most_micro_batches_in_flight", most},
      {"first_stage_most_activation_bytes_per_sample", m.activation_bytes_per_sample},
      {"first_stage_most_checkpointed_activation_bytes_per_sample", m.checkpointed_activation_bytes_per_sample},
      {"last_stage_activation_bytes_per_sample", last.activation_bytes_per_sample},
      {"last_stage_checkpointed_activation_bytes_per_sample", last.checkpointed_activation_bytes_per_sample},
      {"last_stage_logits_bytes_per_sample", last.logits_bytes_per_sample}};
}

nlohmann::json candidates_json(const batch_plan& plan) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : plan.candidates) {
    out.push_back({{"micro_batch", c.micro_batch},
                   {"checkpointing", c.checkpointing},
                   {"peak_bytes", c.peak_bytes},
                   {"peak_allocated_bytes", c.peak_allocated_bytes},
                   {"peak_phase", c.peak_phase},
                   {"fits", c.fits},
                   {"grad_accum_steps", c.grad_accum_steps},
                   {"effective_global_batch", c.effective_global_batch},
                   {"step_ms", c.step_ms},
                   {"global_step_ms", c.global_step_ms},
                   {"samples_per_s", c.samples_per_s},
                   {"tokens_per_s", c.tokens_per_s},
                   {"time", step_json(c.time, plan.setup)},
                   {"gemm_time_basis", c.measured ? "measured (cuBLASLt)" : "predicted"}});
  }
  return out;
}

nlohmann::json calibration_json() {
  const batch_calibration& b = batch_calibration_constants();
  return {{"source", "profiles/batch_calibration.json"},
          {"cuda_context_bytes", b.cuda_context_bytes},
          {"library_workspace_bytes", b.library_workspace_bytes},
          {"allocator_slack_of_transient", b.allocator_slack_of_transient},
          {"allocator_slack_ckpt_of_gradients", b.allocator_slack_ckpt_of_gradients},
          {"elementwise_bandwidth_share", b.elementwise_bandwidth_share},
          {"launch_us", b.launch_us}};
}

nlohmann::json batch_recommendation_json(const batch_plan& plan, const batch_candidate& r) {
  const training_setup& s = plan.setup;
  return {{"micro_batch", r.micro_batch},
          {"grad_accum_steps", r.grad_accum_steps},
          {"global_batch", r.effective_global_batch},
          {"exact_global_batch", r.exact_global_batch},
          {"checkpointing", r.checkpointing},
          {"precision", to_string(s.prec)},
          {"optimizer", to_string(s.optimizer)},
          {"peak_bytes", r.peak_bytes},
          {"samples_per_s", r.samples_per_s},
          {"tokens_per_s", r.tokens_per_s}};
}

// The recommendation as Hugging Face TrainingArguments. Their bf16/fp16 flags
// are autocast over the loaded weights (model_load_json): set for the mixed
// precisions only; pure bf16 is a bf16 model trained without autocast.
nlohmann::json hf_training_args_json(const training_setup& s, const batch_candidate& r) {
  nlohmann::json hf = {{"per_device_train_batch_size", r.micro_batch},
                       {"gradient_accumulation_steps", r.grad_accum_steps},
                       {"gradient_checkpointing", r.checkpointing},
                       {"bf16", s.prec == precision::bf16_mixed},
                       {"fp16", s.prec == precision::fp16_mixed},
                       {"optim", hf_optim(s.optimizer, s.paged_optimizer)},
                       {"max_grad_norm", s.grad_clip ? 1.0 : 0.0}};  // 0 turns the Trainer's clipping off
  // --loss fused: the Trainer runs Liger's fused linear cross-entropy with use_liger_kernel (without it,
  // the planned micro-batch met transformers' loss on every logit). liger_kernel_config, the arguments
  // of Liger's _apply_liger_kernel_to_instance (each model's patch takes those it has), keeps its other
  // kernels off: the plan counts transformers' norms, rotary and MLP.
  if (s.loss == loss_impl::fused) {
    hf["use_liger_kernel"] = true;
    hf["liger_kernel_config"] = {{"fused_linear_cross_entropy", true}, {"cross_entropy", false}, {"rope", false},
                                 {"rms_norm", false},  {"layer_norm", false},   {"swiglu", false},
                                 {"geglu", false}};
  }
  return hf;  // sgd-momentum: "sgd" is plain SGD in transformers, a note says how to pass momentum
}

// What the weights are loaded as (from_pretrained's torch_dtype): fp32 under
// the mixed precisions, whose autocast makes the 16-bit copies, bf16 for pure
// bf16 (its gradients and optimizer states follow the weights). LoRA and QLoRA
// load the frozen base in autocast's 16-bit type (the plan counts it 16-bit,
// with no autocast copies of it); peft keeps the adapters fp32 or bf16 itself.
nlohmann::json model_load_json(const training_setup& s) {
  const bool sixteen_bit = s.prec == precision::bf16 || (s.lora_rank > 0 && s.prec != precision::fp32);
  const char* dtype = !sixteen_bit ? "float32" : s.prec == precision::fp16_mixed ? "float16" : "bfloat16";
  nlohmann::json j = {{"torch_dtype", dtype}};
  // --attention eager: transformers loads SDPA unless told (a framework that builds its own model gets a
  // note instead, emitted_config_notes).
  if (s.attention == attention_impl::eager && loads_with_transformers(s.framework)) j["attn_implementation"] = "eager";
  // --quantize nf4: transformers' BitsAndBytesConfig for QLoRA's base.
  if (s.quantize == quantize_kind::nf4)
    j["quantization_config"] = {{"load_in_4bit", true},
                                {"bnb_4bit_quant_type", "nf4"},
                                {"bnb_4bit_use_double_quant", true},
                                {"bnb_4bit_compute_dtype", s.prec == precision::fp16_mixed ? "float16"
                                                           : s.prec == precision::fp32     ? "float32"
                                                                                           : "bfloat16"}};
  // ZeRO-3 shards the 4-bit base only where bitsandbytes stores it in the model's float dtype (peft's
  // "PEFT QLoRA and DeepSpeed with ZeRO3" guide: bnb_4bit_quant_storage equal to torch_dtype); in its
  // default uint8 storage the base is not sharded as planned.
  if (s.quantize == quantize_kind::nf4 && s.zero_stage >= 3) j["quantization_config"]["bnb_4bit_quant_storage"] = dtype;
  return j;
}

// DeepSpeed's 16-bit modes keep fp32 master weights and fp32 optimizer states,
// which is the mixed precisions' memory; no DeepSpeed setting trains pure bf16
// states, so a pure-bf16 plan has no DeepSpeed config (to_json says why).
nlohmann::json deepspeed_json(const training_setup& s, const batch_candidate& r) {
  if (s.prec == precision::bf16) return nullptr;
  nlohmann::json ds = {{"train_micro_batch_size_per_gpu", r.micro_batch},
                       {"gradient_accumulation_steps", r.grad_accum_steps},
                       {"train_batch_size", r.effective_global_batch},
                       {"zero_optimization", {{"stage", s.zero_stage}, {"overlap_comm", s.overlap_comm}}},
                       {"bf16", {{"enabled", s.prec == precision::bf16_mixed}}},
                       {"fp16", {{"enabled", s.prec == precision::fp16_mixed}}},
                       // The Trainer's max_grad_norm, which it checks this against; 0: none.
                       {"gradient_clipping", s.grad_clip ? 1.0 : 0.0}};
  add_deepspeed_zero_settings(s, ds["zero_optimization"]);
  // --offload: ZeRO-Offload's optimizer on the CPU, and ZeRO-Infinity's parameters there too.
  if (s.offload != offload_kind::none)
    ds["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  if (s.offload == offload_kind::optimizer_params)
    ds["zero_optimization"]["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  // ZeRO-Offload refuses the Trainer's own (GPU) optimizer unless told otherwise: AdamW and Lion
  // are named here so that DeepSpeed steps them with its CPU kernels (DeepSpeedCPUAdam,
  // DeepSpeedCPULion; the Trainer fills "auto" from its arguments); the other optimizers have
  // none, and run as the Trainer's torch optimizer on the host's partition.
  if (s.offload != offload_kind::none) {
    if (s.optimizer == optimizer_kind::adamw)
      ds["optimizer"] = {{"type", "AdamW"},
                         {"params", {{"lr", "auto"}, {"betas", "auto"}, {"eps", "auto"}, {"weight_decay", "auto"}}}};
    else if (s.optimizer == optimizer_kind::lion)
      ds["optimizer"] = {{"type", "Lion"}, {"params", {{"lr", "auto"}, {"betas", "auto"}, {"weight_decay", "auto"}}}};
    else
      ds["zero_force_ds_cpu_optimizer"] = false;
  }
  return ds;
}

}  // namespace

nlohmann::json to_json(const batch_plan& plan, const std::string& command_line, const std::string& date_utc) {
  const training_setup& s = plan.setup;
  const memory_breakdown& m = plan.memory;
  nlohmann::json j;
  j["schema"] = "tiletune.batch/1";
  j["tool"] = {{"name", "tiletune"}, {"version", tool_version}, {"commit", source_commit()}, {"command_line", command_line}, {"date", date_utc}};
  j["mode"] = to_string(plan.mode);
  j["model"] = to_json(s.model);
  j["model"]["parameters"] = m.parameters;
  j["model"]["trainable_parameters"] = m.trainable_parameters;
  j["model"]["active_parameters"] = m.active_parameters;
  j["gpu"] = to_json(plan.device);
  j["setup"] = {{"framework", to_string(s.framework)},
                {"modules", to_string(layers_of(s))},
                {"seq_len", s.seq_len},
                {"precision", to_string(s.prec)},
                {"optimizer", to_string(s.optimizer)},
                {"attention", to_string(s.attention)},
                {"loss", to_string(s.loss)},
                {"checkpoint_every", s.checkpoint_every},
                {"checkpoint_ops", s.checkpoint_ops},
                {"optimizer_in_backward", s.optimizer_in_backward},
                {"offload", to_string(s.offload)},
                {"zero_stage", s.zero_stage},
                {"overlap_comm", s.overlap_comm},
                {"grad_clip", s.grad_clip},
                {"world_size", s.world_size},
                {"lora_rank", s.lora_rank},
                {"lora_dropout", s.lora_dropout},
                {"lora_targets", lora_targets_name(s.lora_targets)},
                {"adapter_dtype", to_string(s.adapters)},
                {"quantize", to_string(s.quantize)},
                {"expert_parallel", m.expert_parallel},
                {"global_batch", s.global_batch ? nlohmann::json(*s.global_batch) : nlohmann::json(nullptr)},
                {"micro_batch", s.micro_batch ? nlohmann::json(*s.micro_batch) : nlohmann::json(nullptr)},
                {"safety_margin", s.safety_margin}};
  j["memory"] = memory_json(plan);
  add_pipeline_stages(plan, j["memory"]);
  if (m.optimizer_in_backward) j["memory"]["gradients_in_flight_bytes"] = m.gradients_in_flight_bytes;
  if (s.quantize != quantize_kind::none) j["memory"]["dequantized_weight_bytes"] = m.dequantized_weight_bytes;
  if (s.tensor_parallel > 1) {  // --tensor-parallel (training_parallel.hpp): absent from other plans
    j["setup"]["tensor_parallel"] = s.tensor_parallel;
    j["setup"]["sequence_parallel"] = s.sequence_parallel;
  }
  if (s.pipeline_parallel > 1) j["setup"]["pipeline_parallel"] = s.pipeline_parallel;
  if (s.lora_rank > 0) j["setup"]["lora_modules"] = to_string(lora_module_of(s));  // absent without LoRA
  if (s.paged_optimizer) {
    j["setup"]["paged_optimizer"] = true;
    j["setup"]["pcie_gbs"] = pcie_gbs(s, plan.device);
  }
  if (s.virtual_stages > 1) j["setup"]["virtual_stages"] = s.virtual_stages;
  if (s.context_parallel > 1) j["setup"]["context_parallel"] = s.context_parallel;
  if (s.packing > 0) j["setup"]["packing"] = s.packing;  // samples per row: seq_len / packing
  if (s.fp8 != fp8_recipe::none) j["setup"]["fp8"] = to_string(s.fp8);
  if (s.fp8_all_gather) j["setup"]["fp8_all_gather"] = true;
  if (data_parallel_degree(s) < s.world_size) j["setup"]["data_parallel"] = data_parallel_degree(s);
  if (s.offload != offload_kind::none) {
    j["setup"]["pcie_gbs"] = pcie_gbs(s, plan.device);
    j["setup"]["host_memory_gbs"] = host_memory_gbs(s);
    j["memory"]["offloaded_bytes"] = m.offloaded_bytes;
  }
  j["candidates"] = candidates_json(plan);
  auto optional_number = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  j["device_rates"] = {{"copy_bandwidth_gbs", optional_number(plan.rates.copy_bandwidth_gbs)},
                       {"launch_floor_us", optional_number(plan.rates.launch_floor_us)}};
  if (plan.rates.stored_gemm_us) j["device_rates"]["stored_gemm_scale"] = plan.rates.stored_gemm_scale;
  j["calibration"] = calibration_json();
  j["notes"] = plan.notes;
  if (!plan.recommended) {
    j["recommendation"] = nullptr;
    j["suggestions"] = plan.suggestions;
    j["hf_training_args"] = nullptr;
    j["model_load"] = nullptr;
    j["deepspeed"] = nullptr;
    j["peft"] = nullptr;
    return j;
  }
  const auto& r = plan.candidates[*plan.recommended];
  j["recommendation"] = batch_recommendation_json(plan, r);
  j["hf_training_args"] = hf_training_args_json(s, r);
  j["model_load"] = model_load_json(s);
  // With tensor, pipeline or context parallelism not every GPU is a data-parallel rank, and
  // DeepSpeed under the Trainer (no Megatron mpu) checks train_batch_size against micro-batch x
  // accumulation x every GPU of the world (runtime/config.py): a config would stop it at start-up.
  const bool model_parallel = data_parallel_degree(s) < s.world_size;
  // Expert parallelism likewise: a DeepSpeed config shards every expert over all the ranks (ZeRO) where
  // the plan holds 1/N of them a GPU, and DeepSpeed splits only its own deepspeed.moe layers' experts.
  const bool experts_split = expert_parallel_degree(s) > 1;
  j["deepspeed"] = model_parallel || experts_split ? nlohmann::json(nullptr) : deepspeed_json(s, r);
  // ZeRO under the Trainer is its deepspeed argument (a path or the config itself): without it the
  // Trainer runs plain DDP and every rank holds the whole optimizer state the plan sharded.
  if (s.zero_stage > 0 && j["deepspeed"].is_object()) j["hf_training_args"]["deepspeed"] = j["deepspeed"];
  j["peft"] = peft_json(s);
  for (std::string& n : emitted_config_notes(plan)) j["notes"].push_back(std::move(n));
  return j;
}

}  // namespace tiletune
