// wgmma family: the three epilogues, from the accumulators to C: staged through shared memory
// and stored as 16-byte vectors (tt_epilogue), transposed from registers with swap-AB
// (tt_epilogue_transposed), and stmatrix into swizzled staging with TMA stores (tt_epilogue_tma).

// Accumulator layout of wgmma m64nN (fp32; tt_acc_* in wgmma_tile_math.cuh):
// warp w of the warpgroup holds rows 16w + lane/4 and 16w + lane/4 + 8; value
// 4j + e sits in column 8j + 2*(lane%4) + (e&1), row + 8*(e>>1).
// The warp stages 16 rows x 128 bytes of C at a time in shared memory and
// writes them back as 16-byte vectors (element-wise at edges and for C rows
// that are not 16-byte aligned).
__device__ __forceinline__ void tt_epilogue(const float* acc, unsigned char* stage, elem_t* C,
                                            int ldc, int M, int N, int row0, int col0,
                                            bool c_vectors, float alpha, float beta, int lane) {
  // beta made opaque so the optimizer does not clone the epilogue per beta.
  asm("" : "+f"(beta));
#pragma unroll
  for (int chunk = 0; chunk < TT_KN / TT_EPI_N; ++chunk) {
    const int cc0 = col0 + chunk * TT_EPI_N;
#pragma unroll
    for (int j = 0; j < TT_EPI_N / 8; ++j) {
      const int jj = chunk * (TT_EPI_N / 8) + j;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = tt_acc_row(lane, h);
        const int col = tt_acc_col(lane, j, 0);
        float v0 = alpha * acc[tt_acc_index(jj, h, 0)], v1 = alpha * acc[tt_acc_index(jj, h, 1)];
        if (beta != 0.0f) {
          const int gr = row0 + r, gc = cc0 + col;
          const elem_t* p = C + (long long)gr * ldc + gc;
          if (gr < M && gc < N) v0 += beta * tt_to_float(p[0]);
          if (gr < M && gc + 1 < N) v1 += beta * tt_to_float(p[1]);
        }
#if TT_ELEM_BYTES == 2
        const unsigned packed = (unsigned)tt_from_float(v0) | ((unsigned)tt_from_float(v1) << 16);
        *reinterpret_cast<unsigned*>(stage + r * TT_EPI_ROW_BYTES + col * 2) = packed;
#else
        float* const s = reinterpret_cast<float*>(stage + r * TT_EPI_ROW_BYTES + col * 4);
        s[0] = v0;
        s[1] = v1;
#endif
      }
    }
    tt_syncwarp();
    // 16 rows x 8 vectors of 16 bytes: four rows per pass of the warp.
#pragma unroll
    for (int pass = 0; pass < 4; ++pass) {
      const int r = tt_epi_copy_row(pass, lane), v = tt_epi_copy_vector(lane);
      const int gr = row0 + r, gc = cc0 + v * (16 / TT_ELEM_BYTES);
      const tt_vec16 x = *reinterpret_cast<const tt_vec16*>(stage + r * TT_EPI_ROW_BYTES + v * 16);
      if (gr >= M) continue;
      elem_t* p = C + (long long)gr * ldc + gc;
      if (c_vectors && gc + 16 / TT_ELEM_BYTES <= N) {
        *reinterpret_cast<tt_vec16*>(p) = x;
      } else {
        // Read back from shared memory: indexing x would put it in local memory.
        const elem_t* e = reinterpret_cast<const elem_t*>(stage + r * TT_EPI_ROW_BYTES + v * 16);
#pragma unroll 1
        for (int i = 0; i < 16 / TT_ELEM_BYTES; ++i)
          if (gc + i < N) p[i] = e[i];
      }
    }
    tt_syncwarp();
  }
}

#if TT_SWAP_AB
// Swap-AB's epilogue: the kernel's rows are C's columns and its columns C's rows, so value (r, c)
// of the kernel's tile is C[c][r], stored element by element from the accumulators (C of a
// decode step is a few rows: its bytes are a small share of what the GEMM moves). Kernel rows at
// or past M (the problem's N) and columns at or past N (the problem's M: rows of A that TMA
// zero-filled) are never stored; beta reads C the same way.
__device__ __forceinline__ void tt_epilogue_transposed(const float* acc, elem_t* C, int ldc, int M, int N, int row0,
                                                       int col0, float alpha, float beta, int lane) {
#pragma unroll
  for (int j = 0; j < TT_KN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        tt_store_c(C, ldc, col0 + tt_acc_col(lane, j, e), row0 + tt_acc_row(lane, h), N, M,
                   acc[tt_acc_index(j, h, e)], alpha, beta);
}
#endif

#if TT_TMA_STORE
// Named barrier 2 + c: consumer warpgroup c's 128 threads (immediate ids: a register id makes
// ptxas reserve all 16 barriers).
__device__ __forceinline__ void tt_consumer_sync(int consumer) {
  if (consumer == 0)
    asm volatile("bar.sync 2, 128;\n" ::: "memory");
  else
    asm volatile("bar.sync 3, 128;\n" ::: "memory");
}
// Warp `warp` writes its 16 rows of the m64 tile `acc`, columns [64 chunk, 64 chunk + 64), times
// alpha and rounded to 16 bits, into the staging buffer at shared address `buf`: four stmatrix x4,
// each two 8-column blocks (wgmma_tile_math.cuh, tt_stmatrix_*, tt_staging_offset). With beta != 0
// the buffer holds C's box (TMA-loaded, same swizzle): ldmatrix x4 from the same addresses is
// stmatrix's inverse, so register i holds C at the positions stmatrix then writes from register
// i, and each value is alpha * acc + beta * C before it is rounded. A warp reads and writes only
// its own 16 rows.
__device__ __forceinline__ void tt_stage_chunk(const float* acc, unsigned buf, int chunk, int warp, int lane,
                                               float alpha, float beta) {
#pragma unroll
  for (int jj = 0; jj < 8; jj += 2) {
    const int j = chunk * 8 + jj;
    const unsigned addr = buf + tt_staging_offset(16 * warp + tt_stmatrix_row(lane), tt_stmatrix_block(lane, jj));
    float v[4][2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int e = 0; e < 2; ++e) v[i][e] = alpha * acc[tt_stmatrix_acc(i, j, e)];
    if (beta != 0.0f) {
      unsigned c[4];
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                   : "r"(addr)
                   : "memory");
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int e = 0; e < 2; ++e) v[i][e] += beta * tt_to_float((unsigned short)(c[i] >> (16 * e)));
    }
    unsigned r[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      r[i] = (unsigned)tt_from_float(v[i][0]) | ((unsigned)tt_from_float(v[i][1]) << 16);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]),
                 "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
  }
}
// The TMA-store epilogue of one m64 tile of a consumer: for each 64-column chunk, the staging
// buffer it takes (they alternate, `chunks` counting every chunk the consumer stored) must have
// been read by the store issued two chunks ago; with beta != 0 the leader then loads C's box into
// it by TMA (its mbarrier at c_bars + 8 b; out-of-bounds elements arrive as zeros and are never
// stored) and every thread waits for it; then every warp stages its rows, makes them
// visible to the async proxy, and after the consumer's barrier one thread issues the store. TMA
// writes only the box's elements inside C (rows past M, columns past N are not written).
__device__ __forceinline__ void tt_epilogue_tma(const float* acc, unsigned staging, unsigned c_bars,
                                                const tt_tensor_map* tmap_c, int row0, int col0, int batch,
                                                int consumer, int warp, int lane, float alpha, float beta,
                                                int& chunks) {
  const bool leader = warp == 0 && lane == 0;
  // Unrolled: the chunk picks accumulators by constant index (a loop would put them in local memory).
#pragma unroll
  for (int chunk = 0; chunk < TT_KN / 64; ++chunk) {
    const int n = chunks + chunk, b = tt_staging_buffer(n);
    const unsigned buf = staging + b * TT_TMA_STORE_BUFFER_BYTES;
    if (leader) {
      asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
      if (beta != 0.0f) {
        tt_mbar_arrive_expect_tx(c_bars + 8 * b, TT_TMA_STORE_BUFFER_BYTES);
        tt_tma_load_3d(buf, tmap_c, col0 + 64 * chunk, row0, batch, c_bars + 8 * b);
      }
    }
    tt_consumer_sync(consumer);
    if (beta != 0.0f) tt_mbar_wait(c_bars + 8 * b, tt_c_load_parity(n));
    tt_stage_chunk(acc, buf, chunk, warp, lane, alpha, beta);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    tt_consumer_sync(consumer);
    if (leader) {
      asm volatile(
          "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n"
          "cp.async.bulk.commit_group;\n" ::"l"((unsigned long long)tmap_c),
          "r"(col0 + 64 * chunk), "r"(row0), "r"(batch), "r"(buf)
          : "memory");
    }
  }
  chunks += TT_KN / 64;
}
#endif

// fp8 scales (wgmma_fp8.cuh). row0: the first row of the warp's 16 in the consumer's first m64 tile.
#if TT_SCALING == 2
// B's two block scales of k-block kb for a tile at column n0: its 128-column block and the next.
__device__ __forceinline__ void tt_load_b_block_scales(float (&sb)[2], const float* scale_b, int kb, int n0, int N) {
  const int n_blocks = (N + TT_SCALE_BLOCK - 1) / TT_SCALE_BLOCK;
  sb[0] = scale_b[tt_block_scale_b_index(kb, n0 / TT_SCALE_BLOCK, n_blocks)];
  sb[1] = scale_b[tt_block_scale_b_index(kb, n0 / TT_SCALE_BLOCK + 1, n_blocks)];
}
// Block scales of k-block kb: sa for the thread's rows (two per m64 tile), sb for the tile's two
// 128-column blocks of B.
__device__ __forceinline__ void tt_load_block_scales(float (&sa)[TT_MI][2], float (&sb)[2], const float* scale_a,
                                                     const float* scale_b, int kb, int row0, int n0, int M, int N,
                                                     int lane) {
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) sa[mi][h] = scale_a[tt_block_scale_a_index(kb, row0 + mi * 64 + tt_acc_row(lane, h), M)];
  tt_load_b_block_scales(sb, scale_b, kb, n0, N);
}
#if TT_TMA_SCALES
// Block scales of k-block kb with A's copied into the stage (wgmma_fp8.cuh): B's (tt_load_b_block_scales)
// are loaded before the k-tile's full wait (they wait for no stage; issued between the QGMMAs, ptxas
// 13.0 put a WARPSYNC inside a k-group of one stream-K tile); sa, the thread's rows' of A, from the
// stage (row0: the warp's first row within the tile).
__device__ __forceinline__ void tt_read_stage_scales(float (&sa)[TT_MI][2], const float* stage_scales, int row0,
                                                     int lane) {
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) sa[mi][h] = stage_scales[row0 + mi * 64 + tt_acc_row(lane, h)];
}
#endif
#if TT_SWAP_AB
// Swap-AB (a decode step: the kernel's rows are the weights' N, its columns the tokens), block
// scales of k-block kb: srow, B's scale of each m64 tile's rows (a tile starts at a multiple of 64,
// so its 64 rows lie in one 128-row block of the weights), and scol, A's scale of each of the
// thread's columns (tokens, one 1 x 128 block each). M and N are the kernel's (the problem's N, M).
__device__ __forceinline__ void tt_load_block_scales_swapped(float (&srow)[TT_MI], float (&scol)[TT_KN / 8][2],
                                                             const float* scale_a, const float* scale_b, int kb,
                                                             int row0, int n0, int M, int N, int lane) {
  const int n_blocks = (M + TT_SCALE_BLOCK - 1) / TT_SCALE_BLOCK;
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi)
    srow[mi] = scale_b[tt_block_scale_b_index(kb, (row0 + mi * 64) / TT_SCALE_BLOCK, n_blocks)];
#pragma unroll
  for (int j = 0; j < TT_KN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) scol[j][e] = scale_a[tt_block_scale_a_index(kb, n0 + tt_acc_col(lane, j, e), N)];
}
#endif
#endif
#if TT_SCALING == 1
// Rowwise scales: each accumulator times its row's scale of A and its column's of B.
__device__ __forceinline__ void tt_scale_rows_columns(float (&acc)[TT_MI][TT_KN / 2], const float* scale_a,
                                                      const float* scale_b, int row0, int n0, int M, int N, int lane) {
  float sa[TT_MI][2];
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row0 + mi * 64 + tt_acc_row(lane, h);
      sa[mi][h] = scale_a[r < M ? r : M - 1];
    }
#pragma unroll
  for (int j = 0; j < TT_KN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int col = n0 + tt_acc_col(lane, j, e);
      const float sb = scale_b[col < N ? col : N - 1];
#pragma unroll
      for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) acc[mi][tt_acc_index(j, h, e)] *= sa[mi][h] * sb;
    }
}
#endif
