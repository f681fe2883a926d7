// LoRA's step held to what issue 19 reported of real LoRA steps on an H100,
// replayed (profiles/replays/README.md). The issue gave no step times, only
// errors of the planner of that day: tokens/s predicted 40-56% too high and
// peak memory 3-5% under on 7-8B models. The planner of that day (commit
// 07e1e87) was run again on the suite's LoRA rows
// (profiles/replays/issue19_lora_07e1e87.jsonl); its figures over the
// reported errors bound what the real steps did.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/train/training_plan.hpp"
#include "training_rows.hpp"

using namespace tiletune;

namespace {

const char* replay = "profiles/replays/issue19_lora_07e1e87.jsonl";

// The reported over-prediction of tokens/s, and under-prediction of the peak.
constexpr double over_low = 1.40, over_high = 1.56;
constexpr double peak_under = 1.04;  // 3-5%

bool seven_or_eight_b(const nlohmann::json& row) { return row["model"] != "tinyllama-1.1b"; }

}  // namespace

TEST(lora_replay, the_rows_are_there) {
  const auto steps = rows::read(replay);
  ASSERT_EQ(steps.size(), 10u);
  for (const auto& row : steps) EXPECT_GT(row["lora"].get<int>(), 0) << rows::name(row);
}

// Which precision the issue's rows ran in. Its "bf16 weights" fits both a
// pure bf16 step and autocast over a bf16 base; the memory figure tells them
// apart. The planner's LoRA peak is held within 3% of traced steps
// (training_trace_cli_test, 13 traced steps). In pure bf16 the 07e1e87 planner is 1-3% under it,
// as the issue's 3-5% says; in bf16-mixed it is over it by a quarter, which
// the issue's figure rules out. So the speed rows below are the bf16 ones.
TEST(lora_replay, the_memory_figure_says_the_rows_ran_in_pure_bf16) {
  for (const auto& row : rows::read(replay)) {
    if (!seven_or_eight_b(row) || row["ckpt"].get<bool>()) continue;
    const memory_breakdown m = estimate_memory(rows::setup(row));
    const double now = static_cast<double>(m.peak_allocated_bytes(row["mb"], false));
    const double then = row["peak_allocated_bytes"].get<double>();
    if (row["precision"] == "bf16") {
      EXPECT_NEAR(now / (then * peak_under), 1.0, 0.04) << rows::name(row);
    } else {
      EXPECT_LT(now, 0.85 * then) << rows::name(row);
    }
  }
}

// Offline tokens/s of today's planner against the real steps' bounds,
// 07e1e87's figure over 1.56 and over 1.40: within 10% of that band. The
// 07e1e87 planner is 40-56% over it by construction; what closed the gap is
// the adapter path in fp32 (peft's cast of x, fp32 adapter GEMMs on a fp32
// copy, the fp32 sum and its cast back, their gradients: lora_step.cpp) and
// the host's issuing time (host_time.cpp), not a fit to these rows.
TEST(lora_replay, tokens_per_s_within_the_band_the_issue_implies) {
  const device_spec& h100 = find_preset("h100-sxm");
  int checked = 0;
  for (const auto& row : rows::read(replay)) {
    if (row["precision"] != "bf16") continue;
    const batch_plan plan = plan_batch(rows::setup(row), h100);
    const batch_candidate* c = rows::candidate(plan, row);
    ASSERT_NE(c, nullptr) << rows::name(row);
    const double then = row["tokens_per_s"].get<double>();
    const double real_low = then / over_high, real_high = then / over_low;
    EXPECT_GT(c->tokens_per_s, real_low / 1.10) << rows::name(row);
    EXPECT_LT(c->tokens_per_s, real_high * 1.10) << rows::name(row);
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}
