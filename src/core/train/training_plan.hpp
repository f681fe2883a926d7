// The batch planner's public interface: the training setup, the memory it
// needs, the step time, the plan and its JSON. Implemented in training_setup,
// training_memory, training_step, training_plan and training_plan_json (.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/device/device_spec.hpp"
#include "core/plan_mode.hpp"
#include "core/train/model_spec.hpp"
#include "core/train/training_inventory.hpp"

namespace tiletune {

enum class precision { fp32, fp16_mixed, bf16_mixed, bf16 };
// lion: Chen et al. 2023's sign update, one momentum state per parameter (issue 37).
enum class optimizer_kind { adamw, adamw_8bit, adafactor, sgd, sgd_momentum, lion };
enum class attention_impl { flash, eager };
enum class checkpoint_policy { automatic, on, off };
// --offload: what lives in host memory (DeepSpeed's offload_optimizer and offload_param, FSDP2's
// CPUOffloadPolicy): nothing, the optimizer states with the fp32 master weights (stepped by the CPU),
// or those and the 16-bit parameters (uploaded for every forward and backward). optimizer_placement.hpp.
enum class offload_kind { none, optimizer, optimizer_params };
// --quantize: the frozen base's linears as stored (none: the precision's; nf4: QLoRA's 4-bit
// NormalFloat with double quantization, quantized_base.hpp).
enum class quantize_kind { none, nf4 };
// --fp8: the blocks' linears in fp8 (training_fp8.hpp): none, or torchao's tensorwise or rowwise recipe.
enum class fp8_recipe { none, tensorwise, rowwise };
// The training framework whose defaults the setup took (training_framework.hpp; 0: hf).
enum class training_framework : unsigned char;
// The linears LoRA adapts (--lora-targets), as bits; lora_all_linear adapts every linear of the
// blocks (peft's "all-linear", the QLoRA paper's choice). q covers MLA's q_a/q_b, k and v its kv_a/kv_b.
enum lora_target : unsigned { lora_q = 1, lora_k = 2, lora_v = 4, lora_o = 8, lora_gate = 16, lora_up = 32, lora_down = 64 };
inline constexpr unsigned lora_all_linear = ~0u;
// The adapters' weights: fp32 (peft's get_peft_model upcasts them) or bf16 (torchtune and other
// trainers keep them in the base's dtype, with bf16 gradients and optimizer states).
enum class adapter_dtype { fp32, bf16 };
std::string_view to_string(adapter_dtype a);
adapter_dtype parse_adapter_dtype(std::string_view s);
unsigned parse_lora_targets(std::string_view s);  // "q,v", "q,k,v,o,gate,up,down", "all-linear"
std::string lora_targets_name(unsigned targets);

std::string_view to_string(precision p);
std::string_view to_string(optimizer_kind o);
std::string_view to_string(attention_impl a);
std::string_view to_string(loss_impl l);
precision parse_precision(std::string_view s);
optimizer_kind parse_optimizer(std::string_view s);
attention_impl parse_attention(std::string_view s);
loss_impl parse_loss(std::string_view s);
std::string_view to_string(offload_kind o);
offload_kind parse_offload(std::string_view s);  // none | optimizer | optimizer+params
std::string_view to_string(quantize_kind q);
quantize_kind parse_quantize(std::string_view s);  // none | nf4
std::string_view to_string(fp8_recipe r);
fp8_recipe parse_fp8_recipe(std::string_view s);  // none | tensorwise | rowwise
// auto | on | full (on) | off | every-N (on, checkpointing every N-th layer: parse_checkpoint_every)
// | selective (on, per op: training_setup::checkpoint_ops).
checkpoint_policy parse_checkpointing(std::string_view s);
int parse_checkpoint_every(std::string_view s);  // N of "every-N", 1 for the others

struct training_setup;
// The share of the layers a checkpointed step recomputes: the checkpointed ones, ceil(L / N) of L
// (1 for every layer); 0 without checkpointing. recomputed_count: a per-step count of layer work
// (a GEMM run once per layer) scaled by it, rounded.
double recompute_share(const training_setup& s, bool checkpointing);
// Per-op selective checkpointing: the bytes per token one layer keeps (its input, the saved matmul
// and attention outputs), and whether a layer's linear (a weight tensor's name) is recomputed.
double selective_layer_bytes_per_token(const training_setup& s, double layer_input_bytes);
bool selective_recomputes(const std::string& linear_name);
// Why per-op selective checkpointing is not modelled for this setup ("a mixture of experts",
// "LoRA adapters (...)"), or nullptr where it is (Llama-style blocks, flash attention, full fine-tuning).
const char* selective_unmodelled(const training_setup& s);
// Sets s.checkpointing, s.checkpoint_every and s.checkpoint_ops from --checkpointing's text.
void set_checkpointing(training_setup& s, std::string_view text);
std::int64_t recomputed_count(const training_setup& s, std::int64_t count);

struct training_setup {
  model_spec model;
  training_framework framework{};  // --framework (hf)
  // What the framework's defaults set and what they leave out (empty for hf): the plan's first notes.
  std::vector<std::string> framework_notes;
  std::int64_t seq_len = 0;
  precision prec = precision::bf16_mixed;
  optimizer_kind optimizer = optimizer_kind::adamw;
  attention_impl attention = attention_impl::flash;
  loss_impl loss = loss_impl::eager;
  checkpoint_policy checkpointing = checkpoint_policy::automatic;
  // A checkpointed plan checkpoints every N-th layer (--checkpointing every-N: torchtitan's
  // selective layer checkpointing; the others keep every activation); 1: every layer.
  int checkpoint_every = 1;
  // Per-op selective checkpointing (--checkpointing selective: torchtitan's "op" policy): every
  // layer keeps its input and the outputs of its attention kernel and of every other matmul (q, v,
  // gate, down of a Llama block); the rest, k, o and up and every memory-bound op, is recomputed.
  bool checkpoint_ops = false;
  int zero_stage = 0;
  // --overlap-comm: the data-parallel exchange (the gradients' all-reduce or reduce-scatter, ZeRO-3's
  // gathers) runs under compute, all but one layer's share (PyTorch DDP's buckets, FSDP's prefetch);
  // off: after backward, in full (Megatron-LM's overlap_grad_reduce False, DeepSpeed's overlap_comm
  // below stage 3).
  bool overlap_comm = true;
  // --grad-clip: the optimizer step first clips the gradients by their global norm (the Trainer's
  // max_grad_norm 1.0, torchtitan's max_norm, Megatron-LM's --clip-grad); gradient_traffic.hpp counts
  // what that moves.
  bool grad_clip = true;
  // --optimizer-in-backward (torchtune's optimizer_in_bwd, PyTorch's register_post_accumulate_grad_hook
  // recipe): each parameter's optimizer step runs as soon as its gradient is complete, which frees it;
  // no gradient accumulation (optimizer_placement.hpp has the rules).
  bool optimizer_in_backward = false;
  bool paged_optimizer = false;  // --paged-optimizer: bitsandbytes' paged optimizers (optimizer_placement.hpp)
  offload_kind offload = offload_kind::none;
  // Offload's links: each GPU's PCIe to the host, GB/s one direction, effective (none: by the GPU's
  // generation, optimizer_placement.cpp); the host's memory bandwidth the CPU optimizer step reaches,
  // shared by the GPUs of a node.
  std::optional<double> pcie_gbs;
  std::optional<double> host_memory_gbs;
  int world_size = 1;
  int lora_rank = 0;  // 0: full fine-tuning
  unsigned lora_targets = lora_all_linear;
  adapter_dtype adapters = adapter_dtype::fp32;
  quantize_kind quantize = quantize_kind::none;  // --quantize nf4: QLoRA's 4-bit base (needs LoRA)
  fp8_recipe fp8 = fp8_recipe::none;             // --fp8 tensorwise|rowwise: the blocks' linears in fp8
  bool fp8_all_gather = false;  // --fp8-all-gather: FSDP gathers the fp8 linears' weights in fp8 (tensorwise, ZeRO-3)
  double lora_dropout = 0;  // peft's LoraConfig.lora_dropout (its default 0: nn.Identity)
  std::optional<std::int64_t> global_batch;
  std::optional<std::int64_t> micro_batch;  // plan exactly this micro-batch (the one a user runs)
  double safety_margin = 0.05;  // share of the GPU's memory kept free
  std::optional<double> link_gbs;  // per-GPU bandwidth to the others (default: from the preset and world size)
  int gpus_per_node = 8;           // GPUs sharing a node's GPU link (NVLink); the rest across the network
  double network_gbs = 50;         // each GPU's network port, GB/s one direction (400 Gb/s: a DGX H100's NDR per GPU)
  // MoE: ranks the routed experts are split over (none or 1: experts held like
  // dense weights, every framework's default); moe_parallel.cpp.
  std::optional<int> expert_parallel;
  // --tensor-parallel T (Megatron-LM) and --sequence-parallel: the world is T x data-parallel
  // GPUs; training_parallel.hpp plans one GPU's shard. dp_span: set on that shard only, the GPUs
  // between two data-parallel ranks (T, x P on a pipeline stage), which share a node's network ports.
  int tensor_parallel = 1;
  bool sequence_parallel = false;
  int pipeline_parallel = 1;  // --pipeline-parallel P, 1F1B (training_pipeline.hpp)
  int virtual_stages = 1;  // --virtual-stages V: Megatron's interleaved 1F1B, V model chunks a pipeline rank
  // --context-parallel C (ring attention, training_context.hpp): each sequence over C GPUs.
  // attention_span: set on the shard only, keys per query as a multiple of its seq_len (C).
  int context_parallel = 1;
  int attention_span = 1;
  // --packing N: samples of N tokens packed seq_len / N to a row with a block-diagonal mask
  // (FlashAttention's varlen): attention spans N tokens, not the row; 0: one sample a row.
  std::int64_t packing = 0;
  int dp_span = 1;
  int cp_stride = 1;  // GPUs between context-parallel peers: the tensor-parallel group's (innermost)
};

// Throws usage_error naming the bad field (sequence longer than the model's
// positions, ZeRO stage, world size, LoRA rank...).
void validate(const training_setup& s);
// A bandwidth option (--link-gbs, --network-gbs, --pcie-gbs, --host-memory-gbs) from 0.01 GB/s
// (80 Mb/s, slower than any link a GPU trains over) to 100 TB/s; else usage_error naming it.
void require_bandwidth_gbs(const char* option, double gbs, const char* what);

// --pipeline-parallel: what sets how many micro-batches the first stage holds in flight
// (training_pipeline.hpp).
struct pipeline_schedule {
  int stages = 1;               // P; 1: no pipeline
  int virtual_stages = 1;       // V
  std::int64_t global_batch = 0;   // --global-batch (0: none)
  std::int64_t data_parallel = 1;  // data-parallel ranks (micro_batches_per_step)
};

// Every term of the training memory, per GPU.
struct memory_breakdown {
  std::int64_t parameters = 0;
  std::int64_t trainable_parameters = 0;
  std::int64_t active_parameters = 0;            // per token (MoE: routed experts at top-k / experts)
  std::int64_t expert_parameters = 0;            // routed experts' (all ranks)
  std::int64_t expert_trainable_parameters = 0;  // routed experts' trainable (LoRA: their adapters)
  int expert_parallel = 1;                       // ranks the routed experts are split over
  // Trainable parameters one GPU holds (experts divided by expert parallelism), before ZeRO sharding.
  double local_trainable_parameters() const {
    return static_cast<double>(trainable_parameters - expert_trainable_parameters) +
           static_cast<double>(expert_trainable_parameters) / expert_parallel;
  }
  std::int64_t weights_bytes = 0;
  std::int64_t gradients_bytes = 0;  // every trainable parameter's gradient
  std::int64_t optimizer_bytes = 0;
  // --optimizer-in-backward: each gradient is freed by its parameter's step as soon as it is
  // complete, so at most this much of gradients_bytes is alive at once (one block's, or the
  // largest tensor outside the blocks); 0 without it.
  bool optimizer_in_backward = false;
  bool paged_optimizer = false;  // the optimizer states in managed memory, outside PyTorch's pool
  std::int64_t gradients_in_flight_bytes = 0;
  // --offload: what this GPU's rank keeps in host memory instead (optimizer states and fp32 masters,
  // with optimizer+params its 16-bit parameter shard too); the GPU's terms above exclude it.
  std::int64_t offloaded_bytes = 0;
  // --quantize nf4: the 16-bit copy the largest quantized linear dequantizes its weight into, alive
  // while a block's linears run (forward, recompute, backward); 0 without it.
  std::int64_t dequantized_weight_bytes = 0;
  // The gradient bytes alive at the end of backward (all of them, or those in flight).
  std::int64_t alive_gradients_bytes() const {
    return optimizer_in_backward ? gradients_in_flight_bytes : gradients_bytes;
  }
  // torch.autocast's cached 16-bit copies of the fp32 linear weights: alive
  // from the forward until each layer's backward (only the LM head's copy
  // is left in backward with checkpointing, whose recompute casts anew).
  std::int64_t autocast_weight_copies_bytes = 0;
  std::int64_t lm_head_copy_bytes = 0;
  // Of those, the casts autocast does not cache (it caches only leaf, non-view parameters that
  // require grad: not FSDP1's views into its gathered flat parameter, nor a frozen LoRA base) made
  // inside the checkpointed blocks: under checkpointing each is freed after its GEMM, so the
  // forward holds none of them.
  std::int64_t uncached_block_copies_bytes = 0;
  std::int64_t activation_bytes_per_sample = 0;               // no checkpointing
  std::int64_t checkpointed_activation_bytes_per_sample = 0;  // layer inputs
  std::int64_t recompute_layer_bytes_per_sample = 0;          // one layer's activations, recomputed in backward
  std::int64_t lora_transient_bytes_per_sample = 0;           // LoRA: a layer's adapter temporaries over what it keeps
  std::int64_t outer_saved_bytes_per_sample = 0;              // kept outside the blocks (embeddings, final norm)
  std::int64_t layer_gradients_bytes = 0;                     // the blocks' share of gradients_bytes
  std::int64_t logits_bytes_per_sample = 0;                   // loss on the logits at its backward peak
  std::int64_t logits_forward_bytes_per_sample = 0;           // the same at its forward peak
  std::int64_t library_workspace_bytes = 0;                   // cuBLAS workspaces from PyTorch's allocator
  std::int64_t deepspeed_bucket_bytes = 0;  // DeepSpeed's gradient reduce buckets (zero_buffers.hpp)
  // FSDP at --zero 2 and 3: the largest unit's unsharded gradients and their reduce-scatter input,
  // alive in backward while that unit's gradients are reduced (zero_buffers.hpp).
  std::int64_t fsdp_unit_gradient_bytes = 0;
  // LitGPT accumulating on several GPUs (fabric.no_backward_sync: FSDP's no_sync): every trainable
  // parameter's unsharded gradient, held from the first micro-step to the last one's reduce-scatter
  // (zero_buffers.hpp, fsdp_no_sync); counted only in accumulating steps.
  std::int64_t no_sync_gradient_bytes = 0;
  // DeepSpeed's 16-bit mode: the fp32 gradients its optimizer wrapper gives the master weights at
  // the step, alive in the optimizer step only (zero_buffers.hpp).
  std::int64_t optimizer_step_gradient_bytes = 0;
  // Megatron-LM's grad buffer: every gradient allocated from the first step on, zeroed, never freed.
  bool gradients_allocated_throughout = false;
  // A tied embedding's last backward: the LM head's gradient, held by
  // autograd until the embedding's own arrives, that one and their sum.
  std::int64_t tied_embedding_grad_bytes = 0;
  std::int64_t logits_held_bytes_per_sample = 0;  // the model output's logits, kept by the caller through backward
  std::int64_t cuda_context_bytes = 0;
  // --pipeline-parallel: these terms are the first stage's ("first stage"), the last stage's in
  // other_stages; every peak below is the larger (training_pipeline.hpp). The first stage's
  // activation terms are those of the most micro-batches it holds in flight; a peak at a micro-batch
  // holds those its step's micro-batches leave (pipeline_in_flight_share).
  std::string stage_name;
  pipeline_schedule pipeline;
  std::vector<memory_breakdown> other_stages;
  // The caching allocator's rounding and fragmentation (max_memory_reserved
  // - max_memory_allocated), which the tensors alone cannot tell: a share of
  // the transient bytes of the peak (all but held_bytes), and with
  // checkpointing a further share of the gradients (training_calibration.hpp).
  double allocator_overhead = 0;       // of the transient bytes
  double allocator_overhead_ckpt = 0;  // of the gradients, with checkpointing only
  std::int64_t fixed_tensor_bytes() const { return weights_bytes + alive_gradients_bytes() + optimizer_bytes; }
  // Allocated once and never freed (weights, optimizer states, workspaces): no allocator slack.
  std::int64_t held_bytes() const;
  std::int64_t per_sample_bytes(bool checkpointing) const;
  // The phase of the step whose allocated bytes peak: "forward", "loss
  // backward", "recompute" (the last layer's, checkpointing), "first layer
  // backward", "embedding backward" or "optimizer step".
  // accumulating: a micro-step after the first of a gradient accumulation, whose
  // forward runs beside the gradients the earlier micro-steps left (zero_grad
  // comes only after the optimizer step).
  std::string peak_phase(std::int64_t micro_batch, bool checkpointing, bool accumulating = false) const;
  // What torch.cuda.max_memory_allocated would report.
  std::int64_t peak_allocated_bytes(std::int64_t micro_batch, bool checkpointing, bool accumulating = false) const;
  // What must fit in the GPU: allocated, the allocator's slack on the
  // transient part, and the CUDA context. Never larger with checkpointing
  // than without at the same micro-batch.
  std::int64_t peak_bytes(std::int64_t micro_batch, bool checkpointing, bool accumulating = false) const;
};

memory_breakdown estimate_memory(const training_setup& s);

// One GEMM of the training step, as the framework runs it.
struct step_gemm {
  std::string name;  // "layers.q_proj forward"
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::int64_t count = 1;  // how many times per step (layers)
  double flop_scale = 1;   // 0.5 for causal flash attention, which skips masked blocks
  bool fp32 = false;       // runs in fp32 whatever the precision (LoRA adapters without autocast)
  bool thin = false;       // one dimension is a LoRA rank: memory-bound (lora_step.hpp)
  std::string first_part = {};  // a fused projection's (fused_projections.hpp): its first part's name
  // The linear --fp8 converts it by (training_fp8.hpp): a fused projection's first part, else itself.
  const std::string& converted_name() const { return first_part.empty() ? name : first_part; }
};
std::vector<step_gemm> step_gemms(const training_setup& s, std::int64_t micro_batch, bool checkpointing);

struct step_time {
  double gemm_ms = 0;
  double memory_bound_ms = 0;  // norms, activations, softmax, loss: bytes over bandwidth
  double launch_ms = 0;        // per-kernel overhead of an eager framework
  double optimizer_ms = 0;     // once per global step
  // The gradients' copies into the exchange's buckets and back where they happen once per global
  // step (DDP, DeepSpeed stages 0 and 1: gradient_traffic.hpp), in the last micro-step's backward:
  // their GPU time, and what they add to the step beyond the time that backward's GPU waits for the host.
  double gradient_boundary_ms = 0, gradient_boundary_added_ms = 0;
  double allreduce_ms = 0;     // data-parallel gradient exchange, once per global step (training_communication)
  // ZeRO-3 parameter gathers and gradient reduce-scatters, every micro-step; FSDP's stage-2 gathers.
  double gather_ms = 0;
  // ZeRO-2's gradient reduce-scatter, every micro-step; torchtitan's at --zero 0 an all-reduce.
  double reduce_scatter_ms = 0;
  // --offload: PCIe transfers (gradients down, updated 16-bit parameters up) and the CPU's optimizer
  // step, once per global step (their sum is optimizer_ms); with optimizer+params, the parameter
  // uploads and gradient downloads of every micro-step.
  double offload_transfer_ms = 0, cpu_optimizer_ms = 0, offload_micro_step_ms = 0;
  double alltoall_ms = 0;      // MoE expert parallelism: token dispatch and combine, every micro-step
  double tensor_parallel_ms = 0;  // --tensor-parallel: the layers' all-reduces, every micro-step, not overlapped
  double p2p_ms = 0;              // --pipeline-parallel: a stage's sends forward and backward, every micro-step
  // --context-parallel: the ring's key and value transfers beyond what the attention GEMMs hide,
  // every micro-step; attention_ms: those GEMMs' time (the ring overlaps them).
  double context_parallel_ms = 0;
  double attention_ms = 0;
  double pipeline_bubble_ms = 0;  // --pipeline-parallel: 1F1B's (P - 1) idle micro-steps, once per global step
  double paging_ms = 0;  // --paged-optimizer: the evicted states paged out and back, once per global step
  double memory_bound_bytes = 0;  // what the memory-bound kernels move per micro-step
  double kernels = 0;             // kernel launches per micro-step
  // The host's time to issue the forward, the backward and the optimizer
  // step (host_time.hpp), and what of it the GPU waits for per micro-step.
  double host_forward_ms = 0, host_backward_ms = 0, host_optimizer_ms = 0;
  double host_wait_ms = 0;
  double micro_step_ms() const {
    return gemm_ms + memory_bound_ms + launch_ms + host_wait_ms + gather_ms + reduce_scatter_ms + alltoall_ms +
           offload_micro_step_ms +
           tensor_parallel_ms + p2p_ms + context_parallel_ms;
  }
};
// The time of one GEMM in microseconds: measured on the GPU, or predicted.
using gemm_time_fn = std::function<double(const gemm_problem&)>;
// Rates of the device's memory-bound work timed on it (measured mode); the
// calibrated constants stand in for what is missing.
struct device_rates {
  std::optional<double> copy_bandwidth_gbs;  // device-to-device copy: 2 x bytes / time
  std::optional<double> launch_floor_us;     // back-to-back tiny launches, per launch
  // Predicted mode: GEMM times measured earlier on this GPU model (the tuning
  // database, `tiletune gemm --model`): a stored problem's time, else none; the
  // model answers the rest, its library GEMM times scaled by stored_gemm_scale.
  std::function<std::optional<double>(const gemm_problem&)> stored_gemm_us;
  double stored_gemm_scale = 1;
};
// The layout of a step GEMM, from its pass: y = x W^T is nt (W stored out x in),
// dx = dy W is nn, dW = dy^T x is tn; attention's GEMMs are filed as nn.
layout step_gemm_layout(const std::string& gemm_name);
// The GEMMs' dtype for a precision (fp32 runs f32: PyTorch's default has no TF32).
dtype gemm_dtype(precision p);

// GEMMs from gemm_time (predict_library_gemm when empty: a cuBLAS-like
// efficiency against the roofs), the rest from bytes over bandwidth.
step_time predict_step(const training_setup& s, const device_spec& d, std::int64_t micro_batch, bool checkpointing,
                       const gemm_time_fn& gemm_time = {}, const device_rates& rates = {});

struct batch_candidate {
  std::int64_t micro_batch = 0;
  bool checkpointing = false;
  std::int64_t peak_bytes = 0;
  std::int64_t peak_allocated_bytes = 0;
  std::string peak_phase;  // the phase of the step whose allocation peaks
  bool fits = false;
  std::int64_t grad_accum_steps = 1;
  std::int64_t effective_global_batch = 0;
  bool exact_global_batch = true;
  step_time time;
  bool measured = false;  // GEMM times measured on the GPU (only candidates that fit are run)
  double step_ms = 0;  // one micro-step: the global step over its micro-steps (optimizer amortised)
  double global_step_ms = 0;  // one optimizer step: every micro-step, the optimizer and once-a-step exchanges
  double samples_per_s = 0;
  double tokens_per_s = 0;
};

// Under --pipeline-parallel the first stage's activation terms hold the most micro-batches 1F1B ever
// keeps in flight; a candidate's step holds this share of them (fewer micro-batches a step, fewer in
// flight: training_pipeline.hpp). 1 without a pipeline.
double candidate_in_flight_share(const memory_breakdown& m, const batch_candidate& c);

struct batch_plan {
  training_setup setup;
  device_spec device;
  plan_mode mode = plan_mode::predicted;
  memory_breakdown memory;
  std::int64_t memory_budget_bytes = 0;
  std::int64_t max_micro_batch_no_ckpt = 0;
  std::int64_t max_micro_batch_ckpt = 0;
  std::vector<batch_candidate> candidates;
  std::optional<std::size_t> recommended;
  std::vector<std::string> notes;        // why the recommendation is what it is
  std::vector<std::string> suggestions;  // when nothing fits: what would
  device_rates rates;                     // what was timed on the device
};

// With gemm_time, the step GEMMs are timed by it and the plan's mode is "measured".
// Rates, when given, replace the datasheet bandwidth and the fitted launch cost.
batch_plan plan_batch(const training_setup& s, const device_spec& d, const gemm_time_fn& gemm_time = {},
                      const device_rates& rates = {});

nlohmann::json to_json(const batch_plan& plan, const std::string& command_line, const std::string& date_utc);
// What the configs the JSON emits (hf_training_args, model_load, deepspeed) run of the recommendation
// and what they do not, and what a framework that reads none of them needs instead: to_json's notes
// after the plan's, and the text output's (training_plan_config_notes.cpp). Empty without a recommendation.
std::vector<std::string> emitted_config_notes(const batch_plan& plan);

}  // namespace tiletune
