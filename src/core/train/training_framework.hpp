// `tiletune batch --framework NAME` (issue 37): the defaults a training framework runs with, as
// values of batch's own flags (precision, attention, loss, checkpointing, ZeRO, LoRA targets,
// adapter dtype, LoRA dropout). An explicit flag always wins over its framework's default.
// The table and the source of each default: training_framework.cpp and docs/batch.md#frameworks.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/train/training_inventory.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune {

// hf: transformers' Trainer with peft, today's plan; fsdp2: torchtitan (PyTorch's FSDP2 trainer);
// megatron: Megatron-LM; the others by their project's name.
enum class training_framework : unsigned char { hf, fsdp2, deepspeed, megatron, torchtune, composer, litgpt };
std::string_view to_string(training_framework f);
// A usage error naming the bad value and listing the valid ones.
training_framework parse_framework(std::string_view s);

// One default: the flag it stands for, its value as that flag spells it, and where it comes from.
struct framework_setting {
  std::string flag;
  std::string value;
  std::string source;
};
// What the bundle leaves to tiletune's own default, or models only in part: shown where `flag`'s value
// came from the framework (an empty flag: always).
struct framework_note {
  std::string flag;
  std::string text;
};
struct framework_bundle {
  std::vector<framework_setting> settings;
  std::vector<framework_note> notes;
};
// The framework's defaults for a setup: s.model, s.lora_rank, s.world_size and s.prec (which the
// adapter dtype follows where the framework keeps adapters in the model's dtype) are read;
// gpu_has_bf16 picks the precision where the framework's default depends on it.
framework_bundle framework_defaults(training_framework f, const training_setup& s, bool gpu_has_bf16);

// Whether the framework trains in this precision: pure bf16 only transformers, torchtune and LitGPT
// (the others' 16-bit modes keep fp32 master weights); torchtune no mixed precision, torchtitan
// bf16-mixed or fp32.
bool framework_trains(training_framework f, precision p);

// LitGPT under *-mixed: Fabric's MixedPrecision plugin builds the model in the default fp32 (it has no
// module_init_context) and runs the forward under autocast, so a LoRA base is fp32, and autocast
// casts its frozen weights at every use without caching them (cached_cast caches leaves that
// require grad), each cast kept for its backward; the fine-tuning loop runs the LM head in chunks of
// litgpt_lm_head_chunk tokens (finetune/lora.py: model(input_ids, lm_head_chunk_size=128)), one cast
// of the head each. LitGPT 2685705: litgpt/finetune/lora.py, litgpt/model.py; Lightning's
// fabric/plugins/precision/amp.py. (torchtitan b5bcd76 runs no autocast: it applies fully_shard even
// on one GPU, whose MixedPrecisionPolicy casts; sixteen_bit_model.)
bool fp32_model_under_autocast(const training_setup& s);

// Whether the framework trains a model loaded with transformers' from_pretrained, whose arguments are
// the plan's model_load (the Trainer's hf and deepspeed, Composer's HuggingFaceModel); torchtitan,
// Megatron-LM, torchtune and LitGPT build their own.
bool loads_with_transformers(training_framework f);

// Whose modules run the blocks: the framework's own with flash attention on a model they cover
// (framework_modules_cover): Megatron-LM's Transformer Engine layers (its default transformer_impl,
// with its fusions on), torchtitan's (fsdp2), torchtune's and LitGPT's; else transformers' eager
// ones, as hf, deepspeed and composer run them.
layer_impl layers_of(const training_setup& s);
std::string_view to_string(layer_impl l);  // setup.modules in the plan's JSON
// Whose chunked loss --loss chunked runs: torchtitan's for fsdp2, LitGPT's for litgpt, else torchtune's.
chunked_loss chunked_loss_of(const training_setup& s);
// The activation inventory of the plan's step: its model, tokens, precision, attention, loss, LoRA's
// frozen base, and the framework's modules and chunked loss.
token_inventory plan_inventory(const training_setup& s);
constexpr std::int64_t litgpt_lm_head_chunk = 128;

// Sets the framework-dependent options of s: each flag in `explicit_flags` (flag -> its text, as
// the user gave it) as given, the rest from the framework's defaults, else tiletune's own
// (hf's). s.model, s.lora_rank and s.world_size must be set. Records in s.framework_notes what
// the framework set and what it leaves out. Throws usage_error for a combination the framework
// cannot run, naming why.
// Parses each flag the user gave (flag -> its text) as apply_framework will, throwing usage_error
// naming a bad value: so that a bad value is a usage error before anything else is done.
void check_framework_flags(const std::map<std::string, std::string>& explicit_flags);
// Throws usage_error where s.framework cannot run the setup (a precision, ZeRO stage, optimizer,
// offload or LoRA it does not have), naming the options.
void refuse_unsupported_setup(const training_setup& s);

void apply_framework(training_framework f, const std::map<std::string, std::string>& explicit_flags,
                     bool gpu_has_bf16, training_setup& s);

}  // namespace tiletune
