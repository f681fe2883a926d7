// Round 55 (tester F) through the binary: a config's _name_or_path reaches the terminal with its
// control bytes escaped (F4); a QLoRA plan's JSON carries the peft settings it planned (F2); an
// inexact global batch runs the nearest reachable one (F5); an expert-parallel plan emits no
// DeepSpeed config (F6).
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

using namespace tiletune_test;

namespace {
// A Llama config whose _name_or_path carries escape sequences, a newline that forges a note, a
// carriage return, a tab and DEL.
std::string batch55_hostile_config() {
  const fs::path path = tmp_dir() / "batch55_name_escape.json";
  std::ofstream(path) << R"({"_name_or_path": "evil\u001b[31mRED\u001b[0m\nnote: fake line\rX\tY\u007fZ",
    "model_type": "llama", "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 4,
    "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 5632,
    "max_position_embeddings": 2048})";
  return path.string();
}
}  // namespace

// Before, the table's first line carried the raw bytes: the terminal turned red, "note: fake line"
// stood on a line of its own and "\r" overwrote it.
TEST(batch55_cli, a_config_name_reaches_the_terminal_escaped) {
  const std::string config = batch55_hostile_config();
  const result r = run({"batch", "--model", config, "--gpu", "h100-sxm", "--no-db", "--global-batch", "8"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  EXPECT_EQ(r.out.find('\t'), std::string::npos);
  EXPECT_EQ(r.out.find('\x7f'), std::string::npos);
  EXPECT_EQ(r.out.find("\nnote: fake line"), std::string::npos) << r.out.substr(0, 300);
  const std::string first = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(first.rfind("evil\\x1b[31mRED\\x1b[0m\\x0anote: fake line\\x0dX\\x09Y\\x7fZ (", 0), 0u) << first;
  // The JSON keeps the name as the file has it (its own escapes).
  const result j = run({"batch", "--model", config, "--gpu", "h100-sxm", "--no-db", "--global-batch", "8", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["model"]["name"], "evil\x1b[31mRED\x1b[0m\nnote: fake line\rX\tY\x7fZ");
}

// The tester's commands: the JSON of `--lora-rank 16 --quantize nf4` says how peft keeps its bf16
// adapters; the table of `--world-size 8 --global-batch 31 --micro-batch 1` runs 32, not 24.
TEST(batch55_cli, the_plans_emit_what_they_planned) {
  const result q = run({"batch", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--no-db", "--global-batch", "64",
                        "--lora-rank", "16", "--quantize", "nf4", "--json"});
  ASSERT_EQ(q.code, 0) << q.err;
  const nlohmann::json plan = nlohmann::json::parse(q.out);
  ASSERT_TRUE(plan.contains("peft")) << "no peft object";
  EXPECT_EQ(plan["peft"]["lora_config"]["r"], 16);
  EXPECT_EQ(plan["peft"]["get_peft_model"]["autocast_adapter_dtype"], false);
  EXPECT_EQ(plan["peft"]["lora_config"]["target_modules"].size(), 7u);

  const result g = run({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--no-db", "--world-size", "8",
                        "--global-batch", "31", "--micro-batch", "1", "--checkpointing", "off"});
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(g.out.find("recommended (*): micro-batch 1, gradient accumulation 4, global batch 32,"), std::string::npos)
      << g.out;
}
