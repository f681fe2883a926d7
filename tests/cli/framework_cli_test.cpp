// `tiletune batch --framework` (issue 37): a trainer's defaults end to end. hf is today's plan
// (setup.framework its only new field); another framework's defaults reach the JSON, the table and
// the notes, an explicit flag wins, and what a framework cannot run exits 2 naming why. Expected
// figures are arithmetic on Llama-3-8B's published parameter count (8,030,261,248), in the comments.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_json.hpp"

using namespace tiletune_test;

namespace {
const std::vector<std::string> llama_lora = {"batch", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--seq-len",
                                             "2048", "--global-batch", "32", "--lora-rank", "16", "--no-db"};
bool any_note(const nlohmann::json& plan, const std::string& text) {
  for (const auto& n : plan["notes"])
    if (n.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

// --framework hf and no --framework are the same plan, table and JSON (the command line apart),
// with setup.framework "hf" and no framework note: hf is the plan batch made before --framework.
TEST(batch_framework, hf_is_todays_plan) {
  nlohmann::json plain = plan_with(llama_lora, {"--json"}), hf = plan_with(llama_lora, {"--json", "--framework", "hf"});
  EXPECT_EQ(hf["setup"]["framework"], "hf");
  EXPECT_FALSE(any_note(hf, "--framework"));
  for (auto* j : {&plain, &hf}) (*j)["tool"].erase("command_line"), (*j)["tool"].erase("date");
  EXPECT_EQ(plain, hf);
  EXPECT_EQ(run(llama_lora).out, run_with(llama_lora, {"--framework", "hf"}).out);
}

// torchtune's Llama 3.1 8B LoRA config: pure bf16, LoRA on q, v, o and the MLP with bf16 adapters,
// the chunked loss, checkpointing on. Its weights are the bf16 base and bf16 adapters:
// 2 x 8,030,261,248 + 2 x 39,321,600 = 16,139,165,696 bytes, where hf's bf16 base and fp32
// all-linear adapters hold 2 x 8,030,261,248 + 4 x 41,943,040 = 16,228,294,656 (adapters: 32 layers x
// 16 x the in + out of each adapted linear, 76,800 on q,v,o,gate,up,down and 81,920 on all seven).
TEST(batch_framework, torchtune_sets_its_defaults_and_an_explicit_flag_wins) {
  const nlohmann::json tt = plan_with(llama_lora, {"--json", "--framework", "torchtune"});
  EXPECT_EQ(tt["setup"]["framework"], "torchtune");
  EXPECT_EQ(tt["setup"]["precision"], "bf16");
  EXPECT_EQ(tt["setup"]["loss"], "chunked");
  EXPECT_EQ(tt["setup"]["modules"], "torchtune");
  EXPECT_EQ(tt["setup"]["lora_modules"], "torchtune");
  EXPECT_TRUE(any_note(tt, "LoRA as torchtune's LoRALinear runs it: bf16 adapters"));
  EXPECT_EQ(plan_with(llama_lora, {"--json"})["setup"]["modules"], "transformers");
  EXPECT_EQ(plan_with(llama_lora, {"--json"})["setup"]["lora_modules"], "peft");
  EXPECT_FALSE(plan_with({"batch", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--no-db"}, {"--json"})["setup"]
                   .contains("lora_modules"));
  EXPECT_EQ(tt["setup"]["lora_targets"], "q,v,o,gate,up,down");
  EXPECT_EQ(tt["setup"]["adapter_dtype"], "bf16");
  EXPECT_EQ(tt["model"]["trainable_parameters"], 39'321'600);
  EXPECT_EQ(tt["memory"]["weights_bytes"], 16'139'165'696LL);
  EXPECT_EQ(plan_with(llama_lora, {"--json"})["memory"]["weights_bytes"], 16'228'294'656LL);
  for (const auto& c : tt["candidates"]) EXPECT_TRUE(c["checkpointing"].get<bool>());
  EXPECT_TRUE(any_note(tt, "--framework torchtune set --precision bf16 (dtype: bf16"));
  // The table names the framework; an explicit flag replaces its default and the note says so.
  EXPECT_NE(run_with(llama_lora, {"--framework", "torchtune"}).out.find(", torchtune defaults: PREDICTED"),
            std::string::npos);
  const nlohmann::json eager = plan_with(llama_lora, {"--json", "--framework", "torchtune", "--loss", "eager",
                                                      "--checkpointing", "auto"});
  EXPECT_EQ(eager["setup"]["loss"], "eager");
  EXPECT_EQ(eager["setup"]["precision"], "bf16");
  EXPECT_TRUE(any_note(eager, "your flags replaced --loss eager (torchtune's: chunked)"));
  bool without = false;
  for (const auto& c : eager["candidates"]) without |= !c["checkpointing"].get<bool>();
  EXPECT_TRUE(without);
}

// torchtitan on 8 GPUs: FSDP2 (ZeRO-3) and bf16-mixed. Per GPU, Llama-3-8B keeps 4P/8 = 4,015,130,624
// bytes of fp32 sharded weights, two gathered bf16 units of the embedding's 525,336,576 parameters
// (2,101,346,304 bytes), and 8P/8 = 8,030,261,248 of AdamW states (the fp32 shard is the optimizer's:
// no masters); every candidate checkpoints per op (SelectiveAC). FSDP has no DeepSpeed buckets.
TEST(batch_framework, fsdp2_shards_over_every_gpu) {
  const nlohmann::json p = plan_with({"batch", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--world-size", "8",
                                      "--global-batch", "64", "--no-db", "--json"},
                                     {"--framework", "fsdp2"});
  EXPECT_EQ(p["setup"]["zero_stage"], 3);
  EXPECT_EQ(p["setup"]["precision"], "bf16-mixed");
  EXPECT_TRUE(p["setup"]["checkpoint_ops"].get<bool>());
  EXPECT_EQ(p["memory"]["weights_bytes"], 4'015'130'624LL + 2'101'346'304LL);
  EXPECT_EQ(p["memory"]["optimizer_bytes"], 8'030'261'248LL);
  EXPECT_EQ(p["memory"]["deepspeed_bucket_bytes"], 0);
  // Its reduce-scatter of the LM head's unit: bf16 gradients and an fp32 input, 6 x 525,336,576.
  EXPECT_EQ(p["memory"]["fsdp_unit_gradient_bytes"], 3'152'019'456LL);
  EXPECT_EQ(p["memory"]["optimizer_step_gradient_bytes"], 0);
  // The table's memory line names the framework's buffers, in GiB.
  const result text = run_with({"batch", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--world-size", "8", "--no-db"},
                               {"--framework", "fsdp2"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("optimizer 7.48  FSDP unit gradients (backward) 2.94  activations"), std::string::npos)
      << text.out;
  const result ds = run_with({"batch", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--world-size", "8", "--no-db"},
                             {"--framework", "deepspeed"});
  ASSERT_EQ(ds.code, 0) << ds.err;
  EXPECT_NE(ds.out.find("fp32 step gradients (optimizer step) 29.92"), std::string::npos) << ds.out;
}

// torchtitan's --zero 0 (data_parallel_replicate_degree 8): fully_shard at shard degree 1, so each GPU
// keeps Llama-3.2-1B's whole fp32 parameters and two gathered bf16 units (the embedding, 128,256 x
// 2,048, the largest: 2 x 2 x 262,668,288 = 1,050,673,152), and the step all-reduces the gradients
// every micro-step (replicated_all_reduce_ms), nothing once a step; the note says so.
TEST(batch_framework, fsdp2_at_zero_0_is_fsdp_at_shard_degree_1) {
  const nlohmann::json p = plan_with({"batch", "--model", "llama-3.2-1b", "--gpu", "h100-sxm", "--world-size", "8",
                                      "--zero", "0", "--global-batch", "64", "--no-db", "--json"},
                                     {"--framework", "fsdp2"});
  EXPECT_EQ(p["setup"]["zero_stage"], 0);
  const double parameters = static_cast<double>(p["model"]["parameters"].get<std::int64_t>());  // 1,235,814,400
  EXPECT_EQ(p["memory"]["weights_bytes"].get<double>(), 4 * parameters + 1'050'673'152.0);
  EXPECT_GT(p["memory"]["fsdp_unit_gradient_bytes"].get<std::int64_t>(), 0);
  for (const auto& c : p["candidates"]) {
    ASSERT_TRUE(c["time"].contains("replicated_all_reduce_ms")) << c.dump();
    EXPECT_GT(c["time"]["replicated_all_reduce_ms"].get<double>(), 0);
    EXPECT_FALSE(c["time"].contains("zero2_reduce_scatter_ms"));
    EXPECT_EQ(c["time"]["allreduce_ms_per_global_step"], 0);
  }
  EXPECT_TRUE(any_note(p, "fp32 gradient all-reduce per micro-step (torchtitan's FSDP2 at shard degree 1"));
}

// torchtitan's fsdp_reshard_after_forward "default" does not reshard after forward under pipeline
// parallelism: its stages run FSDP's stage 2 (--zero 2). Before, the bundle's --zero 3 made every
// torchtitan plan with --pipeline-parallel a refusal; --zero 3 given with it still is (not modelled).
TEST(batch_framework, fsdp2_under_pipeline_parallelism_keeps_its_gathered_parameters) {
  const std::vector<std::string> base = {"batch", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--world-size", "16",
                                         "--pipeline-parallel", "2", "--no-db", "--json"};
  const nlohmann::json pp = plan_with(base, {"--framework", "fsdp2"});
  EXPECT_EQ(pp["setup"]["zero_stage"], 2);
  EXPECT_TRUE(any_note(pp, "--zero 2 (fsdp_reshard_after_forward \"default\": not resharded after forward"));
  const result three = run_with(base, {"--framework", "fsdp2", "--zero", "3"});
  EXPECT_EQ(three.code, 2);
  EXPECT_NE(three.err.find("--pipeline-parallel 2 is not modelled with --zero 3"), std::string::npos) << three.err;
  // Replicated and not resharded after forward: refused, naming --zero 2.
  const result zero = run_with(base, {"--framework", "fsdp2", "--zero", "0"});
  EXPECT_EQ(zero.code, 2);
  EXPECT_NE(zero.err.find("--framework fsdp2 --zero 0 --pipeline-parallel 2"), std::string::npos) << zero.err;
  EXPECT_NE(zero.err.find("pass --zero 2"), std::string::npos) << zero.err;
}

// torchtitan on an MoE: its expert_parallel_degree defaults to 1 (the experts sharded by FSDP with the
// rest, its local dispatcher); --expert-parallel wins, and the note says it replaced the default.
TEST(batch_framework, fsdp2_keeps_the_experts_unsplit_unless_told) {
  const std::string qwen3_moe = std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/qwen3-30b-a3b.json";
  const std::vector<std::string> base = {"batch", "--model", qwen3_moe, "--gpu", "h100-sxm", "--world-size", "8",
                                         "--checkpointing", "on", "--no-db", "--json"};
  const nlohmann::json titan = plan_with(base, {"--framework", "fsdp2"});
  EXPECT_EQ(titan["setup"]["expert_parallel"], 1);
  EXPECT_TRUE(any_note(titan, "--expert-parallel 1 (ParallelismConfig.expert_parallel_degree 1)"));
  EXPECT_TRUE(any_note(titan, "its MoE: an fp32 router"));
  EXPECT_TRUE(any_note(titan, "torchtitan's MoE multiplies every expert's rows in one torch._grouped_mm"));
  EXPECT_FALSE(any_note(titan, "transformers' eager MoE blocks loop over the experts"));
  const nlohmann::json split = plan_with(base, {"--framework", "fsdp2", "--expert-parallel", "8"});
  EXPECT_EQ(split["setup"]["expert_parallel"], 8);
  EXPECT_TRUE(any_note(split, "--expert-parallel 8 (fsdp2's: 1)"));
  // hf's default is tiletune's, 1 (transformers' Trainer splits no experts), said in a note; a dense
  // model gets no such setting.
  const nlohmann::json hf = plan_with(base, {"--framework", "hf"});
  EXPECT_EQ(hf["setup"]["expert_parallel"], 1);
  EXPECT_TRUE(any_note(hf, "no expert parallelism (--expert-parallel 1, every framework's default)"));
  // Megatron-LM's default experts loop (SequentialMLP), said where the plan counts grouped kernels.
  EXPECT_TRUE(any_note(plan_with(base, {"--framework", "megatron"}), "runs SequentialMLP"));
  EXPECT_FALSE(any_note(plan_with({"batch", "--model", "llama-3.2-1b", "--gpu", "h100-sxm", "--no-db", "--json"},
                                  {"--framework", "fsdp2"}),
                        "--expert-parallel"));
}

// A buffer too small for two decimals of a GiB is not shown as none: torchtune's LoRA on 8 GPUs
// (FSDP2, pure bf16) reduce-scatters a block's bf16 adapter gradients, 39,321,600 / 32 = 1,228,800
// of them, through an input of their own width: 4 x 1,228,800 = 4,915,200 bytes, 0.0046 GiB.
TEST(batch_framework, a_small_buffer_shows_its_size_not_zero) {
  const std::vector<std::string> fsdp = {"--framework", "torchtune", "--world-size", "8", "--zero", "3"};
  std::vector<std::string> json = fsdp;
  json.push_back("--json");
  EXPECT_EQ(plan_with(llama_lora, json)["memory"]["fsdp_unit_gradient_bytes"], 4'915'200);
  const result text = run_with(llama_lora, fsdp);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("FSDP unit gradients (backward) 0.0046  activations"), std::string::npos) << text.out;
}

TEST(batch_framework, a_bad_name_or_what_the_framework_cannot_run_exits_2_and_writes_nothing) {
  const fs::path out = tmp_dir() / "framework-refused.json";
  auto refused = [&](const std::vector<std::string>& extra, const std::string& why) {
    fs::remove(out);
    std::vector<std::string> args = {"--out", out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const result r = run_with({"batch", "--gpu", "h100-sxm", "--no-db"}, args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
  };
  refused({"--model", "gpt2", "--framework", "axolotl"},
          "--framework 'axolotl' is not one of hf, fsdp2, deepspeed, megatron, torchtune, composer, litgpt");
  refused({"--model", "llama-3-8b", "--framework", "megatron", "--lora-rank", "8"}, "Megatron-LM has no LoRA");
  refused({"--model", "llama-3-8b", "--framework", "torchtune", "--precision", "bf16-mixed"},
          "torchtune trains bf16 and fp32");
  refused({"--model", "gpt2", "--framework", "fsdp2"}, "pass --checkpointing on, off, every-N or auto");
  // FSDP2 has no optimizer-only sharding: torchtune and torchtitan at ZeRO-1 (planned before) are refused.
  refused({"--model", "llama-3-8b", "--framework", "torchtune", "--zero", "1", "--world-size", "8"},
          "--framework torchtune --zero 1: torchtune shards with FSDP2");
  refused({"--model", "llama-3-8b", "--framework", "fsdp2", "--zero", "1", "--world-size", "8"},
          "none shards the optimizer states alone: pass --zero 2 or 3");
  // Megatron-LM's sharding is its distributed optimizer (--zero 1): 2 and 3 had been DeepSpeed's memory.
  refused({"--model", "llama-3.2-1b", "--framework", "megatron", "--zero", "2", "--micro-batch", "4"},
          "--framework megatron --zero 2: tiletune models Megatron-LM's distributed optimizer");
  refused({"--model", "llama-3.2-1b", "--framework", "megatron", "--zero", "3", "--world-size", "8"},
          "--framework megatron --zero 3: ");
  refused({"--model", "llama-3-8b", "--framework", "megatron", "--fp8", "tensorwise"},
          "--framework megatron --fp8 tensorwise: --fp8 plans torchao's float8 training");
  refused({"--model", "llama-3-8b", "--framework", "megatron", "--precision", "bf16"},
          "--framework megatron --precision bf16: megatron trains fp32, fp16-mixed and bf16-mixed (--fp16 and --bf16 "
          "keep fp32 main params");
  refused({"--model", "llama-3-8b", "--framework", "hf", "--precision", "bf16", "--zero", "3", "--world-size", "8"},
          "the Trainer shards through DeepSpeed, whose bf16 mode keeps fp32 master weights");
  refused({"--model", "llama-3.2-1b", "--framework", "megatron", "--optimizer", "adafactor"},
          "Megatron-LM's --optimizer offers adam (--optimizer adamw here) and sgd only");
  refused({"--model", "llama-3.2-1b", "--framework", "fsdp2", "--optimizer", "lion", "--checkpointing", "on"},
          "torchtitan's optimizer.name offers Adam and AdamW");
  // The same with the framework's checkpointing replaced by a flag plans.
  EXPECT_EQ(run({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--no-db", "--framework", "fsdp2", "--checkpointing",
                 "on", "--quiet"})
                .code,
            0);
}

// --overlap-comm: Megatron-LM's default (overlap_grad_reduce False) reaches the JSON, the DeepSpeed config
// and the communication note, and costs time; the flag wins; a bad value exits 2 naming it.
TEST(batch_framework, megatron_waits_for_its_gradient_all_reduce) {
  const std::vector<std::string> tiny = {"batch", "--model", "tinyllama-1.1b", "--gpu", "h100-sxm", "--world-size", "16",
                                         "--seq-len", "2048", "--global-batch", "256", "--no-db", "--json"};
  const nlohmann::json hf = plan_with(tiny, {}), megatron = plan_with(tiny, {"--framework", "megatron"}),
                       on = plan_with(tiny, {"--framework", "megatron", "--overlap-comm", "on"});
  EXPECT_EQ(hf["setup"]["overlap_comm"], true);
  EXPECT_EQ(megatron["setup"]["overlap_comm"], false);
  EXPECT_EQ(megatron["deepspeed"]["zero_optimization"]["overlap_comm"], false);
  EXPECT_TRUE(any_note(megatron, "not overlapped with compute (--overlap-comm off)"));
  EXPECT_EQ(on["setup"]["overlap_comm"], true);
  EXPECT_GT(on["recommendation"]["tokens_per_s"].get<double>(), megatron["recommendation"]["tokens_per_s"].get<double>());
  // Waiting for the exchange costs what the overlap hides: its exposed time per global step, at the
  // recommended candidate (Megatron's bf16 model keeps less and casts no weights for autocast, so
  // its steps differ from hf's in other ways).
  auto exchange = [](const nlohmann::json& p) {
    for (const auto& c : p["candidates"])
      if (c["micro_batch"] == p["recommendation"]["micro_batch"] && c["checkpointing"] == p["recommendation"]["checkpointing"])
        return c["time"]["allreduce_ms_per_global_step"].get<double>();
    return -1.0;
  };
  EXPECT_GT(exchange(megatron), exchange(on));
  EXPECT_GT(exchange(on), 0);
  // hf's plan overlaps at ZeRO stage 0, which DeepSpeed's engine does not: its config says so.
  EXPECT_TRUE(any_note(hf, "for DeepSpeed at stage 0 plan with --overlap-comm off"));
  EXPECT_TRUE(any_note(hf, "the DeepSpeed config at stage 0 runs DeepSpeed's 16-bit mode, not this plan's PyTorch AMP"));
  EXPECT_FALSE(any_note(megatron, "runs DeepSpeed's 16-bit mode"));
  const result bad = run_with(tiny, {"--overlap-comm", "maybe"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--overlap-comm 'maybe' is not on or off"), std::string::npos) << bad.err;
}

// --grad-clip: the framework's default reaches the JSON and both paste-ready configs (the Trainer
// checks its max_grad_norm against DeepSpeed's gradient_clipping), clipping costs optimizer-step time,
// the flag wins, and a bad value or clipping with the step in backward exits 2 naming it.
TEST(batch_framework, gradient_clipping_follows_the_framework_and_the_configs_say_so) {
  const std::vector<std::string> tiny = {"batch", "--model", "tinyllama-1.1b", "--gpu", "h100-sxm", "--seq-len", "2048",
                                         "--global-batch", "32", "--no-db", "--json"};
  const nlohmann::json hf = plan_with(tiny, {}), off = plan_with(tiny, {"--grad-clip", "off"}),
                       composer = plan_with(tiny, {"--framework", "composer", "--precision", "bf16-mixed"});
  EXPECT_EQ(hf["setup"]["grad_clip"], true);
  EXPECT_EQ(hf["hf_training_args"]["max_grad_norm"], 1.0);
  EXPECT_EQ(hf["deepspeed"]["gradient_clipping"], 1.0);
  EXPECT_EQ(off["setup"]["grad_clip"], false);
  // In any case, as --overlap-comm and every other choice ("ON" had been refused).
  EXPECT_EQ(plan_with(tiny, {"--grad-clip", "OFF"})["setup"]["grad_clip"], false);
  EXPECT_EQ(plan_with(tiny, {"--grad-clip", "On"})["setup"]["grad_clip"], true);
  EXPECT_EQ(off["hf_training_args"]["max_grad_norm"], 0.0);
  EXPECT_EQ(off["deepspeed"]["gradient_clipping"], 0.0);
  EXPECT_EQ(composer["setup"]["grad_clip"], false);
  EXPECT_TRUE(any_note(composer, "--grad-clip off (no GradientClipping algorithm unless configured)"));
  // The same step but for clipping: AdamW's 28 bytes a parameter and clip_grad_norm_'s 12.
  auto optimizer_ms = [](const nlohmann::json& p) { return p["candidates"][0]["time"]["optimizer_ms_per_global_step"].get<double>(); };
  EXPECT_NEAR(optimizer_ms(hf) / optimizer_ms(off), 40.0 / 28.0, 1e-9);
  const result bad = run_with(tiny, {"--grad-clip", "1.0"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--grad-clip '1.0' is not on or off"), std::string::npos) << bad.err;
  const result inside = run_with(tiny, {"--optimizer-in-backward", "--grad-clip", "on"});
  EXPECT_EQ(inside.code, 2);
  EXPECT_NE(inside.err.find("--optimizer-in-backward --grad-clip on"), std::string::npos) << inside.err;
  EXPECT_EQ(plan_with(tiny, {"--optimizer-in-backward"})["setup"]["grad_clip"], false);
}

TEST(batch_framework, help_names_the_flag_and_every_framework) {
  const result r = run({"batch", "--help"});
  ASSERT_EQ(r.code, 0);
  for (const char* s : {"--framework", "fsdp2 (torchtitan)", "deepspeed", "megatron (Megatron-LM)", "torchtune",
                        "composer", "litgpt", "docs/batch.md#frameworks", "--overlap-comm", "--grad-clip"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

// The link runs on while the GPU waits for its host: a micro-step's exchanges hide under its whole
// time on the GPU, the host's wait included. Counted apart (both added), a B200 or an H200 waiting
// on its host was planned slower than an H100, and 256-token sequences slower than 2,048-token ones
// (234 of 273 plans of a sweep over five frameworks broke one or the other). The same for the
// context-parallel ring.
TEST(batch_framework, a_faster_gpu_or_less_work_is_never_planned_slower_beside_the_exchanges) {
  const std::string mixtral = std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/mixtral-8x7b.json";
  struct setup {
    std::vector<std::string> args;
    int longest = 2048;  // the model's positions
  };
  const std::vector<setup> setups = {
      {{"--model", mixtral, "--framework", "deepspeed", "--world-size", "16", "--lora-rank", "16", "--checkpointing", "on",
        "--zero", "3"}},
      {{"--model", "llama-3-8b", "--framework", "fsdp2", "--world-size", "16", "--checkpointing", "off"}},
      {{"--model", "llama-3-8b", "--framework", "fsdp2", "--world-size", "8", "--lora-rank", "16", "--checkpointing",
        "off"}},
      // The context-parallel ring beyond attention fills the wait for the host first (added beside it,
      // an H200's faster attention left more of it exposed: 90.99 samples/s against the H100's 91.10).
      {{"--model", "gpt2", "--framework", "megatron", "--context-parallel", "4", "--world-size", "8", "--checkpointing",
        "off"},
       1024},
  };
  auto joined = [](const std::vector<std::string>& args) {
    std::string line;
    for (const auto& a : args) line += " " + a;
    return line;
  };
  auto samples_per_s = [](const std::vector<std::string>& args) {
    std::vector<std::string> all = {"batch", "--json", "--no-db", "--global-batch", "32", "--micro-batch", "1"};
    all.insert(all.end(), args.begin(), args.end());
    const nlohmann::json plan = plan_with(all, {});
    EXPECT_TRUE(plan["recommendation"].is_object()) << plan["notes"].dump();
    return plan["recommendation"].value("samples_per_s", 0.0);
  };
  for (const auto& s : setups) {
    double longer = 0;
    for (const char* seq : {"2048", "1024", "512", "256"}) {
      if (std::stoi(seq) > s.longest) continue;
      auto args = s.args;
      args.insert(args.end(), {"--seq-len", seq, "--gpu", "h100-sxm"});
      const double shorter = samples_per_s(args);
      EXPECT_GE(shorter, longer * 0.999) << "--seq-len " << seq << ": " << joined(s.args);
      longer = shorter;
      auto on = [&](const char* gpu) {
        auto a = s.args;
        a.insert(a.end(), {"--seq-len", seq, "--gpu", gpu});
        return samples_per_s(a);
      };
      EXPECT_GE(on("h200"), shorter * 0.9999) << "h200 at --seq-len " << seq << ": " << joined(s.args);
      EXPECT_GE(on("b200"), shorter * 0.9999) << "b200 at --seq-len " << seq << ": " << joined(s.args);
    }
  }
}
