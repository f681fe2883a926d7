#pragma once
// Training steps recorded as JSON lines (profiles/measured/*/batch, profiles/host_time,
// profiles/replays), as the unit tests read them: one row a configuration, with the fields
// scripts/validate/validate_batch.py writes (model, seq, mb, precision, ckpt, lora).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/train/training_plan.hpp"

namespace tiletune::rows {

// The rows of a JSON-lines file under the source tree.
inline std::vector<nlohmann::json> read(const std::string& path) {
  std::ifstream in(std::string(TILETUNE_SOURCE_DIR) + "/" + path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

// A row's model: a preset, the calibration set's "tinyllama-11b", or
// scripts/validate/validate_batch.py's llama-tied-1b (the one model there that is not a preset).
inline model_spec model(const std::string& name) {
  if (name == "tinyllama-11b") return load_model("tinyllama-1.1b");
  if (name != "llama-tied-1b") return load_model(name);
  const std::string path = ::testing::TempDir() + "rows_llama_tied_1b.json";
  std::ofstream(path) << R"({"model_type": "llama", "vocab_size": 128256, "hidden_size": 2048,
    "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192,
    "max_position_embeddings": 131072, "tie_word_embeddings": true})";
  model_spec m = load_model(path);
  std::remove(path.c_str());
  return m;
}

// The step a row ran: AdamW, SDPA, its checkpointing, no gradient clipping (the recording's loop
// runs backward and opt.step()), and a global batch of one micro-batch so that the measured
// micro-batch is a candidate.
inline training_setup setup(const nlohmann::json& row) {
  training_setup s;
  s.model = model(row["model"].get<std::string>());
  s.seq_len = row.value("seq", 512);
  s.prec = parse_precision(row["precision"].get<std::string>());
  s.optimizer = optimizer_kind::adamw;
  s.attention = attention_impl::flash;
  s.checkpointing = row["ckpt"].get<bool>() ? checkpoint_policy::on : checkpoint_policy::off;
  s.lora_rank = row.value("lora", 0);
  s.lora_dropout = row.value("lora_dropout", 0.0);
  s.global_batch = row.value("mb", 1);
  s.grad_clip = false;
  return s;
}

inline std::string name(const nlohmann::json& row) {
  return row["model"].get<std::string>() + " mb " + std::to_string(row.value("mb", 1)) + " " +
         row["precision"].get<std::string>() + (row["ckpt"].get<bool>() ? " ckpt" : "") + " lora " +
         std::to_string(row.value("lora", 0));
}

// The plan's candidate for the row's micro-batch and checkpointing without
// accumulation, or nullptr.
inline const batch_candidate* candidate(const batch_plan& plan, const nlohmann::json& row) {
  for (const auto& c : plan.candidates)
    if (c.micro_batch == row["mb"].get<std::int64_t>() && c.checkpointing == row["ckpt"].get<bool>() &&
        c.grad_accum_steps == 1)
      return &c;
  return nullptr;
}

}  // namespace tiletune::rows
