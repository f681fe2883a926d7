// --quantize nf4 (issue 37): QLoRA's frozen base, the blocks' linears in 4-bit NF4 with double
// quantization (Dettmers et al. 2023: 4 bits, an fp8 absmax per 64 weights, an fp32 constant per
// 256 blocks: 0.5 + (8/64 + 32/16,384) / 8 = 0.515869140625 bytes a weight), the rest 16-bit, each
// linear dequantizing its weight in forward and backward. Expected figures are arithmetic on
// Llama-3-8B's published shapes, written out in each test.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_plan.hpp"

using namespace tiletune;

namespace {
// The blocks' linears: 32 x (2 x 4,096 x 4,096 + 2 x 1,024 x 4,096 + 3 x 14,336 x 4,096) =
// 32 x 218,103,808; the rest (embedding, LM head, norms) 8,030,261,248 - that = 1,050,939,392.
constexpr std::int64_t block_linears = 6'979'321'856;
training_setup qlora(quantize_kind q) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = precision::bf16_mixed;
  s.lora_rank = 16;
  s.adapters = adapter_dtype::bf16;
  s.quantize = q;
  return s;
}
}  // namespace

// NF4: 6,979,321,856 x 0.5 = 3,489,660,928 bytes of codes + 6,979,321,856 / 64 = 109,051,904 fp8
// absmaxes + 6,979,321,856 / 16,384 x 4 = 1,703,936 bytes of fp32 constants = 3,600,416,768; the
// rest in bf16, 2 x 1,050,939,392 = 2,101,878,784; bf16 adapters (rank 16 on every linear: 32 x 16
// x 81,920 = 41,943,040) 83,886,080: 5,786,181,632 bytes in all, against 2 x 8,030,261,248 +
// 83,886,080 = 16,144,408,576 for the bf16 base. The largest linear (gate, up, down: 14,336 x
// 4,096) dequantizes into 2 x 58,720,256 = 117,440,512 bytes.
TEST(qlora, the_base_is_stored_in_nf4_with_its_constants) {
  const memory_breakdown q = estimate_memory(qlora(quantize_kind::nf4));
  const memory_breakdown plain = estimate_memory(qlora(quantize_kind::none));
  EXPECT_EQ(plain.weights_bytes, 16'144'408'576LL);
  EXPECT_EQ(q.weights_bytes, 3'600'416'768LL + 2'101'878'784LL + 83'886'080LL);
  EXPECT_EQ(q.dequantized_weight_bytes, 117'440'512);
  EXPECT_EQ(plain.dequantized_weight_bytes, 0);
  EXPECT_EQ(q.gradients_bytes, plain.gradients_bytes);  // the adapters' alone
  EXPECT_EQ(q.optimizer_bytes, plain.optimizer_bytes);
  EXPECT_EQ(static_cast<double>(block_linears) * 0.515869140625, 3'600'416'768.0);
}

// At micro-batch 0 the peak holds the weights, states, gradients and the one dequantized copy: the
// NF4 base saves 16,144,408,576 - 5,786,181,632 = 10,358,226,944 bytes and the copy costs
// 117,440,512 back: 10,240,786,432 less.
TEST(qlora, the_peak_holds_one_dequantized_copy) {
  const memory_breakdown q = estimate_memory(qlora(quantize_kind::nf4));
  const memory_breakdown plain = estimate_memory(qlora(quantize_kind::none));
  EXPECT_EQ(plain.peak_allocated_bytes(0, false) - q.peak_allocated_bytes(0, false), 10'240'786'432LL);
  EXPECT_EQ(plain.peak_allocated_bytes(0, true) - q.peak_allocated_bytes(0, true), 10'240'786'432LL);
}

// Each quantized weight is read in NF4 and written in bf16 (0.515869140625 + 2 bytes) in forward and
// again in backward: 6,979,321,856 x 2.515869140625 x 2 = 35,118,120,960 bytes more per micro-step;
// with every layer checkpointed a third time in the recompute: 52,677,181,440.
TEST(qlora, dequantizing_moves_its_bytes_every_pass) {
  const device_spec& h100 = find_preset("h100-sxm");
  for (const bool ckpt : {false, true}) {
    const double extra = predict_step(qlora(quantize_kind::nf4), h100, 1, ckpt).memory_bound_bytes -
                         predict_step(qlora(quantize_kind::none), h100, 1, ckpt).memory_bound_bytes;
    EXPECT_NEAR(extra, ckpt ? 52'677'181'440.0 : 35'118'120'960.0, 1.0) << ckpt;
  }
}

TEST(qlora, needs_lora_and_defaults_to_bf16_adapters) {
  training_setup full = qlora(quantize_kind::nf4);
  full.lora_rank = 0;
  full.adapters = adapter_dtype::fp32;
  try {
    validate(full);
    ADD_FAILURE() << "NF4 without LoRA validated";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("--quantize nf4 needs --lora-rank above 0"), std::string::npos);
  }
  EXPECT_EQ(parse_quantize("nf4"), quantize_kind::nf4);
  EXPECT_THROW(parse_quantize("int8"), usage_error);
  // hf's defaults: bf16 adapters with NF4 on a bf16 base, fp32 (peft's) without it or when given.
  training_setup s = qlora(quantize_kind::nf4);
  s.adapters = adapter_dtype::fp32;
  apply_framework(training_framework::hf, {}, true, s);
  EXPECT_EQ(s.adapters, adapter_dtype::bf16);
  apply_framework(training_framework::hf, {{"--adapter-dtype", "fp32"}}, true, s);
  EXPECT_EQ(s.adapters, adapter_dtype::fp32);
  training_setup lora = qlora(quantize_kind::none);
  apply_framework(training_framework::hf, {}, true, lora);
  EXPECT_EQ(lora.adapters, adapter_dtype::fp32);
}
