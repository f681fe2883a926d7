// --offload optimizer | optimizer+params (issue 37; DeepSpeed ZeRO-Offload, FSDP2's
// CPUOffloadPolicy): what leaves the GPU for host memory, and the PCIe transfers and CPU step the
// optimizer step then costs. Expected figures are arithmetic on Llama-3-8B's published shapes
// (8,030,261,248 parameters; embedding and LM head 128,256 x 4,096 = 525,336,576 each), written out.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/train/training_plan.hpp"
#include "setup_refusal.hpp"

using namespace tiletune;
using tiletune::test::refusal;

namespace {
constexpr std::int64_t P = 8'030'261'248;
training_setup llama_offload(offload_kind o, int zero, int world) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 2048;
  s.prec = precision::bf16_mixed;
  s.offload = o;
  s.zero_stage = zero;
  s.world_size = world;
  return s;
}
}  // namespace

// ZeRO-1 on one GPU under bf16-mixed: bf16 weights and gradients, 2P = 16,060,522,496 bytes each;
// AdamW's fp32 m and v and the fp32 master, 12P = 96,363,134,976 bytes, move to the host.
TEST(cpu_offload, optimizer_states_and_masters_leave_the_gpu) {
  const memory_breakdown on_gpu = estimate_memory(llama_offload(offload_kind::none, 1, 1));
  const memory_breakdown m = estimate_memory(llama_offload(offload_kind::optimizer, 1, 1));
  EXPECT_EQ(on_gpu.optimizer_bytes, 96'363'134'976LL);
  EXPECT_EQ(on_gpu.offloaded_bytes, 0);
  EXPECT_EQ(m.optimizer_bytes, 0);
  EXPECT_EQ(m.offloaded_bytes, 12 * P);
  EXPECT_EQ(m.weights_bytes, 2 * P);
  EXPECT_EQ(m.gradients_bytes, 2 * P);
}

// ZeRO-3 on 8 GPUs with the parameters offloaded too: the host holds (12 + 2) x P / 8 =
// 14,052,957,184 bytes per GPU; the GPU keeps two gathered units, the largest being the embedding
// or LM head (525,336,576 parameters > a block's 218,112,000): 2 x 2 x 525,336,576 = 2,101,346,304,
// and the bf16 gradient shard 2P / 8 = 2,007,565,312.
TEST(cpu_offload, offloaded_parameters_leave_two_gathered_units) {
  const memory_breakdown m = estimate_memory(llama_offload(offload_kind::optimizer_params, 3, 8));
  EXPECT_EQ(m.offloaded_bytes, 14'052'957'184LL);
  EXPECT_EQ(m.optimizer_bytes, 0);
  EXPECT_EQ(m.weights_bytes, 2'101'346'304LL);
  EXPECT_EQ(m.gradients_bytes, 2'007'565'312LL);
}

// Per optimizer step on an H100 (PCIe Gen5 x16, 50 GB/s effective by default): the 2P bytes of bf16
// gradients down and 2P of updated bf16 parameters up, 32,121,044,992 bytes / 50 GB/s = 642.42089984
// ms (25 GB/s with --pcie-gbs 25, and the A100's Gen4 default: 1,284.84179968 ms). The CPU's AdamW
// touches 7 x 4 bytes a parameter and writes the 2-byte copy: 30P = 240,907,837,440 bytes at the
// default 100 GB/s of host memory bandwidth = 2,409.0783744 ms.
TEST(cpu_offload, the_step_adds_pcie_transfers_and_the_cpu_step) {
  const training_setup s = llama_offload(offload_kind::optimizer, 1, 1);
  const step_time t = predict_step(s, find_preset("h100-sxm"), 1, true);
  EXPECT_NEAR(t.offload_transfer_ms, 642.42089984, 1e-6);
  EXPECT_NEAR(t.cpu_optimizer_ms, 2'409.0783744, 1e-6);
  EXPECT_NEAR(t.optimizer_ms, 642.42089984 + 2'409.0783744, 1e-6);
  EXPECT_EQ(t.offload_micro_step_ms, 0);
  training_setup slow = s;
  slow.pcie_gbs = 25;
  EXPECT_NEAR(predict_step(slow, find_preset("h100-sxm"), 1, true).offload_transfer_ms, 1'284.84179968, 1e-6);
  EXPECT_NEAR(predict_step(s, find_preset("a100-sxm-80gb"), 1, true).offload_transfer_ms, 1'284.84179968, 1e-6);
  training_setup host = s;
  host.host_memory_gbs = 200;
  EXPECT_NEAR(predict_step(host, find_preset("h100-sxm"), 1, true).cpu_optimizer_ms, 2'409.0783744 / 2, 1e-6);
}

// Parameters offloaded on 8 GPUs: every micro-step uploads the bf16 shard twice (forward, backward)
// and downloads the gradient shard: 6P / 8 = 6,022,695,936 bytes / 50 GB/s = 120.45391872 ms. The
// 8 ranks of the node step their shards on one host: 30 x P/8 x 8 bytes at 100 GB/s, 2,409.0783744 ms.
TEST(cpu_offload, offloaded_parameters_cross_pcie_every_micro_step) {
  const step_time t =
      predict_step(llama_offload(offload_kind::optimizer_params, 3, 8), find_preset("h100-sxm"), 1, true);
  EXPECT_NEAR(t.offload_micro_step_ms, 120.45391872, 1e-6);
  EXPECT_EQ(t.offload_transfer_ms, 0);
  EXPECT_NEAR(t.cpu_optimizer_ms, 2'409.0783744, 1e-6);
}

TEST(cpu_offload, refuses_what_no_trainer_offloads) {
  EXPECT_NE(refusal(llama_offload(offload_kind::optimizer, 0, 1)).find("--offload optimizer needs --zero 1, 2 or 3"),
            std::string::npos);
  EXPECT_NE(
      refusal(llama_offload(offload_kind::optimizer_params, 2, 8)).find("--offload optimizer+params needs --zero 3"),
      std::string::npos);
  EXPECT_EQ(refusal(llama_offload(offload_kind::optimizer_params, 3, 8)), "");
  training_setup eight_bit = llama_offload(offload_kind::optimizer, 1, 1);
  eight_bit.optimizer = optimizer_kind::adamw_8bit;
  EXPECT_NE(refusal(eight_bit).find("bitsandbytes"), std::string::npos);
  training_setup stray = llama_offload(offload_kind::none, 0, 1);
  stray.pcie_gbs = 25;
  EXPECT_NE(refusal(stray).find("--pcie-gbs 25 needs --offload"), std::string::npos);
  training_setup zero_link = llama_offload(offload_kind::optimizer, 1, 1);
  zero_link.host_memory_gbs = 0;
  EXPECT_NE(refusal(zero_link).find("--host-memory-gbs 0 is invalid"), std::string::npos);
  EXPECT_EQ(parse_offload("optimizer+params"), offload_kind::optimizer_params);
  try {
    parse_offload("disk");
    ADD_FAILURE() << "disk parsed";
  } catch (const usage_error& e) {
    EXPECT_STREQ(e.what(), "--offload 'disk' is not one of none, optimizer, optimizer+params");
  }
}

// --paged-optimizer (bitsandbytes' paged AdamW8bit; Dettmers et al. 2023, "QLoRA", section 3):
// the states live in CUDA managed memory, outside PyTorch's pool, so the peak drops by them
// exactly: Llama-3-8B with AdamW8bit, 2 bytes a parameter of states (m and v in 8 bits), 2P =
// 16,060,522,496 bytes. Full fine-tuning under bf16-mixed on one 80 GB H100 keeps fp32 weights and
// gradients, 8P = 64,242,089,984 bytes before any activation: the budget (95% of 79.2 GiB) leaves
// no room for the states, so the step pages what the peak crowds out, at most all 2P, out and back
// over PCIe: 2 x 2P / 50 GB/s = 642.42089984 ms at most. With the states resident (a small
// micro-batch on a 141 GiB H200) nothing is paged.
TEST(cpu_offload, paged_states_leave_the_peak_and_page_what_it_crowds_out) {
  training_setup s = llama_offload(offload_kind::none, 0, 1);
  s.optimizer = optimizer_kind::adamw_8bit;
  s.micro_batch = 1;
  s.checkpointing = checkpoint_policy::on;
  training_setup paged = s;
  paged.paged_optimizer = true;
  const memory_breakdown resident = estimate_memory(s), managed = estimate_memory(paged);
  EXPECT_EQ(managed.optimizer_bytes, 2 * P);
  EXPECT_EQ(resident.peak_bytes(1, true) - managed.peak_bytes(1, true), 2 * P);
  const device_spec& h100 = find_preset("h100-sxm");
  const batch_plan plan = plan_batch(paged, h100);
  ASSERT_EQ(plan.candidates.size(), 1u);
  const batch_candidate& c = plan.candidates[0];
  EXPECT_TRUE(c.fits);
  const std::int64_t crowded = std::min<std::int64_t>(2 * P, c.peak_bytes + 2 * P - plan.memory_budget_bytes);
  ASSERT_GT(crowded, 0);
  EXPECT_NEAR(c.time.paging_ms, 2.0 * static_cast<double>(crowded) / 50e6, 1e-6);
  EXPECT_LE(c.time.paging_ms, 642.42089984 + 1e-6);
  EXPECT_FALSE(plan_batch(s, h100).candidates[0].fits);  // resident, the states do not fit beside the rest
  // Room for the states: nothing paged.
  const batch_plan h200 = plan_batch(paged, find_preset("h200"));
  EXPECT_EQ(h200.candidates[0].time.paging_ms, 0);
  // bitsandbytes pages AdamW and Lion only; not with --offload.
  training_setup sgd = paged;
  sgd.optimizer = optimizer_kind::sgd;
  EXPECT_NE(refusal(sgd).find("bitsandbytes pages AdamW (32- and 8-bit) and Lion, not sgd"), std::string::npos)
      << refusal(sgd);
  training_setup both = llama_offload(offload_kind::optimizer, 1, 1);
  both.paged_optimizer = true;
  EXPECT_NE(refusal(both).find("--paged-optimizer --offload optimizer"), std::string::npos) << refusal(both);
}
