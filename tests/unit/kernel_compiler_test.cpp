#include "core/compile/kernel_compiler.hpp"

#include <atomic>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "core/errors.hpp"

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

// A cubin with a K-major copy's pre-pass holds two kernels; ptxas reports the pre-pass first.
TEST(ptxas_report, reads_the_entry_asked_for_in_a_report_of_two_kernels) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'tiletune_gemm_transpose' for 'sm_89'\n"
      "ptxas info    : Function properties for tiletune_gemm_transpose\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 25 registers, used 1 barriers, 1152 bytes smem, 392 bytes cmem[0]\n"
      "ptxas info    : Compile time = 21.251 ms\n"
      "ptxas info    : Compiling entry function 'tiletune_gemm' for 'sm_89'\n"
      "ptxas info    : Function properties for tiletune_gemm\n"
      "    24 bytes stack frame, 28 bytes spill stores, 32 bytes spill loads\n"
      "ptxas info    : Used 146 registers, used 1 barriers, 448 bytes cmem[0]\n";
  kernel_resources r;
  ASSERT_TRUE(parse_ptxas_report(log, r, "tiletune_gemm"));
  EXPECT_EQ(r.registers, 146);
  EXPECT_EQ(r.static_smem_bytes, 0);
  EXPECT_EQ(r.stack_bytes, 24);
  EXPECT_EQ(r.spill_bytes(), 60);
  ASSERT_TRUE(parse_ptxas_report(log, r, "tiletune_gemm_transpose"));
  EXPECT_EQ(r.registers, 25);
  EXPECT_EQ(r.static_smem_bytes, 1152);
  EXPECT_EQ(r.spill_bytes(), 0);
  EXPECT_FALSE(parse_ptxas_report(log, r, "tiletune_gem"));  // a prefix names no entry
  // One kernel of another name (an export's): its figures.
  ASSERT_TRUE(parse_ptxas_report(log.substr(log.find("ptxas info    : Compiling entry function 'tiletune_gemm'")), r,
                                 "tiletune_gemm_transpose"));
  EXPECT_EQ(r.registers, 146);
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

namespace {
class arch_listing_compiler : public kernel_compiler {
 public:
  std::vector<int> archs;
  compiled_kernel compile(const compile_job&) override { return {}; }
  std::string version() const override { return "nvrtc 13.0"; }
  std::vector<int> supported_archs() const override { return archs; }
};
}  // namespace

// A GPU whose architecture the compiler has not (CUDA 13's NVRTC and the V100's sm_70) is refused
// with exit 3 naming both, before every variant becomes a compile error; one it has, or a
// compiler that cannot say, is not.
TEST(kernel_compiler, an_architecture_the_compiler_lacks_is_refused_naming_it) {
  arch_listing_compiler c;
  c.archs = {75, 80, 86, 89, 90, 100, 120};
  try {
    check_compiler_supports(c, 70, "V100");
    ADD_FAILURE() << "sm_70 was taken";
  } catch (const environment_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("nvrtc 13.0 cannot compile for sm_70, the V100's architecture (it compiles sm_75 to sm_120)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("an older CUDA toolkit"), std::string::npos) << what;
  }
  EXPECT_THROW(check_compiler_supports(c, 130, "next"), environment_error);
  EXPECT_NO_THROW(check_compiler_supports(c, 90, "H100"));
  c.archs.clear();
  EXPECT_NO_THROW(check_compiler_supports(c, 70, "V100"));
}
