// Internal to src/core/train: what LoRA adds to a training step beside the
// frozen base (lora_step.cpp): the adapters' GEMMs and their memory-bound path.
#pragma once
#include <vector>

#include "core/train/training_plan.hpp"

namespace tiletune {

// True where peft runs the adapters in fp32: its adapters are fp32
// (get_peft_model's autocast_adapter_dtype upcasts 16-bit ones) and peft
// casts each adapted linear's input to the adapter's dtype, so without
// torch.autocast (pure bf16, fp32) the adapter GEMMs are fp32 GEMMs.
bool lora_adapters_run_fp32(const training_setup& s);

// The six GEMMs of every adapter per step: A (tokens x r x in) and B (tokens
// x out x r) forward, B's data- and weight-gradient, A's data- and
// weight-gradient; A and B again in recompute.
void add_lora_gemms(const training_setup& s, std::int64_t tokens, bool checkpointing, std::vector<step_gemm>& out);

struct lora_path_cost {
  double bytes = 0;    // moved by the adapter path's memory-bound kernels per micro-step
  double kernels = 0;  // their launches, the adapter GEMMs' included
};
lora_path_cost lora_path(const training_setup& s, std::int64_t tokens, bool checkpointing);

}  // namespace tiletune
