// LoRA's step beside the frozen base (issue 19): the adapters' own GEMMs,
// their fp32 path where peft runs it without autocast, and a frozen base
// that keeps nothing for weight gradients.
#include <string>

#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/tune/perf_model.hpp"
#include "core/train/training_plan.hpp"

using namespace tiletune;

namespace {
training_setup lora_setup(precision p, int rank) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = p;
  s.lora_rank = rank;
  return s;
}
const step_gemm* find(const std::vector<step_gemm>& all, const std::string& name) {
  for (const auto& g : all)
    if (g.name == name) return &g;
  return nullptr;
}
}  // namespace

TEST(lora_step, every_adapter_runs_six_gemms_of_its_rank) {
  const auto gemms = step_gemms(lora_setup(precision::bf16, 16), 1, false);
  const step_gemm* a = find(gemms, "layers.down_proj lora_A forward");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->m, 2048);
  EXPECT_EQ(a->n, 16);
  EXPECT_EQ(a->k, 14336);
  EXPECT_EQ(a->count, 32);
  EXPECT_TRUE(a->fp32);  // bf16 base without autocast: peft runs the fp32 adapters in fp32
  const step_gemm* wgrad = find(gemms, "layers.q_proj lora_B weight-grad");
  ASSERT_NE(wgrad, nullptr);
  EXPECT_EQ(wgrad->k, 2048);
  int adapter = 0, frozen_wgrad = 0;
  for (const auto& g : gemms) {
    adapter += g.name.find(" lora_") != std::string::npos;
    frozen_wgrad += g.name.find("proj weight-grad") != std::string::npos;
  }
  EXPECT_EQ(adapter, 7 * 6);  // 7 adapted linears, 6 GEMMs each
  EXPECT_EQ(frozen_wgrad, 0);
  // Under autocast the adapter GEMMs run in 16 bits.
  EXPECT_FALSE(find(step_gemms(lora_setup(precision::bf16_mixed, 16), 1, false), "layers.down_proj lora_A forward")->fp32);
  // Recompute runs A and B again.
  EXPECT_NE(find(step_gemms(lora_setup(precision::bf16, 16), 1, true), "layers.q_proj lora_A recompute"), nullptr);
}

// The adapter path costs time beyond the frozen base's GEMMs: its GEMMs,
// its casts, scale and adds, and their launches.
TEST(lora_step, the_adapter_path_costs_gemm_bytes_and_launches) {
  const device_spec& h100 = find_preset("h100-sxm");
  const training_setup s = lora_setup(precision::bf16, 16);
  const step_time t = predict_step(s, h100, 1, false);
  double base_gemm_ms = 0;
  for (const auto& g : step_gemms(s, 1, false)) {
    if (g.name.find(" lora_") != std::string::npos) continue;
    gemm_problem p;
    p.m = g.m, p.n = g.n, p.k = g.k, p.batch = g.batch, p.type = dtype::bf16;
    base_gemm_ms += predict_library_gemm(h100, p).time_us * 1e-3 * static_cast<double>(g.count) * g.flop_scale;
  }
  EXPECT_GT(t.gemm_ms, base_gemm_ms * 1.02);
  // The fp32 adapter path of pure bf16 moves more than the autocast one.
  const step_time mixed = predict_step(lora_setup(precision::bf16_mixed, 16), h100, 1, false);
  EXPECT_GT(t.memory_bound_bytes, 0);
  training_setup full = s;
  full.lora_rank = 0;
  EXPECT_GT(t.kernels, predict_step(full, h100, 1, false).kernels + 32 * 7 * 10);
  EXPECT_GT(mixed.kernels, 0);
}

// A frozen base keeps nothing for its weights' gradients; the adapters keep
// their inputs in their own dtype (fp32 without autocast).
TEST(lora_memory, frozen_base_and_fp32_adapter_inputs) {
  training_setup full = lora_setup(precision::bf16, 0);
  const double full_act = static_cast<double>(estimate_memory(full).activation_bytes_per_sample);
  const training_setup lora = lora_setup(precision::bf16, 16);
  const double lora_act = static_cast<double>(estimate_memory(lora).activation_bytes_per_sample);
  // Per token and layer the adapters' fp32 inputs (4 x (5 x 4096 + 4096 + 14336) bytes) outweigh what
  // the frozen linears and norms no longer keep (2 x (4 x 4096 + 4096 + 14336)).
  const double per_token_layer = (lora_act - full_act) / 2048 / 32;
  EXPECT_GT(per_token_layer, 4.0 * 38912 - 2.0 * (4 * 4096 + 4096 + 14336) - 1024);
  EXPECT_LT(per_token_layer, 4.0 * 38912 - 2.0 * (4 * 4096 + 4096 + 14336) + 2048);
}

// What autograd keeps per token and layer for LoRA under autocast on a bf16
// base (Llama-3-8B, derived by hand from derivatives.yaml and peft's
// forward): each RMSNorm its fp32 input copy (4h, twice), SDPA q, k, v and
// the log-sum-exp, SiLU its input and the product both factors (6I), each
// adapter the 16-bit cast of its input and lora_A's r-wide output
// (2 x (in + r)); no residual in fp32, no base weight copies, nothing for the
// frozen weights' gradients.
TEST(lora_memory, autocast_on_a_bf16_base_keeps_what_autograd_keeps) {
  const training_setup s = lora_setup(precision::bf16_mixed, 16);
  const memory_breakdown m = estimate_memory(s);
  const double h = 4096, kv = 1024, I = 14336, r = 16, inputs = 6 * h + I;
  const double derived = 8 * h + 2 * (h + 2 * kv) + 4 * 32 + 6 * I + 2 * (inputs + 7 * r);
  const double per_token_layer = static_cast<double>(m.activation_bytes_per_sample) / 2048 / 32;
  EXPECT_NEAR(per_token_layer, derived, 4 * h / 32 + 64);  // the final norm's input spread over the layers
  EXPECT_EQ(m.autocast_weight_copies_bytes, static_cast<std::int64_t>(2 * m.local_trainable_parameters()));
}

// lora_dropout > 0: each adapter's dropout keeps a bool mask of its input,
// and adds a kernel forward and backward per adapted linear.
TEST(lora_memory, dropout_keeps_a_mask_per_adapted_input) {
  const device_spec& h100 = find_preset("h100-sxm");
  for (precision p : {precision::bf16_mixed, precision::bf16, precision::fp32}) {
    training_setup plain = lora_setup(p, 16), dropped = plain;
    dropped.lora_dropout = 0.05;
    const double extra = static_cast<double>(estimate_memory(dropped).activation_bytes_per_sample -
                                             estimate_memory(plain).activation_bytes_per_sample);
    // A mask byte per adapted input; in fp32 also the dropped-out copies of
    // the inputs that k, v and up otherwise share with q and gate (4 bytes).
    const double shared = p == precision::fp32 ? 4.0 * 3 * 4096 : 0.0;
    EXPECT_NEAR(extra, 2048.0 * 32 * (6 * 4096 + 14336 + shared), 64) << to_string(p);
    EXPECT_DOUBLE_EQ(predict_step(dropped, h100, 1, false).kernels - predict_step(plain, h100, 1, false).kernels,
                     32 * 7 * 2);
    EXPECT_GT(predict_step(dropped, h100, 1, false).memory_bound_bytes,
              predict_step(plain, h100, 1, false).memory_bound_bytes);
  }
  training_setup bad = lora_setup(precision::bf16, 0);
  bad.lora_dropout = 0.1;
  EXPECT_THROW(plan_batch(bad, h100), std::exception);
}

