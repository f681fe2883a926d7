// What mma.sync can reach on this GPU, with nothing else in the loop: each warp
// issues m16n8k16 bf16 MMAs (f32 accumulate) from registers only, in CHAINS
// independent accumulator chains, so the figure is the tensor pipe's rate for
// the instruction the mma family is built on (issue 38's ceiling), not a GEMM's.
//
// Rates are per SM per clock, from clock64() inside the kernel: an SM's window
// runs from the first of its warps to start to the last to finish (the counter
// is per SM), so the figure does not depend on the clock the card ran at.
// TFLOP/s from CUDA events is printed beside it, at this run's clock. (A first
// version took the median warp's own cycles; with 32 warps per SM the warps do
// not share the pipe evenly and that overstated the rate by 30%.)
//   nvcc -O3 -arch=sm_80 (or sm_90) -o hmma_probe scripts/bench/hmma_probe.cu
//   hmma_probe [OUT.json]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#define CHECK(x)                                                                           \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

constexpr int flops_per_mma = 2 * 16 * 8 * 16;

template <int CHAINS>
__global__ void hmma_loop(int iters, float* sink, long long* cycles) {  // cycles: start, end, SM per warp
  // Operands differ per lane so nothing folds; their values do not matter.
  uint32_t a0 = threadIdx.x * 0x00010001u, a1 = a0 ^ 0x3f803f80u, a2 = a0 + 1u, a3 = a1 + 1u;
  uint32_t b0 = a0 ^ 0x3c003c00u, b1 = b0 + 7u;
  float acc[CHAINS][4] = {};
  __syncwarp();
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#ifdef HMMA_PROBE_PLANTED_LOAD  // a defect for tests/compile/hmma_probe_sass.sh: an operand read in the loop
    a0 = reinterpret_cast<const volatile uint32_t*>(sink)[i & 31];
#endif
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  __syncwarp();
  long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (s == 1234.5f) sink[warp] = s;  // keeps the MMAs live; never true in practice
  if (threadIdx.x % 32 == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    cycles[3 * warp] = t0;
    cycles[3 * warp + 1] = t1;
    cycles[3 * warp + 2] = sm;
  }
}

struct row {
  int warps_per_block, blocks_per_sm, chains;
  double ms, tflops, flop_per_clk_per_sm, median_sm_cycles;
};

template <int CHAINS>
int measure(int sms, int warps_per_block, int blocks_per_sm, int iters, row& r) {
  int blocks = sms * blocks_per_sm, warps = blocks * warps_per_block;
  float* sink;
  long long* cycles;
  CHECK(cudaMalloc(&sink, warps * sizeof(float)));
  CHECK(cudaMalloc(&cycles, 3 * warps * sizeof(long long)));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  hmma_loop<CHAINS><<<blocks, warps_per_block * 32>>>(iters / 10, sink, cycles);  // warm-up
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(e0));
  hmma_loop<CHAINS><<<blocks, warps_per_block * 32>>>(iters, sink, cycles);
  CHECK(cudaEventRecord(e1));
  CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, e0, e1));
  std::vector<long long> c(3 * warps);
  CHECK(cudaMemcpy(c.data(), cycles, c.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  // Each SM's window and the flops its warps did in it; the median SM's rate.
  std::vector<long long> first(1024, -1), last(1024, 0);
  std::vector<int> warps_on(1024, 0);
  for (int w = 0; w < warps; ++w) {
    int sm = int(c[3 * w + 2]) & 1023;
    if (first[sm] < 0 || c[3 * w] < first[sm]) first[sm] = c[3 * w];
    last[sm] = std::max(last[sm], c[3 * w + 1]);
    ++warps_on[sm];
  }
  double per_warp_flops = double(iters) * CHAINS * flops_per_mma;
  std::vector<std::pair<double, double>> rate;  // flop/clk, cycles
  for (int sm = 0; sm < 1024; ++sm)
    if (warps_on[sm] > 0)
      rate.push_back({warps_on[sm] * per_warp_flops / double(last[sm] - first[sm]), double(last[sm] - first[sm])});
  std::nth_element(rate.begin(), rate.begin() + rate.size() / 2, rate.end());
  const auto mid = rate[rate.size() / 2];
  r = {warps_per_block, blocks_per_sm, CHAINS, ms, double(warps) * per_warp_flops / (ms * 1e-3) / 1e12, mid.first,
       mid.second};
  cudaFree(sink);
  cudaFree(cycles);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return 0;
}

template <int CHAINS>
int fits(int warps_per_block, int blocks_per_sm) {
  int n = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, hmma_loop<CHAINS>, warps_per_block * 32, 0);
  return n >= blocks_per_sm;
}

int main(int argc, char** argv) {
  cudaDeviceProp p{};
  CHECK(cudaGetDeviceProperties(&p, 0));
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  std::printf("%s, sm_%d%d, %d SMs, max SM clock %d MHz\n", p.name, p.major, p.minor,
              p.multiProcessorCount, clock_khz / 1000);
  std::vector<row> rows;
  const int iters = 20000;
  for (int wpb : {4, 8}) {
    for (int bps : {1, 2, 4}) {
      row r{};
      if (fits<4>(wpb, bps) && measure<4>(p.multiProcessorCount, wpb, bps, iters, r) == 0) rows.push_back(r);
      if (fits<8>(wpb, bps) && measure<8>(p.multiProcessorCount, wpb, bps, iters, r) == 0) rows.push_back(r);
    }
  }
  if (rows.empty()) return 1;
  std::printf("%6s %6s %6s %10s %10s %16s %10s\n", "warps", "blocks", "chains", "ms", "TFLOP/s", "FLOP/clk/SM",
              "MHz");
  for (auto& r : rows)  // the clock the SMs ran at: their cycles over the launch's time
    std::printf("%6d %6d %6d %10.3f %10.1f %16.1f %10.0f\n", r.warps_per_block, r.blocks_per_sm, r.chains, r.ms,
                r.tflops, r.flop_per_clk_per_sm, r.median_sm_cycles / (r.ms * 1e3));
  auto best = *std::max_element(rows.begin(), rows.end(),
                                [](auto& a, auto& b) { return a.flop_per_clk_per_sm < b.flop_per_clk_per_sm; });
  std::printf("best: %.1f FLOP/clk/SM (%.1f TFLOP/s at this run's clock; %.1f at the max clock)\n",
              best.flop_per_clk_per_sm, best.tflops,
              best.flop_per_clk_per_sm * p.multiProcessorCount * clock_khz * 1e3 / 1e12);
  if (argc > 1) {
    FILE* f = std::fopen(argv[1], "w");
    if (!f) return 1;
    std::fprintf(f, "{\"schema\": \"tiletune.hmma_probe/1\", \"device\": \"%s\", \"sm\": %d, \"sm_count\": %d, \"max_clock_mhz\": %d, \"rows\": [",
                 p.name, p.major * 10 + p.minor, p.multiProcessorCount, clock_khz / 1000);
    for (size_t i = 0; i < rows.size(); ++i)
      std::fprintf(f,
                   "%s\n  {\"warps_per_block\": %d, \"blocks_per_sm\": %d, \"chains\": %d, \"ms\": %.4f, "
                   "\"tflops\": %.2f, \"flop_per_clk_per_sm\": %.2f, \"median_sm_cycles\": %.0f}",
                   i ? "," : "", rows[i].warps_per_block, rows[i].blocks_per_sm, rows[i].chains, rows[i].ms,
                   rows[i].tflops, rows[i].flop_per_clk_per_sm, rows[i].median_sm_cycles);
    std::fprintf(f, "\n], \"best_flop_per_clk_per_sm\": %.2f}\n", best.flop_per_clk_per_sm);
    std::fclose(f);
  }
  return 0;
}
