// A family from outside src/ (tests/families/toy/), registered by one line, goes
// through everything a built-in family does: planned (constraints, NVRTC, the
// cubin's resources, the model), exported (source, manifest, header), and timed
// by the stand-in worker, which parses its tiles like any family's. No GPU.
#include <filesystem>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/gemm/search_space.hpp"
#include "core/measure/gemm_measure.hpp"
#include "core/export/kernel_export.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "cuda/nvrtc_compiler.hpp"
#include "toy/toy_family.hpp"

using namespace tiletune;

TEST(toy_family, plans_compiles_exports_and_is_timed_by_the_stand_in_worker) {
  const family_registration registered{toy_family()};  // the one registry line
  gemm_problem p;
  p.m = 100;
  p.n = 70;
  p.k = 33;
  p.type = dtype::f32;
  p.layout = parse_layout("tn");
  const device_spec& d = find_preset("h100-sxm");

  plan_options o;  // the toy's variants only: the built-in families' compile tests are elsewhere
  for (const auto& c : problem_search_space(family_named("toy"), p, d)) o.only.push_back(c.id());
  ASSERT_EQ(o.only.size(), 2u);
  nvrtc_compiler nvrtc;
  gemm_plan plan = plan_gemm(p, d, nvrtc, o);
  int ok = 0;
  for (const auto& v : plan.variants) {
    if (to_string(v.config.family) != "toy") continue;
    EXPECT_EQ(v.status, variant_status::ok) << v.config.id() << ": " << v.reason << "\n" << v.compile_log;
    EXPECT_GT(v.resources.registers, 0) << v.config.id();  // read from the cubin NVRTC built
    EXPECT_GT(v.predicted.time_us, 0) << v.config.id();
    ok += v.status == variant_status::ok;
  }
  ASSERT_EQ(ok, 2);
  ASSERT_TRUE(plan.recommended);
  const variant_result& best = plan.variants[*plan.recommended];
  EXPECT_EQ(to_string(best.config.family), "toy");

  // Exported like any variant: the kernel under its unique name, the manifest, the header.
  const auto files = export_variant(plan, best, run_info{});
  bool source = false, manifest = false;
  for (const auto& f : files) {
    if (f.name.ends_with(".cu")) source = f.bytes.find("TT_BM") != std::string::npos;
    if (f.name.ends_with(".json")) {
      const auto j = nlohmann::json::parse(f.bytes);
      manifest = j.dump().find("\"toy\"") != std::string::npos;
    }
  }
  EXPECT_TRUE(source);
  EXPECT_TRUE(manifest);

  // Timed by the stand-in worker (a separate process that links the toy's folder too).
  const auto dir = std::filesystem::temp_directory_path() / ("tiletune-toy-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    worker_setup setup;
    setup.problem = plan.problem;
    subprocess_backend backend({TILETUNE_FAKE_WORKER}, setup, dir, request_timeout::fixed(10), 30.0);
    measure_plan(plan, backend);
  }
  std::filesystem::remove_all(dir);
  EXPECT_EQ(plan.mode, plan_mode::measured);
  for (const auto& v : plan.variants) {
    if (to_string(v.config.family) == "toy") {
      EXPECT_EQ(v.status, variant_status::ok) << v.config.id() << ": " << v.reason;
    }
  }
  ASSERT_TRUE(plan.recommended);
  const variant_result& timed = plan.variants[*plan.recommended];
  EXPECT_EQ(to_string(timed.config.family), "toy");
  EXPECT_EQ(timed.status, variant_status::ok);
  ASSERT_TRUE(timed.measured);
  EXPECT_DOUBLE_EQ(timed.measured->timing.median_us, 100);  // the stand-in worker's answer
}
