// --optimizer lion (issue 37): Lion (Chen et al. 2023, "Symbolic Discovery of Optimization
// Algorithms") keeps one state, the momentum, per parameter, in the dtype Adam's states would have;
// its step reads the weight, gradient and momentum and writes the weight and momentum. Expected
// figures are arithmetic on Llama-3-8B's published 8,030,261,248 parameters, written out below.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/training_calibration.hpp"
#include "core/train/training_plan.hpp"
#include "llama3_8b.hpp"

using namespace tiletune;

namespace {
training_setup llama_lion(precision p, optimizer_kind o) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = p;
  s.optimizer = o;
  s.grad_clip = false;  // the optimizer's own bytes alone (gradient_traffic_test.cpp counts clipping)
  return s;
}
}  // namespace

TEST(lion, parses_and_a_bad_name_lists_it) {
  EXPECT_EQ(parse_optimizer("lion"), optimizer_kind::lion);
  EXPECT_EQ(to_string(optimizer_kind::lion), "lion");
  try {
    parse_optimizer("lions");
    ADD_FAILURE() << "lions parsed";
  } catch (const usage_error& e) {
    EXPECT_STREQ(e.what(), "--optimizer 'lions' is not one of adamw, adamw-8bit, adafactor, sgd, sgd-momentum, lion");
  }
}

// One state where AdamW keeps two: bf16-mixed, fp32 states: 4 x 8,030,261,248 = 32,121,044,992
// bytes (AdamW: 8 x = 64,242,089,984); pure bf16, bf16 states: 2 x = 16,060,522,496; ZeRO-3 on 8
// GPUs adds the fp32 master and shards both: (4 + 4) x 8,030,261,248 / 8 = 8,030,261,248.
TEST(lion, keeps_one_state_per_parameter_in_adams_dtype) {
  EXPECT_EQ(estimate_memory(llama_lion(precision::bf16_mixed, optimizer_kind::adamw)).optimizer_bytes,
            64'242'089'984LL);
  EXPECT_EQ(estimate_memory(llama_lion(precision::bf16_mixed, optimizer_kind::lion)).optimizer_bytes,
            4 * llama3_8b_parameters);
  EXPECT_EQ(estimate_memory(llama_lion(precision::bf16, optimizer_kind::lion)).optimizer_bytes, 16'060'522'496LL);
  training_setup z = llama_lion(precision::bf16_mixed, optimizer_kind::lion);
  z.zero_stage = 3;
  z.world_size = 8;
  EXPECT_EQ(estimate_memory(z).optimizer_bytes, llama3_8b_parameters);
  // The weights and gradients are the precision's, as for AdamW.
  const memory_breakdown adam = estimate_memory(llama_lion(precision::bf16_mixed, optimizer_kind::adamw));
  const memory_breakdown lion = estimate_memory(llama_lion(precision::bf16_mixed, optimizer_kind::lion));
  EXPECT_EQ(lion.weights_bytes, adam.weights_bytes);
  EXPECT_EQ(lion.gradients_bytes, adam.gradients_bytes);
}

// Its step is memory-bound: 5 fp32 reads and writes a parameter under bf16-mixed (weight, gradient
// and momentum read; weight and momentum written), 5 x 4 x 8,030,261,248 = 160,605,224,960 bytes, at
// the H100's 3,350 GB/s times the share elementwise kernels reach (profiles/batch_calibration.json);
// AdamW moves 7 x 4 bytes a parameter, so Lion's step takes 5/7 of its time.
TEST(lion, steps_five_state_sized_accesses_a_parameter) {
  const device_spec& h100 = find_preset("h100-sxm");
  const double bandwidth = h100.memory_bandwidth_gbs * 1e9 * batch_calibration_constants().elementwise_bandwidth_share;
  const step_time lion = predict_step(llama_lion(precision::bf16_mixed, optimizer_kind::lion), h100, 1, true);
  const step_time adam = predict_step(llama_lion(precision::bf16_mixed, optimizer_kind::adamw), h100, 1, true);
  EXPECT_NEAR(lion.optimizer_ms, 160'605'224'960.0 / bandwidth * 1e3, 1e-6);
  EXPECT_NEAR(lion.optimizer_ms / adam.optimizer_ms, 5.0 / 7.0, 1e-9);
}
