#include "cuda/l2_read_flush.hpp"

#include <string>

#include <fmt/format.h>

#include "cuda/cuda_check.hpp"
#include "cuda/nvrtc_program.hpp"

namespace tiletune {

namespace {

// Every thread XORs the 16-byte words it loads; a store only where they came to a value no zeroed
// buffer gives keeps the loads in the program. Plain ld.global (no __restrict__, no read-only
// path), so each load allocates its line in the L2 as a GEMM's loads do.
constexpr const char* read_flush_source = R"(
extern "C" __global__ void tt_l2_read_flush(const uint4* words, unsigned long long count, unsigned* sink) {
  unsigned folded = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    const uint4 w = words[i];
    folded ^= w.x ^ w.y ^ w.z ^ w.w;
  }
  if (folded == 0x9e3779b9u) *sink = folded;
}
)";

constexpr int read_flush_threads = 256;

[[noreturn]] void read_flush_failed(nvrtcProgram p, nvrtcResult r, const std::string& step) {
  const std::string log = nvrtc_program_log(p);
  throw cuda_error(fmt::format("the L2 read-flush kernel: {}: {}{}", step, nvrtcGetErrorString(r),
                               log.empty() ? "" : "\n" + log),
                   static_cast<int>(r));
}

}  // namespace

std::string l2_read_flush_ptx(int major, int minor) {
  nvrtcProgram raw = nullptr;
  if (const nvrtcResult r = nvrtcCreateProgram(&raw, read_flush_source, "tt_l2_read_flush.cu", 0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    throw cuda_error(fmt::format("the L2 read-flush kernel: nvrtcCreateProgram: {}", nvrtcGetErrorString(r)),
                     static_cast<int>(r));
  const nvrtc_program_ptr program(raw);
  const std::string arch = fmt::format("--gpu-architecture=compute_{}{}", major, minor);
  const char* options[] = {arch.c_str()};
  if (const nvrtcResult r = nvrtcCompileProgram(raw, 1, options); r != NVRTC_SUCCESS)
    read_flush_failed(raw, r, "compile for " + arch.substr(arch.find('=') + 1));
  std::size_t size = 0;
  if (const nvrtcResult r = nvrtcGetPTXSize(raw, &size); r != NVRTC_SUCCESS) read_flush_failed(raw, r, "nvrtcGetPTXSize");
  std::string ptx(size, '\0');
  if (const nvrtcResult r = nvrtcGetPTX(raw, ptx.data()); r != NVRTC_SUCCESS) read_flush_failed(raw, r, "nvrtcGetPTX");
  if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

l2_read_flush::l2_read_flush(int device) {
  int major = 0, minor = 0, sms = 0;
  TT_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TT_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  TT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::string ptx = l2_read_flush_ptx(major, minor);
  TT_CUDA(cudaLibraryLoadData(&library_, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  TT_CUDA(cudaLibraryGetKernel(&kernel_, library_, "tt_l2_read_flush"));
  TT_CUDA(cudaMalloc(reinterpret_cast<void**>(&sink_), sizeof(unsigned)));
  blocks_ = 4 * (sms > 0 ? sms : 1);  // enough loads in flight to draw the DRAM bandwidth
}

l2_read_flush::~l2_read_flush() {
  if (sink_) TT_CUDA_NOEXCEPT(cudaFree(sink_));
  if (library_) TT_CUDA_NOEXCEPT(cudaLibraryUnload(library_));
}

void l2_read_flush::launch(const void* buffer, std::size_t bytes, cudaStream_t stream) const {
  const void* words = buffer;
  unsigned long long count = bytes / 16;
  unsigned* sink = sink_;
  void* args[] = {&words, &count, &sink};
  TT_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), dim3(static_cast<unsigned>(blocks_)), dim3(read_flush_threads),
                           args, 0, stream));
}

}  // namespace tiletune
