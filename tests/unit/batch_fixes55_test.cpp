// Round 55 (tester F): a LoRA plan's emitted configs carry its LoRA (the peft object: rank, target
// modules as transformers names them, dropout, and the get_peft_model argument that keeps the
// planned adapter dtype); an expert-parallel plan emits no DeepSpeed config; each row's
// accumulation reaches the global batch nearest the asked one (a tie: the larger).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/train/lora_step.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_pipeline.hpp"

using namespace tiletune;

namespace {
const std::string batch55_configs = std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/";

// A setup as `batch` makes it: the flags first, then the framework's defaults for those left out.
training_setup batch55_setup(const std::string& model, training_framework f,
                             const std::map<std::string, std::string>& given, int lora_rank = 0,
                             quantize_kind q = quantize_kind::none, int world = 1) {
  training_setup s;
  s.model = load_model(model);
  s.seq_len = std::min<std::int64_t>(2048, s.model.max_positions > 0 ? s.model.max_positions : 2048);
  s.world_size = world;
  s.lora_rank = lora_rank;
  s.quantize = q;
  apply_framework(f, given, true, s);
  validate(s);
  return s;
}

nlohmann::json batch55_plan(const training_setup& s) {
  return to_json(plan_batch(s, find_preset("h100-sxm")), "cmd", "date");
}

std::string batch55_note(const nlohmann::json& plan, const std::string& text) {
  for (const auto& n : plan["notes"])
    if (n.get<std::string>().find(text) != std::string::npos) return n.get<std::string>();
  return "";
}

std::vector<std::string> batch55_names(const nlohmann::json& list) {
  std::vector<std::string> out;
  for (const auto& n : list) out.push_back(n.get<std::string>());
  return out;
}
}  // namespace

// The tester's command: `batch --model llama-3-8b --gpu h100-sxm --global-batch 64 --lora-rank 16
// --quantize nf4`. The plan's bf16 adapters (the QLoRA paper's, tiletune's hf default on a bf16
// base) are what peft keeps only with autocast_adapter_dtype=False; its default upcasts them to
// fp32, and micro-batch 4 then no longer fits (78.9 of 75.2 GiB). Before, no emitted object held
// the rank, the targets, the dropout or that argument, and the note said "as peft runs it: bf16".
TEST(batch55_peft, a_qlora_plan_emits_the_peft_settings_it_planned) {
  training_setup s = batch55_setup("llama-3-8b", training_framework::hf, {}, 16, quantize_kind::nf4);
  s.global_batch = 64;
  const nlohmann::json j = batch55_plan(s);
  ASSERT_TRUE(j.contains("peft"));
  ASSERT_TRUE(j["peft"].is_object()) << j["peft"];
  const nlohmann::json& peft = j["peft"];
  EXPECT_EQ(peft["lora_config"]["r"], 16);
  EXPECT_EQ(peft["lora_config"]["lora_dropout"], 0.0);
  EXPECT_EQ(batch55_names(peft["lora_config"]["target_modules"]),
            (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
  EXPECT_FALSE(peft["lora_config"].contains("lora_alpha"));  // no memory or time: not invented
  EXPECT_EQ(j["setup"]["adapter_dtype"], "bf16");
  EXPECT_EQ(peft["adapter_dtype"], "bf16");
  EXPECT_EQ(peft["get_peft_model"]["autocast_adapter_dtype"], false);
  // The LoRA note names the argument with the bf16 adapters it claims, and a note says what peft's default does.
  const std::string lora = batch55_note(j, "LoRA as peft runs it");
  EXPECT_NE(lora.find("autocast_adapter_dtype=False"), std::string::npos) << lora;
  const std::string how = batch55_note(j, "peft: get_peft_model(");
  EXPECT_NE(how.find("upcasts them to fp32"), std::string::npos) << how;
  EXPECT_NE(how.find("lora_alpha is left out"), std::string::npos) << how;

  // fp32 adapters: peft's default, True.
  training_setup fp32 = batch55_setup("llama-3-8b", training_framework::hf, {{"--adapter-dtype", "fp32"}}, 16,
                                      quantize_kind::nf4);
  fp32.global_batch = 64;
  const nlohmann::json f = batch55_plan(fp32);
  ASSERT_TRUE(f["peft"].is_object());
  EXPECT_EQ(f["peft"]["get_peft_model"]["autocast_adapter_dtype"], true);
  EXPECT_EQ(f["peft"]["adapter_dtype"], "fp32");
  EXPECT_NE(batch55_note(f, "LoRA as peft runs it").find("autocast_adapter_dtype=True"), std::string::npos);
  // The rank, dropout and targets given are the ones emitted.
  const nlohmann::json qv = batch55_plan(batch55_setup(
      "llama-3.2-1b", training_framework::hf, {{"--lora-targets", "q,v"}, {"--lora-dropout", "0.05"}}, 8));
  EXPECT_EQ(qv["peft"]["lora_config"]["r"], 8);
  EXPECT_EQ(qv["peft"]["lora_config"]["lora_dropout"], 0.05);
  EXPECT_EQ(batch55_names(qv["peft"]["lora_config"]["target_modules"]), (std::vector<std::string>{"q_proj", "v_proj"}));
  // Full fine-tuning: none.
  EXPECT_TRUE(batch55_plan(batch55_setup("gpt2", training_framework::hf, {}))["peft"].is_null());
}

// target_modules are the names transformers gives the adapted linears of each family (peft matches
// a name or a ".name" suffix): GPT-2's Conv1D c_attn, c_proj, c_fc; BERT's two output.dense told
// apart; Phi-3's and GPT-NeoX's fused linears; MLA's kv_a_proj_with_mqa; the routed experts' 3D
// parameters through target_parameters.
TEST(batch55_peft, target_modules_are_the_families_own_names) {
  auto targets = [](const std::string& model, const char* which) {
    training_setup s = batch55_setup(model, training_framework::hf, {{"--lora-targets", which}}, 8);
    return peft_target_names(s);
  };
  EXPECT_EQ(targets("gpt2", "all-linear").modules,
            (std::vector<std::string>{"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"}));
  const peft_targets gpt2_qv = targets("gpt2", "q,v");
  EXPECT_EQ(gpt2_qv.modules, (std::vector<std::string>{"c_attn"}));
  EXPECT_TRUE(gpt2_qv.fused_wider);  // peft adapts c_attn whole, k too
  EXPECT_FALSE(targets("gpt2", "q,k,v").fused_wider);
  EXPECT_EQ(targets("bert-base-uncased", "o,down").modules,
            (std::vector<std::string>{"attention.output.dense", "output.dense"}));
  const peft_targets down = targets("bert-base-uncased", "down");
  ASSERT_EQ(down.modules.size(), 12u);  // "output.dense" alone would adapt the attention's output too
  EXPECT_EQ(down.modules.front(), "layer.0.output.dense");
  EXPECT_EQ(down.modules.back(), "layer.11.output.dense");
  EXPECT_EQ(targets("bert-base-uncased", "q,k,v,up").modules,
            (std::vector<std::string>{"query", "key", "value", "intermediate.dense"}));
  EXPECT_EQ(targets(batch55_configs + "deepseek-v2-lite.json", "q,k,v").modules,
            (std::vector<std::string>{"q_proj", "kv_a_proj_with_mqa", "kv_b_proj"}));
  const peft_targets mixtral = targets(batch55_configs + "mixtral-8x7b.json", "all-linear");
  EXPECT_EQ(mixtral.modules, (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj"}));
  EXPECT_EQ(mixtral.parameters, (std::vector<std::string>{"experts.gate_up_proj", "experts.down_proj"}));
  EXPECT_TRUE(mixtral.router);
  const peft_targets qwen_moe = targets(batch55_configs + "qwen1.5-moe-a2.7b.json", "up");
  EXPECT_EQ(qwen_moe.modules, (std::vector<std::string>{"up_proj"}));  // the shared expert's
  EXPECT_EQ(qwen_moe.parameters, (std::vector<std::string>{"experts.gate_up_proj"}));
  EXPECT_FALSE(qwen_moe.router);

  // Phi-3's qkv_proj and gate_up_proj from a config.
  const std::string phi3 = (std::filesystem::temp_directory_path() / "batch55_phi3_config.json").string();
  std::ofstream(phi3) << R"({"model_type": "phi3", "vocab_size": 32064, "hidden_size": 3072, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 8192, "max_position_embeddings": 4096})";
  const peft_targets phi = targets(phi3, "all-linear");
  EXPECT_EQ(phi.modules, (std::vector<std::string>{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}));
  EXPECT_FALSE(phi.fused_wider);
  EXPECT_TRUE(targets(phi3, "q,v,up").fused_wider);
  std::filesystem::remove(phi3);

  // Notes say what peft runs otherwise: the experts' target_parameters, the router it cannot name,
  // and torchtitan's own LoRA modules (its LM head adapter included).
  training_setup moe = batch55_setup(batch55_configs + "olmoe-1b-7b.json", training_framework::hf, {}, 8);
  moe.global_batch = 8;
  const nlohmann::json mp = batch55_plan(moe);
  ASSERT_TRUE(mp["peft"].is_object());
  EXPECT_EQ(batch55_names(mp["peft"]["lora_config"]["target_parameters"]),
            (std::vector<std::string>{"experts.gate_up_proj", "experts.down_proj"}));
  EXPECT_NE(batch55_note(mp, "through target_parameters"), "");
  EXPECT_NE(batch55_note(mp, "adapts each MoE router"), "");
  const nlohmann::json titan =
      batch55_plan(batch55_setup("llama-3.2-1b", training_framework::fsdp2, {{"--checkpointing", "on"}}, 8));
  ASSERT_TRUE(titan["peft"].is_object());
  const std::vector<std::string> titan_modules = batch55_names(titan["peft"]["lora_config"]["target_modules"]);
  EXPECT_EQ(titan_modules.back(), "lm_head");
  EXPECT_NE(batch55_note(titan, "--framework fsdp2 runs its own LoRA modules (torchtitan)"), "");
}

// The schema lists the peft object's keys with their types (schema.outputs validates the plans).
TEST(batch55_peft, the_schema_lists_the_peft_object) {
  std::ifstream in(std::string(TILETUNE_SOURCE_DIR) + "/schemas/batch.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(in);
  ASSERT_TRUE(schema["properties"].contains("peft"));
  nlohmann::json object;
  for (const auto& alt : schema["properties"]["peft"]["oneOf"])
    if (alt.value("type", "") == "object") object = alt;
  ASSERT_TRUE(object.is_object());
  training_setup s = batch55_setup(batch55_configs + "olmoe-1b-7b.json", training_framework::hf, {}, 8);
  s.global_batch = 8;
  const nlohmann::json peft = batch55_plan(s)["peft"];
  ASSERT_TRUE(peft.is_object());
  for (const auto& [key, value] : peft.items()) EXPECT_TRUE(object["properties"].contains(key)) << key;
  for (const auto& [key, value] : peft["lora_config"].items())
    EXPECT_TRUE(object["properties"]["lora_config"]["properties"].contains(key)) << key;
  EXPECT_TRUE(object["properties"]["get_peft_model"]["properties"].contains("autocast_adapter_dtype"));
}

// `batch --framework fsdp2 --world-size 16 --expert-parallel 8` on Mixtral: each GPU holds 1 of 8
// experts, which neither the Trainer nor a ZeRO config runs. Before, the plan shipped a ZeRO-3
// DeepSpeed config (and hf_training_args.deepspeed) sharding every expert, with no note; tensor,
// pipeline and context parallelism emitted none, with a note.
TEST(batch55_experts, an_expert_parallel_plan_emits_no_deepspeed_config) {
  auto plan = [](const char* ep) {
    training_setup s = batch55_setup(batch55_configs + "mixtral-8x7b.json", training_framework::fsdp2,
                                     {{"--expert-parallel", ep}, {"--checkpointing", "on"}}, 0, quantize_kind::none, 16);
    s.global_batch = 128;
    return batch55_plan(s);
  };
  const nlohmann::json split = plan("8");
  ASSERT_FALSE(split["recommendation"].is_null());
  EXPECT_EQ(split["setup"]["expert_parallel"], 8);
  EXPECT_TRUE(split["deepspeed"].is_null()) << split["deepspeed"];
  EXPECT_FALSE(split["hf_training_args"].contains("deepspeed"));
  const std::string note = batch55_note(split, "hf_training_args describe no expert parallelism");
  EXPECT_NE(note.find("1/8 of them a GPU"), std::string::npos) << note;
  // (nor the pure-bf16 note, which is about a precision DeepSpeed lacks)
  EXPECT_EQ(batch55_note(split, "DeepSpeed's bf16 mode keeps fp32 master weights"), "");
  // Without expert parallelism the ZeRO-3 config stands, and no such note.
  const nlohmann::json whole = plan("1");
  ASSERT_TRUE(whole["deepspeed"].is_object());
  EXPECT_EQ(whole["deepspeed"]["zero_optimization"]["stage"], 3);
  EXPECT_EQ(batch55_note(whole, "describe no expert parallelism"), "");
}

// Each row's accumulation gives the global batch nearest the asked one, a tie going to the larger.
// Before, it was ceil(floor(G / dp) / micro), rounding down from floor(G / dp): 31 on 8 GPUs at
// micro-batch 1 trained 24 (-23%) where 32 (+3%) was reachable; 24 on 16 GPUs trained 16.
TEST(batch55_accumulation, each_row_reaches_the_global_batch_nearest_the_asked_one) {
  auto gpt2 = [](int world, std::int64_t global, std::optional<std::int64_t> micro) {
    training_setup s = batch55_setup("gpt2", training_framework::hf, {{"--checkpointing", "off"}}, 0,
                                     quantize_kind::none, world);
    s.global_batch = global;
    s.micro_batch = micro;
    return plan_batch(s, find_preset("h100-sxm"));
  };
  const batch_plan p31 = gpt2(8, 31, 1);
  ASSERT_TRUE(p31.recommended);
  const batch_candidate& r = p31.candidates[*p31.recommended];
  EXPECT_EQ(r.grad_accum_steps, 4);
  EXPECT_EQ(r.effective_global_batch, 32);
  std::string note;
  for (const auto& n : p31.notes)
    if (n.find("cannot be reached exactly") != std::string::npos) note = n;
  EXPECT_NE(note.find("a global batch of 32 (+3.2%): micro-batch 1 x accumulation 4 x 8 rank(s)"), std::string::npos)
      << note;
  const batch_plan p24 = gpt2(16, 24, std::nullopt);  // 16 and 32 are 8 away: the larger
  ASSERT_TRUE(p24.recommended);
  EXPECT_EQ(p24.candidates[*p24.recommended].effective_global_batch, 32);
  // Every row, whatever its micro-batch: no other accumulation comes nearer.
  for (const auto& [world, global] : {std::pair{8, 30}, std::pair{8, 31}, std::pair{16, 24}, std::pair{4, 257}}) {
    const batch_plan p = gpt2(world, global, std::nullopt);
    for (const auto& c : p.candidates) {
      const std::int64_t step = c.micro_batch * world, off = std::llabs(c.effective_global_batch - global);
      EXPECT_EQ(c.effective_global_batch, c.grad_accum_steps * step);
      EXPECT_LT(off, std::llabs((c.grad_accum_steps + 1) * step - global)) << c.micro_batch << " " << global;
      if (c.grad_accum_steps > 1) {
        EXPECT_LE(off, std::llabs((c.grad_accum_steps - 1) * step - global)) << c.micro_batch << " " << global;
      }
    }
  }
  // The rule itself, at the tester's sizes: 65,536 GPUs and 100,000,000 samples.
  EXPECT_EQ(micro_batches_per_step(100'000'000, 65536, 1, 1, 1), 1526);  // 100,007,936, not 99,942,400
  EXPECT_EQ(micro_batches_per_step(100'000'000, 65536, 4, 1, 1), 381);   // 99,876,864, not 100,139,008
  EXPECT_EQ(micro_batches_per_step(100'000'000, 65536, 6, 1, 1), 254);
  EXPECT_EQ(micro_batches_per_step(31, 8, 3, 1, 1), 1);  // 24 is 7 away, 48 17
  EXPECT_EQ(micro_batches_per_step(6, 1, 4, 1, 1), 2);   // 4 and 8 both 2 away: the larger
  EXPECT_EQ(micro_batches_per_step(3, 8, 1, 1, 1), 1);   // at least one
  EXPECT_EQ(micro_batches_per_step(0, 8, 4, 1, 1), 1);   // no --global-batch: one micro-batch
  // Megatron-LM's interleaved schedule: the nearest multiple of P.
  EXPECT_EQ(micro_batches_per_step(41, 1, 1, 4, 2), 40);
  EXPECT_EQ(micro_batches_per_step(42, 1, 1, 4, 2), 44);
  EXPECT_EQ(micro_batches_per_step(1, 1, 1, 4, 2), 4);
  EXPECT_EQ(micro_batches_per_step(0, 1, 1, 4, 2), 4);
}
