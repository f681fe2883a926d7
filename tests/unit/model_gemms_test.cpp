// `gemm --model`: a model's step as a suite of distinct GEMMs with counts.
#include "core/train/model_gemms.hpp"

#include <set>

#include <gtest/gtest.h>

#include "core/errors.hpp"

using namespace tiletune;

namespace {
// Every GEMM's FLOPs times how often the step runs it.
double step_flops(const model_gemm_suite& s) {
  double f = 0;
  for (std::size_t i = 0; i < s.suite.problems.size(); ++i)
    f += static_cast<double>(s.counts[i]) * s.suite.problems[i].problem.flops();
  return f;
}
double linear_parameters(const model_spec& m) {
  double p = 0;
  for (const auto& t : weight_tensors(m))
    if (t.linear) p += static_cast<double>(t.parameters());
  return p;
}
}  // namespace

// A dense model's training step runs 6 x tokens x (linear parameters) FLOPs in its
// linears (forward 2, data- and weight-gradient 2 each), prefill 2 x; merging equal
// shapes keeps every FLOP, and no shape appears twice.
TEST(model_gemms, a_step_runs_every_linear_flop_once_per_pass) {
  const model_spec m = load_model("llama-3-8b");
  const double params = linear_parameters(m);
  for (const auto [phase, passes] : {std::pair{model_phase::train, 6.0}, {model_phase::prefill, 2.0}}) {
    const auto s = model_gemms(m, 4096, phase, dtype::bf16);
    EXPECT_NEAR(step_flops(s) / (passes * 4096 * params), 1.0, 1e-12) << to_string(phase);
    std::set<std::string> shapes;
    for (const auto& p : s.suite.problems) EXPECT_TRUE(shapes.insert(p.problem.describe()).second) << p.name;
  }
  // q_proj and o_proj are both 4096x4096: one problem, run 2 x 32 times a step.
  const auto train = model_gemms(m, 4096, model_phase::train, dtype::bf16);
  bool merged = false;
  for (std::size_t i = 0; i < train.suite.problems.size(); ++i)
    if (train.suite.problems[i].name == "layers.q_proj forward, layers.o_proj forward") {
      merged = true;
      EXPECT_EQ(train.counts[i], 64);
      EXPECT_EQ(train.suite.problems[i].problem.layout.name(), "nt");
    }
  EXPECT_TRUE(merged);
}

// Decode runs the forward GEMMs only, with the sequences as rows; the gradients' layouts are
// those of dx = dy W (nn) and dW = dy^T x (tn).
TEST(model_gemms, phases_choose_the_passes_and_layouts) {
  const model_spec m = load_model("gpt2");
  const auto decode = model_gemms(m, 16, model_phase::decode, dtype::bf16);
  for (const auto& p : decode.suite.problems) {
    EXPECT_EQ(p.problem.layout.name(), "nt") << p.name;
    EXPECT_EQ(p.problem.m, 16) << p.name;
  }
  std::set<std::string> layouts;
  for (const auto& p : model_gemms(m, 1024, model_phase::train, dtype::f16).suite.problems) {
    layouts.insert(p.problem.layout.name());
    EXPECT_EQ(p.problem.type, dtype::f16);
  }
  EXPECT_EQ(layouts, (std::set<std::string>{"nt", "nn", "tn"}));
  EXPECT_THROW(model_gemms(m, 0, model_phase::train, dtype::bf16), usage_error);
  EXPECT_THROW(parse_model_phase("inference"), usage_error);
}

// A mixture of experts: the routed experts are one batched problem per projection, and the
// notes say it is an approximation of a grouped GEMM.
TEST(model_gemms, experts_are_batched_and_said_to_be) {
  const auto s = model_gemms(load_model(std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/mixtral-8x7b.json"), 4096, model_phase::prefill, dtype::bf16);
  bool batched = false;
  for (const auto& p : s.suite.problems) batched = batched || p.problem.batch > 1;
  EXPECT_TRUE(batched);
  bool noted = false;
  for (const auto& n : s.notes) noted = noted || n.find("grouped GEMM") != std::string::npos;
  EXPECT_TRUE(noted);
}
