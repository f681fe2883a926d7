// `batch --framework` (issue 37): each framework's defaults as the options they set, an explicit
// flag winning over them, and the combinations a framework cannot run refused. The expected
// values are the frameworks' documented defaults (training_framework.cpp names each source) and
// arithmetic on Llama-3-8B's published shapes, written out in each test, not the planner's output.
#include "core/train/training_framework.hpp"

#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/training_communication.hpp"
#include "core/train/training_precision.hpp"
#include "llama3_8b.hpp"

using namespace tiletune;

namespace {
training_setup base(const char* model, int lora_rank = 0, int world = 1) {
  training_setup s;
  s.model = load_model(model);
  s.seq_len = 2048;
  s.lora_rank = lora_rank;
  s.world_size = world;
  return s;
}
training_setup with(training_framework f, training_setup s, const std::map<std::string, std::string>& given = {},
                    bool gpu_has_bf16 = true) {
  apply_framework(f, given, gpu_has_bf16, s);
  return s;
}
// The usage error's text, or "" when none is thrown.
std::string framework_refusal(training_framework f, const training_setup& s,
                              const std::map<std::string, std::string>& given = {}, bool gpu_has_bf16 = true) {
  try {
    with(f, s, given, gpu_has_bf16);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}
bool mentions(const std::vector<std::string>& notes, const std::string& text) {
  for (const auto& n : notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(framework, names_parse_and_a_bad_one_lists_the_valid_ones) {
  for (const char* name : {"hf", "fsdp2", "deepspeed", "megatron", "torchtune", "composer", "litgpt"})
    EXPECT_EQ(to_string(parse_framework(name)), name);
  try {
    parse_framework("axolotl");
    ADD_FAILURE() << "axolotl parsed";
  } catch (const usage_error& e) {
    EXPECT_STREQ(e.what(), "--framework 'axolotl' is not one of hf, fsdp2, deepspeed, megatron, torchtune, composer, litgpt");
  }
}

// hf is today's plan: every option at the default batch had before --framework (bf16-mixed where the
// GPU has bf16, else fp16-mixed; flash; eager loss; auto; ZeRO 0; all-linear fp32 adapters, no dropout)
// and no note, so its JSON differs from the old one by setup.framework alone.
TEST(framework, hf_keeps_every_default_and_adds_no_note) {
  for (const bool bf16 : {true, false}) {
    const training_setup s = with(training_framework::hf, base("llama-3-8b", 16), {}, bf16);
    EXPECT_EQ(s.prec, bf16 ? precision::bf16_mixed : precision::fp16_mixed);
    EXPECT_EQ(s.attention, attention_impl::flash);
    EXPECT_EQ(s.loss, loss_impl::eager);
    EXPECT_EQ(s.checkpointing, checkpoint_policy::automatic);
    EXPECT_EQ(s.checkpoint_every, 1);
    EXPECT_FALSE(s.checkpoint_ops);
    EXPECT_EQ(s.zero_stage, 0);
    EXPECT_EQ(s.lora_targets, lora_all_linear);
    EXPECT_EQ(s.adapters, adapter_dtype::fp32);
    EXPECT_EQ(s.lora_dropout, 0.0);
    EXPECT_TRUE(s.framework_notes.empty());
  }
  // deepspeed wraps the same transformers and peft model: hf's options, with notes saying so.
  const training_setup ds = with(training_framework::deepspeed, base("llama-3-8b", 16));
  EXPECT_EQ(ds.prec, precision::bf16_mixed);
  EXPECT_EQ(ds.loss, loss_impl::eager);
  EXPECT_EQ(ds.zero_stage, 0);
  EXPECT_TRUE(mentions(ds.framework_notes, "BFLOAT16_ENABLED_DEFAULT False"));
}

// torchtune's Llama 3.1 8B LoRA config on one GPU: dtype bf16, LinearCrossEntropyLoss (8 chunks),
// activation checkpointing, LoRA on q, v, output_proj and the MLP, adapters in the model's bf16.
// At rank 16 those adapters hold 32 layers x 16 x ((4096+4096) q + (4096+1024) v + (4096+4096) o
// + 3 x (4096+14336) gate, up, down) = 512 x 76,800 = 39,321,600 parameters: all-linear's 41,943,040
// less k's 512 x (4096+1024) = 2,621,440.
TEST(framework, torchtune_lora_on_one_gpu_is_its_config) {
  const training_setup s = with(training_framework::torchtune, base("llama-3-8b", 16));
  EXPECT_EQ(s.prec, precision::bf16);
  EXPECT_EQ(s.loss, loss_impl::chunked);
  EXPECT_EQ(s.checkpointing, checkpoint_policy::on);
  EXPECT_EQ(s.checkpoint_every, 1);
  EXPECT_EQ(s.zero_stage, 0);
  EXPECT_EQ(lora_targets_name(s.lora_targets), "q,v,o,gate,up,down");
  EXPECT_EQ(s.adapters, adapter_dtype::bf16);
  EXPECT_EQ(s.lora_dropout, 0.0);
  EXPECT_EQ(estimate_memory(s).trainable_parameters, 39'321'600);
  EXPECT_TRUE(mentions(s.framework_notes, "--framework torchtune set --precision bf16"));
  EXPECT_TRUE(mentions(s.framework_notes, "LinearCrossEntropyLoss"));
  // Without bf16 on the GPU the recipes fall back to fp32, and the adapters with the model.
  const training_setup old = with(training_framework::torchtune, base("llama-3-8b", 16), {}, false);
  EXPECT_EQ(old.prec, precision::fp32);
  EXPECT_EQ(old.adapters, adapter_dtype::fp32);
}

// On several GPUs the distributed recipes shard with FSDP2 (ZeRO-3); the 8B LoRA config turns
// checkpointing off (the planner decides, auto), the full one keeps it on. Pure bf16 full training
// of Llama-3-8B on 4 GPUs under ZeRO-3 holds 2 bytes x 8,030,261,248 / 4 = 4,015,130,624 of weights
// per GPU and two gathered units (the embedding's 525,336,576 parameters the largest): 2,101,346,304
// more, where hf's bf16-mixed on one GPU holds 4 x 8,030,261,248 = 32,121,044,992.
TEST(framework, torchtune_on_several_gpus_shards_and_follows_each_config) {
  const training_setup lora = with(training_framework::torchtune, base("llama-3-8b", 16, 4));
  EXPECT_EQ(lora.zero_stage, 3);
  EXPECT_EQ(lora.checkpointing, checkpoint_policy::automatic);
  const training_setup full = with(training_framework::torchtune, base("llama-3-8b", 0, 4));
  EXPECT_EQ(full.zero_stage, 3);
  EXPECT_EQ(full.checkpointing, checkpoint_policy::on);
  EXPECT_EQ(estimate_memory(full).weights_bytes, 2 * llama3_8b_parameters / 4 + 2'101'346'304LL);
  EXPECT_EQ(estimate_memory(with(training_framework::hf, base("llama-3-8b"))).weights_bytes, 4 * llama3_8b_parameters);
  // Full fine-tuning on one GPU: the config's paged 8-bit AdamW in backward is named, not set.
  const training_setup one = with(training_framework::torchtune, base("llama-3-8b"));
  EXPECT_EQ(one.optimizer, optimizer_kind::adamw);
  EXPECT_TRUE(mentions(one.framework_notes, "PagedAdamW8bit"));
}

// An explicit flag wins over the framework's default, the note says which it replaced, and a note
// about the replaced default (torchtune's chunked loss) is dropped.
TEST(framework, an_explicit_flag_wins_and_the_note_says_so) {
  const training_setup s = with(training_framework::torchtune, base("llama-3-8b", 16),
                                {{"--loss", "eager"}, {"--checkpointing", "every-4"}, {"--lora-targets", "q,v"}});
  EXPECT_EQ(s.loss, loss_impl::eager);
  EXPECT_EQ(s.checkpoint_every, 4);
  EXPECT_EQ(lora_targets_name(s.lora_targets), "q,v");
  EXPECT_EQ(s.prec, precision::bf16);  // not given: still torchtune's
  EXPECT_TRUE(mentions(s.framework_notes, "your flags replaced --loss eager (torchtune's: chunked)"));
  EXPECT_FALSE(mentions(s.framework_notes, "LinearCrossEntropyLoss"));
  EXPECT_FALSE(mentions(s.framework_notes, "log-probabilities"));
  // --zero and --lora-dropout arrive as numbers' text.
  const training_setup z = with(training_framework::litgpt, base("llama-3-8b", 16, 8),
                                {{"--zero", "2"}, {"--lora-dropout", "0.1"}});
  EXPECT_EQ(z.zero_stage, 2);
  EXPECT_EQ(z.lora_dropout, 0.1);
}

// torchtitan: bf16 parameters under FSDP2 with fp32 reduction (bf16-mixed), per-op selective
// checkpointing (SelectiveAC), the chunked loss of its Llama 3 configs, FSDP over every GPU. On 8 GPUs,
// ZeRO-3 of Llama-3-8B in bf16-mixed keeps FSDP2's fp32 shard: 4P/8 of weights (the policy gathers
// them in bf16), 4P/8 of gradients (the reduce-scatter's output cast back to the parameters' fp32) and
// 8P/8 of AdamW states per GPU, no master copy: 4,015,130,624 and 8,030,261,248 bytes. (Before
// 2026-12-02: DeepSpeed's split, 2P/8, 2P/8 and 12P/8, the same sum.)
TEST(framework, fsdp2_is_torchtitans_defaults) {
  const training_setup s = with(training_framework::fsdp2, base("llama-3-8b", 0, 8));
  EXPECT_EQ(s.prec, precision::bf16_mixed);
  EXPECT_TRUE(s.checkpoint_ops);
  EXPECT_EQ(s.checkpointing, checkpoint_policy::on);
  EXPECT_EQ(s.loss, loss_impl::chunked);
  EXPECT_EQ(s.zero_stage, 3);
  const memory_breakdown m = estimate_memory(s);
  EXPECT_EQ(m.weights_bytes, 4 * llama3_8b_parameters / 8 + 2'101'346'304LL);  // and two gathered units
  EXPECT_EQ(m.gradients_bytes, 4 * llama3_8b_parameters / 8);
  EXPECT_EQ(m.optimizer_bytes, 8 * llama3_8b_parameters / 8);
  // One GPU: fully_shard still runs, for its MixedPrecisionPolicy (llama3/parallelize.py).
  EXPECT_EQ(with(training_framework::fsdp2, base("llama-3-8b")).zero_stage, 3);
}

// torchtitan's training.dtype bfloat16 (config/configs.py: "all parameters, gradients, and optimizer
// states in bfloat16, without an extra copy of fp32 weights"): on 8 GPUs, ZeRO-3 of Llama-3-8B keeps
// 2P/8 of weights, 2P/8 of gradients and 4P/8 of AdamW states; its gradients are still reduced in
// fp32 (mixed_precision_reduce float32, its only value), twice pure bf16's bytes elsewhere; LoRA's
// adapters are bf16, the model's dtype.
TEST(framework, fsdp2_trains_pure_bf16_with_an_fp32_reduction) {
  const training_setup s = with(training_framework::fsdp2, base("llama-3-8b", 0, 8), {{"--precision", "bf16"}});
  EXPECT_EQ(s.prec, precision::bf16);
  const memory_breakdown m = estimate_memory(s);
  EXPECT_EQ(m.gradients_bytes, 2 * llama3_8b_parameters / 8);
  EXPECT_EQ(m.optimizer_bytes, 4 * llama3_8b_parameters / 8);
  training_setup tune = s;  // torchtune's FSDP2 has no policy: bf16 reductions
  tune.framework = training_framework::torchtune;
  const device_spec& h100 = find_preset("h100-sxm");
  EXPECT_NEAR(estimate_communication(s, h100).per_micro_step_ms,
              estimate_communication(tune, h100).per_micro_step_ms +
                  2.0 * llama3_8b_parameters * 7 / 8 / (450 * ring_efficiency * 1e6),
              1e-6);
  EXPECT_EQ(with(training_framework::fsdp2, base("llama-3-8b", 16), {{"--precision", "bf16"}, {"--checkpointing", "on"}})
                .adapters,
            adapter_dtype::bf16);
  EXPECT_EQ(with(training_framework::fsdp2, base("llama-3-8b", 16), {{"--checkpointing", "on"}}).adapters,
            adapter_dtype::fp32);
}

// What torchtitan cannot run, or the planner cannot model as it runs it, is a usage error naming why.
TEST(framework, fsdp2_refuses_what_torchtitan_cannot_run) {
  EXPECT_NE(framework_refusal(training_framework::fsdp2, base("llama-3-8b"), {{"--precision", "fp16-mixed"}})
                .find("fsdp2 trains bf16-mixed, bf16 and fp32"),
            std::string::npos);
  EXPECT_NE(framework_refusal(training_framework::fsdp2, base("llama-3-8b"), {}, false).find("pass --precision fp32"),
            std::string::npos);
  EXPECT_EQ(framework_refusal(training_framework::fsdp2, base("llama-3-8b"), {{"--precision", "fp32"}}, false), "");
  // Per-op checkpointing is modelled for Llama-style blocks only: GPT-2's MLP has no gate.
  EXPECT_NE(
      framework_refusal(training_framework::fsdp2, base("gpt2")).find("an MLP without a gate: pass --checkpointing"),
      std::string::npos);
  EXPECT_EQ(framework_refusal(training_framework::fsdp2, base("gpt2"), {{"--checkpointing", "on"}}), "");
  EXPECT_NE(framework_refusal(training_framework::fsdp2, base("llama-3-8b", 16)).find("LoRA adapters"),
            std::string::npos);
}

TEST(framework, each_framework_refuses_what_it_cannot_run) {
  EXPECT_NE(framework_refusal(training_framework::megatron, base("llama-3-8b", 16)).find("Megatron-LM has no LoRA"),
            std::string::npos);
  EXPECT_EQ(framework_refusal(training_framework::megatron, base("llama-3-8b")), "");
  EXPECT_NE(framework_refusal(training_framework::torchtune, base("llama-3-8b"), {{"--precision", "bf16-mixed"}})
                .find("torchtune trains bf16 and fp32"),
            std::string::npos);
  EXPECT_NE(framework_refusal(training_framework::composer, base("llama-3-8b"), {{"--precision", "bf16"}})
                .find("no pure bf16"),
            std::string::npos);
  // DeepSpeed's bf16 mode keeps fp32 master weights and states: a pure-bf16 plan is not what it runs.
  EXPECT_NE(framework_refusal(training_framework::deepspeed, base("llama-3-8b"), {{"--precision", "bf16"}})
                .find("deepspeed trains fp32, fp16-mixed and bf16-mixed"),
            std::string::npos);
  EXPECT_EQ(framework_refusal(training_framework::deepspeed, base("llama-3-8b"), {{"--precision", "bf16-mixed"}}), "");
  for (const char* p : {"fp32", "fp16-mixed", "bf16-mixed", "bf16"})
    EXPECT_EQ(framework_refusal(training_framework::litgpt, base("llama-3-8b"), {{"--precision", p}}), "") << p;
  // FSDP has no stage that shards the optimizer states alone: LitGPT and Composer at --zero 1 were
  // planned with DeepSpeed's 16-bit weights and masters, which neither runs.
  for (const auto& [f, who] : {std::pair{training_framework::litgpt, "LitGPT"}, {training_framework::composer, "Composer"}}) {
    const std::string why = framework_refusal(f, base("llama-3-8b", 0, 8), {{"--zero", "1"}});
    EXPECT_NE(why.find(std::string("--zero 1: ") + who + " shards with FSDP"), std::string::npos) << why;
    EXPECT_NE(why.find("--framework deepspeed"), std::string::npos) << why;
    for (const char* zero : {"0", "2", "3"}) EXPECT_EQ(framework_refusal(f, base("llama-3-8b", 0, 8), {{"--zero", zero}}), "");
  }
}

// What the emitted configs cannot run is refused: the Trainer shards through DeepSpeed, which has no
// pure bf16 (it was planned ZeRO-3 with no DeepSpeed config beside it); Megatron-LM's --optimizer is
// adam or sgd, torchtitan's Adam or AdamW, and neither runs bitsandbytes' paged optimizers.
TEST(framework, what_the_frameworks_config_cannot_run_is_refused) {
  const std::string hf = framework_refusal(training_framework::hf, base("llama-3-8b", 0, 8),
                                           {{"--zero", "3"}, {"--precision", "bf16"}});
  EXPECT_NE(hf.find("--framework hf --zero 3 --precision bf16: the Trainer shards through DeepSpeed"), std::string::npos)
      << hf;
  EXPECT_EQ(framework_refusal(training_framework::hf, base("llama-3-8b", 0, 8), {{"--precision", "bf16"}}), "");
  training_setup tensor_parallel = base("llama-3-8b", 0, 8);  // Megatron-LM's layout, not the Trainer's
  tensor_parallel.tensor_parallel = 2;
  EXPECT_EQ(framework_refusal(training_framework::hf, tensor_parallel, {{"--zero", "1"}, {"--precision", "bf16"}}), "");
  EXPECT_EQ(framework_refusal(training_framework::hf, base("llama-3-8b", 0, 8), {{"--zero", "3"}}), "");
  auto optimizer = [](const char* o) {
    training_setup s = base("llama-3-8b");
    s.optimizer = parse_optimizer(o);
    return s;
  };
  for (const char* o : {"adamw-8bit", "adafactor", "lion"}) {
    const std::string m = framework_refusal(training_framework::megatron, optimizer(o));
    EXPECT_NE(m.find(std::string("--framework megatron --optimizer ") + o + ": Megatron-LM's --optimizer offers adam"),
              std::string::npos)
        << m;
    EXPECT_NE(framework_refusal(training_framework::fsdp2, optimizer(o)).find("torchtitan"),
              std::string::npos)
        << o;
  }
  EXPECT_EQ(framework_refusal(training_framework::megatron, optimizer("sgd")), "");
  EXPECT_NE(framework_refusal(training_framework::fsdp2, optimizer("sgd")), "");
  training_setup paged = base("llama-3-8b");
  paged.paged_optimizer = true;
  EXPECT_NE(framework_refusal(training_framework::megatron, paged).find("--paged-optimizer: Megatron-LM has no"),
            std::string::npos);
  EXPECT_EQ(framework_refusal(training_framework::torchtune, optimizer("adamw-8bit")), "");
}

// Composer's Trainer trains amp_fp16 on GPUs unless told otherwise; LitGPT's finetune_lora adapts
// q and v (6,815,744 adapter parameters at rank 16: 512 x ((4096+4096) + (4096+1024))) with
// lora_dropout 0.05, fp32 adapters under bf16-mixed, and checkpoints every block under FSDP on
// several GPUs.
TEST(framework, composer_and_litgpt_defaults) {
  EXPECT_EQ(with(training_framework::composer, base("llama-3-8b")).prec, precision::fp16_mixed);
  const training_setup one = with(training_framework::litgpt, base("llama-3-8b", 16));
  EXPECT_EQ(one.prec, precision::bf16_mixed);
  EXPECT_EQ(lora_targets_name(one.lora_targets), "q,v");
  EXPECT_EQ(estimate_memory(one).trainable_parameters, 6'815'744);
  EXPECT_EQ(one.lora_dropout, 0.05);
  EXPECT_EQ(one.adapters, adapter_dtype::fp32);
  EXPECT_EQ(one.checkpointing, checkpoint_policy::automatic);
  EXPECT_EQ(one.zero_stage, 0);
  const training_setup eight = with(training_framework::litgpt, base("llama-3-8b", 16, 8));
  EXPECT_EQ(eight.checkpointing, checkpoint_policy::on);
  EXPECT_EQ(eight.zero_stage, 3);
  EXPECT_EQ(with(training_framework::litgpt, base("llama-3-8b", 16), {{"--precision", "bf16"}}).adapters,
            adapter_dtype::bf16);
  // Without LoRA, no LoRA default is set (--lora-dropout alone would be refused).
  EXPECT_EQ(with(training_framework::litgpt, base("llama-3-8b")).lora_dropout, 0.0);
}

// LitGPT under bf16-mixed builds the model in fp32 (Fabric's MixedPrecision keeps the default dtype):
// the frozen base of a LoRA run takes 4 bytes a weight where transformers' bf16 load takes 2, and
// autocast casts the frozen weights at every use without caching them, each cast kept for its
// backward: every linear once (6,979,321,856 block weights and the untied LM head's 525,336,576),
// and the LM head again for each of its other 15 chunks of 128 of the 2,048 tokens, beside the fp32
// adapters' one cached copy. Under checkpointing the head's 16 casts stay.
TEST(framework, litgpts_lora_base_is_fp32_and_autocast_casts_it_at_every_use) {
  constexpr double vocab = 128'256.0 * 4'096;
  training_setup lit = with(training_framework::litgpt, base("llama-3-8b", 16));
  training_setup peft = lit;
  peft.framework = training_framework::hf;  // the same LoRA as transformers and peft load it
  const memory_breakdown l = estimate_memory(lit), h = estimate_memory(peft);
  EXPECT_EQ(l.weights_bytes - h.weights_bytes, 2 * (8'030'261'248LL));
  EXPECT_EQ(h.autocast_weight_copies_bytes, 2 * 6'815'744);
  EXPECT_EQ(l.autocast_weight_copies_bytes,
            static_cast<std::int64_t>(2 * 6'815'744 + 2 * (6'979'321'856.0 + vocab + 15 * vocab)));
  EXPECT_EQ(l.lm_head_copy_bytes, static_cast<std::int64_t>(2 * 16 * vocab));
  // On 8 GPUs (FSDP, gathering fp32) the same casts of the gathered weights.
  const memory_breakdown l8 = estimate_memory(with(training_framework::litgpt, base("llama-3-8b", 16, 8)));
  EXPECT_EQ(l8.autocast_weight_copies_bytes, l.autocast_weight_copies_bytes);
  EXPECT_EQ(l8.lm_head_copy_bytes, l.lm_head_copy_bytes);
  // bf16-true (--precision bf16) is a bf16 model: nothing of this.
  training_setup true_bf16 = with(training_framework::litgpt, base("llama-3-8b", 16), {{"--precision", "bf16"}});
  EXPECT_EQ(estimate_memory(true_bf16).autocast_weight_copies_bytes, 0);
}

// Composer's FSDP1 under bf16-mixed gathers fp32 (its "DEFAULT" policy's param_dtype) and autocast
// casts each gathered linear to bf16, kept to its backward: the same unsharded copies as AMP on one
// GPU, 2 x (6,979,321,856 block weights + the LM head's 525,336,576) = 15,009,316,864 bytes, counted
// before for LitGPT's alone. FSDP2's bf16 gathers (torchtitan) have none; fp32 training none.
TEST(framework, composers_fsdp1_casts_its_fp32_gathers_as_amp_does) {
  const training_setup composer = with(training_framework::composer, base("llama-3-8b", 0, 8),
                                       {{"--zero", "3"}, {"--precision", "bf16-mixed"}});
  EXPECT_EQ(estimate_memory(composer).autocast_weight_copies_bytes, 15'009'316'864LL);
  EXPECT_EQ(estimate_memory(composer).lm_head_copy_bytes, 2 * 525'336'576LL);
  EXPECT_EQ(estimate_memory(with(training_framework::hf, base("llama-3-8b"))).autocast_weight_copies_bytes,
            15'009'316'864LL);
  EXPECT_EQ(estimate_memory(with(training_framework::fsdp2, base("llama-3-8b", 0, 8))).autocast_weight_copies_bytes, 0);
  const training_setup fp32 = with(training_framework::composer, base("llama-3-8b", 0, 8),
                                   {{"--zero", "3"}, {"--precision", "fp32"}});
  EXPECT_EQ(estimate_memory(fp32).autocast_weight_copies_bytes, 0);
}

// Autocast caches the casts of leaf parameters that are not views and require grad (autocast_mode.cpp,
// cached_cast). FSDP1's forward runs on views into its gathered flat parameter, and LitGPT's LoRA base
// is frozen: their casts are made anew at every use, so a checkpointed block frees each after its
// GEMM and the forward holds only the LM head's (Llama-3-8B's 6,979,321,856 block weights not). AMP's
// leaf weights on one GPU are cached to the forward's end, checkpointed or not.
TEST(framework, checkpointing_frees_the_casts_autocast_does_not_cache) {
  const memory_breakdown composer = estimate_memory(with(training_framework::composer, base("llama-3-8b", 0, 8),
                                                         {{"--zero", "3"}, {"--precision", "bf16-mixed"}}));
  const memory_breakdown lora = estimate_memory(with(training_framework::litgpt, base("llama-3-8b", 16)));
  const memory_breakdown amp = estimate_memory(with(training_framework::hf, base("llama-3-8b")));
  const memory_breakdown litgpt_one_gpu = estimate_memory(with(training_framework::litgpt, base("llama-3-8b")));
  EXPECT_EQ(composer.uncached_block_copies_bytes, 2 * 6'979'321'856LL);
  EXPECT_EQ(lora.uncached_block_copies_bytes, 2 * 6'979'321'856LL);
  EXPECT_EQ(amp.uncached_block_copies_bytes, 0);
  EXPECT_GT(litgpt_one_gpu.autocast_weight_copies_bytes, 0);
  EXPECT_EQ(litgpt_one_gpu.uncached_block_copies_bytes, 0);
  for (const memory_breakdown& m : {composer, lora}) {
    memory_breakdown cached = m;
    cached.uncached_block_copies_bytes = 0;
    // One checkpointed sample peaks in the forward: the blocks' casts are gone from it.
    EXPECT_EQ(cached.peak_phase(1, true), "forward");
    EXPECT_LT(m.peak_allocated_bytes(1, true), cached.peak_allocated_bytes(1, true));
    EXPECT_GE(static_cast<double>(m.peak_allocated_bytes(1, true)),
              static_cast<double>(cached.peak_allocated_bytes(1, true) - m.uncached_block_copies_bytes));
    // Without checkpointing autograd keeps every cast to its backward, cached or not.
    EXPECT_EQ(m.peak_allocated_bytes(1, false), cached.peak_allocated_bytes(1, false));
  }
}

// Whether the data-parallel exchange runs under compute: Megatron-LM's DistributedDataParallelConfig
// overlap_grad_reduce is False (--overlap-grad-reduce is store_true); DeepSpeed's overlap_comm is None,
// made stage == 3 by its validator; PyTorch DDP and FSDP overlap (hf, the FSDP2 trainers).
TEST(framework, the_exchange_overlaps_as_each_framework_runs_it) {
  EXPECT_TRUE(with(training_framework::hf, base("llama-3-8b", 0, 16)).overlap_comm);
  EXPECT_TRUE(with(training_framework::fsdp2, base("llama-3-8b", 0, 16)).overlap_comm);
  const training_setup m = with(training_framework::megatron, base("llama-3-8b", 0, 16));
  EXPECT_FALSE(m.overlap_comm);
  // ModelParallelConfig: tensor_model_parallel_size 1, pipeline_model_parallel_size 1, sequence_parallel False,
  // context_parallel_size 1 (d98e8a6): the plan's own defaults, which the note says.
  EXPECT_EQ(m.tensor_parallel, 1);
  EXPECT_EQ(m.pipeline_parallel, 1);
  EXPECT_EQ(m.context_parallel, 1);
  EXPECT_FALSE(m.sequence_parallel);
  EXPECT_TRUE(mentions(m.framework_notes, "tensor and pipeline parallel 1"));
  EXPECT_TRUE(mentions(m.framework_notes, "--overlap-comm off (DistributedDataParallelConfig.overlap_grad_reduce False)"));
  EXPECT_FALSE(with(training_framework::deepspeed, base("llama-3-8b", 0, 16)).overlap_comm);
  EXPECT_FALSE(with(training_framework::deepspeed, base("llama-3-8b", 0, 16), {{"--zero", "2"}}).overlap_comm);
  EXPECT_TRUE(with(training_framework::deepspeed, base("llama-3-8b", 0, 16), {{"--zero", "3"}}).overlap_comm);
  // The flag wins, and a bad value is refused naming it.
  const training_setup on = with(training_framework::megatron, base("llama-3-8b", 0, 16), {{"--overlap-comm", "on"}});
  EXPECT_TRUE(on.overlap_comm);
  EXPECT_TRUE(mentions(on.framework_notes, "your flags replaced --overlap-comm on (megatron's: off)"));
  EXPECT_FALSE(with(training_framework::hf, base("llama-3-8b", 0, 16), {{"--overlap-comm", "off"}}).overlap_comm);
  EXPECT_NE(framework_refusal(training_framework::hf, base("llama-3-8b"), {{"--overlap-comm", "yes"}})
                .find("--overlap-comm 'yes'"),
            std::string::npos);
  EXPECT_THROW(check_framework_flags({{"--overlap-comm", "1"}}), usage_error);
}

// FSDP's CPU offload has no optimizer-only mode (FSDP2's CPUOffloadPolicy docstring: parameters,
// gradients and optimizer states to the CPU); DeepSpeed's offload_optimizer alone is DeepSpeed's.
TEST(framework, fsdp_based_frameworks_offload_parameters_with_the_optimizer) {
  training_setup s = base("llama-3-8b");
  s.world_size = 8;
  s.zero_stage = 3;
  s.offload = offload_kind::optimizer;
  for (training_framework f : {training_framework::fsdp2, training_framework::torchtune, training_framework::litgpt,
                               training_framework::composer}) {
    const std::string why = framework_refusal(f, s, {{"--checkpointing", "on"}});
    EXPECT_NE(why.find("--offload optimizer+params"), std::string::npos) << to_string(f) << ": " << why;
  }
  EXPECT_EQ(framework_refusal(training_framework::deepspeed, s), "");
  s.offload = offload_kind::optimizer_params;
  EXPECT_EQ(framework_refusal(training_framework::fsdp2, s, {{"--checkpointing", "on"}}), "");
}

// The Trainer's and DeepSpeed's configs are not what fsdp2, megatron, torchtune, composer or litgpt
// read: such a plan says so, and that the Trainer would not run its per-op checkpointing.
TEST(framework, other_frameworks_say_the_pasted_configs_are_not_theirs) {
  training_setup s = base("llama-3-8b");
  s.world_size = 16;
  s.seq_len = 2048;
  training_setup fsdp = with(training_framework::fsdp2, s);
  const auto plan = plan_batch(fsdp, find_preset("h100-sxm"));
  ASSERT_TRUE(plan.recommended);
  const std::string notes = to_json(plan, "cmd", "date")["notes"].dump();
  EXPECT_NE(notes.find("--framework fsdp2 reads neither hf_training_args nor deepspeed"), std::string::npos) << notes;
  EXPECT_NE(notes.find("gradient_checkpointing wraps every layer instead"), std::string::npos) << notes;
  const auto hf = plan_batch(with(training_framework::hf, s), find_preset("h100-sxm"));
  EXPECT_EQ(to_json(hf, "cmd", "date")["notes"].dump().find("reads neither"), std::string::npos);
}

// Megatron-LM shards with its distributed optimizer (--zero 1); --zero 2 and 3 had been planned with
// DeepSpeed's memory (on one GPU --zero 2 saved its fp32 grad buffer's 2 bytes a parameter), so they
// are refused naming the value, and a plan where nothing fits no longer suggests --zero 3 (hf's does).
TEST(framework, megatron_refuses_zero_2_and_3_and_does_not_suggest_them) {
  for (const char* zero : {"2", "3"}) {
    const std::string why = framework_refusal(training_framework::megatron, base("llama-3-8b", 0, 8), {{"--zero", zero}});
    EXPECT_NE(why.find(std::string("--framework megatron --zero ") + zero + ": tiletune models Megatron-LM's "
                       "distributed optimizer"),
              std::string::npos)
        << why;
  }
  for (const char* zero : {"0", "1"})
    EXPECT_EQ(framework_refusal(training_framework::megatron, base("llama-3-8b", 0, 8), {{"--zero", zero}}), "") << zero;
  training_setup s = base("llama-3-8b", 0, 8);
  s.seq_len = 1024;
  s.global_batch = 32;
  auto suggestions = [&](training_framework f) {
    const batch_plan plan = plan_batch(with(f, s), find_preset("a100-sxm-40gb"));
    EXPECT_FALSE(plan.recommended) << to_string(f);
    return plan.suggestions;
  };
  const auto zero3 = [](const std::vector<std::string>& all) { return std::ranges::count(all, "--zero 3"); };
  EXPECT_EQ(zero3(suggestions(training_framework::megatron)), 0);
  EXPECT_EQ(zero3(suggestions(training_framework::hf)), 1);
}

// The Trainer's arguments run the loss the micro-batch was planned with: --loss fused as Liger's
// fused linear cross-entropy (use_liger_kernel, the rest of Liger's kernels off: the plan counts
// transformers' modules); --loss chunked has no Trainer argument, so a note says they do not run it.
// hf and deepspeed read them (they had said neither: the pasted arguments ran the eager loss).
TEST(framework, the_trainers_arguments_run_the_planned_loss_or_say_they_do_not) {
  auto plan_json = [](training_framework f, loss_impl loss) {
    training_setup s = with(f, base("llama-3.2-1b"), {{"--loss", loss == loss_impl::fused ? "fused" : "chunked"}});
    const batch_plan plan = plan_batch(s, find_preset("h100-sxm"));
    EXPECT_TRUE(plan.recommended);
    return to_json(plan, "cmd", "date");
  };
  for (const training_framework f : {training_framework::hf, training_framework::deepspeed}) {
    const nlohmann::json fused = plan_json(f, loss_impl::fused);
    const nlohmann::json& args = fused["hf_training_args"];
    EXPECT_EQ(args.value("use_liger_kernel", false), true) << to_string(f);
    const nlohmann::json liger = args.value("liger_kernel_config", nlohmann::json::object());
    EXPECT_EQ(liger.value("fused_linear_cross_entropy", false), true);
    for (const char* other : {"rope", "rms_norm", "swiglu", "cross_entropy"})
      EXPECT_EQ(liger.value(other, true), false) << other;
    EXPECT_NE(fused["notes"].dump().find("hf_training_args run Liger's fused linear cross-entropy"), std::string::npos);
    const nlohmann::json chunked = plan_json(f, loss_impl::chunked);
    EXPECT_FALSE(chunked["hf_training_args"].contains("use_liger_kernel"));
    EXPECT_NE(chunked["notes"].dump().find("--loss chunked: hf_training_args do not run it"), std::string::npos)
        << to_string(f);
  }
  EXPECT_FALSE(to_json(plan_batch(with(training_framework::hf, base("llama-3.2-1b")), find_preset("h100-sxm")), "cmd",
                       "date")["hf_training_args"]
                   .contains("use_liger_kernel"));
}

// torchtune and LitGPT copy K and V to every query head before SDPA (no enable_gqa): in fp32 SDPA runs
// its memory-efficient kernel on the copies, keeping no s x s probabilities, where transformers'
// enable_gqa falls back to the math kernel that keeps them. Llama-3.2-1B (32 query heads, 8 key-value
// heads) in fp32 had been planned with the math kernel and transformers' modules under torchtune and
// LitGPT (14.55 GiB of activations a sample); it keeps what the same model with 32 key-value heads
// keeps (its K and V at the copies' width: 6.55 GiB).
TEST(framework, torchtune_and_litgpt_in_fp32_keep_the_kv_copies_not_the_scores) {
  for (const training_framework f : {training_framework::torchtune, training_framework::litgpt}) {
    const training_setup s = with(f, base("llama-3.2-1b"), {{"--precision", "fp32"}});
    ASSERT_LT(s.model.num_kv_heads, s.model.num_heads);
    EXPECT_EQ(attention_kernel_of(s), attention_kernel::fused) << to_string(f);
    training_setup equal_heads = s;
    equal_heads.model.num_kv_heads = s.model.num_heads;
    EXPECT_EQ(estimate_memory(s).activation_bytes_per_sample, estimate_memory(equal_heads).activation_bytes_per_sample)
        << to_string(f);
    EXPECT_EQ(to_json(plan_batch(s, find_preset("h100-sxm")), "cmd", "date")["setup"]["modules"], to_string(f));
  }
  const training_setup hf = with(training_framework::hf, base("llama-3.2-1b"), {{"--precision", "fp32"}});
  EXPECT_EQ(attention_kernel_of(hf), attention_kernel::math);
  EXPECT_EQ(attention_kernel_of(with(training_framework::fsdp2, base("llama-3.2-1b"),
                                     {{"--precision", "fp32"}, {"--checkpointing", "on"}})),
            attention_kernel::math);  // torchtitan passes enable_gqa too
}
