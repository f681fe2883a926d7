// --packing N (issue 37): samples of N tokens packed seq_len / N to a row with a block-diagonal
// mask (FlashAttention's varlen kernel). Attention runs over each sample's N tokens, not the row;
// the linears, the norms and the memory see the same tokens as without packing. Expected figures
// are arithmetic on Llama-3-8B's 32 heads of 128 at --seq-len 8,192, written out in each test.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/training_plan.hpp"
#include "setup_refusal.hpp"

using namespace tiletune;
using tiletune::test::refusal;

namespace {
training_setup llama_packed(std::int64_t packing) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 8192;
  s.prec = precision::bf16;
  s.packing = packing;
  s.checkpointing = checkpoint_policy::on;
  s.micro_batch = 1;
  return s;
}
step_gemm scores(const training_setup& s) {
  for (const step_gemm& g : step_gemms(s, 1, false))
    if (g.name == "attention scores") return g;
  return {};
}
}  // namespace

// Unpacked: one 8,192 x 8,192 score matrix per head, batch 32. Packed by 2,048: 8,192 / 2,048 = 4
// samples a row, each 2,048 x 2,048 per head, batch 32 x 4 = 128: 2,048^2 x 128 = 536,870,912
// scores against 8,192^2 x 32 = 2,147,483,648, a quarter (N / seq_len).
TEST(packing, attention_runs_over_each_sample_not_the_row) {
  const step_gemm plain = scores(llama_packed(0)), packed = scores(llama_packed(2048));
  EXPECT_EQ(plain.m, 8192);
  EXPECT_EQ(plain.batch, 32);
  EXPECT_EQ(packed.m, 2048);
  EXPECT_EQ(packed.n, 2048);
  EXPECT_EQ(packed.k, 128);
  EXPECT_EQ(packed.batch, 128);
  EXPECT_EQ(packed.m * packed.n * packed.batch * 4, plain.m * plain.n * plain.batch);
}

// The rows' tokens are the same: the memory is unchanged; samples/s counts 4 samples a row, so
// tokens/s = samples/s x 2,048 (and rows/s x 8,192); the cheaper attention makes the step faster.
TEST(packing, samples_per_second_counts_the_packed_samples) {
  const device_spec& h100 = find_preset("h100-sxm");
  const batch_plan plain = plan_batch(llama_packed(0), h100), packed = plan_batch(llama_packed(2048), h100);
  ASSERT_EQ(packed.candidates.size(), 1u);
  const batch_candidate &p = packed.candidates[0], &u = plain.candidates[0];
  EXPECT_EQ(p.peak_bytes, u.peak_bytes);
  EXPECT_NEAR(p.tokens_per_s, p.samples_per_s * 2048, 1e-6 * p.tokens_per_s);
  EXPECT_NEAR(u.tokens_per_s, u.samples_per_s * 8192, 1e-6 * u.tokens_per_s);
  EXPECT_LT(p.time.gemm_ms, u.time.gemm_ms);
  EXPECT_GT(p.tokens_per_s, u.tokens_per_s);
}

TEST(packing, refusals_name_the_value) {
  EXPECT_NE(refusal(llama_packed(3000)).find("--packing 3000 is invalid"), std::string::npos);
  EXPECT_NE(refusal(llama_packed(8192)).find("--packing 8192 is invalid"), std::string::npos);
  EXPECT_NE(refusal(llama_packed(1)).find("--packing 1 is invalid: samples of N tokens, N from 2"), std::string::npos);
  EXPECT_EQ(refusal(llama_packed(2)), "");
  training_setup eager = llama_packed(2048);
  eager.attention = attention_impl::eager;
  EXPECT_NE(refusal(eager).find("--packing 2048 needs --attention flash"), std::string::npos);
  EXPECT_EQ(refusal(llama_packed(2048)), "");
}
