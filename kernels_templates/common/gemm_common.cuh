// tiletune kernel templates: what every family shares.
//
// tiletune prepends the configuration as macros and compiles with NVRTC:
//   TT_DTYPE   0 f32, 1 tf32, 2 f16, 3 bf16, 4 e4m3, 5 e5m2, 6 e4m3 A and e5m2 B, 7 e5m2 A and
//              e4m3 B (fp8: A and B one byte, C bf16, or TT_OUT 1 f16, 2 f32)
//   TT_A_T     0: A is M x K row-major ('n'); 1: A is stored K x M ('t')
//   TT_B_T     0: B is K x N row-major ('n'); 1: B is stored N x K ('t')
//   TT_BM, TT_BN, TT_BK   block tile
// No CUDA header is included, so NVRTC compiles a variant in tens of ms.
// C = alpha * op(A) * op(B) + beta * C, C is M x N row-major in the input
// type (bf16 for fp8 inputs), accumulation is fp32, and C is not read when beta == 0.
// elem_t and TT_ELEM_BYTES are C's; TT_AB_BYTES is A's and B's.

#define TT_F32 0
#define TT_TF32 1
#define TT_F16 2
#define TT_BF16 3
#define TT_E4M3 4
#define TT_E5M2 5
#define TT_E4M3_E5M2 6
#define TT_E5M2_E4M3 7
#define TT_FP8 (TT_DTYPE >= TT_E4M3 && TT_DTYPE <= TT_E5M2_E4M3)
// fp8's C (--out-dtype): 0 bf16, 1 f16, 2 f32.
#ifndef TT_OUT
#define TT_OUT 0
#endif
#define TT_C_BF16 (TT_DTYPE == TT_BF16 || (TT_FP8 && TT_OUT == 0))
#define TT_C_F32 (TT_DTYPE == TT_F32 || TT_DTYPE == TT_TF32 || (TT_FP8 && TT_OUT == 2))

#if TT_C_F32
typedef float elem_t;
#define TT_ELEM_BYTES 4
#else
typedef unsigned short elem_t;  // raw bits of an f16 or a bf16
#define TT_ELEM_BYTES 2
#endif
#if TT_FP8
#define TT_AB_BYTES 1
#else
#define TT_AB_BYTES TT_ELEM_BYTES
#endif

__device__ __forceinline__ float tt_to_float(float x) { return x; }
__device__ __forceinline__ float tt_to_float(unsigned short x) {
#if TT_C_BF16
  return __uint_as_float(((unsigned)x) << 16);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
  return f;
#endif
}

__device__ __forceinline__ elem_t tt_from_float(float v) {
#if TT_C_F32
  return v;
#elif TT_C_BF16
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(v));
  return r;
#else
  unsigned short r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(v));
  return r;
#endif
}

// Element (m, k) of op(A) and (k, n) of op(B) in their stored layouts.
__device__ __forceinline__ long long tt_a_offset(int m, int k, int lda) {
#if TT_A_T
  return (long long)k * lda + m;
#else
  return (long long)m * lda + k;
#endif
}
__device__ __forceinline__ long long tt_b_offset(int k, int n, int ldb) {
#if TT_B_T
  return (long long)n * ldb + k;
#else
  return (long long)k * ldb + n;
#endif
}

// The epilogue for one element; beta == 0 never reads C (it may hold NaN).
__device__ __forceinline__ void tt_store_c(elem_t* C, int ldc, int m, int n, int M, int N,
                                           float acc, float alpha, float beta) {
  if (m >= M || n >= N) return;
  elem_t* p = C + (long long)m * ldc + n;
  float v = alpha * acc;
  // beta made opaque to the optimizer: otherwise it clones the whole unrolled
  // epilogue for beta == 0 and beta != 0, and NVRTC's time grows with the code.
  asm("" : "+f"(beta));
  if (beta != 0.0f) v += beta * tt_to_float(*p);
  *p = tt_from_float(v);
}

// ---- Vector epilogue (pointer-and-stride kernels) ----------------------------
// Defaults for templates rendered without the split-K and raster macros.
#ifndef TT_SPLIT_K
#define TT_SPLIT_K 1
#endif
#ifndef TT_RASTER_GROUP
#define TT_RASTER_GROUP 0
#endif
#ifndef TT_RASTER_ALONG_N
#define TT_RASTER_ALONG_N 0
#endif

// VEC consecutive results v[0..VEC) at (m, n): one 16-byte store (and one
// 16-byte load of C when beta != 0) when VEC * element bytes == 16, the row
// lies inside N and C's rows are 16-byte aligned (c_vec); element-wise otherwise.
template <int VEC>
__device__ __forceinline__ void tt_store_c_vec(elem_t* C, int ldc, int m, int n, int M, int N,
                                               const float* v, float alpha, float beta,
                                               bool c_vec) {
  if (m >= M) return;
  asm("" : "+f"(beta));  // opaque, as in tt_store_c: no cloned epilogue
  if (VEC * TT_ELEM_BYTES == 16 && c_vec && n + VEC <= N) {
    elem_t* p = C + (long long)m * ldc + n;
#if TT_ELEM_BYTES == 4
    float4 r;
    r.x = alpha * v[0]; r.y = alpha * v[1]; r.z = alpha * v[2]; r.w = alpha * v[3];
    if (beta != 0.0f) {
      const float4 c = *reinterpret_cast<const float4*>(p);
      r.x += beta * c.x; r.y += beta * c.y; r.z += beta * c.z; r.w += beta * c.w;
    }
    *reinterpret_cast<float4*>(p) = r;
#else
    float o[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] = alpha * v[e];
    if (beta != 0.0f) {
      const uint4 c = *reinterpret_cast<const uint4*>(p);
      const unsigned cw[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
      for (int e = 0; e < 8; ++e)
        o[e] += beta * tt_to_float((unsigned short)(cw[e >> 1] >> ((e & 1) * 16)));
    }
    unsigned w[4];
#pragma unroll
    for (int e = 0; e < 4; ++e)
      w[e] = (unsigned)tt_from_float(o[2 * e]) | ((unsigned)tt_from_float(o[2 * e + 1]) << 16);
    uint4 r;
    r.x = w[0]; r.y = w[1]; r.z = w[2]; r.w = w[3];
    *reinterpret_cast<uint4*>(p) = r;
#endif
    return;
  }
#pragma unroll
  for (int e = 0; e < VEC; ++e) tt_store_c(C, ldc, m, n + e, M, N, v[e], alpha, beta);
}

// ---- Split-K helpers: partial sums in an fp32 workspace ----------------------
__device__ __forceinline__ void tt_fence_gpu() { asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); }
__device__ __forceinline__ unsigned tt_atomic_add(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.global.add.u32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
// Partials of other blocks: past L1 (not coherent across SMs), from L2.
__device__ __forceinline__ float4 tt_load_cg(const float* p) {
  float4 r;
  asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];\n"
               : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w)
               : "l"(p));
  return r;
}
