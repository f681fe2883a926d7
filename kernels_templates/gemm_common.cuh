// tiletune kernel templates: what every family shares.
//
// tiletune prepends the configuration as macros and compiles with NVRTC:
//   TT_DTYPE   0 f32, 1 tf32, 2 f16, 3 bf16
//   TT_A_T     0: A is M x K row-major ('n'); 1: A is stored K x M ('t')
//   TT_B_T     0: B is K x N row-major ('n'); 1: B is stored N x K ('t')
//   TT_BM, TT_BN, TT_BK   block tile
// No CUDA header is included, so NVRTC compiles a variant in tens of ms.
// C = alpha * op(A) * op(B) + beta * C, C is M x N row-major in the input
// type, accumulation is fp32, and C is not read when beta == 0.

#define TT_F32 0
#define TT_TF32 1
#define TT_F16 2
#define TT_BF16 3

#if TT_DTYPE == TT_F32 || TT_DTYPE == TT_TF32
typedef float elem_t;
#define TT_ELEM_BYTES 4
#else
typedef unsigned short elem_t;  // raw bits of an f16 or a bf16
#define TT_ELEM_BYTES 2
#endif

__device__ __forceinline__ float tt_to_float(float x) { return x; }
__device__ __forceinline__ float tt_to_float(unsigned short x) {
#if TT_DTYPE == TT_BF16
  return __uint_as_float(((unsigned)x) << 16);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
  return f;
#endif
}

__device__ __forceinline__ elem_t tt_from_float(float v) {
#if TT_DTYPE == TT_F32 || TT_DTYPE == TT_TF32
  return v;
#elif TT_DTYPE == TT_BF16
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
