// mma family: tensor cores through mma.sync (m16n8k16 for f16/bf16,
// m16n8k8 for tf32), a cp.async multi-stage shared-memory pipeline, ldmatrix
// fragment loads for the 16-bit types, padded shared memory.
// Macros (besides gemm_common.cuh's): TT_WARPS_M x TT_WARPS_N warps,
// TT_STAGES pipeline depth.
//
// Tiles sit in shared memory as they are stored in global memory (A [m][k]
// for 'n', [k][m] for 't'; B [k][n] for 'n', [n][k] for 't'), so every copy
// is a straight 16-byte cp.async, and the layout decides whether ldmatrix
// transposes. Rows whose global address is not 16-byte aligned (odd leading
// dimensions) take a plain element-wise path instead.

#define TT_THREADS (TT_WARPS_M * TT_WARPS_N * 32)
#define TT_WM (TT_BM / TT_WARPS_M)
#define TT_WN (TT_BN / TT_WARPS_N)
#define TT_MI (TT_WM / 16)
#define TT_NI (TT_WN / 8)
#define TT_CHUNK (16 / TT_ELEM_BYTES)  // elements per 16-byte copy

#if TT_ELEM_BYTES == 2
#define TT_MMA_K 16
#define TT_PAD_KC 8  // rows that run along k
#define TT_PAD_MN 8  // rows that run along m or n
#else
#define TT_MMA_K 8
#define TT_PAD_KC 4
#define TT_PAD_MN 8
#endif

#if TT_A_T
#define TT_A_ROWS TT_BK
#define TT_A_COLS TT_BM
#define TT_LDA_S (TT_BM + TT_PAD_MN)
#else
#define TT_A_ROWS TT_BM
#define TT_A_COLS TT_BK
#define TT_LDA_S (TT_BK + TT_PAD_KC)
#endif
#if TT_B_T
#define TT_B_ROWS TT_BN
#define TT_B_COLS TT_BK
#define TT_LDB_S (TT_BK + TT_PAD_KC)
#else
#define TT_B_ROWS TT_BK
#define TT_B_COLS TT_BN
#define TT_LDB_S (TT_BN + TT_PAD_MN)
#endif
#define TT_A_STAGE (TT_A_ROWS * TT_LDA_S)
#define TT_B_STAGE (TT_B_ROWS * TT_LDB_S)

__device__ __forceinline__ unsigned tt_smem_addr(const void* p) {
  unsigned r;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}

// Shared memory is addressed with 32-bit offsets from one base computed once:
// generic 64-bit pointers per copy and per ldmatrix cost registers that the
// 64x64 warp tiles need for their accumulators.
__device__ __forceinline__ void tt_cp_async16(unsigned dst, const void* src, int src_bytes) {
  // Bytes past src_bytes are zero-filled: that is the edge-tile predicate.
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void tt_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void tt_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Copies one rows x cols tile (cols contiguous in global and shared memory)
// whose top-left element is at `g` (row stride ld). rows_left/cols_left say
// how much of the tile lies inside the matrix.
template <int ROWS, int COLS, int LDS>
__device__ __forceinline__ void tt_load_tile(elem_t* s, unsigned s_addr, const elem_t* g, int ld,
                                             int rows_left, int cols_left, bool aligned, int tid) {
  constexpr int chunks_per_row = COLS / TT_CHUNK;
  constexpr int chunks = ROWS * chunks_per_row;
#pragma unroll
  for (int i = 0; i < (chunks + TT_THREADS - 1) / TT_THREADS; ++i) {
    const int c = tid + i * TT_THREADS;
    if (chunks % TT_THREADS != 0 && c >= chunks) break;
    const int r = c / chunks_per_row, col = (c % chunks_per_row) * TT_CHUNK;
    int valid = r < rows_left ? cols_left - col : 0;
    valid = valid < 0 ? 0 : (valid > TT_CHUNK ? TT_CHUNK : valid);
    const elem_t* src = g + (long long)r * ld + col;
    if (aligned) {
      tt_cp_async16(s_addr + (r * LDS + col) * TT_ELEM_BYTES, valid > 0 ? src : g,
                    valid * TT_ELEM_BYTES);
    } else {
      // The slow path for unaligned rows: a loop, not unrolled, keeps the
      // kernel small (NVRTC's time grows with the code).
      elem_t* dst = s + r * LDS + col;
#pragma unroll 1
      for (int e = 0; e < TT_CHUNK; ++e) dst[e] = e < valid ? src[e] : elem_t(0);
    }
  }
}

__device__ __forceinline__ void tt_ldmatrix_x4(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void tt_ldmatrix_x4_trans(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void tt_mma(float* d, const unsigned* a, const unsigned* b) {
#if TT_DTYPE == TT_TF32
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif TT_DTYPE == TT_BF16
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

#if TT_DTYPE == TT_TF32
__device__ __forceinline__ unsigned tt_to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
#endif

// Fragments of the k-step at k_base (relative to the tile) for this warp;
// as/bs for element loads, as_addr/bs_addr (shared-space bytes) for ldmatrix.
__device__ __forceinline__ void tt_load_fragments(const elem_t* as, const elem_t* bs,
                                                  unsigned as_addr, unsigned bs_addr, int k_base,
                                                  int wm0, int wn0, int lane,
                                                  unsigned (&a)[TT_MI][4],
                                                  unsigned (&b)[TT_NI][2]) {
#if TT_ELEM_BYTES == 2
  // ldmatrix.x4: lanes 8q..8q+7 give the row addresses of 8x8 matrix q.
  const int q = lane >> 3, r = lane & 7;
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi) {
    const int m = wm0 + mi * 16;
#if TT_A_T
    // Stored [k][m]: matrices (k+0,m+0) (k+0,m+8) (k+8,m+0) (k+8,m+8), transposed.
    tt_ldmatrix_x4_trans(
        a[mi], as_addr + ((k_base + r + (q >> 1) * 8) * TT_LDA_S + m + (q & 1) * 8) * 2);
#else
    // Stored [m][k]: matrices (m+0,k+0) (m+8,k+0) (m+0,k+8) (m+8,k+8).
    tt_ldmatrix_x4(a[mi], as_addr + ((m + r + (q & 1) * 8) * TT_LDA_S + k_base + (q >> 1) * 8) * 2);
#endif
  }
#pragma unroll
  for (int ni = 0; ni < TT_NI; ni += 2) {
    const int n = wn0 + ni * 8;
    unsigned t[4];
#if TT_B_T
    // Stored [n][k]: matrices (n+0,k+0) (n+0,k+8) (n+8,k+0) (n+8,k+8).
    tt_ldmatrix_x4(t, bs_addr + ((n + r + (q >> 1) * 8) * TT_LDB_S + k_base + (q & 1) * 8) * 2);
#else
    // Stored [k][n]: matrices (k+0,n+0) (k+8,n+0) (k+0,n+8) (k+8,n+8), transposed.
    tt_ldmatrix_x4_trans(t, bs_addr + ((k_base + r + (q & 1) * 8) * TT_LDB_S + n + (q >> 1) * 8) * 2);
#endif
    b[ni][0] = t[0];
    b[ni][1] = t[1];
    b[ni + 1][0] = t[2];
    b[ni + 1][1] = t[3];
  }
#else
  // tf32 m16n8k8 fragments, element by element (PTX ISA, "Matrix Fragments
  // for mma.m16n8k8"): a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);
  // b0 (k t, n g), b1 (k t+4, n g).
  const int g = lane >> 2, t = lane & 3;
#if TT_A_T
#define TT_AS(m, k) as[(k) * TT_LDA_S + (m)]
#else
#define TT_AS(m, k) as[(m) * TT_LDA_S + (k)]
#endif
#if TT_B_T
#define TT_BS(k, n) bs[(n) * TT_LDB_S + (k)]
#else
#define TT_BS(k, n) bs[(k) * TT_LDB_S + (n)]
#endif
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi) {
    const int m = wm0 + mi * 16 + g;
    a[mi][0] = tt_to_tf32(TT_AS(m, k_base + t));
    a[mi][1] = tt_to_tf32(TT_AS(m + 8, k_base + t));
    a[mi][2] = tt_to_tf32(TT_AS(m, k_base + t + 4));
    a[mi][3] = tt_to_tf32(TT_AS(m + 8, k_base + t + 4));
  }
#pragma unroll
  for (int ni = 0; ni < TT_NI; ++ni) {
    const int n = wn0 + ni * 8 + g;
    b[ni][0] = tt_to_tf32(TT_BS(k_base + t, n));
    b[ni][1] = tt_to_tf32(TT_BS(k_base + t + 4, n));
  }
#undef TT_AS
#undef TT_BS
#endif
}

extern "C" __global__ void __launch_bounds__(TT_THREADS, 1)
tiletune_gemm(const elem_t* __restrict__ A, const elem_t* __restrict__ B, elem_t* __restrict__ C,
              int M, int N, int K, int lda, int ldb, int ldc, long long batch_stride_a,
              long long batch_stride_b, long long batch_stride_c, float alpha, float beta) {
  extern __shared__ __align__(16) unsigned char tt_smem_raw[];
  elem_t* const smem = reinterpret_cast<elem_t*>(tt_smem_raw);
  elem_t* const As = smem;                            // [STAGES][A_STAGE]
  elem_t* const Bs = smem + TT_STAGES * TT_A_STAGE;  // [STAGES][B_STAGE]
  const unsigned as_base = tt_smem_addr(As);
  const unsigned bs_base = as_base + TT_STAGES * TT_A_STAGE * TT_ELEM_BYTES;

  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int wm0 = (warp / TT_WARPS_N) * TT_WM;
  const int wn0 = (warp % TT_WARPS_N) * TT_WN;
  const int m0 = blockIdx.x * TT_BM;
  const int n0 = blockIdx.y * TT_BN;
  A += blockIdx.z * batch_stride_a;
  B += blockIdx.z * batch_stride_b;
  C += blockIdx.z * batch_stride_c;

  // 16-byte copies need 16-byte aligned rows: one decision per kernel.
  const bool a_aligned = lda % TT_CHUNK == 0 && ((unsigned long long)A & 15) == 0;
  const bool b_aligned = ldb % TT_CHUNK == 0 && ((unsigned long long)B & 15) == 0;

  auto load_stage = [&](int stage, int k0) {
#if TT_A_T
    tt_load_tile<TT_A_ROWS, TT_A_COLS, TT_LDA_S>(As + stage * TT_A_STAGE,
                                                 as_base + stage * TT_A_STAGE * TT_ELEM_BYTES,
                                                 A + (long long)k0 * lda + m0, lda, K - k0,
                                                 M - m0, a_aligned, tid);
#else
    tt_load_tile<TT_A_ROWS, TT_A_COLS, TT_LDA_S>(As + stage * TT_A_STAGE,
                                                 as_base + stage * TT_A_STAGE * TT_ELEM_BYTES,
                                                 A + (long long)m0 * lda + k0, lda, M - m0,
                                                 K - k0, a_aligned, tid);
#endif
#if TT_B_T
    tt_load_tile<TT_B_ROWS, TT_B_COLS, TT_LDB_S>(Bs + stage * TT_B_STAGE,
                                                 bs_base + stage * TT_B_STAGE * TT_ELEM_BYTES,
                                                 B + (long long)n0 * ldb + k0, ldb, N - n0,
                                                 K - k0, b_aligned, tid);
#else
    tt_load_tile<TT_B_ROWS, TT_B_COLS, TT_LDB_S>(Bs + stage * TT_B_STAGE,
                                                 bs_base + stage * TT_B_STAGE * TT_ELEM_BYTES,
                                                 B + (long long)k0 * ldb + n0, ldb, K - k0,
                                                 N - n0, b_aligned, tid);
#endif
  };

  float acc[TT_MI][TT_NI][4];
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < TT_NI; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

  const int k_tiles = (K + TT_BK - 1) / TT_BK;
  // Prologue: STAGES-1 tiles in flight (empty groups past the end keep the count).
#pragma unroll 1
  for (int s = 0; s < TT_STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, s * TT_BK);
    tt_cp_async_commit();
  }

  unsigned a[TT_MI][4];
  unsigned b[TT_NI][2];
  for (int kt = 0; kt < k_tiles; ++kt) {
    // Tile kt has landed once at most STAGES-2 groups are pending; the barrier
    // also tells every thread that the stage refilled below was consumed.
    tt_cp_async_wait<TT_STAGES - 2>();
    __syncthreads();
    const int next = kt + TT_STAGES - 1;
    if (next < k_tiles) load_stage(next % TT_STAGES, next * TT_BK);
    tt_cp_async_commit();

    const int stage = kt % TT_STAGES;
    const elem_t* as = As + stage * TT_A_STAGE;
    const elem_t* bs = Bs + stage * TT_B_STAGE;
    const unsigned as_addr = as_base + stage * TT_A_STAGE * TT_ELEM_BYTES;
    const unsigned bs_addr = bs_base + stage * TT_B_STAGE * TT_ELEM_BYTES;
    // Two k-steps at a time: a full unroll at BK 64 lets the compiler hoist
    // every fragment load and spill a 64x64 warp tile's registers.
#pragma unroll 2
    for (int kk = 0; kk < TT_BK; kk += TT_MMA_K) {
      tt_load_fragments(as, bs, as_addr, bs_addr, kk, wm0, wn0, lane, a, b);
#pragma unroll
      for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < TT_NI; ++ni) tt_mma(acc[mi][ni], a[mi], b[ni]);
    }
  }
  tt_cp_async_wait<0>();

  // Accumulator layout: c0,c1 at (g, 2t), (g, 2t+1); c2,c3 at (g+8, 2t), (g+8, 2t+1).
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < TT_NI; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        tt_store_c(C, ldc, m0 + wm0 + mi * 16 + g + (e >> 1) * 8, n0 + wn0 + ni * 8 + 2 * t + (e & 1), M, N,
                   acc[mi][ni][e], alpha, beta);
      }
}
