// `tiletune batch`'s training flags: what is trained, how, and on how many GPUs.
#include "cli/batch_options.hpp"

#include <fmt/format.h>

#include "cli/option_checks.hpp"
#include "core/train/model_spec.hpp"

namespace tiletune::cli {

namespace {
std::string model_list() {
  std::string s;
  for (const auto& m : model_presets()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}
}  // namespace

std::string parallelism_summary(const training_setup& s) {
  std::string out;
  if (s.tensor_parallel > 1)
    out += fmt::format(", tensor parallel {}{} (parameters: one GPU's shard)", s.tensor_parallel,
                       s.sequence_parallel ? " + sequence parallel" : "");
  if (s.pipeline_parallel > 1) out += fmt::format(", {} pipeline stages (memory: the worse stage)", s.pipeline_parallel);
  if (s.packing > 0) out += fmt::format(", packed: {} samples of {} tokens a row", s.seq_len / s.packing, s.packing);
  return out;
}

void add_training_options(CLI::App* cmd, batch_options* o) {
  cmd->add_option("--model", o->model, "A preset (" + model_list() + ") or a Hugging Face config.json")
      ->required()
      ->check(not_empty);
  cmd->add_option("--seq-len", o->seq_len, "Tokens per sample (default: min(2048, the model's positions))")
      ->check(whole_number);
  cmd->add_option("--gpu", o->gpu, "Plan for a GPU preset (see `tiletune devices`)");
  cmd->add_option("--device", o->device, "Plan for local GPU I")->check(whole_non_negative);
  cmd->add_option("--framework", o->framework,
                  "The trainer whose defaults fill the flags below that you leave out: hf (transformers Trainer and "
                  "peft) | fsdp2 (torchtitan) | deepspeed | megatron (Megatron-LM) | torchtune | composer | litgpt. "
                  "Your own flag always wins; docs/batch.md#frameworks lists each default and its source")
      ->capture_default_str();
  cmd->add_option("--precision", o->precision,
                  "fp32 | fp16-mixed | bf16-mixed | bf16 (default: the framework's; hf: bf16-mixed where the GPU has "
                  "bf16, else fp16-mixed)");
  cmd->add_option("--optimizer", o->optimizer,
                  "adamw | adamw-8bit | adafactor | sgd | sgd-momentum | lion (one momentum state, in Adam's states' "
                  "dtype)")
      ->capture_default_str();
  cmd->add_flag("--optimizer-in-backward", o->optimizer_in_backward,
                "Each parameter's optimizer step runs as soon as its gradient is complete and frees it (torchtune's "
                "optimizer_in_bwd): about one block's gradients alive instead of all; no gradient accumulation, so "
                "--global-batch must fit as one micro-batch per GPU; one GPU or --zero 3 (docs/batch.md)");
  cmd->add_flag("--paged-optimizer", o->paged_optimizer,
                "bitsandbytes' paged optimizer (transformers' optim paged_adamw_32bit, paged_adamw_8bit, "
                "paged_lion_32bit) with --optimizer adamw, adamw-8bit or lion: the states in CUDA managed memory, "
                "outside the peak; what the peak leaves no room for is paged to the host and back each step over "
                "PCIe (--pcie-gbs)");
  cmd->add_option("--offload", o->offload,
                  "none | optimizer (optimizer states and fp32 master weights in host memory, stepped by the CPU: "
                  "DeepSpeed ZeRO-Offload; needs --zero 1-3) | optimizer+params (the 16-bit parameters there too, "
                  "uploaded every micro-step: DeepSpeed ZeRO-Infinity's offload_param, FSDP2 CPUOffloadPolicy, the "
                  "only offload of FSDP-based frameworks; needs --zero 3)")
      ->capture_default_str();
  cmd->add_option("--pcie-gbs", o->pcie_gbs,
                  "--offload: each GPU's PCIe to the host in GB/s one direction, effective (default: 50 for Gen5 on "
                  "Hopper and Blackwell, 25 for Gen4 on Ampere and Ada, 12 before)");
  cmd->add_option("--host-memory-gbs", o->host_memory_gbs,
                  "--offload: the host memory bandwidth the CPU optimizer step reaches, GB/s per node, shared by its "
                  "GPUs (default: 100, an assumption)");
  cmd->add_option("--attention", o->attention,
                  "flash (SDPA/FlashAttention) | eager (default: the framework's, flash for every one)");
  cmd->add_option("--loss", o->loss,
                  "eager (transformers: every logit upcast to fp32) | chunked (the framework's: torchtune's 8 "
                  "chunks keeping their fp32 log-probabilities, torchtitan's 8 run forward and backward one at a "
                  "time, LitGPT's 128-token chunks) | fused (Liger/Cut Cross Entropy: no logits kept); chunked and "
                  "fused are modelled from the sources, not traced (default: the framework's; hf: eager)");
  cmd->add_option("--global-batch", o->global_batch, "Samples per optimizer step over all GPUs")
      ->check(whole_number);
  cmd->add_option("--micro-batch", o->micro_batch,
                  "Plan exactly this micro-batch (the one you run): its peak, whether it fits, and if not the phase "
                  "that breaks it")
      ->check(whole_number);
  cmd->add_option("--checkpointing", o->checkpointing,
                  "auto (plans with and without) | on (every layer; also: full) | off | every-N (on, but only every "
                  "N-th layer; the others keep all their activations: torchtitan's selective layer checkpointing) | "
                  "selective (on, per op: matmul and attention outputs kept, the rest recomputed: torchtitan's op "
                  "policy; Llama-style blocks, full fine-tuning) (default: the framework's; hf: auto)");
  cmd->add_option("--overlap-comm", o->overlap_comm,
                  "on (the data-parallel exchange, gradient all-reduce or reduce-scatter and ZeRO-3's gathers, runs "
                  "under compute but one layer's share: PyTorch DDP, FSDP) | off (after backward, in full) "
                  "(default: the framework's; off for megatron, overlap_grad_reduce False, and deepspeed below --zero "
                  "3, overlap_comm; on for the rest)");
  cmd->add_option("--grad-clip", o->grad_clip,
                  "on (each optimizer step clips the gradients by their global norm: torch's clip_grad_norm_ reads "
                  "every gradient for the norm and scales it, Megatron-LM reads it and scales only above the "
                  "threshold; DeepSpeed reads and scales every step either way) | off (default: the framework's; "
                  "on for hf, max_grad_norm 1.0, fsdp2, max_norm 1.0, deepspeed, gradient_clipping 1.0, and megatron, "
                  "--clip-grad 1.0; off for torchtune, composer and litgpt's fine-tuning; off with "
                  "--optimizer-in-backward, which cannot clip)");
  cmd->add_option("--zero", o->zero,
                  "DeepSpeed ZeRO stage 0..3; FSDP's full sharding is 3 (default: the framework's; hf: 0)");
  cmd->add_option("--world-size", o->world_size,
                  "GPUs in all: data-parallel over world size / (T x P x C) with --tensor-, --pipeline- and "
                  "--context-parallel; past one node, whole nodes of --gpus-per-node")->capture_default_str();
  cmd->add_option("--gpus-per-node", o->gpus_per_node, "GPUs of a node, joined by the preset's GPU link (NVLink)")
      ->capture_default_str();
  cmd->add_option("--network-gbs", o->network_gbs,
                  "Each GPU's network port across nodes in GB/s, one direction (50: 400 Gb/s InfiniBand NDR)")
      ->capture_default_str();
  cmd->add_option("--link-gbs", o->link_gbs,
                  "Override: the collectives' bandwidth per GPU in GB/s, one direction (default: the preset's GPU "
                  "link inside a node; across nodes the smaller of it and --gpus-per-node x --network-gbs, NCCL's "
                  "rings using every port)");
  auto* rank = cmd->add_option("--lora-rank", o->lora_rank,
                               "LoRA rank on the linear layers --lora-targets names (0: full fine-tuning)")
                   ->capture_default_str();
  cmd->add_option("--lora-targets", o->lora_targets,
                  "The linears LoRA adapts: all-linear (peft's, every linear of the blocks) or a list of q, k, v, o, "
                  "gate, up, down (q,v: the LoRA paper's and many trainers' default) (default: the framework's; hf: "
                  "all-linear)")
      ->needs(rank);
  cmd->add_option("--adapter-dtype", o->adapter_dtype,
                  "fp32 (peft upcasts its adapters) | bf16 (torchtune and other trainers: bf16 adapters, gradients "
                  "and optimizer states, no casts; needs --precision bf16 or bf16-mixed) (default: the framework's; "
                  "hf: fp32, or bf16 with --quantize nf4 on a bf16 base)")
      ->needs(rank);
  cmd->add_option("--lora-dropout", o->lora_dropout,
                  "the adapters' lora_dropout (peft's, torchtune's, LitGPT's): each adapter drops out its own copy "
                  "of its input and keeps the mask (LitGPT's qkv adapter one for q, k and v) (default: the "
                  "framework's; hf: 0)");
  cmd->add_option("--quantize", o->quantize,
                  "none | nf4 (QLoRA: the blocks' linears frozen in 4-bit NF4 with double quantization, 0.516 bytes "
                  "a weight, dequantized to 16 bits in forward and backward; needs --lora-rank; adapters bf16 unless "
                  "--adapter-dtype says otherwise)")
      ->capture_default_str();
  cmd->add_option("--expert-parallel", o->expert_parallel,
                  "MoE models: GPUs the routed experts are split over, dividing --world-size and the experts (default: 1, "
                  "none, as every framework's default: transformers' Trainer splits no experts, torchtitan's "
                  "expert_parallel_degree and Megatron-LM's --expert-model-parallel-size are 1); refused above 1 "
                  "under hf, deepspeed, litgpt and composer, which split none");
  cmd->add_option("--tensor-parallel", o->tensor_parallel,
                  "Megatron-LM tensor parallelism over T GPUs of a node: each holds 1/T of every block's heads, "
                  "MLP width and the vocabulary; 4 all-reduces of the layer's activation per layer and micro-batch "
                  "over the GPU link, not overlapped; data parallelism over world size / T. Not with experts, MLA, "
                  "LoRA, --zero 3 or --offload (docs/batch.md)")
      ->capture_default_str();
  cmd->add_flag("--sequence-parallel", o->sequence_parallel,
                "With --tensor-parallel: Megatron's sequence parallelism, the norms' and residual activations split "
                "over the sequence too (every activation / T); all-gathers and reduce-scatters of the same bytes");
  cmd->add_option("--pipeline-parallel", o->pipeline_parallel,
                  "Pipeline stages, 1F1B (Megatron-LM): each holds 1/P of the layers (the first also the embedding, "
                  "the last the LM head and loss; the worse one planned, the first with P micro-batches in flight); "
                  "bubble (P-1)/(m+P-1) of a step of m micro-batches; data parallelism over world size / (T x P)")
      ->capture_default_str();
  cmd->add_option("--virtual-stages", o->virtual_stages,
                  "With --pipeline-parallel: Megatron-LM's interleaved 1F1B (--num-virtual-stages-per-pipeline-rank): "
                  "V model chunks of L/(P x V) layers a stage, the bubble / V, the first stage's activations "
                  "1 + (P-1)/(P x V) times 1F1B's, V times the sends; L must be a multiple of P x V")
      ->capture_default_str();
  cmd->add_option("--context-parallel", o->context_parallel,
                  "Context parallelism (ring attention: torchtitan's context_parallel, Megatron-LM's CP): each "
                  "sequence split over C GPUs, every activation and token-wise op / C, the key and value chunks passed "
                  "around a ring overlapped with attention; weights sharded over data x context parallel; data "
                  "parallelism over world size / (T x P x C); with --tensor-parallel or --pipeline-parallel each GPU "
                  "runs its shard or stage on seq_len / C tokens. Not with --packing or eager attention "
                  "(docs/batch.md)")
      ->capture_default_str();
  cmd->add_option("--fp8", o->fp8,
                  "fp8 training of the blocks' linears: none, tensorwise (torchao's float8 training, torchtitan's "
                  "quantize.linear.float8: dynamic per-tensor scales, e4m3 forward GEMMs, e5m2 x e4m3 gradient GEMMs) "
                  "or rowwise (its rowwise recipe: every GEMM e4m3 with a scale per row and column, each tensor cast "
                  "along both axes, an fp8 copy of each linear's input kept for backward); the casts counted, the LM "
                  "head in bf16. Needs --precision bf16 or bf16-mixed, a GPU with fp8 tensor cores and --framework "
                  "fsdp2 or torchtune (the others run no torchao float8)")
      ->capture_default_str();
  cmd->add_flag("--fp8-all-gather", o->fp8_all_gather,
                "With --fp8 tensorwise and --zero 3 (FSDP): the fp8 linears' weights all-gathered in fp8, one byte "
                "each (torchao's enable_fsdp_float8_all_gather, torchtitan's quantize.linear.float8."
                "enable_fsdp_float8_all_gather)");
  cmd->add_option("--packing", o->packing,
                  "Sequence packing: samples of N tokens (N from 2, dividing --seq-len) packed into each row with a "
                  "block-diagonal mask (FlashAttention varlen): attention over N tokens, not the row; samples/s "
                  "counts the packed samples, --global-batch and --micro-batch count rows (0: off)")
      ->capture_default_str();
  cmd->add_option("--safety-margin", o->safety_margin, "Share of GPU memory kept free, from 0 up to (not including) 0.9")->capture_default_str();
}

}  // namespace tiletune::cli
