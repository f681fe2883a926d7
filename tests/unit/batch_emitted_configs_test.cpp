// What `batch` emits for a trainer to run (hf_training_args, model_load, deepspeed, their notes) and
// how its JSON labels the figures: each runs or says what was planned. The expected values are the
// setups' own (the flag given, the schema's text, the pipeline's arithmetic), not the planner's output.
#include <algorithm>
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_precision.hpp"

using namespace tiletune;

namespace {
training_setup configs_setup(training_framework f, const std::map<std::string, std::string>& given,
                             const char* model = "llama-3.2-1b", int world = 1) {
  training_setup s;
  s.model = load_model(model);
  s.seq_len = 2048;
  s.world_size = world;
  apply_framework(f, given, true, s);
  validate(s);
  return s;
}
nlohmann::json configs_plan(const training_setup& s) {
  return to_json(plan_batch(s, find_preset("h100-sxm")), "cmd", "date");
}
bool configs_note(const nlohmann::json& plan, const std::string& text) {
  for (const auto& n : plan["notes"])
    if (n.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

// --attention eager plans transformers' eager attention, and from_pretrained loads SDPA unless told:
// model_load says attn_implementation "eager" where the framework loads the model through
// transformers; the frameworks that build their own model get a note saying what they run instead.
TEST(batch_configs, eager_attention_is_loaded_eager_where_transformers_loads_the_model) {
  for (const training_framework f : {training_framework::hf, training_framework::deepspeed, training_framework::composer}) {
    const nlohmann::json eager = configs_plan(configs_setup(f, {{"--attention", "eager"}}));
    ASSERT_FALSE(eager["model_load"].is_null()) << to_string(f);
    EXPECT_EQ(eager["model_load"].value("attn_implementation", ""), "eager") << to_string(f);
    EXPECT_FALSE(configs_plan(configs_setup(f, {}))["model_load"].contains("attn_implementation")) << to_string(f);
  }
  for (const training_framework f : {training_framework::fsdp2, training_framework::torchtune,
                                     training_framework::litgpt, training_framework::megatron}) {
    const nlohmann::json eager = configs_plan(configs_setup(f, {{"--attention", "eager"}, {"--checkpointing", "on"}}));
    EXPECT_FALSE(eager["model_load"].contains("attn_implementation")) << to_string(f);
    EXPECT_TRUE(configs_note(eager, "--attention eager: " + std::string(to_string(f)) + " builds its own model"))
        << to_string(f) << "\n" << eager["notes"].dump(1);
  }
}

// Every key the emitted configs and the pipeline's labelled stages carry is listed in
// schemas/batch.schema.json with its type (use_liger_kernel and liger_kernel_config were not).
TEST(batch_configs, the_schema_lists_every_key_the_configs_carry) {
  std::ifstream in(std::string(TILETUNE_SOURCE_DIR) + "/schemas/batch.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(in);
  auto object_schema = [&](const nlohmann::json& node) {
    if (node.contains("oneOf"))
      for (const auto& alt : node["oneOf"])
        if (alt.value("type", "") == "object") return alt;
    return node;
  };
  const nlohmann::json& props = schema["properties"];
  const std::map<std::string, nlohmann::json> sections = {
      {"hf_training_args", object_schema(props["hf_training_args"])},
      {"model_load", object_schema(props["model_load"])},
      {"pipeline_stages", props["memory"]["properties"]["pipeline_stages"]}};
  auto typed = [](const nlohmann::json& rule, const nlohmann::json& v) {
    if (rule.contains("const")) return rule["const"] == v;
    if (rule.contains("enum")) return std::find(rule["enum"].begin(), rule["enum"].end(), v) != rule["enum"].end();
    if (rule.contains("$ref")) return v.is_number();  // common.schema.json's numbers
    const std::string t = rule.value("type", "");
    return (t == "object" && v.is_object()) || (t == "boolean" && v.is_boolean()) || (t == "string" && v.is_string());
  };
  auto check = [&](const std::string& section, const nlohmann::json& emitted) {
    if (emitted.is_null()) return;
    const nlohmann::json& rules = sections.at(section);
    for (const auto& [key, value] : emitted.items()) {
      ASSERT_TRUE(rules["properties"].contains(key)) << section << "." << key << " is not in the schema";
      EXPECT_TRUE(typed(rules["properties"][key], value)) << section << "." << key << " = " << value.dump();
      if (rules["properties"][key].contains("properties")) {  // liger_kernel_config: its own keys, booleans
        for (const auto& [k, v] : value.items()) {
          EXPECT_TRUE(v.is_boolean()) << section << "." << key << "." << k;
        }
      }
    }
  };
  const std::vector<training_setup> setups = {
      configs_setup(training_framework::hf, {{"--loss", "fused"}}),
      configs_setup(training_framework::hf, {{"--attention", "eager"}, {"--zero", "2"}}, "llama-3.2-1b", 2),
      configs_setup(training_framework::deepspeed, {{"--loss", "fused"}, {"--zero", "3"}}, "llama-3.2-1b", 2),
      [] {
        training_setup s = configs_setup(training_framework::hf, {}, "llama-3.2-1b", 4);
        s.pipeline_parallel = 4;
        s.global_batch = 2;
        return s;
      }()};
  int liger = 0;
  for (const training_setup& s : setups) {
    const nlohmann::json plan = configs_plan(s);
    check("hf_training_args", plan["hf_training_args"]);
    check("model_load", plan["model_load"]);
    if (plan["memory"].contains("pipeline_stages")) check("pipeline_stages", plan["memory"]["pipeline_stages"]);
    liger += plan["hf_training_args"].contains("use_liger_kernel");
  }
  EXPECT_EQ(liger, 2);
}

// Under 1F1B the first stage holds min(P, m) micro-batches in flight, m the step's: memory's
// activation terms are the recommendation's (two of four stages' worth at m = 2, or one at m = 1),
// and pipeline_stages names the most (four), the last stage's and the micro-batches counted.
TEST(batch_configs, a_pipeline_plans_activations_are_the_recommendations) {
  training_setup s = configs_setup(training_framework::hf, {}, "llama-3.2-1b", 4);
  s.pipeline_parallel = 4;
  s.global_batch = 2;
  const nlohmann::json plan = configs_plan(s);
  ASSERT_FALSE(plan["recommendation"].is_null());
  const std::int64_t m = plan["recommendation"]["grad_accum_steps"].get<std::int64_t>();
  ASSERT_LT(m, 4);
  const nlohmann::json& stages = plan["memory"]["pipeline_stages"];
  EXPECT_EQ(stages["first_stage_micro_batches_in_flight"].get<double>(), static_cast<double>(m));
  EXPECT_EQ(stages["first_stage_most_micro_batches_in_flight"].get<double>(), 4.0);
  const memory_breakdown most = estimate_memory(s);
  EXPECT_EQ(stages["first_stage_most_activation_bytes_per_sample"], most.activation_bytes_per_sample);
  EXPECT_NEAR(plan["memory"]["activation_bytes_per_sample"].get<double>(),
              static_cast<double>(most.activation_bytes_per_sample) * static_cast<double>(m) / 4, 1);
  EXPECT_NEAR(plan["memory"]["checkpointed_activation_bytes_per_sample"].get<double>(),
              static_cast<double>(most.checkpointed_activation_bytes_per_sample) * static_cast<double>(m) / 4, 1);
  EXPECT_EQ(stages["last_stage_logits_bytes_per_sample"], most.other_stages.at(0).logits_bytes_per_sample);
  EXPECT_GT(stages["last_stage_logits_bytes_per_sample"].get<std::int64_t>(), 0);
  // Without a pipeline nothing changes.
  const nlohmann::json plain = configs_plan(configs_setup(training_framework::hf, {}));
  EXPECT_FALSE(plain["memory"].contains("pipeline_stages"));
  EXPECT_EQ(plain["memory"]["activation_bytes_per_sample"],
            estimate_memory(configs_setup(training_framework::hf, {})).activation_bytes_per_sample);
}

// torchtitan allows SDPA's cuDNN, flash and math kernels only (models/common/attention.py), and neither
// fused one takes fp32: its fp32 step runs the math kernel on its own modules, grouped-query or not.
// The plan had named torchtitan's modules (setup.modules, the note) while counting transformers'.
// The math kernel is SDPA's own, so torchtitan's modules less transformers' keep what they do with
// the fused kernel (its norms and rotary), and the plan's inventory is torchtitan's on math.
TEST(batch_configs, torchtitan_in_fp32_counts_its_own_modules_on_the_math_kernel) {
  const training_setup s = configs_setup(training_framework::fsdp2, {{"--precision", "fp32"}, {"--checkpointing", "on"}});
  ASSERT_LT(s.model.num_kv_heads, s.model.num_heads);
  EXPECT_EQ(layers_of(s), layer_impl::torchtitan);
  EXPECT_EQ(attention_kernel_of(s), attention_kernel::math);
  auto saved = [&](attention_kernel k, layer_impl l) {
    return inventory(s.model, s.seq_len, 4, false, k, false, s.loss, l, chunked_loss_of(s)).layer_saved;
  };
  const double own_math = saved(attention_kernel::math, layer_impl::torchtitan);
  EXPECT_EQ(plan_inventory(s).layer_saved, own_math);
  const double modules_fused = saved(attention_kernel::fused, layer_impl::torchtitan) -
                               saved(attention_kernel::fused, layer_impl::transformers);
  EXPECT_NE(modules_fused, 0);
  EXPECT_EQ(own_math - saved(attention_kernel::math, layer_impl::transformers), modules_fused);
  // As many key-value heads as query heads: still the math kernel (no memory-efficient one allowed),
  // which repeats nothing and keeps v as it is: what the grouped model keeps with its k and v repeated.
  training_setup mha = s;
  mha.model.num_kv_heads = mha.model.num_heads;
  EXPECT_EQ(attention_kernel_of(mha), attention_kernel::math);
  EXPECT_EQ(estimate_memory(mha).activation_bytes_per_sample, estimate_memory(s).activation_bytes_per_sample);
  // transformers' modules under hf keep the memory-efficient kernel for the same equal heads.
  training_setup hf_mha = configs_setup(training_framework::hf, {{"--precision", "fp32"}});
  hf_mha.model.num_kv_heads = hf_mha.model.num_heads;
  EXPECT_EQ(attention_kernel_of(hf_mha), attention_kernel::fused);
  const nlohmann::json plan = configs_plan(s);
  EXPECT_EQ(plan["setup"]["modules"], "torchtitan");
  EXPECT_TRUE(configs_note(plan, "in fp32 its math kernel")) << plan["notes"].dump(1);
}

// every-N checkpoints the layers counted N, 2N, ... (torchtitan's ac_freq): past the model's layers
// none would be, and the plan had acted as if one were. Refused, naming the value and the layers.
TEST(batch_configs, checkpointing_every_n_past_the_layers_is_refused) {
  training_setup s = configs_setup(training_framework::hf, {{"--checkpointing", "every-16"}});
  ASSERT_EQ(s.model.num_layers, 16);
  EXPECT_DOUBLE_EQ(recompute_share(s, true), 1.0 / 16);
  try {
    configs_setup(training_framework::hf, {{"--checkpointing", "every-100"}});
    ADD_FAILURE() << "every-100 on 16 layers was accepted";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("every-100 is more than llama-3.2-1b's 16 layers"), std::string::npos)
        << e.what();
  }
  // Under a pipeline, the layers a stage holds.
  s = configs_setup(training_framework::hf, {{"--checkpointing", "every-8"}}, "llama-3.2-1b", 4);
  s.pipeline_parallel = 4;
  try {
    validate(s);
    ADD_FAILURE() << "every-8 on stages of 4 layers was accepted";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("the 4 layers a pipeline stage holds"), std::string::npos) << e.what();
  }
}

// Megatron-LM's --optimizer sgd keeps momentum (--sgd-momentum defaults to 0.9): a plan of plain SGD
// under it says how to run what was planned, and sgd-momentum needs no such note.
TEST(batch_configs, megatrons_sgd_has_momentum_unless_told) {
  for (const optimizer_kind o : {optimizer_kind::sgd, optimizer_kind::sgd_momentum}) {
    training_setup s;
    s.model = load_model("llama-3.2-1b");
    s.seq_len = 2048;
    s.optimizer = o;
    apply_framework(training_framework::megatron, {}, true, s);
    bool said = false;
    for (const auto& n : s.framework_notes) said = said || n.find("--sgd-momentum 0") != std::string::npos;
    EXPECT_EQ(said, o == optimizer_kind::sgd) << to_string(o);
  }
}
