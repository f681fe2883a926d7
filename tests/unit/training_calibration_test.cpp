// The batch planner held against real training steps on an H100
// (profiles/measured/h100-2026-11-22/batch/training_calibration.jsonl).
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/train/training_calibration.hpp"
#include "core/train/training_plan.hpp"
#include "training_rows.hpp"

using namespace tiletune;

namespace {

const std::string root = TILETUNE_SOURCE_DIR;

std::vector<nlohmann::json> calibration_rows() {
  return rows::read("profiles/measured/h100-2026-11-22/batch/training_calibration.jsonl");
}

}  // namespace

TEST(calibration, the_data_is_there) { EXPECT_EQ(calibration_rows().size(), 7u); }

// Peak allocated within +10% of torch.cuda.max_memory_allocated and never
// under it by more than 5%: a plan must fit when it is run.
TEST(calibration, peak_memory_within_bounds_of_real_training) {
  for (const auto& row : calibration_rows()) {
    const training_setup s = rows::setup(row);
    const memory_breakdown m = estimate_memory(s);
    EXPECT_EQ(m.parameters, row["params"].get<std::int64_t>()) << rows::name(row);
    const double predicted = static_cast<double>(m.peak_allocated_bytes(row["mb"], row["ckpt"]));
    const double measured = row["max_allocated"].get<double>();
    EXPECT_LE(predicted, 1.10 * measured) << rows::name(row);
    EXPECT_GE(predicted, 0.95 * measured) << rows::name(row);
    // What must fit (allocator slack and context included) covers what the GPU really used.
    EXPECT_GE(static_cast<double>(m.peak_bytes(row["mb"], row["ckpt"])), row["device_used_end"].get<double>())
        << rows::name(row);
  }
}

// Without the one fitted memory constant the derivation alone is within 2%.
TEST(calibration, memory_formulas_hold_without_the_fitted_workspace) {
  for (const auto& row : calibration_rows()) {
    memory_breakdown m = estimate_memory(rows::setup(row));
    m.library_workspace_bytes = 0;
    const double ratio = static_cast<double>(m.peak_allocated_bytes(row["mb"], row["ckpt"])) /
                         row["max_allocated"].get<double>();
    EXPECT_NEAR(ratio, 1.0, 0.02) << rows::name(row);
  }
}

// Offline (--gpu h100-sxm, GEMMs predicted): each within 25%, the median within 15%.
TEST(calibration, offline_tokens_per_s_within_25_percent) {
  const device_spec& h100 = find_preset("h100-sxm");
  std::vector<double> errors;
  for (const auto& row : calibration_rows()) {
    const batch_plan plan = plan_batch(rows::setup(row), h100);
    const batch_candidate* c = rows::candidate(plan, row);
    ASSERT_NE(c, nullptr) << rows::name(row);
    const double err = c->tokens_per_s / row["tokens_per_s"].get<double>() - 1;
    EXPECT_LT(std::abs(err), 0.25) << rows::name(row) << ": " << c->tokens_per_s;
    errors.push_back(std::abs(err));
  }
  std::sort(errors.begin(), errors.end());
  EXPECT_LT(errors[errors.size() / 2], 0.15);
}

// Measured mode on this data: GEMMs as cuBLASLt timed them on the same H100
// (batch-*.json), the rest from the model: each 16-bit run within 15%.
TEST(calibration, tokens_per_s_with_the_measured_gemm_times_within_15_percent) {
  const device_spec& h100 = find_preset("h100-sxm");
  for (const auto& row : calibration_rows()) {
    if (row["precision"] == "fp32") continue;  // no f32 GEMMs were timed
    const std::string file = row["model"] == "gpt2" ? "batch-gpt2.json" : "batch-tinyllama.json";
    std::ifstream in(root + "/profiles/measured/h100-2026-11-22/batch/" + file);
    const nlohmann::json measured = nlohmann::json::parse(in);
    double gemm_ms = -1;
    for (const auto& c : measured["candidates"])
      if (c["micro_batch"] == row["mb"] && c["checkpointing"] == row["ckpt"]) gemm_ms = c["time"]["gemm_ms"];
    ASSERT_GT(gemm_ms, 0) << rows::name(row);
    const training_setup s = rows::setup(row);
    const step_time t = predict_step(s, h100, row["mb"], row["ckpt"]);
    const double step_ms = gemm_ms + t.memory_bound_ms + t.launch_ms + t.optimizer_ms;
    const double tokens_per_s = static_cast<double>(row["mb"].get<int>() * row["seq"].get<int>()) / (step_ms * 1e-3);
    EXPECT_NEAR(tokens_per_s / row["tokens_per_s"].get<double>(), 1.0, 0.15) << rows::name(row);
  }
}

// A profile without one of its constants stops the planner with the file's
// name and the field's, rather than planning with a zero.
TEST(calibration, a_missing_constant_is_named) {
  std::ifstream in(root + "/profiles/batch_calibration.json");
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_NO_THROW(parse_batch_calibration(j.dump()));
  j["constants"].erase("launch_us");
  try {
    parse_batch_calibration(j.dump());
    FAIL() << "a profile without launch_us was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("batch_calibration.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("constants.launch_us"), std::string::npos) << e.what();
  }
}

// Derived, not fitted: what the inventory says for GPT-2 under autocast
// (22h + 16I bytes per token and layer: fp32 residual kept by both
// LayerNorms, the casts, Q K V and the output, two dropout masks, and the
// Python gelu_new's fp32 intermediates) and the 14 bytes per logit of the
// loss's backward.
TEST(calibration, gpt2_autocast_inventory_by_hand) {
  training_setup s;
  s.model = load_model("gpt2");
  s.seq_len = 1024;
  s.prec = precision::bf16_mixed;
  const memory_breakdown m = estimate_memory(s);
  const std::int64_t h = 768, I = 3072, per_layer = 22 * h + 16 * I + 4 * 12 + 16;  // + lse and LN statistics
  const std::int64_t outer = h /*mask*/ + 4 * h + 8 /*ln_f*/ + 2 * h /*lm_head cast*/;
  EXPECT_EQ(m.activation_bytes_per_sample, 1024 * (12 * per_layer + outer));
  EXPECT_EQ(m.logits_bytes_per_sample, 14LL * 50257 * 1024);
  EXPECT_EQ(m.autocast_weight_copies_bytes, 2LL * (12 * (4 * h * h + 2 * h * I) + 50257 * h));
}
