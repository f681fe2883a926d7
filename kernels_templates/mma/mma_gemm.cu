// mma family: tensor cores through mma.sync (m16n8k16 for f16/bf16,
// m16n8k8 for tf32), a cp.async multi-stage shared-memory pipeline, ldmatrix
// fragment loads for the 16-bit types, XOR-swizzled shared memory
// (tile_addressing.cuh), an epilogue staged through shared memory that writes
// C in 16-byte vectors, optional split-K (TT_SPLIT_K > 1) into an fp32
// workspace reduced by the last block of each tile, grouped rasterization.
// Macros (besides gemm_common.cuh's): TT_WARPS_M x TT_WARPS_N warps,
// TT_STAGES pipeline depth, TT_SPLIT_K, TT_RASTER_GROUP, TT_RASTER_ALONG_N.
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
#else
#define TT_MMA_K 8
#endif

// Shared tiles: rows x cols, unpadded; KC: the rows run along k.
#if TT_A_T
#define TT_A_ROWS TT_BK
#define TT_A_COLS TT_BM
#define TT_A_KC 0
#else
#define TT_A_ROWS TT_BM
#define TT_A_COLS TT_BK
#define TT_A_KC 1
#endif
#if TT_B_T
#define TT_B_ROWS TT_BN
#define TT_B_COLS TT_BK
#define TT_B_KC 1
#else
#define TT_B_ROWS TT_BK
#define TT_B_COLS TT_BN
#define TT_B_KC 0
#endif
#define TT_A_STAGE (TT_A_ROWS * TT_A_COLS)
#define TT_B_STAGE (TT_B_ROWS * TT_B_COLS)
#define TT_A_CPR (TT_A_COLS / TT_CHUNK)  // 16-byte chunks per row
#define TT_B_CPR (TT_B_COLS / TT_CHUNK)

// Resident blocks asked of ptxas (it caps registers at 64K / (threads x
// blocks)): for the 16-bit types at BK 32, 8 warps of up to 64 accumulators
// fit in 128 registers, so two such blocks share an SM, and 4 warps of up to
// 64 take three blocks (170 registers). BK 64, tf32 (element-wise fragments)
// and 128 accumulators (about 240 registers) spilled under those caps, and
// so did ptxas for sm_80 to sm_89 at 8 warps in some layouts (so two blocks
// of 8 warps is asked on sm_90 only, where the compile tests show no spill).
#define TT_ACCUMULATORS (TT_MI * TT_NI * 4)
#if TT_ACCUMULATORS <= 64 && TT_THREADS == 256 && TT_ELEM_BYTES == 2 && TT_BK <= 32 && \
    defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TT_MIN_BLOCKS 2
#elif TT_ACCUMULATORS <= 64 && TT_THREADS == 128 && TT_ELEM_BYTES == 2 && TT_BK <= 32
#define TT_MIN_BLOCKS 3
#else
#define TT_MIN_BLOCKS 1
#endif

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
template <int ROWS, int COLS, int KC>
__device__ __forceinline__ void tt_load_tile(elem_t* s, unsigned s_addr, const elem_t* g, int ld,
                                             int rows_left, int cols_left, bool aligned, int tid) {
  constexpr int chunks_per_row = COLS / TT_CHUNK;
  constexpr int chunks = ROWS * chunks_per_row;
#pragma unroll
  for (int i = 0; i < (chunks + TT_THREADS - 1) / TT_THREADS; ++i) {
    const int c = tt_copy_chunk(tid, i, TT_THREADS);
    if (chunks % TT_THREADS != 0 && c >= chunks) break;
    const int r = tt_copy_row(c, chunks_per_row), col = tt_copy_col(c, chunks_per_row, TT_CHUNK);
    const int valid = tt_copy_valid(r, col, rows_left, cols_left, TT_CHUNK);
    const elem_t* src = g + tt_row_offset(r, ld) + col;
    const int at = tt_swizzled_offset(r, col, COLS, TT_ELEM_BYTES, KC);
    if (aligned) {
      tt_cp_async16(s_addr + at * TT_ELEM_BYTES, valid > 0 ? src : g, valid * TT_ELEM_BYTES);
    } else {
      // The slow path for unaligned rows: a loop, not unrolled, keeps the
      // kernel small (NVRTC's time grows with the code).
      elem_t* dst = s + at;
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
// Every row offset added to a lane's own row is a multiple of 8 and k_base of
// 16 (8 for tf32), so the swizzle mask is the lane's, and a chunk index
// c + d with c even and d < 2 (or < 4 for c a multiple of 4) is c ^ d.
__device__ __forceinline__ void tt_load_fragments(const elem_t* as, const elem_t* bs,
                                                  unsigned as_addr, unsigned bs_addr, int k_base,
                                                  int wm0, int wn0, int lane,
                                                  unsigned (&a)[TT_MI][4],
                                                  unsigned (&b)[TT_NI][2]) {
#if TT_ELEM_BYTES == 2
  // ldmatrix.x4: lanes 8q..8q+7 give the row addresses of 8x8 matrix q
  // (the maps and the .trans choice: tile_addressing.cuh, tt_ldsm_*).
  const int q = tt_ldsm_matrix(lane), r = tt_ldsm_row(lane);
  const int a_mask = tt_swizzle_mask(r, TT_A_CPR, 2, TT_A_KC);
  const int b_mask = tt_swizzle_mask(r, TT_B_CPR, 2, TT_B_KC);
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi) {
    const int m = wm0 + mi * 16;
    // Stored [k][m]: matrices (k+0,m+0) (k+0,m+8) (k+8,m+0) (k+8,m+8), transposed;
    // stored [m][k]: matrices (m+0,k+0) (m+8,k+0) (m+0,k+8) (m+8,k+8).
    const int row = tt_ldsm_a_row(TT_A_T, m, k_base, q, r);
    const int chunk = tt_ldsm_a_chunk(TT_A_T, m, k_base, q, a_mask);
    if (tt_ldsm_a_trans(TT_A_T))
      tt_ldmatrix_x4_trans(a[mi], as_addr + tt_ldsm_offset(row, chunk, TT_A_COLS));
    else
      tt_ldmatrix_x4(a[mi], as_addr + tt_ldsm_offset(row, chunk, TT_A_COLS));
  }
#pragma unroll
  for (int ni = 0; ni < TT_NI; ni += 2) {
    const int n = wn0 + ni * 8;
    unsigned t[4];
    // Stored [n][k]: matrices (n+0,k+0) (n+0,k+8) (n+8,k+0) (n+8,k+8);
    // stored [k][n]: matrices (k+0,n+0) (k+8,n+0) (k+0,n+8) (k+8,n+8), transposed.
    const int row = tt_ldsm_b_row(TT_B_T, n, k_base, q, r);
    const int chunk = tt_ldsm_b_chunk(TT_B_T, n, k_base, q, b_mask);
    if (tt_ldsm_b_trans(TT_B_T))
      tt_ldmatrix_x4_trans(t, bs_addr + tt_ldsm_offset(row, chunk, TT_B_COLS));
    else
      tt_ldmatrix_x4(t, bs_addr + tt_ldsm_offset(row, chunk, TT_B_COLS));
#pragma unroll
    for (int x = 0; x < 4; ++x) b[ni + tt_ldsm_b_tile(x)][tt_ldsm_b_reg(x)] = t[x];
  }
#else
  // tf32 m16n8k8 fragments, element by element (PTX ISA, "Matrix Fragments
  // for mma.m16n8k8"): a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);
  // b0 (k t, n g), b1 (k t+4, n g).
  const int g = tt_frag_group(lane), t = tt_frag_thread(lane);
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int h = tt_frag_tf32_a_half(r), j = tt_frag_tf32_a_kq(r);  // rows g + 8h, k t + 4j
#if TT_A_T
      a[mi][r] = tt_to_tf32(as[tt_tf32_offset_mn_contiguous(k_base + t + 4 * j, t + 4 * j,
                                                           wm0 + mi * 16 + 8 * h, g, TT_A_COLS)]);
#else
      a[mi][r] = tt_to_tf32(as[tt_tf32_offset_k_contiguous(wm0 + mi * 16 + 8 * h + g, g, k_base, j, t,
                                                          TT_A_COLS)]);
#endif
    }
#pragma unroll
  for (int ni = 0; ni < TT_NI; ++ni)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
#if TT_B_T
      b[ni][j] = tt_to_tf32(bs[tt_tf32_offset_k_contiguous(wn0 + ni * 8 + g, g, k_base, j, t, TT_B_COLS)]);
#else
      b[ni][j] = tt_to_tf32(bs[tt_tf32_offset_mn_contiguous(k_base + t + 4 * j, t + 4 * j, wn0 + ni * 8, g,
                                                           TT_B_COLS)]);
#endif
    }
#endif
}

// Results of one row piece: VEC (16 bytes of C) fp32 values at tile (row, col).
#define TT_EPI_VEC (16 / TT_ELEM_BYTES)

constexpr int tt_smem_bytes =
    tt_mma_smem_bytes(TT_BM, TT_BN, TT_BK, TT_WARPS_M, TT_STAGES, TT_ELEM_BYTES);
constexpr int tt_epi_mi = tt_mma_epi_mi(TT_MI, TT_WARPS_M, TT_BN, tt_smem_bytes);
#define TT_PASS_ROWS (TT_WARPS_M * tt_epi_mi * 16)

// workspace: split-K partial sums, [batch][tile][slice][BM x BN] fp32;
// tile_counters: [batch][tile], zero before the first launch, and reset to
// zero by the block that reduces the tile. Both unused when TT_SPLIT_K == 1.
extern "C" __global__ void __launch_bounds__(TT_THREADS, TT_MIN_BLOCKS)
tiletune_gemm(const elem_t* __restrict__ A, const elem_t* __restrict__ B, elem_t* __restrict__ C,
              int M, int N, int K, int lda, int ldb, int ldc, long long batch_stride_a,
              long long batch_stride_b, long long batch_stride_c, float alpha, float beta,
              float* __restrict__ workspace, unsigned* __restrict__ tile_counters) {
  extern __shared__ __align__(128) unsigned char tt_smem_raw[];
  elem_t* const smem = reinterpret_cast<elem_t*>(tt_smem_raw);
  elem_t* const As = smem;                            // [STAGES][A_STAGE]
  elem_t* const Bs = smem + TT_STAGES * TT_A_STAGE;  // [STAGES][B_STAGE]
  const unsigned as_base = tt_smem_addr(As);
  const unsigned bs_base = as_base + TT_STAGES * TT_A_STAGE * TT_ELEM_BYTES;

  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int warp_m = tt_mma_warp_m(warp, TT_WARPS_N);
  const int wm0 = warp_m * TT_WM;
  const int wn0 = tt_mma_warp_n0(warp, TT_WARPS_N, TT_WN);
  const int tile = tt_mma_launch_order(blockIdx.x, blockIdx.y, gridDim.x);
  int tile_m, tile_n;
  tt_raster(tile, gridDim.x, gridDim.y, TT_RASTER_GROUP, TT_RASTER_ALONG_N, tile_m, tile_n);
  const int m0 = tile_m * TT_BM;
  const int n0 = tile_n * TT_BN;
  const int batch = tt_mma_batch(blockIdx.z, TT_SPLIT_K), slice = tt_mma_slice(blockIdx.z, TT_SPLIT_K);
  A += batch * batch_stride_a;
  B += batch * batch_stride_b;
  C += batch * batch_stride_c;

  // 16-byte copies need 16-byte aligned rows: one decision per kernel.
  const bool a_aligned = lda % TT_CHUNK == 0 && ((unsigned long long)A & 15) == 0;
  const bool b_aligned = ldb % TT_CHUNK == 0 && ((unsigned long long)B & 15) == 0;

  auto load_stage = [&](int stage, int k0) {
#if TT_A_T
    tt_load_tile<TT_A_ROWS, TT_A_COLS, TT_A_KC>(As + stage * TT_A_STAGE,
                                                as_base + stage * TT_A_STAGE * TT_ELEM_BYTES,
                                                A + tt_row_offset(k0, lda) + m0, lda, K - k0,
                                                M - m0, a_aligned, tid);
#else
    tt_load_tile<TT_A_ROWS, TT_A_COLS, TT_A_KC>(As + stage * TT_A_STAGE,
                                                as_base + stage * TT_A_STAGE * TT_ELEM_BYTES,
                                                A + tt_row_offset(m0, lda) + k0, lda, M - m0,
                                                K - k0, a_aligned, tid);
#endif
#if TT_B_T
    tt_load_tile<TT_B_ROWS, TT_B_COLS, TT_B_KC>(Bs + stage * TT_B_STAGE,
                                                bs_base + stage * TT_B_STAGE * TT_ELEM_BYTES,
                                                B + tt_row_offset(n0, ldb) + k0, ldb, N - n0,
                                                K - k0, b_aligned, tid);
#else
    tt_load_tile<TT_B_ROWS, TT_B_COLS, TT_B_KC>(Bs + stage * TT_B_STAGE,
                                                bs_base + stage * TT_B_STAGE * TT_ELEM_BYTES,
                                                B + tt_row_offset(k0, ldb) + n0, ldb, K - k0,
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

  // This block's k-tiles: all of them, or its slice's share under split-K.
  const int k_tiles_all = tt_mma_k_tiles(K, TT_BK);
  const int per_slice = tt_mma_per_slice(k_tiles_all, TT_SPLIT_K);
  const int kt_first = tt_mma_slice_first(slice, per_slice);
  const int kt_end = tt_mma_slice_end(kt_first, per_slice, k_tiles_all);
  const int k_tiles = tt_mma_slice_tiles(kt_first, kt_end);
  // Prologue: STAGES-1 tiles in flight (empty groups past the end keep the count).
#pragma unroll 1
  for (int s = 0; s < TT_STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, (kt_first + s) * TT_BK);
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
    if (next < k_tiles) load_stage(next % TT_STAGES, (kt_first + next) * TT_BK);
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
  __syncthreads();  // every warp is done with the pipeline buffers: the epilogue reuses them

  // Epilogue. Accumulator layout: c0,c1 at (g, 2t), (g, 2t+1); c2,c3 at
  // (g+8, 2t), (g+8, 2t+1). Each pass stages tt_epi_mi m16 steps of every
  // warp as fp32 in shared memory, then the block writes those rows in
  // 16-byte pieces: consecutive threads, consecutive pieces of a row.
  float* const stage = reinterpret_cast<float*>(tt_smem_raw);
  const bool c_vec = (ldc * TT_ELEM_BYTES) % 16 == 0 && ((unsigned long long)C & 15) == 0;
  const int g = tt_frag_group(lane), t = tt_frag_thread(lane);
#if TT_SPLIT_K > 1
  float* const partial =
      workspace + tt_mma_partial_offset(tt_mma_tile_slot(batch, gridDim.x, gridDim.y, tile), TT_SPLIT_K,
                                        slice, TT_BM * TT_BN);
#endif
#pragma unroll
  for (int pass = 0; pass < TT_MI / tt_epi_mi; ++pass) {
#pragma unroll
    for (int j = 0; j < tt_epi_mi; ++j)
#pragma unroll
      for (int ni = 0; ni < TT_NI; ++ni)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int sr = tt_mma_stage_row(warp_m, tt_epi_mi, j, g, h);
          float2 v;
          v.x = acc[pass * tt_epi_mi + j][ni][tt_frag_acc(h, 0)];
          v.y = acc[pass * tt_epi_mi + j][ni][tt_frag_acc(h, 1)];
          *reinterpret_cast<float2*>(stage + tt_stage_offset(sr, tt_mma_stage_col(wn0, ni, t), TT_BN)) = v;
        }
    __syncthreads();
#pragma unroll 1
    for (int item = tid; item < TT_PASS_ROWS * (TT_BN / TT_EPI_VEC); item += TT_THREADS) {
      const int sr = tt_epi_item_row(item, TT_BN, TT_EPI_VEC);
      const int col = tt_epi_item_col(item, TT_BN, TT_EPI_VEC);
      const int row = tt_mma_stage_row_to_tile_row(sr, pass, tt_epi_mi, TT_WM);
      float v[TT_EPI_VEC];
#if TT_EPI_VEC == 8
      // Two chunks; threads 4..7 of each 8 read theirs in the other order, so
      // each 8-thread phase reads 8 distinct chunk positions.
      const int swap = tt_epi_swap(col);
      const float4 x = *reinterpret_cast<const float4*>(stage + tt_stage_offset(sr, col + 4 * swap, TT_BN));
      const float4 y = *reinterpret_cast<const float4*>(stage + tt_stage_offset(sr, col + 4 - 4 * swap, TT_BN));
      const float4 lo = swap ? y : x, hi = swap ? x : y;
      v[0] = lo.x; v[1] = lo.y; v[2] = lo.z; v[3] = lo.w;
      v[4] = hi.x; v[5] = hi.y; v[6] = hi.z; v[7] = hi.w;
#else
      const float4 x = *reinterpret_cast<const float4*>(stage + tt_stage_offset(sr, col, TT_BN));
      v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
#endif
#if TT_SPLIT_K > 1
      // Partial sums go to this slice's slot of the workspace, unscaled;
      // rows past M are never read back.
      if (m0 + row < M) {
#pragma unroll
        for (int e = 0; e < TT_EPI_VEC; e += 4) {
          float4 w;
          w.x = v[e]; w.y = v[e + 1]; w.z = v[e + 2]; w.w = v[e + 3];
          *reinterpret_cast<float4*>(partial + row * TT_BN + col + e) = w;
        }
      }
#else
      tt_store_c_vec<TT_EPI_VEC>(C, ldc, m0 + row, n0 + col, M, N, v, alpha, beta, c_vec);
#endif
    }
    __syncthreads();  // the next pass overwrites the staging rows
  }
#if TT_SPLIT_K > 1
  // The last slice to finish a tile sums the partials and writes C.
  volatile unsigned* const last = reinterpret_cast<volatile unsigned*>(tt_smem_raw);  // staging is free
  tt_fence_gpu();  // this block's partials are visible before its count is
  __syncthreads();
  unsigned* const counter = tile_counters + tt_mma_batch_tiles(batch, gridDim.x, gridDim.y) + tile;
  if (tid == 0) *last = tt_mma_is_last_slice(tt_atomic_add(counter, 1u), TT_SPLIT_K);
  __syncthreads();
  if (!*last) return;
  tt_fence_gpu();
  const float* const slots = partial - slice * (TT_BM * TT_BN);
#pragma unroll 1
  for (int item = tid; item < TT_BM * (TT_BN / TT_EPI_VEC); item += TT_THREADS) {
    const int row = tt_epi_item_row(item, TT_BN, TT_EPI_VEC);
    const int col = tt_epi_item_col(item, TT_BN, TT_EPI_VEC);
    if (m0 + row >= M || n0 + col >= N) continue;
    float v[TT_EPI_VEC];
#pragma unroll
    for (int e = 0; e < TT_EPI_VEC; ++e) v[e] = 0.0f;
#pragma unroll 1
    for (int s = 0; s < TT_SPLIT_K; ++s) {
#pragma unroll
      for (int e = 0; e < TT_EPI_VEC; e += 4) {
        const float4 w = tt_load_cg(slots + s * (TT_BM * TT_BN) + row * TT_BN + col + e);
        v[e] += w.x; v[e + 1] += w.y; v[e + 2] += w.z; v[e + 3] += w.w;
      }
    }
    tt_store_c_vec<TT_EPI_VEC>(C, ldc, m0 + row, n0 + col, M, N, v, alpha, beta, c_vec);
  }
  if (tid == 0) *counter = 0;  // ready for the next launch
#endif
}
