#include "cuda/nvrtc_compiler.hpp"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <nvrtc.h>

#include "core/compile/cubin_resources.hpp"
#include "core/compile/kernel_templates.hpp"
#include "cuda/nvrtc_program.hpp"

namespace tiletune {

namespace {

// A failure of NVRTC itself rather than of the source: never cached.
compiled_kernel failure(std::string log) {
  compiled_kernel k;
  k.ok = false;
  k.internal_failure = true;
  k.log = std::move(log);
  return k;
}

}  // namespace

nvrtc_compiler::nvrtc_compiler() {
  // The driver's compute cache (~/.nv/ComputeCache) makes a repeat compile return
  // no ptxas report; ask for a fresh compile unless the user chose otherwise.
  static std::once_flag once;
  std::call_once(once, [] { setenv("CUDA_CACHE_DISABLE", "1", 0); });
}

std::string nvrtc_compiler::version() const {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return fmt::format("nvrtc {}.{}", major, minor);
}

std::vector<int> nvrtc_compiler::supported_archs() const {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return {};
  std::vector<int> archs(static_cast<std::size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  return archs;
}

compiled_kernel nvrtc_compiler::compile(const compile_job& job) {
  const auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram raw = nullptr;
  nvrtcResult r = nvrtcCreateProgram(&raw, job.source.c_str(), (job.name + ".cu").c_str(), 0,
                                     nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    return failure(fmt::format("nvrtcCreateProgram: {}", nvrtcGetErrorString(r)));
  }
  nvrtc_program_ptr program(raw);

  // -minimal: no texture/surface functions, cudadevrt runtime functions, device-side launch or
  // driver types; the templates include no header and use none of them (gemm_common.cuh). It only
  // shortens NVRTC's front end: the SASS is byte-identical
  // (scripts/bench/bench_compile_times.sh checks it per family,
  // profiles/compile_times_<host>.json), so it is not part of the job's options,
  // its cache key or the nvcc command an export prints (nvcc has no such option).
  std::vector<std::string> options{"--gpu-architecture=" + job.arch, "-minimal"};
  options.insert(options.end(), job.options.begin(), job.options.end());
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());

  r = nvrtcCompileProgram(raw, static_cast<int>(argv.size()), argv.data());
  compiled_kernel k;
  k.log = nvrtc_program_log(raw);
  if (r != NVRTC_SUCCESS) {
    k.ok = false;
    k.internal_failure = r != NVRTC_ERROR_COMPILATION;  // only a compile error is the source's fault
    if (k.log.empty()) k.log = fmt::format("nvrtcCompileProgram: {}", nvrtcGetErrorString(r));
    return k;
  }
  std::size_t size = 0;
  if ((r = nvrtcGetCUBINSize(raw, &size)) != NVRTC_SUCCESS || size == 0) {
    return failure(fmt::format("nvrtcGetCUBINSize: {} (is {} a real architecture?)\n{}",
                               nvrtcGetErrorString(r), job.arch, k.log));
  }
  k.cubin.resize(size);
  if ((r = nvrtcGetCUBIN(raw, k.cubin.data())) != NVRTC_SUCCESS) {
    return failure(fmt::format("nvrtcGetCUBIN: {}", nvrtcGetErrorString(r)));
  }
  k.ok = true;
  complete_resources(k, job.entry.empty() ? std::string(kernel_entry_name) : job.entry);
  k.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return k;
}

}  // namespace tiletune
