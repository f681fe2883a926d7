// What each framework moves to handle the gradients, outside the GEMMs and the optimizer's update
// (gradient_traffic.hpp), and that the step's time carries it. Before, every mixed-precision plan
// counted AMP's cast back (6 bytes a trainable parameter each micro-step) and nothing else: no
// clipping, no DDP bucket copies, none of DeepSpeed's or Megatron-LM's fp32 copies. Expected figures
// are the byte counts the header's comments derive, and Llama-3-8B's 8,030,261,248 parameters.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/gradient_traffic.hpp"
#include "core/train/training_calibration.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_plan.hpp"

using namespace tiletune;

namespace {
constexpr double llama_parameter_count = 8'030'261'248.0;

training_setup traffic_setup(training_framework f, precision p, int zero, int world, bool clip) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = p;
  s.framework = f;
  s.zero_stage = zero;
  s.world_size = world;
  s.grad_clip = clip;
  return s;
}

void expect_traffic(const training_setup& s, double micro_step, double boundary, double step, const char* what) {
  const gradient_traffic t = gradient_traffic_of(s);
  EXPECT_EQ(t.micro_step, micro_step) << what;
  EXPECT_EQ(t.boundary, boundary) << what;
  EXPECT_EQ(t.step, step) << what;
}
}  // namespace

TEST(gradient_traffic, each_framework_moves_its_own_bytes) {
  using f = training_framework;
  const auto bf16_mixed = precision::bf16_mixed, fp16_mixed = precision::fp16_mixed, bf16 = precision::bf16;
  // PyTorch AMP: the cast back (2 + 4) every micro-step; clip_grad_norm_ over fp32 gradients (3 x 4);
  // DDP's bucket copy in and out (4 x 4) once several ranks all-reduce; GradScaler's unscale (4 + 4).
  expect_traffic(traffic_setup(f::hf, bf16_mixed, 0, 1, true), 6, 0, 12, "hf, one GPU");
  expect_traffic(traffic_setup(f::hf, bf16_mixed, 0, 1, false), 6, 0, 0, "hf, no clipping");
  expect_traffic(traffic_setup(f::hf, bf16_mixed, 0, 8, true), 6, 16, 12, "hf, DDP on 8");
  expect_traffic(traffic_setup(f::hf, fp16_mixed, 0, 1, true), 6, 0, 8 + 12, "hf, fp16-mixed");
  expect_traffic(traffic_setup(f::hf, bf16, 0, 8, true), 0, 8, 6, "hf, pure bf16 on 8");
  // DeepSpeed's 16-bit mode: no cast back; 16-bit buckets (stage 0's flatten and copy back, stage
  // 1's copy at the step, stages 2 and 3's every micro-step); 22 bytes of fp32 handling on the shard.
  expect_traffic(traffic_setup(f::deepspeed, bf16_mixed, 0, 8, false), 0, 8, 22, "deepspeed stage 0");
  expect_traffic(traffic_setup(f::deepspeed, bf16_mixed, 1, 8, true), 0, 4, 22, "deepspeed stage 1");
  expect_traffic(traffic_setup(f::hf, bf16_mixed, 2, 8, true), 4, 0, 22, "hf under ZeRO-2");
  expect_traffic(traffic_setup(f::deepspeed, bf16_mixed, 3, 8, true), 4, 0, 22, "deepspeed stage 3");
  expect_traffic(traffic_setup(f::deepspeed, precision::fp32, 0, 1, true), 0, 0, 12, "deepspeed fp32");
  // Megatron-LM: the GEMMs accumulate into its fp32 buffer, reduced in place; main params back to
  // bf16 (4 + 2) and the norm (4); --fp16 copies and unscales the gradients too (6 + 8).
  expect_traffic(traffic_setup(f::megatron, bf16_mixed, 0, 8, true), 0, 0, 6 + 4, "megatron --bf16");
  expect_traffic(traffic_setup(f::megatron, fp16_mixed, 1, 8, true), 0, 0, 6 + 14 + 4, "megatron --fp16");
  // FSDP2 (torchtitan): bf16 gradients into an fp32 reduce-scatter input (2 + 4), no autocast.
  expect_traffic(traffic_setup(f::fsdp2, bf16_mixed, 3, 8, true), 6, 0, 12, "fsdp2");
  // torchtune's pure bf16 under FSDP2: the copy at bf16 (2 + 2), clipping off by default.
  expect_traffic(traffic_setup(f::torchtune, bf16, 3, 8, false), 4, 0, 0, "torchtune");
  // FSDP1 under AMP (LitGPT, Composer): the cast back, then the cast to the 16-bit reduce (4 + 2);
  // in fp32 it reduce-scatters the flat gradient itself.
  expect_traffic(traffic_setup(f::litgpt, bf16_mixed, 3, 8, false), 12, 0, 0, "litgpt FSDP1");
  expect_traffic(traffic_setup(f::composer, precision::fp32, 3, 8, false), 0, 0, 0, "composer fp32 FSDP1");
  // LoRA: fp32 adapters under autocast are cast back; bf16 adapters are not.
  training_setup lora = traffic_setup(f::hf, bf16_mixed, 0, 1, false);
  lora.lora_rank = 16;
  expect_traffic(lora, 6, 0, 0, "LoRA, fp32 adapters");
  lora.adapters = adapter_dtype::bf16;
  expect_traffic(lora, 0, 0, 0, "LoRA, bf16 adapters");
}

// The step carries them. DeepSpeed ZeRO-1 on 8 GPUs: each rank steps P/8 parameters with AdamW's
// 7 x 4 bytes and DeepSpeed's 22, and copies all P 16-bit gradients into its bucket once a step
// (2 x 2, in the last micro-step's backward); ZeRO-2 makes that copy every micro-step.
TEST(gradient_traffic, the_step_time_carries_it) {
  const device_spec& h100 = find_preset("h100-sxm");
  const double bandwidth = h100.memory_bandwidth_gbs * 1e9 * batch_calibration_constants().elementwise_bandwidth_share;
  const training_setup z1 = traffic_setup(training_framework::deepspeed, precision::bf16_mixed, 1, 8, true);
  const step_time t1 = predict_step(z1, h100, 1, true);
  const double step_bytes = (28.0 + 22.0) * llama_parameter_count / 8;
  EXPECT_NEAR(t1.optimizer_ms, std::max(step_bytes / bandwidth * 1e3, t1.host_optimizer_ms), 1e-6);
  EXPECT_GT(step_bytes / bandwidth * 1e3, t1.host_optimizer_ms);
  EXPECT_NEAR(t1.gradient_boundary_ms, 4.0 * llama_parameter_count / bandwidth * 1e3, 1e-6);
  const training_setup z2 = traffic_setup(training_framework::deepspeed, precision::bf16_mixed, 2, 8, true);
  EXPECT_NEAR(predict_step(z2, h100, 1, true).memory_bound_bytes - t1.memory_bound_bytes, 4.0 * llama_parameter_count,
              1.0);
  // Clipping under AMP on one GPU: 12 more bytes a parameter at the step, nothing per micro-step.
  training_setup tiny = traffic_setup(training_framework::hf, precision::bf16_mixed, 0, 1, true);
  tiny.model = load_model("tinyllama-1.1b");
  const step_time clipped = predict_step(tiny, h100, 1, true);
  tiny.grad_clip = false;
  const step_time plain = predict_step(tiny, h100, 1, true);
  EXPECT_NEAR(clipped.optimizer_ms / plain.optimizer_ms, 40.0 / 28.0, 1e-9);
  EXPECT_EQ(clipped.memory_bound_bytes, plain.memory_bound_bytes);
}

// Each framework's default, and the step inside backward, which cannot clip: off by default there,
// refused when asked for.
TEST(gradient_traffic, clipping_defaults_to_the_frameworks_and_never_runs_inside_backward) {
  auto resolved = [](training_framework f, std::map<std::string, std::string> given, bool in_backward = false) {
    training_setup s;
    s.model = load_model("tinyllama-1.1b");
    s.optimizer_in_backward = in_backward;
    apply_framework(f, given, true, s);
    return s.grad_clip;
  };
  using f = training_framework;
  for (const auto fw : {f::hf, f::fsdp2, f::deepspeed, f::megatron}) EXPECT_TRUE(resolved(fw, {})) << to_string(fw);
  for (const auto fw : {f::torchtune, f::composer, f::litgpt}) EXPECT_FALSE(resolved(fw, {})) << to_string(fw);
  EXPECT_FALSE(resolved(f::hf, {{"--grad-clip", "off"}}));
  EXPECT_TRUE(resolved(f::composer, {{"--grad-clip", "on"}}));
  EXPECT_FALSE(resolved(f::hf, {}, true));
  EXPECT_FALSE(resolved(f::fsdp2, {}, true));
  try {
    resolved(f::hf, {{"--grad-clip", "sometimes"}});
    ADD_FAILURE() << "--grad-clip sometimes was accepted";
  } catch (const usage_error& e) {
    EXPECT_STREQ(e.what(), "--grad-clip 'sometimes' is not on or off");
  }
  training_setup s;
  s.model = load_model("gpt2");
  s.seq_len = 1024;
  s.optimizer_in_backward = true;
  s.grad_clip = true;
  try {
    plan_batch(s, find_preset("h100-sxm"));
    ADD_FAILURE() << "clipping planned inside backward";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("--optimizer-in-backward --grad-clip on"), std::string::npos) << e.what();
  }
}
