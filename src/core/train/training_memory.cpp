// The memory a training configuration needs per GPU: weights, gradients,
// optimizer states, activations and logits, and the peak over a step's phases.
#include "core/train/training_plan.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/errors.hpp"

#include "core/train/training_calibration.hpp"
#include "core/train/training_inventory.hpp"
#include "core/train/lora_step.hpp"
#include "core/train/moe_parallel.hpp"
#include "core/train/optimizer_placement.hpp"
#include "core/train/quantized_base.hpp"
#include "core/train/training_fp8.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_parallel.hpp"
#include "core/train/training_context.hpp"
#include "core/train/training_pipeline.hpp"
#include "core/train/training_precision.hpp"
#include "core/train/zero_buffers.hpp"

namespace tiletune {

namespace {
// Weight tensors of one kind: the routed experts' (experts = true) or the rest.
bool of_kind(const weight_tensor& t, bool experts) { return t.routed() == experts; }

std::int64_t linear_parameters(const model_spec& m, bool experts) {
  std::int64_t n = 0;
  for (const auto& t : weight_tensors(m))
    if (t.linear && of_kind(t, experts)) n += t.parameters();
  return n;
}

// LoRA adapters on the linears of the blocks --lora-targets names (all of them by default,
// "all-linear" as in the QLoRA paper): r * (in + out) parameters per adapted matrix (each
// expert's too: peft adapts them where they are nn.Linear modules), and torchtitan's LM head's.
std::int64_t lora_parameters(const training_setup& s, bool experts) {
  std::int64_t n = 0;
  for (const auto& t : weight_tensors(s.model))
    if (lora_adapts(s, t) && of_kind(t, experts))
      n += static_cast<std::int64_t>(s.lora_rank) * (t.rows + t.cols) * t.count;
  if (const auto head = lora_head_adapter(s); head && !experts) n += s.lora_rank * (head->rows + head->cols);
  return n;
}

// Adafactor (Shazeer & Stern 2018) keeps, per matrix, one row and one column
// of second-moment factors, and a full second moment per vector; no first
// moment (transformers' default beta1=None). fp32 states.
std::int64_t adafactor_state_bytes(const training_setup& s, bool experts) {
  const int lora_rank = s.lora_rank;
  std::int64_t elements = 0;
  for (const auto& t : weight_tensors(s.model)) {
    if (!of_kind(t, experts)) continue;
    if (lora_rank > 0) {
      if (lora_adapts(s, t))
        elements += (lora_rank + t.cols + t.rows + lora_rank) * t.count;  // A: r x in, B: out x r
    } else {
      elements += (t.cols > 1 ? t.rows + t.cols : t.rows) * t.count;
    }
  }
  if (const auto head = lora_head_adapter(s); head && !experts)
    elements += lora_rank + head->cols + head->rows + lora_rank;
  return elements * 4;
}

// Bytes of optimizer state per trainable parameter (not counting Adafactor).
double optimizer_state_bytes(const training_setup& s) {
  const double state = optimizer_state_element_bytes(s);
  switch (s.optimizer) {
    case optimizer_kind::adamw: return 2 * state;        // m and v
    case optimizer_kind::adamw_8bit: return 2;           // bitsandbytes: m and v in 8 bits
    case optimizer_kind::sgd: return 0;
    case optimizer_kind::sgd_momentum: return state;     // the momentum buffer
    case optimizer_kind::lion: return state;             // its one state, the momentum (as Adam's m)
    case optimizer_kind::adafactor: return 0;            // counted per tensor
  }
  return 0;
}

// The most a layer's forward (or recompute) holds beyond what it keeps once
// done, per token, with LoRA: peft's lora.Linear computes
//   result = base(x); result = result + lora_B(lora_A(x')) * scaling; result.to(dtype)
// so at the add the base output (a bytes an element), the scaled adapter
// output (e) and their sum (s, fp32 if either is) are alive together, at the
// layer's widest adapted output W (a gated MLP's up projection). What the
// layer keeps after that point is subtracted; traced op by op in eager
// PyTorch (scripts/calibrate/trace_training_ops.py --memory, profiles/training_traces):
// - a 16-bit base without autocast, fp32 adapters: base a + scaled 4 + sum 4
//   at up's add, less up's output (a, kept by the gate product) and
//   down_proj's fp32 adapter input (4) kept later: 4 W;
// - autocast on a 16-bit base: the sum is up's kept 16-bit output, so base 2
//   + scaled 2 over down's 16-bit adapter input (2) gives 2 W at up; at
//   down_proj, the gate product (2, its input) and peft's fp32 copy of it (4,
//   which autocast casts back to 16 bits) are alive beyond what is kept: 6 W;
// - fp32 throughout: base 4 + scaled 4 + sum 4 at up's add, less the sum
//   (kept) and the product (kept by lora_A): 4 W.
// The frameworks' own modules (lora_modules.cpp; derived the same way, not
// traced) make no copy at up's add or down's input but autocast's 16-bit
// ones: base a + scaled a + sum a at up's add, less the sum (kept by the
// product) and the product (kept by down's lora_A; with dropout its copy and
// mask, a + 1, kept instead, and the product a at down itself): a W.
// An expert's adapters see its share of the tokens. LitGPT's one qkv
// adapter adds at the whole qkv width, whichever of q, k and v it adapts.
double lora_transient_per_token(const training_setup& s) {
  const double per_width = lora_module_of(s) != lora_module::peft ? activation_bytes(s.prec)
                           : is_mixed(s.prec)                     ? 6
                                                                  : 4;
  double widest = one_qkv_adapter_width(s);
  for (const auto& t : weight_tensors(s.model))
    if (lora_adapts(s, t))
      widest = std::max(widest, static_cast<double>(t.rows) * std::min(1.0, t.token_share));
  return per_width * widest;
}

// Two kinds of tensors, each held by some GPUs: the dense ones by all N
// (ZeRO shards over N), the routed experts split over the expert-parallel
// ranks, each share held by N / ep of them (moe_parallel.hpp). For a dense
// model the experts' share is empty.
void add_state_bytes(const training_setup& s, memory_breakdown& r) {
  const bool lora = s.lora_rank > 0;
  const double ep = r.expert_parallel;
  double weights = 0, grads = 0, optimizer = 0, offloaded = 0, step_grads = 0;
  // torchtitan's replicated FSDP keeps on each GPU what --zero 3 keeps on one (fsdp_replicated).
  const int stage = fsdp_replicated(s) ? 3 : s.zero_stage;
  for (const bool experts : {false, true}) {
    const double split = experts ? ep : 1;
    const double P = static_cast<double>(experts ? r.expert_parameters : r.parameters - r.expert_parameters) / split;
    const double T = static_cast<double>(experts ? r.expert_trainable_parameters
                                                 : r.trainable_parameters - r.expert_trainable_parameters) /
                     split;
    // The GPUs ZeRO (or Megatron-LM's distributed optimizer) shards over.
    const double N = s.zero_stage == 0 ? 1 : s.world_size / split;
    // --quantize nf4: the blocks' linears stored in NF4, the rest of the base at b bytes a weight.
    const double Q = quantized_parameters(s, experts) / split;
    auto base_bytes = [&](double b) { return b * (P - Q) + nf4_bytes_per_weight * Q; };
    // DeepSpeed's ZeRO and 16-bit optimizers hand the optimizer flat 1-D partitions of the fp32
    // masters (stage_1_and_2.py's single_partition_of_fp32_groups, stage 3's flat sub-groups,
    // bf16_optimizer.py's), and transformers' Adafactor factors only tensors of two or more
    // dimensions: a full fp32 second moment of every element.
    const bool adafactor_flat = deepspeed_zero(s) || deepspeed_16bit(s);
    const double states = s.optimizer != optimizer_kind::adafactor ? optimizer_state_bytes(s) * T
                          : adafactor_flat                         ? 4 * T
                                                                   : static_cast<double>(adafactor_state_bytes(s, experts)) / split;
    if (megatron_grad_buffer(s)) {
      // Megatron-LM (zero_buffers.hpp): a 16-bit model under --bf16 and --fp16 with fp32 main params,
      // the gradients in its grad buffer (counted alive in every phase), the distributed optimizer
      // (--zero 1) sharding the main params and states.
      const double wb = s.prec == precision::fp32 ? 4 : 2;
      const double gb = s.prec == precision::fp16_mixed ? 2 : 4;
      const double master = is_mixed(s.prec) ? 4 * T : 0;
      weights += base_bytes(wb);
      grads += gb * T;
      // --offload optimizer: Megatron-LM's --optimizer-cpu-offload, the distributed optimizer's shard on the host.
      (s.offload == offload_kind::none ? optimizer : offloaded) += (states + master) / N;
      if (s.prec == precision::fp16_mixed && s.offload == offload_kind::none) step_grads += 4 * T / N;
    } else if (stage == 0 && !deepspeed_16bit(s)) {
      // PyTorch / Hugging Face Trainer ("Model training anatomy" in the
      // transformers docs): AMP keeps fp32 weights and gradients (autocast's
      // 16-bit weight copies are counted apart: they live only until backward). Pure
      // bf16 keeps everything in bf16. LoRA freezes a base loaded in 16 bits
      // (fp32 for fp32 training) and trains fp32 adapters.
      if (lora) {
        const bool fp32_base = s.prec == precision::fp32 || fp32_model_under_autocast(s);
        const double base = fp32_base ? 4 : 2;
        const double adapter = adapter_element_bytes(s);
        weights += base_bytes(base) + adapter * T;
        grads += adapter * T;
      } else if (is_mixed(s.prec)) {
        weights += 4 * P;
        grads += 4 * T;
      } else {
        const double b = s.prec == precision::fp32 ? 4 : 2;
        weights += b * P;
        grads += b * T;
      }
      optimizer += states;
    } else {
      // DeepSpeed ZeRO (Rajbhandari et al. 2020): mixed precision keeps 2-byte
      // weights and gradients and an fp32 master copy with the optimizer
      // states; stage 1 shards the optimizer states over N GPUs, stage 2 also
      // the gradients, stage 3 also the weights. DeepSpeed's 16-bit mode without
      // ZeRO keeps the same tensors, none sharded; its step gives the masters
      // fp32 gradients (zero_buffers.hpp). FSDP under a mixed precision shards
      // fp32 parameters and gradients, which are the optimizer's (no master);
      // without resharding (stage 2) it also keeps the gathered weights.
      // --offload (optimizer_placement.hpp): the states and masters, with optimizer+params the
      // parameter shard too, in host memory; the gradients stay counted as the stage keeps them.
      const bool fsdp_fp32 = fsdp_runs(s) && is_mixed(s.prec);
      const double wb = s.prec == precision::fp32 ? 4 : 2;
      const double shard_b = fsdp_fp32 ? 4 : wb;  // the sharded parameters' and gradients' width
      const double master = is_mixed(s.prec) && !fsdp_fp32 ? 4 * T : 0;
      (s.offload == offload_kind::none ? optimizer : offloaded) += (states + master) / N;
      // (Offloaded, the masters' fp32 gradients are the host's.)
      if (deepspeed_16bit(s) && s.offload == offload_kind::none)
        step_grads += 4 * (s.zero_stage >= 3 ? std::min(T / N, 1e9) : T / N);
      grads += stage >= 2 ? shard_b * T / N : wb * T;
      // LoRA's adapters are parameters beside the frozen base, sharded and gathered with it.
      auto model_bytes = [&](double b) { return base_bytes(b) + (lora ? b * T : 0); };
      // (FSDP at stage 2 keeps them at the width it gathers: fp32 under LitGPT's and Composer's FSDP1
      // mixed precision, param_dtype float32.)
      const double whole_b = fsdp_runs(s) ? gathered_parameter_bytes(s) : wb;
      (s.offload == offload_kind::optimizer_params ? offloaded : weights) +=
          stage >= 3 ? model_bytes(shard_b) / N : model_bytes(whole_b) + (fsdp_fp32 ? model_bytes(4) / N : 0);
    }
  }
  // ZeRO-3 gathers the unit that runs and the next one whole, beside the shard; with the parameters
  // offloaded they are all the GPU holds (zero_buffers.hpp).
  if (stage >= 3)
    weights = (s.offload == offload_kind::optimizer_params ? 0 : weights) + static_cast<double>(gathered_weights_bytes(s));
  r.deepspeed_bucket_bytes = deepspeed_bucket_bytes(s);
  r.fsdp_unit_gradient_bytes = fsdp_unit_gradient_bytes(s);
  r.no_sync_gradient_bytes = std::llround(fsdp_no_sync_gradient_width(s) * r.local_trainable_parameters());
  r.weights_bytes = static_cast<std::int64_t>(weights);
  r.offloaded_bytes = static_cast<std::int64_t>(offloaded);
  r.gradients_bytes = static_cast<std::int64_t>(grads);
  r.optimizer_bytes = static_cast<std::int64_t>(optimizer);
  r.optimizer_step_gradient_bytes = static_cast<std::int64_t>(step_grads);
  r.gradients_allocated_throughout = megatron_grad_buffer(s);
}

// Autocast caches one 16-bit copy of each fp32 weight a linear layer reads
// (autocast_mode.cpp, cached_cast: leaf tensors that require grad), the
// LM head's (the tied embedding's) included; the linear nodes keep them
// for backward after the cache is cleared at the end of the autocast block.
void add_autocast_copies(const training_setup& s, memory_breakdown& r) {
  const model_spec& m = s.model;
  const double ep = r.expert_parallel;
  // DeepSpeed's and Megatron-LM's models are 16-bit already. FSDP1 under LitGPT's and Composer's
  // mixed precision gathers fp32 (gathered_parameter_bytes), which autocast casts as AMP's: the
  // unsharded 16-bit copies of every linear, each kept to its backward. FSDP2's bf16 gathers are not.
  const bool amp = s.zero_stage == 0 && is_mixed(s.prec) && !sixteen_bit_model(s);
  const bool fsdp_fp32_gathers = fsdp_runs(s) && is_mixed(s.prec) && gathered_parameter_bytes(s) == 4;
  if (amp || fsdp_fp32_gathers || fp32_model_under_autocast(s)) {
    const bool head_shares_embedding = !m.causal || m.tied_embeddings;
    const double vocab = static_cast<double>(m.vocab_size * m.hidden_size);
    const double head = head_shares_embedding ? vocab : 0;
    const double linear = static_cast<double>(linear_parameters(m, false)) +
                          static_cast<double>(linear_parameters(m, true)) / ep;
    // LoRA: a frozen base that is 16-bit already leaves only fp32 adapters to cast. LitGPT's is
    // fp32 (training_framework.hpp): every linear cast once, the LM head once a chunk, each kept to
    // the chunks' backward.
    if (s.lora_rank > 0 && s.adapters == adapter_dtype::fp32)
      r.autocast_weight_copies_bytes = static_cast<std::int64_t>(2 * r.local_trainable_parameters());
    if (s.lora_rank > 0 && s.framework == training_framework::litgpt && fp32_model_under_autocast(s)) {
      const double chunks = static_cast<double>((s.seq_len + litgpt_lm_head_chunk - 1) / litgpt_lm_head_chunk);
      // The untied head is one of the linears: its other chunks' casts beside it.
      const double head_casts = m.causal ? vocab * (m.tied_embeddings ? chunks : chunks - 1) : 0;
      r.autocast_weight_copies_bytes += static_cast<std::int64_t>(2 * (linear + head_casts));
      r.lm_head_copy_bytes = static_cast<std::int64_t>(2 * vocab * (m.causal ? chunks : 0));
      // The base is frozen (requires_grad False): none of its casts is cached.
      r.uncached_block_copies_bytes = static_cast<std::int64_t>(2 * (linear + head_casts)) - r.lm_head_copy_bytes;
    } else if (s.lora_rank == 0 || fp32_model_under_autocast(s)) {
      r.autocast_weight_copies_bytes += static_cast<std::int64_t>(2 * (linear + head));
      r.lm_head_copy_bytes = 2 * m.vocab_size * m.hidden_size;
      // FSDP1 runs the forward on views into its gathered flat parameter (flat_param.py's
      // _use_unsharded_views(as_params=False)), which autocast does not cache.
      if (fsdp_fp32_gathers)
        r.uncached_block_copies_bytes = r.autocast_weight_copies_bytes - r.lm_head_copy_bytes;
    }
  }
  // torchtitan's grouped experts multiply in bf16 at every precision (moe_inventory.cpp): in fp32
  // each MoE layer's expert weights are cast (w.bfloat16()), and the grouped GEMMs keep the casts
  // to the layer's backward, as autocast keeps its copies.
  if (s.prec == precision::fp32 && m.is_moe() && layers_of(s) == layer_impl::torchtitan)
    r.autocast_weight_copies_bytes += static_cast<std::int64_t>(2 * static_cast<double>(r.expert_parameters) / ep);
}

// peft's lora_A keeps its own copy of each adapted linear's input (peft
// casts it to the adapter's dtype; autocast casts that to 16 bits for
// the GEMM), lora_B its r-wide input: fp32 where the adapters run fp32
// (lora_step.hpp), 16-bit under autocast. Where no cast is made (fp32
// training, traced: profiles/training_traces; bf16 adapters on a bf16 base,
// where peft's and autocast's casts return x itself) the modules reading one
// input keep that one tensor: k and v share q's, up shares gate's. The
// frameworks' own modules cast only an fp32 input, under autocast
// (lora_copies_input, lora_modules.cpp).
// With lora_dropout > 0 each adapter's dropout keeps its bool mask (1
// byte per input element) and lora_A keeps (a cast of) the dropped-out
// copy instead of the input: one more byte per input element.
// Nothing else: the frozen base linear keeps no input (no weight
// gradient), the scale by a Python float and the add keep nothing, and
// peft's fp32 copy of x is not kept under autocast (the cast's backward
// needs no input).
// torchtitan's LM head adapter keeps its input and r-wide output only within a loss chunk, whose
// backward runs at once: nothing a sample keeps (lora_head_adapter).
// LitGPT's modules (layers_of): its one qkv linear's LoRAQKVLinear drops out
// x once and runs one lora_A for every adapted part of q, k and v
// (lora.py: F.linear(self.lora_dropout(x), self.lora_A)), so they keep one
// copy and one mask between them.
double lora_kept_per_token(const training_setup& s) {
  const model_spec& m = s.model;
  double lora_extra = 0;
  const double e = lora_adapters_run_fp32(s) ? 4.0 : 2.0;
  const double mask = s.lora_dropout > 0 ? 1.0 : 0.0;
  const bool one_qkv = lora_module_of(s) == lora_module::litgpt;
  // Linears that read one input: q, k and v the attention's, gate and up the MLP's (each
  // expert's, the shared expert's). Without a cast or dropout their adapters keep it once.
  auto input_of = [&](const std::string& n) -> std::string {
    for (const char* qkv : {"layers.q_proj", "layers.k_proj", "layers.v_proj"})
      if (n == qkv) return "attention";
    for (const char* owner : {"layers.", "layers.experts.", "layers.shared_expert."})
      if (m.gated_mlp && (n == std::string(owner) + "gate_proj" || n == std::string(owner) + "up_proj")) return owner;
    return n;
  };
  std::set<std::string> inputs_kept;
  for (const auto& t : weight_tensors(m))
    if (lora_adapts(s, t)) {
      const std::string input = input_of(t.name);
      // No cast, no dropout: x itself, one tensor however many adapters read it.
      const bool shared_input = !lora_copies_input(s, t);
      const bool kept_already =
          (shared_input || (one_qkv && input == "attention")) && !inputs_kept.insert(input).second;
      const double kept_input = kept_already ? 0.0 : (e + mask) * static_cast<double>(t.cols);
      lora_extra += (kept_input + e * s.lora_rank) * static_cast<double>(t.count) *
                    t.token_share;  // an expert's adapters see its share of the tokens
    }
  return lora_extra;
}

// One sample's bytes of a kind (activations, logits). Past a pebibyte no GPU holds one sample, and
// a micro-batch of them would overflow the byte counts: such a sequence is refused as absurd.
std::int64_t sample_bytes(const training_setup& s, double bytes, const char* what) {
  constexpr double limit = 1125899906842624.0;  // 2^50
  if (!(bytes <= limit))
    throw usage_error(fmt::format("--seq-len {}: one sample's {} of {} would take {:.3g} PiB, more than any GPU "
                                  "holds (at most 1 PiB a sample is planned)",
                                  s.seq_len, what, s.model.name, bytes / limit));
  return static_cast<std::int64_t>(bytes);
}

// The activations a sample keeps, and what one layer holds while it is recomputed.
void add_activations(const training_setup& s, const token_inventory& inv, memory_breakdown& r) {
  const model_spec& m = s.model;
  const bool lora = s.lora_rank > 0;
  const double seq = static_cast<double>(s.seq_len), L = static_cast<double>(m.num_layers);
  const double lora_extra = lora ? lora_kept_per_token(s) : 0.0;
  // --fp8 rowwise: the fp8 copies of the linears' inputs, kept by every layer that keeps its
  // activations (also under per-op checkpointing), and by the one recomputed (training_fp8.hpp).
  const double fp8_kept = fp8_kept_bytes_per_token_per_layer(s);
  r.activation_bytes_per_sample =
      sample_bytes(s, seq * (L * (inv.layer_saved + fp8_kept) + inv.outer_saved + lora_extra), "activations");
  // Hugging Face's gradient checkpointing (torch.utils.checkpoint around each
  // decoder layer) keeps each layer's input; backward recomputes one layer at
  // a time, whose activations are alive during its backward. Every N-th layer
  // (--checkpointing every-N): those keep their input, the others everything.
  // Per op (--checkpointing selective): every layer keeps its input and the saved outputs.
  const double wrapped = L * recompute_share(s, true), whole = L - wrapped;
  const double kept_by_wrapped =
      s.checkpoint_ops ? std::min(inv.layer_saved, selective_layer_bytes_per_token(s, inv.layer_input)) : inv.layer_input;
  r.checkpointed_activation_bytes_per_sample = sample_bytes(
      s,
      seq * (wrapped * kept_by_wrapped + whole * inv.layer_saved + inv.outer_saved + lora_extra * whole / std::max(1.0, L) +
             (whole + (s.checkpoint_ops ? wrapped : 0.0)) * fp8_kept),
      "checkpointed activations");
  r.lora_transient_bytes_per_sample = lora ? sample_bytes(s, seq * lora_transient_per_token(s), "LoRA temporaries") : 0;
  // The gradients in flight through a layer's backward: the incoming and
  // outgoing ones in the residual stream's dtype and, where that is 16-bit,
  // the fp32 gradient of a norm that upcasts it in Python (LlamaRMSNorm computes in
  // fp32), still alive beside its cast (traced: tests/cli/training_trace_cli_test).
  const double in_flight = 2 * inv.layer_input + inv.norm_fp32_gradient;
  r.recompute_layer_bytes_per_sample =
      sample_bytes(s, seq * (inv.layer_saved_max + lora_extra / std::max(1.0, L) + in_flight + fp8_kept),
                   "recomputed layer") +
      r.lora_transient_bytes_per_sample;
  r.outer_saved_bytes_per_sample = sample_bytes(s, seq * inv.outer_saved, "activations outside the layers");
}

// The blocks' share of the gradients, arriving layer by layer in backward
// (all of LoRA's: its adapters sit in the blocks only, lora_parameters).
std::int64_t layer_gradients_bytes(const training_setup& s, const memory_breakdown& r) {
  const bool lora = s.lora_rank > 0;
  const double ep = r.expert_parallel;
  double layer_trainable = 0, all_trainable = 0;
  if (!lora)
    for (const auto& t : weight_tensors(s.model)) {
      double n = static_cast<double>(t.parameters());
      if (t.routed()) n /= ep;  // this GPU's experts
      all_trainable += n;
      if (t.name.rfind("layers.", 0) == 0) layer_trainable += n;
    }
  return lora ? r.gradients_bytes
              : all_trainable > 0
                    ? static_cast<std::int64_t>(static_cast<double>(r.gradients_bytes) * layer_trainable / all_trainable)
                    : 0;
}

void add_logit_bytes(const training_setup& s, const token_inventory& inv, memory_breakdown& r) {
  const model_spec& m = s.model;
  const double seq = static_cast<double>(s.seq_len);
  const double logits = static_cast<double>(m.vocab_size) * seq;
  // (torchtitan's chunked loss: beside them its fp32 buffer of the hidden states' gradient.)
  const double per_token = inv.loss_token_bytes * seq;
  r.logits_bytes_per_sample = sample_bytes(s, inv.logit_backward_bytes * logits + per_token, "logits");
  r.logits_forward_bytes_per_sample = sample_bytes(s, inv.logit_forward_bytes * logits + per_token, "logits");
  // The tied embedding's two gradient contributions beside their sum, at the
  // gradients' dtype (DDP; ZeRO's partitioned buckets are not modelled here).
  const bool tied_head = !m.causal || m.tied_embeddings;
  if (tied_head && s.lora_rank == 0 && s.zero_stage == 0 && !fsdp_replicated(s)) {
    const double grad_elem = s.prec == precision::fp32 || is_mixed(s.prec) ? 4 : 2;
    r.tied_embedding_grad_bytes = static_cast<std::int64_t>(2 * grad_elem * static_cast<double>(m.vocab_size * m.hidden_size));
  }
  r.logits_held_bytes_per_sample = sample_bytes(s, inv.logit_held_bytes * logits, "logits");
}

}  // namespace

memory_breakdown estimate_memory(const training_setup& s) {
  if (s.tensor_parallel > 1) return tensor_parallel_memory(s);  // one GPU's shard
  if (s.pipeline_parallel > 1) return pipeline_memory(s);        // the worse of the first and last stage
  if (s.context_parallel > 1) return estimate_memory(context_parallel_shard(s));  // seq_len / C tokens a GPU
  const model_spec& m = s.model;
  memory_breakdown r;
  r.parameters = parameter_count(m);
  r.active_parameters = active_parameter_count(m);
  r.expert_parameters = expert_parameter_count(m);
  r.expert_parallel = expert_parallel_degree(s);
  const bool lora = s.lora_rank > 0;
  r.trainable_parameters = lora ? lora_parameters(s, false) + lora_parameters(s, true)
                                : r.parameters;
  r.expert_trainable_parameters = lora ? lora_parameters(s, true) : r.expert_parameters;
  add_state_bytes(s, r);
  r.optimizer_in_backward = s.optimizer_in_backward;
  r.paged_optimizer = s.paged_optimizer;
  r.gradients_in_flight_bytes = gradients_in_flight_bytes(s, r);
  r.dequantized_weight_bytes = dequantized_weight_bytes(s);
  add_autocast_copies(s, r);
  // Activations kept for backward, op by op (training_inventory.cpp has the
  // sources); the layers' share replaces Korthikanti et al. 2022's 34h + 5as
  // bytes per token, which assumes 16-bit everything and fused kernels.
  // LoRA's base is frozen and 16-bit (fp32 in fp32 training): autocast has
  // no base weight to cast, the residual stream stays in the base's dtype,
  // and frozen linears and norms keep nothing for weight gradients. A framework
  // that makes the model 16-bit runs no autocast either; LitGPT's fp32 base
  // does, with an fp32 residual stream (zero_buffers.hpp).
  const token_inventory inv = plan_inventory(s);
  add_activations(s, inv, r);
  r.layer_gradients_bytes = layer_gradients_bytes(s, r);
  add_logit_bytes(s, inv, r);
  // PyTorch allocates cuBLAS's and cuBLASLt's workspaces from its caching
  // allocator, so they count in max_memory_allocated.
  const batch_calibration& cal = batch_calibration_constants();
  r.library_workspace_bytes = cal.library_workspace_bytes;
  r.cuda_context_bytes = cal.cuda_context_bytes;
  r.allocator_overhead = cal.allocator_slack_of_transient;
  r.allocator_overhead_ckpt = cal.allocator_slack_ckpt_of_gradients;
  return r;
}

}  // namespace tiletune
