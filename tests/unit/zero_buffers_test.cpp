// ZeRO's working buffers beside the sharded states: stage 3's gathered units and DeepSpeed's
// gradient reduce buckets, counted in the peak, and the DeepSpeed settings that hold DeepSpeed to
// them. Llama-3-8B: 8,030,261,248 parameters, hidden 4,096, a block 218,112,000 parameters, the
// embedding and the LM head 128,256 x 4,096 = 525,336,576 each.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/train/training_framework.hpp"
#include "core/train/training_plan.hpp"
#include "core/train/zero_buffers.hpp"

using namespace tiletune;

namespace {
constexpr std::int64_t llama_parameters = 8'030'261'248;
training_setup llama(training_framework f, int zero, int world) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = precision::bf16_mixed;
  s.framework = f;
  s.zero_stage = zero;
  s.world_size = world;
  s.overlap_comm = true;
  return s;
}
}  // namespace

// Stage 3 on 8 GPUs: the bf16 shard 2P / 8 and two units whole, the embedding the largest:
// 2 x 2 x 525,336,576 = 2,101,346,304 bytes. Before, the plan held the shard alone.
TEST(zero_buffers, stage_3_holds_two_gathered_units_beside_the_shard) {
  const training_setup s = llama(training_framework::fsdp2, 3, 8);
  EXPECT_EQ(gathered_unit_parameters(s), 525'336'576.0);
  EXPECT_EQ(gathered_weights_bytes(s), 2'101'346'304LL);
  const memory_breakdown m = estimate_memory(s);
  EXPECT_EQ(m.weights_bytes, 2 * llama_parameters / 8 + 2'101'346'304LL);
  // However many GPUs shard it, the gathered units stay: the weights never fall below them.
  EXPECT_EQ(estimate_memory(llama(training_framework::fsdp2, 3, 1024)).weights_bytes, 2 * llama_parameters / 1024 + 2'101'346'304LL);
  // Stage 2 keeps the weights whole, and gathers nothing.
  EXPECT_EQ(estimate_memory(llama(training_framework::hf, 2, 8)).weights_bytes, 2 * llama_parameters);
}

// DeepSpeed (hf's Trainer or deepspeed) allocates its reduce buckets every backward: at the emitted
// reduce_bucket_size, 4,096^2 = 16,777,216 elements of bf16, two with overlap_comm at stages 1 and
// 2 (67,108,864 bytes), one at stage 3 or without overlap (33,554,432). FSDP and stage 0 have none.
// DeepSpeed's own default, 5e8 elements, would hold 2 GB: the config sets the size the plan counts.
TEST(zero_buffers, deepspeeds_reduce_buckets_are_counted_at_the_size_its_config_sets) {
  EXPECT_EQ(deepspeed_bucket_bytes(llama(training_framework::hf, 2, 8)), 67'108'864);
  EXPECT_EQ(deepspeed_bucket_bytes(llama(training_framework::deepspeed, 1, 8)), 67'108'864);
  EXPECT_EQ(deepspeed_bucket_bytes(llama(training_framework::deepspeed, 3, 8)), 33'554'432);
  training_setup serial = llama(training_framework::deepspeed, 2, 8);
  serial.overlap_comm = false;
  EXPECT_EQ(deepspeed_bucket_bytes(serial), 33'554'432);
  EXPECT_EQ(deepspeed_bucket_bytes(llama(training_framework::fsdp2, 3, 8)), 0);
  EXPECT_EQ(deepspeed_bucket_bytes(llama(training_framework::hf, 0, 8)), 0);
  // In the peak: every phase holds them.
  const training_setup s = llama(training_framework::hf, 2, 8);
  memory_breakdown m = estimate_memory(s);
  EXPECT_EQ(m.deepspeed_bucket_bytes, 67'108'864);
  const std::int64_t with = m.peak_allocated_bytes(1, true);
  m.deepspeed_bucket_bytes = 0;
  EXPECT_EQ(with - m.peak_allocated_bytes(1, true), 67'108'864);

  nlohmann::json zero = {{"stage", 2}};
  add_deepspeed_zero_settings(s, zero);
  EXPECT_EQ(zero["reduce_bucket_size"], 16'777'216);
  EXPECT_FALSE(zero.contains("stage3_prefetch_bucket_size"));
}

// Stage 3's config bounds what DeepSpeed keeps gathered to the two units the plan counts: a unit
// prefetched, two live, and parameters kept for reuse only within a unit (DeepSpeed's default
// stage3_max_reuse_distance, 1e9 elements, keeps up to 2 GB of them at the turn into backward).
TEST(zero_buffers, the_stage_3_config_holds_deepspeed_to_two_units) {
  nlohmann::json zero = {{"stage", 3}};
  add_deepspeed_zero_settings(llama(training_framework::deepspeed, 3, 8), zero);
  EXPECT_EQ(zero["reduce_bucket_size"], 16'777'216);
  EXPECT_EQ(zero["stage3_prefetch_bucket_size"], 525'336'576);
  EXPECT_EQ(zero["stage3_max_live_parameters"], 2 * 525'336'576LL);
  EXPECT_EQ(zero["stage3_max_reuse_distance"], 525'336'576);
  nlohmann::json none = {{"stage", 0}};
  add_deepspeed_zero_settings(llama(training_framework::deepspeed, 0, 8), none);
  EXPECT_EQ(none, nlohmann::json({{"stage", 0}}));
}
