#include "core/compile/kernel_compiler.hpp"

#include <atomic>
#include <set>
#include <thread>

#include <gtest/gtest.h>

using namespace tiletune;

TEST(ptxas_report, reads_registers_spills_and_smem) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'tiletune_gemm' for 'sm_90'\n"
      "ptxas info    : Function properties for tiletune_gemm\n"
      "ptxas         .     8 bytes stack frame, 16 bytes spill stores, 20 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compile time = 8.997 ms\n";
  kernel_resources r;
  ASSERT_TRUE(parse_ptxas_report(log, r));
  EXPECT_EQ(r.registers, 255);
  EXPECT_EQ(r.static_smem_bytes, 4096);
  EXPECT_EQ(r.stack_bytes, 8);
  EXPECT_EQ(r.spill_store_bytes, 16);
  EXPECT_EQ(r.spill_load_bytes, 20);
  EXPECT_EQ(r.spill_bytes(), 36);
}

TEST(ptxas_report, a_report_without_smem_or_properties) {
  kernel_resources r;
  ASSERT_TRUE(parse_ptxas_report("ptxas info    : Used 10 registers, used 0 barriers\n", r));
  EXPECT_EQ(r.registers, 10);
  EXPECT_EQ(r.static_smem_bytes, 0);
  EXPECT_EQ(r.spill_bytes(), 0);
  EXPECT_FALSE(parse_ptxas_report("error: identifier \"x\" is undefined\n", r));
  EXPECT_FALSE(parse_ptxas_report("", r));
}

namespace {
class counting_compiler : public kernel_compiler {
 public:
  std::atomic<int> calls{0};
  std::set<std::thread::id> threads;
  std::mutex m;
  compiled_kernel compile(const compile_job& job) override {
    ++calls;
    {
      std::lock_guard lock(m);
      threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    compiled_kernel k;
    k.ok = job.name != "bad";
    k.log = job.name;
    return k;
  }
  std::string version() const override { return "counting 1"; }
};
}  // namespace

TEST(compile_all, keeps_job_order_reports_progress_and_uses_threads) {
  counting_compiler c;
  std::vector<compile_job> jobs(12);
  for (std::size_t i = 0; i < jobs.size(); ++i) jobs[i].name = i == 5 ? "bad" : std::to_string(i);
  std::size_t last_done = 0;
  auto results = compile_all(c, jobs, 3, [&](std::size_t done, std::size_t total, std::size_t) {
    EXPECT_EQ(total, 12u);
    EXPECT_EQ(done, last_done + 1);
    last_done = done;
  });
  ASSERT_EQ(results.size(), 12u);
  EXPECT_EQ(last_done, 12u);
  for (std::size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(results[i].log, jobs[i].name);
  EXPECT_FALSE(results[5].ok);
  EXPECT_TRUE(results[4].ok);
  EXPECT_EQ(c.calls, 12);
  EXPECT_GT(c.threads.size(), 1u);
}

TEST(compile_all, no_jobs_is_fine) {
  counting_compiler c;
  EXPECT_TRUE(compile_all(c, {}, 4).empty());
}
