#include "core/tune/search/search_strategy.hpp"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/tune/search/replay_backend.hpp"

using namespace tiletune;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> recorded_results() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-22/gemm"))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// The recorded (true) median and spread of a variant.
struct truth {
  double median_us = 0, spread = 0;
};
std::map<std::string, truth> recorded_truth(const nlohmann::json& result) {
  std::map<std::string, truth> out;
  for (const auto& v : result["variants"])
    if (v["status"] == "ok") out[v["id"]] = {v["timing"]["median_us"].get<double>(), v["timing"]["spread"].get<double>()};
  return out;
}

struct replayed {
  gemm_plan plan;
  double kernel_ms = 0;
  std::size_t requests = 0;
};
replayed replay(const nlohmann::json& result, std::string_view strategy, std::uint64_t seed,
                thermal_drift drift = {}) {
  replayed r;
  r.plan = plan_from_recording(result);
  const sampling_policy full;  // the run's defaults: 1% spread, 2 s cap, 200 samples
  replay_backend backend(result, full, seed, drift);
  const auto s = make_search_strategy(strategy);
  measure_plan(r.plan, backend, {}, false, s.get(), full);
  r.kernel_ms = backend.simulated_kernel_ms();
  r.requests = backend.requests();
  return r;
}

std::string recommended_id(const gemm_plan& p) { return p.variants.at(p.recommended.value()).config.id(); }

}  // namespace

TEST(search_strategy, unknown_name_is_a_usage_error_naming_it) {
  try {
    make_search_strategy("fastest");
    FAIL() << "no error";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("fastest"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("halving"), std::string::npos);
  }
  for (const auto& n : search_strategy_names()) EXPECT_EQ(make_search_strategy(n)->name(), n);
}

// On every recorded H100 problem, with three seeds of replay noise: the
// default finds the exhaustive winner or one within its measured noise, and
// times fewer variants in less simulated GPU time.
TEST(search_strategy, default_finds_the_exhaustive_winner_on_recorded_h100_problems_for_less) {
  const auto files = recorded_results();
  ASSERT_EQ(files.size(), 10u);
  double loss_sum = 0;
  int runs = 0;
  for (const auto& f : files) {
    const auto result = read_json(f);
    const auto t = recorded_truth(result);
    double best_true = 1e300;
    for (const auto& [id, tr] : t) best_true = std::min(best_true, tr.median_us);
    for (std::uint64_t seed : {1, 2, 3}) {
      const auto ex = replay(result, "exhaustive", seed);
      const auto fast = replay(result, default_search_strategy, seed);
      const std::string ex_id = recommended_id(ex.plan), fast_id = recommended_id(fast.plan);
      const truth ex_t = t.at(ex_id), fast_t = t.at(fast_id);
      // "Within its noise" as the tool's own recommendation rule reads it: the
      // spread measured for the exhaustive winner, or either one's recorded spread.
      const auto& ex_rec = ex.plan.variants[*ex.plan.recommended];
      // One run's spread can be far under the run-to-run noise: `check` measured 0.7-1.1% between
      // runs on the H100 (shared/measured/h100-2026-11-22/tests), so 1% is the floor; the mean loss below stays under 0.5%.
      const double noise = std::max({0.01, ex_t.spread, fast_t.spread, ex_rec.measured->timing.spread});  // floor first: a NaN spread never wins
      loss_sum += fast_t.median_us / best_true - 1;
      ++runs;
      EXPECT_LE(fast_t.median_us, ex_t.median_us * (1 + noise))
          << f.filename() << " seed " << seed << ": " << fast_id << " vs exhaustive " << ex_id;
      ASSERT_TRUE(fast.plan.search && ex.plan.search);
      EXPECT_EQ(fast.plan.search->strategy, "halving");
      EXPECT_LT(fast.plan.search->timed, ex.plan.search->timed) << f.filename();
      EXPECT_LT(fast.kernel_ms, ex.kernel_ms) << f.filename();
      // The recommended variant was verified, and so was every one that went past the brief look.
      const auto& rec = fast.plan.variants[*fast.plan.recommended];
      EXPECT_TRUE(rec.measured && rec.measured->verified);
      for (const auto& v : fast.plan.variants)
        if (v.search_stage == search_stage::longer || v.search_stage == search_stage::full) {
          EXPECT_TRUE(v.measured && v.measured->verified) << v.config.id();
        }
      EXPECT_LT(fast.plan.search->verified, fast.plan.search->timed);
      for (const auto& v : ex.plan.variants) EXPECT_TRUE(v.measured && v.measured->verified) << v.config.id();
      if (seed == 1)
        std::printf("%-30s exhaustive %-26s %3zu timed %7.0f ms | halving %-26s (%+.2f%%) %3zu timed, %2zu verified, %6.0f ms, %zu runs; %s\n",
                    f.filename().c_str(), ex_id.c_str(), ex.plan.search->timed, ex.kernel_ms, fast_id.c_str(),
                    100 * (fast_t.median_us / ex_t.median_us - 1), fast.plan.search->timed, fast.plan.search->verified, fast.kernel_ms,
                    fast.requests, fast.plan.search->stop_reason.c_str());
    }
  }
  // On average the default's pick is within half a percent of the true best.
  std::printf("mean loss of the default's pick against the recorded best: %.3f%%\n", 100 * loss_sum / runs);
  EXPECT_LT(loss_sum / runs, 0.005);
}

// A card that heats into its power cap while the search times it (the clock 30% down within
// 500 ms of kernel time, as an H100 went from 1,980 to 1,320 MHz): the recorded times are the cool
// card's truth. Every strategy still recommends a variant within the noise of the true best,
// because each stage past the brief look warms the card first and times its candidates twice in
// mirrored orders; timed once in order, the first candidates ran on the cool clock.
TEST(search_strategy, a_card_heating_into_its_power_cap_favours_no_candidate) {
  const thermal_drift drift{0.3, 500};
  double worst = 0, loss_sum = 0;
  int runs = 0;
  for (const auto& f : recorded_results()) {
    const auto result = read_json(f);
    const auto t = recorded_truth(result);
    double best_true = 1e300;
    for (const auto& [id, tr] : t) best_true = std::min(best_true, tr.median_us);
    for (const std::string strategy : {"halving", "exhaustive"})
      for (std::uint64_t seed : {1, 2}) {
        const auto r = replay(result, strategy, seed, drift);
        const std::string id = recommended_id(r.plan);
        const double loss = t.at(id).median_us / best_true - 1;
        worst = std::max(worst, loss);
        loss_sum += loss;
        ++runs;
        // The replay's own noise costs up to 1.2% without the heat (the test above).
        EXPECT_LE(loss, 0.02) << f.filename() << " " << strategy << " seed " << seed << ": " << id;
        std::printf("%-30s %-10s seed %llu: %-28s %+.2f%%\n", f.filename().c_str(), strategy.c_str(),
                    static_cast<unsigned long long>(seed), id.c_str(), 100 * loss);
      }
  }
  std::printf("under the heating card: mean loss %.2f%%, worst %.2f%%\n", 100 * loss_sum / runs, 100 * worst);
  EXPECT_LT(loss_sum / runs, 0.005);
}

// The order and budgets of a two-pass stage: the last candidate first with the soak, each with half
// the budget, then back from the first without verifying; one candidate is timed once, whole.
TEST(search_strategy, two_passes_run_mirrored_with_half_budgets_after_a_bounded_soak) {
  std::vector<search_candidate> cs(3);
  for (std::size_t i = 0; i < cs.size(); ++i) {
    cs[i].id = fmt::format("v{}", i);
    cs[i].predicted_us = 2000;  // 3 x 2 ms x 30 samples: a 180 ms stage, soaked for as long
  }
  std::vector<std::string> order;
  std::vector<sampling_policy> budgets;
  std::vector<bool> verified;
  search_context ctx;
  ctx.time = [&](search_candidate& c, const std::optional<sampling_policy>& b, search_stage, bool verify) {
    order.push_back(c.id);
    budgets.push_back(*b);
    verified.push_back(verify);
  };
  ctx.time_again = [&](search_candidate& c, const std::optional<sampling_policy>& b, search_stage) {
    order.push_back(c.id + "'");
    budgets.push_back(*b);
    verified.push_back(false);
  };
  sampling_policy full;
  full.min_samples = 30;
  full.max_samples = 200;
  full.time_cap_ms = 2000;
  std::vector<search_candidate*> all;
  for (auto& c : cs) all.push_back(&c);
  time_in_two_passes(all, ctx, full, search_stage::full, true);
  EXPECT_EQ(order, (std::vector<std::string>{"v2", "v1", "v0", "v0'", "v1'", "v2'"}));
  EXPECT_EQ(verified, (std::vector<bool>{true, true, true, false, false, false}));
  EXPECT_DOUBLE_EQ(budgets[0].warmup_ms, 180);
  for (std::size_t i = 0; i < budgets.size(); ++i) {
    EXPECT_EQ(budgets[i].min_samples, 15u);
    EXPECT_EQ(budgets[i].max_samples, 100u);
    EXPECT_DOUBLE_EQ(budgets[i].time_cap_ms, 1000);
    if (i > 0) {
      EXPECT_EQ(budgets[i].warmup_ms, 0);
    }
  }
  // A heavy stage soaks for heat_soak_ms at the most.
  for (auto& c : cs) c.predicted_us = 1e5;
  order.clear();
  budgets.clear();
  time_in_two_passes(all, ctx, full, search_stage::full, true);
  EXPECT_DOUBLE_EQ(budgets[0].warmup_ms, heat_soak_ms);
  // One candidate: one pass with the whole budget.
  order.clear();
  budgets.clear();
  time_in_two_passes({all[0]}, ctx, full, search_stage::full, true);
  EXPECT_EQ(order, std::vector<std::string>{"v0"});
  EXPECT_EQ(budgets[0].min_samples, 30u);
  EXPECT_EQ(budgets[0].warmup_ms, 0);
}

TEST(search_strategy, report_names_the_stages_and_what_they_cost) {
  const auto result = read_json(recorded_results().front());
  const auto r = replay(result, "halving", 1);
  const auto j = to_json(*r.plan.search);
  EXPECT_EQ(j["strategy"], "halving");
  ASSERT_GE(j["stages"].size(), 2u);
  EXPECT_EQ(j["stages"][0]["name"], "model");
  EXPECT_EQ(j["stages"][1]["name"], "brief");
  double sum = 0;
  for (const auto& s : j["stages"]) sum += s["kernel_ms"].get<double>();
  EXPECT_NEAR(sum, j["kernel_ms"].get<double>(), 1e-6);
  EXPECT_GT(j["kernel_ms"].get<double>(), 0);
  EXPECT_EQ(j["variants_eligible"], 51);
  // Untimed variants say why, and the JSON marks each variant's stage.
  const auto out = to_json(r.plan, run_info{});
  ASSERT_TRUE(out.contains("search"));
  std::size_t not_timed = 0;
  for (const auto& v : out["variants"]) {
    ASSERT_TRUE(v.contains("search_stage"));
    if (v["search_stage"] == "not_timed") {
      ++not_timed;
      EXPECT_FALSE(v.value("reason", "").empty());
      EXPECT_TRUE(v["median_us"].is_null());
      EXPECT_TRUE(v["tflops"].is_null());
    }
  }
  EXPECT_GT(not_timed, 0u);
}

TEST(search_strategy, model_strategy_times_only_the_models_best_four) {
  const auto result = read_json(recorded_results().front());
  const auto r = replay(result, "model", 1);
  EXPECT_EQ(r.plan.search->timed, 4u);
  // The reference, the four timed in two passes, and the reference and the pick timed twice again for the ratio.
  EXPECT_EQ(r.requests, 13u);
  EXPECT_EQ(r.plan.search->stop_reason, "timed the model's best 4 of 51");
}

TEST(search_strategy, a_brief_look_asks_the_worker_for_a_small_budget_and_nothing_is_verified_twice) {
  const auto result = read_json(recorded_results().front());
  gemm_plan plan = plan_from_recording(result);
  struct spy : measure_backend {
    replay_backend inner;
    std::vector<measure_request> seen;
    explicit spy(const nlohmann::json& j) : inner(j, sampling_policy{}) {}
    measure_response measure(const measure_request& r, const std::string& c) override {
      seen.push_back(r);
      return inner.measure(r, c);
    }
  } b(result);
  const auto s = make_search_strategy("halving");
  measure_plan(plan, b, {}, false, s.get(), sampling_policy{});
  std::map<std::string, int> runs, verifications;
  for (const auto& r : b.seen) {
    if (r.op != measure_op::variant) continue;
    ASSERT_TRUE(r.sampling.has_value());
    if (runs[r.id]++ == 0) {
      EXPECT_LE(r.sampling->max_samples, 10u);  // the first look is brief
    }
    verifications[r.id] += r.verify;
  }
  for (const auto& [id, n] : verifications) EXPECT_LE(n, 1) << id << " verified twice";
  // Whatever the search recommends was verified exactly once.
  EXPECT_EQ(verifications[plan.variants[*plan.recommended].config.id()], 1);
  // The protocol carries both.
  measure_request r;
  r.op = measure_op::variant;
  r.id = "x";
  r.sampling = sampling_policy{};
  r.sampling->time_cap_ms = 7;
  r.sampling->warmup_ms = 120;
  r.verify = false;
  const auto back = measure_request_from_json(to_json(r));
  ASSERT_TRUE(back.sampling);
  EXPECT_EQ(back.sampling->time_cap_ms, 7);
  EXPECT_EQ(back.sampling->warmup_ms, 120);
  EXPECT_FALSE(back.verify);
  measure_request plain;
  plain.op = measure_op::variant;
  const auto back2 = measure_request_from_json(to_json(plain));
  EXPECT_FALSE(back2.sampling);
  EXPECT_TRUE(back2.verify);
}
