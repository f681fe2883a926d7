// The premise of the mma family's tf32 rounding (kernels_templates/mma/mma_addressing.cuh,
// tt_tf32_round_bits): mma.sync reads its .tf32 operands without their low 13 bits, so adding half
// a tf32 ulp to a finite value's bits rounds it to nearest, ties away from zero, as cvt.rna does.
// A = 1 + 0x1fff * 2^-23 (just under one tf32 ulp above 1) and B = 1: each element of D sums 8
// products, exactly 8 when the low bits are ignored (8.0078 if they count, or if the operand were
// rounded). A second case checks the rounding itself: A = 1 + 2^-11 with half an ulp added gives
// 1 + 2^-10, so D = 8.0078125.
//   nvcc -O3 -arch=native -o tf32_low_bits_probe scripts/bench/tf32_low_bits_probe.cu
//   tf32_low_bits_probe [OUT.json]      exit 0 when both hold, 1 when not, 2 when the probe fails
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

__global__ void tf32_mma(uint32_t a, float* d) {
  const uint32_t b = 0x3f800000u;
  float c[4] = {};
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));
  for (int i = 0; i < 4; ++i) d[threadIdx.x * 4 + i] = c[i];
}

// D's elements for A = a (the same in every register), or false when the run failed.
bool run(uint32_t a, float (&out)[128]) {
  float* d = nullptr;
  if (cudaMalloc(&d, sizeof out) != cudaSuccess) return false;
  tf32_mma<<<1, 32>>>(a, d);
  const bool ok = cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(d);
  return ok;
}

bool all_equal(const float (&v)[128], float want) {
  for (float x : v)
    if (x != want) return false;
  return true;
}

int main(int argc, char** argv) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 2;
  float low[128], rounded[128];
  if (!run(0x3f801fffu, low) || !run(0x3f801000u + 0x1000u, rounded)) return 2;
  const bool ignored = all_equal(low, 8.0f), rounds = all_equal(rounded, 8.0078125f);
  std::printf("%s (sm_%d%d): tf32 operands' low 13 bits ignored: %s (D = %.7g); half an ulp added rounds: %s (D = %.7g)\n",
              p.name, p.major, p.minor, ignored ? "yes" : "NO", low[0], rounds ? "yes" : "NO", rounded[0]);
  if (argc > 1) {
    FILE* f = std::fopen(argv[1], "w");
    if (!f) return 2;
    std::fprintf(f,
                 "{\"schema\": \"tiletune.tf32_low_bits_probe/1\", \"device\": \"%s\", \"sm\": %d, "
                 "\"low_bits_ignored\": %s, \"d_low_bits\": %.9g, \"half_ulp_rounds\": %s, \"d_rounded\": %.9g}\n",
                 p.name, p.major * 10 + p.minor, ignored ? "true" : "false", low[0], rounds ? "true" : "false",
                 rounded[0]);
    std::fclose(f);
  }
  return ignored && rounds ? 0 : 1;
}
