// `tiletune batch` on a local GPU (its measured mode) on the CPU: tiletune_standins
// gives a stand-in H100 and the stand-in worker (tests/support/fake_worker, which
// times every request at 100 us), so this checks what batch does with the worker's
// answers, not cuBLASLt's timings.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

using namespace tiletune_test;

namespace {

const std::vector<std::string> stand_in_h100 = {"--standin-gpus", "h100-sxm", "--standin-worker",
                                                TILETUNE_FAKE_WORKER};

}  // namespace

TEST(batch_measured, times_the_steps_gemms_and_rates_with_the_worker) {
  const result r = run_with_standins(stand_in_h100, {"batch", "--model", "gpt2", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "measured");
  EXPECT_EQ(j["gpu"]["preset"], "h100-sxm") << j["gpu"];
  // The worker's answers: 1000 launches in 100 us, 2 GiB moved in 100 us.
  EXPECT_NEAR(j["device_rates"]["launch_floor_us"].get<double>(), 100.0, 1.0) << j["device_rates"];
  EXPECT_NEAR(j["device_rates"]["copy_bandwidth_gbs"].get<double>(), 2.0 * (1LL << 30) / 1e5, 300.0)
      << j["device_rates"];
  ASSERT_FALSE(j["candidates"].empty());
  int measured = 0;
  for (const auto& c : j["candidates"]) {  // the candidates that fit are timed on the GPU
    EXPECT_EQ(c["gemm_time_basis"], c["fits"] ? "measured (cuBLASLt)" : "predicted") << c;
    measured += c["fits"].get<bool>();
  }
  EXPECT_GT(measured, 0);
  bool timed_note = false;
  for (const auto& n : j["notes"])
    timed_note |= n.get<std::string>().find("distinct GEMM shapes timed with cuBLASLt on the") !=
                  std::string::npos;
  EXPECT_TRUE(timed_note) << j["notes"];
  EXPECT_NE(r.err.find("stand-in devices for tests"), std::string::npos) << r.err;

  // --predict on the same GPU launches nothing: the model's times.
  const result predicted =
      run_with_standins(stand_in_h100, {"batch", "--model", "gpt2", "--json", "--predict"});
  ASSERT_EQ(predicted.code, 0) << predicted.err;
  const auto p = nlohmann::json::parse(predicted.out);
  EXPECT_NE(p["mode"], "measured");
  EXPECT_NE(p["candidates"][0]["gemm_time_basis"], "measured (cuBLASLt)");
}

// A worker that cannot start on the GPU is an error of the environment (exit 3), not a plan.
TEST(batch_measured, a_worker_that_cannot_start_exits_3) {
  const result r =
      run_with_standins({"--standin-gpus", "h100-sxm", "--standin-worker", "/nonexistent/worker"},
                        {"batch", "--model", "gpt2", "--json"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("the GPU worker could not start"), std::string::npos) << r.err;
}
