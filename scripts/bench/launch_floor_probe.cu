// What a kernel costs the model's `launch_overhead_us` (docs/model.md): the CUPTI duration (the GPU's
// own start and end, as tiletune's timer reads them) of kernels that do no work, shaped as tiletune's
// launch them. The model adds 3 us to every predicted time; held out on the recorded H100 and H200
// results, 0.5-1 us fitted better (issue 39), so this probe is owed a run before the constant moves.
//   nvcc -O3 -arch=native -o launch_floor_probe scripts/bench/launch_floor_probe.cu -lcupti
//   launch_floor_probe [OUT.json]     (exit 0, or 2 when CUDA or CUPTI fails)
// Shapes: one block of 128 threads; one block per SM (a persistent grid) of 384 threads with
// 200 KB of dynamic shared memory, empty and with a wgmma kernel's prologue (mbarrier init, fence,
// barrier); and 4 blocks per SM of 128 threads (the mma family's grid of a 4096^3 tile wave).
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

std::vector<double> g_durations_us;  // CUPTI's kernel records, in completion order

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, 1 << 20));
  *size = *buffer ? 1 << 20 : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      g_durations_us.push_back(static_cast<double>(k->end - k->start) / 1e3);
    }
  std::free(buffer);
}

__global__ void empty_kernel() {}

// A persistent wgmma kernel's prologue: thread 0 initialises a ring of mbarriers in dynamic shared
// memory and fences them for the async proxy; the block waits at a barrier.
__global__ void prologue_kernel(int stages) {
  extern __shared__ __align__(128) unsigned char smem[];
  if (threadIdx.x == 0) {
    for (int s = 0; s < 2 * stages; ++s) {
      const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem + 8 * s));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(addr), "r"(1));
    }
#if __CUDA_ARCH__ >= 900
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
  }
  __syncthreads();
}

struct shape {
  const char* name;
  int blocks_per_sm;  // 0: one block in all
  int threads;
  int smem_bytes;
  bool prologue;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 2;
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "CUPTI could not be enabled\n");
    return 2;
  }
  const int big_smem = 200 * 1024;
  cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, big_smem);
  cudaFuncSetAttribute(prologue_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, big_smem);
  const shape shapes[] = {{"one block, 128 threads", 0, 128, 0, false},
                          {"one block per SM, 384 threads, 200 KB", 1, 384, big_smem, false},
                          {"one block per SM, 384 threads, 200 KB, mbarrier prologue", 1, 384, big_smem, true},
                          {"4 blocks per SM, 128 threads", 4, 128, 0, false}};
  const int launches = 200;
  std::printf("%s (sm_%d%d, %d SMs): CUPTI durations of kernels that do no work, median of %d\n", p.name, p.major,
              p.minor, p.multiProcessorCount, launches);
  std::string json = "{\"schema\": \"tiletune.launch_floor_probe/1\", \"device\": \"" + std::string(p.name) +
                     "\", \"sm\": " + std::to_string(p.major * 10 + p.minor) + ", \"kernels\": [";
  bool first = true;
  for (const shape& s : shapes) {
    const int grid = s.blocks_per_sm ? s.blocks_per_sm * p.multiProcessorCount : 1;
    const int smem = std::min(s.smem_bytes, static_cast<int>(p.sharedMemPerBlockOptin));
    g_durations_us.clear();
    for (int i = 0; i < launches; ++i) {
      if (s.prologue)
        prologue_kernel<<<grid, s.threads, smem>>>(4);
      else
        empty_kernel<<<grid, s.threads, smem>>>();
      cudaDeviceSynchronize();  // one at a time: each duration alone, as a sample of tiletune's timer
    }
    if (cudaGetLastError() != cudaSuccess) return 2;
    cuptiActivityFlushAll(1);
    const double us = median(g_durations_us);
    std::printf("  %-58s grid %5d: %6.2f us (%zu records)\n", s.name, grid, us, g_durations_us.size());
    char row[256];
    std::snprintf(row, sizeof row, "%s\n  {\"kernel\": \"%s\", \"grid\": %d, \"threads\": %d, \"smem_bytes\": %d, "
                  "\"median_us\": %.3f, \"records\": %zu}",
                  first ? "" : ",", s.name, grid, s.threads, smem, us, g_durations_us.size());
    json += row;
    first = false;
  }
  json += "\n]}\n";
  if (argc > 1) {
    FILE* f = std::fopen(argv[1], "w");
    if (!f) return 2;
    std::fputs(json.c_str(), f);
    std::fclose(f);
  }
  return 0;
}
