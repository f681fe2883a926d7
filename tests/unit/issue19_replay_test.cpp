// The planner held to what issue 19 reported of real training steps on an
// H100, replayed (profiles/replays/README.md). The issue gave no step times,
// only the errors of the planner of that day: LoRA tokens/s predicted 40-56%
// too high and its peak 3-5% under on 7-8B models, fp32 with a 152k tied
// vocabulary about 19% under its peak. The planner of that day (commit
// 07e1e87) was run again on the suite's rows of those kinds
// (profiles/replays/issue19_07e1e87.jsonl); its figures over the reported
// errors bound what the real steps did.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/train/training_plan.hpp"
#include "training_rows.hpp"

using namespace tiletune;

namespace {

const char* issue19_rows = "profiles/replays/issue19_07e1e87.jsonl";

// The reported over-prediction of LoRA's tokens/s, under-prediction of its
// peak, and of fp32's peak with the large vocabulary.
constexpr double over_low = 1.40, over_high = 1.56;
constexpr double peak_under = 1.04;       // 3-5%
constexpr double fp32_peak_under = 0.81;  // about 19%

bool lora(const nlohmann::json& row) { return row["lora"].get<int>() > 0; }
bool seven_or_eight_b(const nlohmann::json& row) { return lora(row) && row["model"] != "tinyllama-1.1b"; }

}  // namespace

TEST(issue19_replay, the_rows_are_there) {
  const auto steps = rows::read(issue19_rows);
  ASSERT_EQ(steps.size(), 12u);
  EXPECT_EQ(std::count_if(steps.begin(), steps.end(), lora), 10);
}

// Which precision the issue's rows ran in. Its "bf16 weights" fits both a
// pure bf16 step and autocast over a bf16 base; the memory figure tells them
// apart. The planner's LoRA peak is held within 3% of traced steps
// (training_trace_cli_test, 22 traced steps). In pure bf16 the 07e1e87 planner is 1-3% under it,
// as the issue's 3-5% says; in bf16-mixed it is over it by a quarter, which
// the issue's figure rules out. So the speed rows below are the bf16 ones.
TEST(issue19_replay, the_lora_memory_figure_says_the_rows_ran_in_pure_bf16) {
  for (const auto& row : rows::read(issue19_rows)) {
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
TEST(issue19_replay, lora_tokens_per_s_within_the_band_the_issue_implies) {
  const device_spec& h100 = find_preset("h100-sxm");
  int checked = 0;
  for (const auto& row : rows::read(issue19_rows)) {
    if (!lora(row) || row["precision"] != "bf16") continue;
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

// fp32 with Qwen2.5-0.5B's 152k tied vocabulary at sequence 1024: 07e1e87
// was about 19% under the real peak; today's is within 4% of 07e1e87's over
// 0.81. What closed it: fp32 attention with grouped-query heads runs SDPA's
// math fallback, which keeps the sequence x sequence probabilities (5.25 of
// the 5.8 GiB added at micro-batch 4; training_inventory.cpp).
TEST(issue19_replay, fp32_large_vocabulary_peak_where_the_issue_puts_it) {
  int checked = 0;
  for (const auto& row : rows::read(issue19_rows)) {
    if (row["precision"] != "fp32") continue;
    const memory_breakdown m = estimate_memory(rows::setup(row));
    const double now = static_cast<double>(m.peak_allocated_bytes(row["mb"], row["ckpt"]));
    EXPECT_NEAR(now / (row["peak_allocated_bytes"].get<double>() / fp32_peak_under), 1.0, 0.04) << rows::name(row);
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}
