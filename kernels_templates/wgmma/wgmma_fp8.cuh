// wgmma family: fp8 (e4m3, e5m2) promotion, the integer math the kernel and the host emulation
// share (TT_HOST_DEVICE as in wgmma_tile_math.cuh).
//
// wgmma .k32 .e4m3/.e5m2 (QGMMA in SASS) keeps a short running sum: DeepSeek-V3's report
// measured about 14 bits retained on H800, so a K of thousands added into one accumulator loses
// percents. The kernel therefore issues each k-tile's QGMMAs into a partial set `part`, starting
// from zero every TT_PROMOTE k-tiles (scale-d 0), and after the last k-tile of an interval waits
// for them and adds `part` into the fp32 set `acc` (CUTLASS's promotion, its default interval
// one k-tile of 4 instructions; DeepGEMM promotes every 128-k block with the scales). The last
// k-tile of a unit (a whole tile, a stream-K range, a split-K slice) always promotes: nothing is
// left in `part` when the epilogue or the fixup reads `acc`.

// Whether the k-tile kt of a unit [k_begin, k_end) ends an interval of `interval` k-tiles.
TT_HOST_DEVICE bool tt_promotes_after(int kt, int k_begin, int k_end, int interval) {
  return (kt - k_begin + 1) % interval == 0 || kt + 1 == k_end;
}

// scale-d of the instruction at byte step kk of k-tile kt: 0 (start from zero) for the first of
// an interval, 1 (add to `part`) after it.
TT_HOST_DEVICE int tt_part_scale_d(int kt, int k_begin, int interval, int kk) {
  return ((kt - k_begin) % interval != 0 || kk > 0) ? 1 : 0;
}

// ---- scales (TT_SCALING; per-tensor scales are alpha's product and need none of this)
// 1, rowwise: scale_a[M], one per row of A (and C), scale_b[N], one per column of op(B) (a row of
//    B stored N x K); the accumulators are scaled before the epilogue: C = alpha sa[m] sb[n] sum_k.
// 2, block (DeepSeek-V3's recipe): scale_a[ceil(K / 128)][M], one per row and 128-k block of A;
//    scale_b[ceil(K / 128)][ceil(N / 128)], one per 128 x 128 block of op(B). With BK 128 a k-tile
//    is a k-block: each k-tile promotes, its partial set scaled on the way in,
//    acc += part * sa[kb][m] * sb[kb][n / 128]. A tile's columns (n0 a multiple of 64, BN <= 192)
//    span at most two 128-column blocks: n0 / 128 and the next.
// Rows and columns past M and N read the last one's scale (their results are never stored).
// A grouped GEMM (mixture-of-experts): scale_a over every row A holds (each token's), and each
// group's B its own scales, group g's at an offset: rowwise scale_b[G][N]
// (tt_rowwise_scale_b_offset), block scale_b[G][ceil(K / 128)][ceil(N / 128)]
// (tt_block_scale_b_offset); a plain batch shares one set.
#define TT_SCALE_BLOCK 128
TT_HOST_DEVICE long long tt_rowwise_scale_b_offset(int group, int N) { return (long long)group * N; }
TT_HOST_DEVICE long long tt_block_scale_b_offset(int group, int K, int N) {
  return (long long)group * ((K + TT_SCALE_BLOCK - 1) / TT_SCALE_BLOCK) * ((N + TT_SCALE_BLOCK - 1) / TT_SCALE_BLOCK);
}
TT_HOST_DEVICE long long tt_block_scale_a_index(int kb, int row, int M) {
  return (long long)kb * M + (row < M ? row : M - 1);
}
TT_HOST_DEVICE long long tt_block_scale_b_index(int kb, int nb, int n_blocks) {
  return (long long)kb * n_blocks + (nb < n_blocks ? nb : n_blocks - 1);
}
// Which of a tile's two B scale blocks (0: n0 / 128, 1: the next) column 8j of the tile is in.
TT_HOST_DEVICE int tt_scale_b_half(int n0, int j) { return ((n0 & (TT_SCALE_BLOCK - 1)) + 8 * j) / TT_SCALE_BLOCK; }

// ---- block scales by TMA (TT_TMA_SCALES, "_ts"): the producer copies each k-block's scales of A
// into the stage with the operands (one bulk copy, cp.async.bulk, that the stage's expect_tx counts),
// so the consumers read their rows' from shared memory at the promotion. Stage s's scales lie at
// tt_smem_scales_offset + s * tt_scale_stage_bytes: the tile's bm rows for k-block kt. A bulk copy
// moves whole 16-byte units from a 16-byte aligned address: M % 4 == 0 (and scale_a 16-byte
// aligned) make every k-block's rows so, a plain (batched) tile's first row being a multiple of bm.
// Rows past M are not copied: their scales are whatever the stage held, and their results are never
// stored. B's two scales of a k-block stay loads of the consumers (one address per warp, issued
// while the QGMMAs run): copied by the producer too (two 4-byte cp.async with their arrival on the
// full barrier), they took the producer thread past its 40 registers, and the stream-K and cluster
// copies spilled 76-216 bytes (ptxas 13.0).
TT_HOST_DEVICE constexpr int tt_scale_stage_bytes(int bm) { return 4 * bm; }
// The rows of A's scales a tile starting at row0 copies: those within M (0 past M: a multicast
// pair's partner tile).
TT_HOST_DEVICE int tt_scale_a_copy_rows(int row0, int bm, int M) {
  const int rows = M - row0;
  return rows < 0 ? 0 : rows < bm ? rows : bm;
}
TT_HOST_DEVICE unsigned tt_scale_a_copy_bytes(int row0, int bm, int M) {
  return 4u * (unsigned)tt_scale_a_copy_rows(row0, bm, M);
}
