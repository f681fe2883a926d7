// mma family: the main loop, a cp.async ring of stages.

// What the main loop needs of its block: the operands, where its tiles start
// and how one k-tile moves them, its k-tiles and the warp's place, and the
// shared memory (smem, at shared address smem_base).
struct tt_block {
  const ab_t* A;
  const ab_t* B;
  const ab_t* a_tile;
  const ab_t* b_tile;
  long long a_k_step, b_k_step;
  int lda, ldb, M, N, K, m0, n0, k_begin, k_tiles, tid, lane, wm0, wn0;
  unsigned smem_base;
  const ab_t* smem;
};

// Rows and columns of a tile inside the matrix, k_left = K - k0 of the tile.
#define TT_A_LEFT(k_left) (TT_A_T ? (k_left) : blk.M - blk.m0), (TT_A_T ? blk.M - blk.m0 : (k_left))
#define TT_B_LEFT(k_left) (TT_B_T ? blk.N - blk.n0 : (k_left)), (TT_B_T ? (k_left) : blk.N - blk.n0)

// The ring of stages: stage s holds A's tile at byte s * TT_STAGE_BYTES and
// B's right after it (tt_mma_stage_bytes_ab: mma_addressing.cuh).
#define TT_STAGE_BYTES tt_mma_stage_bytes_ab(TT_A_STAGE, TT_B_STAGE, TT_AB_BYTES)
#define TT_B_AT (TT_A_STAGE * TT_AB_BYTES)  // B's tile in a stage, bytes

// cp.async through a STAGES-deep ring, one barrier per k-tile, and the
// fragments of the next k-step loaded while this one's mma.sync run.
// BOUNDS: the block has a tile that crosses the matrix's edge (or a short
// k-tile); without, every copy is whole and no bound is checked.
template <bool BOUNDS>
__device__ __forceinline__ void tt_pipelined(const tt_block& blk, float (&acc)[TT_MI][TT_NI][4]) {
  const int k_tiles = blk.k_tiles, tid = blk.tid;
  tt_tile_copier<TT_A_ROWS, TT_A_COLS, TT_A_KC> ca;
  tt_tile_copier<TT_B_ROWS, TT_B_COLS, TT_B_KC> cb;
  ca.init(blk.a_tile, blk.lda, tid);
  cb.init(blk.b_tile, blk.ldb, tid);
  tt_fragment_offsets fo;
  fo.init(blk.wm0, blk.wn0, blk.lane);
#define TT_LOAD_FRAGMENTS(stage_addr, ks, fa, fb) fo.load(ks, (stage_addr), (stage_addr) + TT_B_AT, fa, fb)
  // The stages being written and read, as shared addresses that step
  // through the ring.
  const unsigned ring_end = blk.smem_base + TT_STAGES * TT_STAGE_BYTES;
  unsigned w_stage = blk.smem_base, r_stage = blk.smem_base;
  auto next_stage = [&](unsigned at) { return at + TT_STAGE_BYTES == ring_end ? blk.smem_base : at + TT_STAGE_BYTES; };
  int k_left = blk.K - blk.k_begin;  // of the next tile to copy
  auto copy_next = [&]() {
    ca.template issue<BOUNDS>(w_stage, TT_A_LEFT(k_left), blk.A, tid);
    cb.template issue<BOUNDS>(w_stage + TT_B_AT, TT_B_LEFT(k_left), blk.B, tid);
    ca.g += blk.a_k_step;
    cb.g += blk.b_k_step;
    if (BOUNDS) k_left -= TT_BK;
  };
  // Prologue: STAGES-1 tiles in flight (empty groups past the end keep the count).
#pragma unroll 1
  for (int s = 0; s < TT_STAGES - 1; ++s) {
    if (s < k_tiles) copy_next();
    tt_cp_async_commit();
    w_stage += TT_STAGE_BYTES;
  }
  static_assert(TT_KSTEPS % 2 == 0, "fragment buffers alternate by k-step");
  unsigned a[2][TT_MI][4];
  unsigned b[2][TT_NI][2];
  tt_cp_async_wait<TT_STAGES - 2>();
#if TT_DTYPE == TT_TF32
  if (k_tiles > 0) {
    ca.round_landed(r_stage, tid);
    cb.round_landed(r_stage + TT_B_AT, tid);
  }
#endif
  __syncthreads();
  if (k_tiles > 0) TT_LOAD_FRAGMENTS(r_stage, 0, a[0], b[0]);
#pragma unroll 1
  for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
    for (int ks = 0; ks < TT_KSTEPS; ++ks) {
      if (ks == 0) {
        // Refills the slot of tile kt-1, which every warp finished reading
        // before the last barrier.
        if (kt + TT_STAGES - 1 < k_tiles) copy_next();
        tt_cp_async_commit();
        w_stage = next_stage(w_stage);
      }
      if (ks == TT_KSTEPS - 1) {
        // Tile kt+1 has landed once at most STAGES-2 groups are pending; the
        // barrier makes it every warp's, and tells the next refill that
        // tile kt was read.
        tt_cp_async_wait<TT_STAGES - 2>();
#if TT_DTYPE == TT_TF32
        if (kt + 1 < k_tiles) {
          ca.round_landed(next_stage(r_stage), tid);
          cb.round_landed(next_stage(r_stage) + TT_B_AT, tid);
        }
#endif
        __syncthreads();
        r_stage = next_stage(r_stage);
      }
      // After the last k-tile's last step this reads a slot no tile is
      // headed for (nothing is in flight then) into fragments never used:
      // cheaper than a branch in every k-tile.
      TT_LOAD_FRAGMENTS(r_stage, (ks + 1) % TT_KSTEPS, a[(ks + 1) % 2], b[(ks + 1) % 2]);
#pragma unroll
      for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < TT_NI; ++ni) tt_mma(acc[mi][ni], a[ks % 2][mi], b[ks % 2][ni]);
    }
  }
#undef TT_LOAD_FRAGMENTS
}
