// mma family: the kernel, its epilogue and the split-K reduction (the parts:
// mma_config.cuh, mma_primitives.cuh, mma_copies.cuh, mma_fragments.cuh,
// mma_mainloop.cuh, in that order).

// Results of one row piece: VEC (16 bytes of C) fp32 values at tile (row, col).
#define TT_EPI_VEC (16 / TT_ELEM_BYTES)

constexpr int tt_smem_bytes =
    tt_mma_smem_bytes(TT_BM, TT_BN, TT_BK, TT_WARPS_M, TT_STAGES, TT_AB_BYTES);
constexpr int tt_epi_mi = tt_mma_epi_mi(TT_MI, TT_WARPS_M, TT_BN, tt_smem_bytes);
#define TT_PASS_ROWS (TT_WARPS_M * tt_epi_mi * 16)

#if TT_SCALING
// Rowwise scales: a row piece's VEC sums at (m, n) times row m's scale of A and each column's of
// B, as C = alpha * scale_a[m] * scale_b[n] * sum + beta * C asks. A row or column past the
// matrix reads the last scale (its result is not stored).
__device__ __forceinline__ void tt_scale_piece(float* v, const float* __restrict__ scale_a,
                                               const float* __restrict__ scale_b, int m, int n, int M, int N) {
  const float sa = scale_a[m < M ? m : M - 1];
#pragma unroll
  for (int e = 0; e < TT_EPI_VEC; ++e) v[e] *= sa * scale_b[n + e < N ? n + e : N - 1];
}
#endif

// workspace: split-K partial sums, [batch][tile][slice][BM x BN] fp32;
// tile_counters: [batch][tile], zero before the first launch, and reset to
// zero by the block that reduces the tile. Both unused when TT_SPLIT_K == 1.
// scale_a, scale_b (TT_SCALING): fp8's rowwise scales, M and N floats.
extern "C" __global__ void __launch_bounds__(TT_THREADS, TT_MIN_BLOCKS)
tiletune_gemm(const ab_t* __restrict__ A, const ab_t* __restrict__ B, elem_t* __restrict__ C,
              int M, int N, int K, int lda, int ldb, int ldc, long long batch_stride_a,
              long long batch_stride_b, long long batch_stride_c, float alpha, float beta,
              float* __restrict__ workspace, unsigned* __restrict__ tile_counters
#if TT_SCALING
              , const float* __restrict__ scale_a, const float* __restrict__ scale_b
#endif
              ) {
  extern __shared__ __align__(128) unsigned char tt_smem_raw[];
  ab_t* const smem = reinterpret_cast<ab_t*>(tt_smem_raw);
  const unsigned smem_base = tt_smem_addr(smem);  // stage s: A's tile, then B's (TT_STAGE_BYTES)

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

  // 16-byte copies need 16-byte aligned rows: one decision per kernel, made
  // before the main loop (each path has its own).
  const bool a_aligned = lda % TT_CHUNK == 0 && ((unsigned long long)A & 15) == 0;
  const bool b_aligned = ldb % TT_CHUNK == 0 && ((unsigned long long)B & 15) == 0;

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
  const int k_begin = kt_first * TT_BK;
  // The operands' tiles at k_begin, and how far one k-tile moves them.
#if TT_A_T
  const ab_t* const a_tile = A + tt_row_offset(k_begin, lda) + m0;
  const long long a_k_step = tt_row_offset(TT_BK, lda);
#else
  const ab_t* const a_tile = A + tt_row_offset(m0, lda) + k_begin;
  const long long a_k_step = TT_BK;
#endif
#if TT_B_T
  const ab_t* const b_tile = B + tt_row_offset(n0, ldb) + k_begin;
  const long long b_k_step = TT_BK;
#else
  const ab_t* const b_tile = B + tt_row_offset(k_begin, ldb) + n0;
  const long long b_k_step = tt_row_offset(TT_BK, ldb);
#endif

  // Blocks whose tiles lie wholly inside the matrices (every k-tile of the
  // slice whole, the block inside M and N) copy without bounds.
  const bool inside = m0 + TT_BM <= M && n0 + TT_BN <= N && k_begin + k_tiles * TT_BK <= K;
  const tt_block blk{A, B, a_tile, b_tile, a_k_step, b_k_step, lda, ldb, M, N, K, m0, n0, k_begin, k_tiles,
                     tid, lane, wm0, wn0, smem_base, smem};
  if (a_aligned && b_aligned) {
    if (inside)
      tt_pipelined<false>(blk, acc);
    else
      tt_pipelined<true>(blk, acc);
  } else {
    // Rows that are not 16-byte aligned: element by element into stage 0,
    // one k-tile at a time (a path kept small: NVRTC's time grows with the code).
    unsigned a[TT_MI][4];
    unsigned b[TT_NI][2];
#pragma unroll 1
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int k_left = K - k_begin - kt * TT_BK;
      __syncthreads();  // every warp is done with the previous tile
      tt_load_tile<TT_A_ROWS, TT_A_COLS, TT_A_KC>(smem, a_tile + kt * a_k_step, lda, TT_A_LEFT(k_left), tid);
      tt_load_tile<TT_B_ROWS, TT_B_COLS, TT_B_KC>(smem + TT_A_STAGE, b_tile + kt * b_k_step, ldb, TT_B_LEFT(k_left),
                                                  tid);
      __syncthreads();
#pragma unroll 1
      for (int kk = 0; kk < TT_BK; kk += TT_MMA_K) {
        tt_load_fragments(smem, smem + TT_A_STAGE, smem_base, smem_base + TT_B_AT, kk, wm0, wn0, lane, a, b);
#pragma unroll
        for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
          for (int ni = 0; ni < TT_NI; ++ni) tt_mma(acc[mi][ni], a[mi], b[ni]);
      }
    }
  }
  tt_cp_async_wait<0>();
  __syncthreads();  // every warp is done with the pipeline buffers: the epilogue reuses them

  // Epilogue. Accumulator layout: c0,c1 at (g, 2t), (g, 2t+1); c2,c3 at
  // (g+8, 2t), (g+8, 2t+1), of the mma's rows (tf32 A stored [k][m]: the
  // tile's are tt_pair_row). Each pass stages tt_epi_mi m16 steps of every
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
      const int row = tt_mma_stage_row_to_tile_row(sr, pass, tt_epi_mi, TT_WM, TT_PAIR_A);
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
#if TT_SCALING
      tt_scale_piece(v, scale_a, scale_b, m0 + row, n0 + col, M, N);
#endif
      tt_store_c_vec<TT_EPI_VEC>(C, ldc, m0 + row, n0 + col, M, N, v, alpha, beta, c_vec);
#endif
    }
    __syncthreads();  // the next pass overwrites the staging rows
  }
#if TT_SPLIT_K > 1
  // The last slice to finish a tile sums the partials and writes C. One
  // thread publishes and counts, between two barriers: its release fence
  // (after the first barrier, so cumulative over every thread's partials)
  // comes before its count, its acquire fence after it, and the second
  // barrier orders that acquire before any thread reads the other slices'
  // partials (barrier, one thread's release and acquire, barrier).
  volatile unsigned* const last = reinterpret_cast<volatile unsigned*>(tt_smem_raw);  // staging is free
  __syncthreads();
  unsigned* const counter = tile_counters + tt_mma_batch_tiles(batch, gridDim.x, gridDim.y) + tile;
  if (tid == 0) {
    tt_fence_gpu();  // release: this block's partials before its count
    const unsigned before = tt_atomic_add(counter, 1u);
    tt_fence_gpu();  // acquire: the counted slices' partials before what follows
    *last = tt_mma_is_last_slice(before, TT_SPLIT_K);
  }
  __syncthreads();
  if (!*last) return;
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
#if TT_SCALING
    tt_scale_piece(v, scale_a, scale_b, m0 + row, n0 + col, M, N);  // the sum's, once
#endif
    tt_store_c_vec<TT_EPI_VEC>(C, ldc, m0 + row, n0 + col, M, N, v, alpha, beta, c_vec);
  }
  if (tid == 0) *counter = 0;  // ready for the next launch
#endif
}
