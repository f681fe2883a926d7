// Internal to the batch command: its options as the flags set them (batch_options.cpp declares the
// flags; batch_command.cpp plans from them).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "cli/commands.hpp"
#include "core/train/training_plan.hpp"

namespace tiletune::cli {

struct batch_options {
  std::string model;
  std::optional<std::int64_t> seq_len;  // none: min(2048, the model's positions)
  std::optional<std::string> gpu;
  std::optional<int> device;
  // The framework whose defaults fill the options below left unset (hf: today's plan).
  std::string framework = "hf";
  std::optional<std::string> precision;  // none: the framework's (hf: bf16-mixed where the GPU has bf16)
  std::string optimizer = "adamw";
  bool optimizer_in_backward = false;
  std::string offload = "none";
  std::string quantize = "none";
  std::string fp8 = "none";
  bool fp8_all_gather = false;
  bool paged_optimizer = false;
  int context_parallel = 1;
  std::optional<double> pcie_gbs, host_memory_gbs;
  std::optional<std::string> attention, loss, checkpointing;  // none: the framework's
  std::optional<std::string> overlap_comm;                     // none: the framework's
  std::optional<std::string> grad_clip;                        // none: the framework's
  std::optional<std::int64_t> global_batch;
  std::optional<std::int64_t> micro_batch;
  std::optional<int> zero;
  int world_size = 1;
  int gpus_per_node = 8;
  double network_gbs = 50;
  bool gpus_per_node_given = false, network_gbs_given = false;  // (their defaults are values: set by the callback)
  std::optional<double> link_gbs;
  int lora_rank = 0;
  std::optional<double> lora_dropout;
  std::optional<std::string> lora_targets, adapter_dtype;
  std::optional<int> expert_parallel;
  int tensor_parallel = 1;
  bool sequence_parallel = false;
  int pipeline_parallel = 1;
  int virtual_stages = 1;
  std::int64_t packing = 0;
  double safety_margin = 0.05;
  std::string out;
  bool json = false;
  bool quiet = false;
  bool predict = false;
  std::string db;  // --db: empty, the default file where it exists
  bool no_db = false;
};

// ", tensor parallel 2 (...), 4 pipeline stages (...)" for the plan's first line; empty without them.
std::string parallelism_summary(const training_setup& s);

// The flags of what is trained, how, and on how many GPUs.
void add_training_options(CLI::App* cmd, batch_options* o);

}  // namespace tiletune::cli
