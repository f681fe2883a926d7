#include "compile_checks.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "core/compile/compile_cache.hpp"
#include "cuda/nvrtc_compiler.hpp"
#include "sass_reading.hpp"

namespace tiletune_test {

tiletune::kernel_compiler& shared_compiler() {
  static tiletune::nvrtc_compiler nvrtc;
  static tiletune::cached_compiler cached(nvrtc, tiletune::compile_cache([] {
    const char* scratch = std::getenv("TILETUNE_TEST_SCRATCH");
    return std::filesystem::path(scratch && *scratch ? scratch : TILETUNE_TEST_TMP) / "cache" / "tiletune";
  }()));
  return cached;
}

std::vector<tiletune::compiled_kernel> compile_cleanly(const std::vector<tiletune::compile_job>& jobs) {
  std::vector<tiletune::compiled_kernel> results =
      tiletune::compile_all(shared_compiler(), jobs, std::max(1u, std::thread::hardware_concurrency()));
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& r = results[i];
    const std::string& name = jobs[i].name;
    EXPECT_TRUE(r.ok) << name << "\n" << r.log;
    EXPECT_EQ(r.resources.spill_bytes(), 0) << name << "\n" << r.log;
    EXPECT_EQ(r.resources.stack_bytes, 0) << name;
    for (const auto& w : ptxas_performance_warnings(r.log)) ADD_FAILURE() << name << ": " << w;
  }
  return results;
}

std::vector<std::string> sass_of(const std::vector<tiletune::compile_job>& jobs,
                                 const std::vector<tiletune::compiled_kernel>& results) {
  std::vector<std::string> cubins, archs;
  for (std::size_t i = 0; i < results.size(); ++i) {
    cubins.push_back(results[i].ok ? results[i].cubin : std::string());
    archs.push_back(jobs.at(i).arch);
  }
  return disassemble_all(cubins, archs);
}

}  // namespace tiletune_test
