// simt family: fp32 FFMA with a per-thread register tile, double-buffered
// shared memory, and vector global loads when the layout allows them.
// Macros (besides gemm_common.cuh's): TT_TM x TT_TN thread tile, TT_VEC the
// global load width in elements (1, 2 or 4).
//
// Shared memory holds As[k][m] and Bs[k][n] (both m/n-contiguous), so the
// inner loop reads each thread's TM and TN values as float4. The 4-float
// chunks are XOR-swizzled by k (tt_simt_offset in tile_addressing.cuh), so
// the transposing scalar stores of the k-contiguous layouts are free of bank
// conflicts; the others store whole vectors. C is written in float4 pieces.

#define TT_THREADS ((TT_BM / TT_TM) * (TT_BN / TT_TN))
#define TT_LDAS TT_BM
#define TT_LDBS TT_BN
#define TT_AS_AT(k, m) tt_simt_offset((k), (m), TT_BM, TT_BK, TT_VEC)
#define TT_BS_AT(k, n) tt_simt_offset((k), (n), TT_BN, TT_BK, TT_VEC)
#define TT_A_LOADS (TT_BM * TT_BK / (TT_THREADS * TT_VEC))
#define TT_B_LOADS (TT_BN * TT_BK / (TT_THREADS * TT_VEC))

// Loads TT_VEC consecutive elements starting at p, of which `valid` lie in
// the matrix; a vector load when the whole vector is valid and aligned.
__device__ __forceinline__ void tt_load_vec(const float* p, int valid, bool vec_ok, float* out) {
  if (vec_ok && valid >= TT_VEC) {
#if TT_VEC == 4
    float4 v = *reinterpret_cast<const float4*>(p);
    out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w;
    return;
#elif TT_VEC == 2
    float2 v = *reinterpret_cast<const float2*>(p);
    out[0] = v.x; out[1] = v.y;
    return;
#endif
  }
#pragma unroll
  for (int v = 0; v < TT_VEC; ++v) out[v] = v < valid ? p[v] : 0.0f;
}

// VEC registers to shared memory as one store (the VEC elements are
// consecutive within one 4-float chunk).
__device__ __forceinline__ void tt_store_shared_vec(float* p, const float* v) {
#if TT_VEC == 4
  float4 x;
  x.x = v[0]; x.y = v[1]; x.z = v[2]; x.w = v[3];
  *reinterpret_cast<float4*>(p) = x;
#elif TT_VEC == 2
  float2 x;
  x.x = v[0]; x.y = v[1];
  *reinterpret_cast<float2*>(p) = x;
#else
  p[0] = v[0];
#endif
}

extern "C" __global__ void __launch_bounds__(TT_THREADS, 1)
tiletune_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
              int M, int N, int K, int lda, int ldb, int ldc, long long batch_stride_a,
              long long batch_stride_b, long long batch_stride_c, float alpha, float beta,
              float* __restrict__ workspace, unsigned* __restrict__ tile_counters) {
  extern __shared__ __align__(128) float tt_smem[];
  float* As = tt_smem;                       // [2][BK][LDAS]
  float* Bs = tt_smem + 2 * TT_BK * TT_LDAS;  // [2][BK][LDBS]

  const int tid = threadIdx.x;
  int tile_m, tile_n;
  tt_raster(blockIdx.x + blockIdx.y * gridDim.x, gridDim.x, gridDim.y, TT_RASTER_GROUP,
            TT_RASTER_ALONG_N, tile_m, tile_n);
  const int m0 = tile_m * TT_BM;
  const int n0 = tile_n * TT_BN;
  A += blockIdx.z * batch_stride_a;
  B += blockIdx.z * batch_stride_b;
  C += blockIdx.z * batch_stride_c;

  // Vector loads need aligned rows: a uniform decision for the whole kernel.
  const bool a_vec = TT_VEC > 1 && lda % TT_VEC == 0 && batch_stride_a % TT_VEC == 0 &&
                     ((unsigned long long)A % (4 * TT_VEC)) == 0;
  const bool b_vec = TT_VEC > 1 && ldb % TT_VEC == 0 && batch_stride_b % TT_VEC == 0 &&
                     ((unsigned long long)B % (4 * TT_VEC)) == 0;

  float a_regs[TT_A_LOADS][TT_VEC];
  float b_regs[TT_B_LOADS][TT_VEC];

  // Global -> registers for the k-tile starting at k0.
  auto load_global = [&](int k0) {
#pragma unroll
    for (int i = 0; i < TT_A_LOADS; ++i) {
      const int c = tid + i * TT_THREADS;
#if TT_A_T
      // Stored K x M: chunks run along m.
      const int kr = c / (TT_BM / TT_VEC), mc = (c % (TT_BM / TT_VEC)) * TT_VEC;
      const int k = k0 + kr, m = m0 + mc;
      const int valid = k < K ? min(TT_VEC, M - m) : 0;
      tt_load_vec(A + (valid > 0 ? tt_a_offset(m, k, lda) : 0), valid, a_vec, a_regs[i]);
#else
      // Stored M x K: chunks run along k.
      const int r = c / (TT_BK / TT_VEC), kc = (c % (TT_BK / TT_VEC)) * TT_VEC;
      const int m = m0 + r, k = k0 + kc;
      const int valid = m < M ? min(TT_VEC, K - k) : 0;
      tt_load_vec(A + (valid > 0 ? tt_a_offset(m, k, lda) : 0), valid, a_vec, a_regs[i]);
#endif
    }
#pragma unroll
    for (int i = 0; i < TT_B_LOADS; ++i) {
      const int c = tid + i * TT_THREADS;
#if TT_B_T
      // Stored N x K: chunks run along k.
      const int r = c / (TT_BK / TT_VEC), kc = (c % (TT_BK / TT_VEC)) * TT_VEC;
      const int n = n0 + r, k = k0 + kc;
      const int valid = n < N ? min(TT_VEC, K - k) : 0;
      tt_load_vec(B + (valid > 0 ? tt_b_offset(k, n, ldb) : 0), valid, b_vec, b_regs[i]);
#else
      // Stored K x N: chunks run along n.
      const int kr = c / (TT_BN / TT_VEC), nc = (c % (TT_BN / TT_VEC)) * TT_VEC;
      const int k = k0 + kr, n = n0 + nc;
      const int valid = k < K ? min(TT_VEC, N - n) : 0;
      tt_load_vec(B + (valid > 0 ? tt_b_offset(k, n, ldb) : 0), valid, b_vec, b_regs[i]);
#endif
    }
  };

  // Registers -> shared buffer `buf`, transposing where the layout is k-contiguous.
  auto store_shared = [&](int buf) {
    float* as = As + buf * TT_BK * TT_LDAS;
    float* bs = Bs + buf * TT_BK * TT_LDBS;
#pragma unroll
    for (int i = 0; i < TT_A_LOADS; ++i) {
      const int c = tid + i * TT_THREADS;
#if TT_A_T
      const int kr = c / (TT_BM / TT_VEC), mc = (c % (TT_BM / TT_VEC)) * TT_VEC;
      tt_store_shared_vec(as + TT_AS_AT(kr, mc), a_regs[i]);
#else
      const int r = c / (TT_BK / TT_VEC), kc = (c % (TT_BK / TT_VEC)) * TT_VEC;
#pragma unroll
      for (int v = 0; v < TT_VEC; ++v) as[TT_AS_AT(kc + v, r)] = a_regs[i][v];
#endif
    }
#pragma unroll
    for (int i = 0; i < TT_B_LOADS; ++i) {
      const int c = tid + i * TT_THREADS;
#if TT_B_T
      const int r = c / (TT_BK / TT_VEC), kc = (c % (TT_BK / TT_VEC)) * TT_VEC;
#pragma unroll
      for (int v = 0; v < TT_VEC; ++v) bs[TT_BS_AT(kc + v, r)] = b_regs[i][v];
#else
      const int kr = c / (TT_BN / TT_VEC), nc = (c % (TT_BN / TT_VEC)) * TT_VEC;
      tt_store_shared_vec(bs + TT_BS_AT(kr, nc), b_regs[i]);
#endif
    }
  };

  const int tr = tid / (TT_BN / TT_TN);  // thread row within the block
  const int tc = tid % (TT_BN / TT_TN);  // thread column
  float acc[TT_TM][TT_TN];
#pragma unroll
  for (int i = 0; i < TT_TM; ++i)
#pragma unroll
    for (int j = 0; j < TT_TN; ++j) acc[i][j] = 0.0f;

  const int k_tiles = (K + TT_BK - 1) / TT_BK;
  load_global(0);
  store_shared(0);
  __syncthreads();

  for (int kt = 0; kt < k_tiles; ++kt) {
    const int buf = kt & 1;
    // Issue the next tile's global loads before computing on this one.
    if (kt + 1 < k_tiles) load_global((kt + 1) * TT_BK);
    const float* as = As + buf * TT_BK * TT_LDAS;
    const float* bs = Bs + buf * TT_BK * TT_LDBS;
#pragma unroll
    for (int kk = 0; kk < TT_BK; ++kk) {
      float a[TT_TM], b[TT_TN];
#pragma unroll
      for (int i = 0; i < TT_TM; i += 4) {
        const float4 v = *reinterpret_cast<const float4*>(as + TT_AS_AT(kk, tr * TT_TM + i));
        a[i] = v.x; a[i + 1] = v.y; a[i + 2] = v.z; a[i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < TT_TN; j += 4) {
        const float4 v = *reinterpret_cast<const float4*>(bs + TT_BS_AT(kk, tc * TT_TN + j));
        b[j] = v.x; b[j + 1] = v.y; b[j + 2] = v.z; b[j + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TT_TM; ++i)
#pragma unroll
        for (int j = 0; j < TT_TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    // The other buffer was last read before the previous barrier, so it is free.
    if (kt + 1 < k_tiles) store_shared(buf ^ 1);
    __syncthreads();
  }

  // Each thread's TN columns of a row are consecutive, and so are the
  // threads': float4 stores cover whole sectors.
  const bool c_vec = ldc % 4 == 0 && ((unsigned long long)C & 15) == 0;
#pragma unroll
  for (int i = 0; i < TT_TM; ++i)
#pragma unroll
    for (int j = 0; j < TT_TN; j += 4)
      tt_store_c_vec<4>(C, ldc, m0 + tr * TT_TM + i, n0 + tc * TT_TN + j, M, N, &acc[i][j], alpha,
                        beta, c_vec);
}
