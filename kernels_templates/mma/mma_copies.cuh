// mma family: the copies from global into shared memory.

// Copies one rows x cols tile (cols contiguous in global and shared memory)
// whose top-left element is at `g` (row stride ld) element by element: the
// path of rows that are not 16-byte aligned. rows_left/cols_left say how much
// of the tile lies inside the matrix; the rest is zero. A loop, not unrolled,
// keeps the kernel small (NVRTC's time grows with the code).
template <int ROWS, int COLS, int KC>
__device__ __forceinline__ void tt_load_tile(ab_t* s, const ab_t* g, int ld, int rows_left, int cols_left,
                                             int tid) {
  constexpr int chunks_per_row = COLS / TT_CHUNK;
  constexpr int chunks = ROWS * chunks_per_row;
#pragma unroll
  for (int i = 0; i < (chunks + TT_THREADS - 1) / TT_THREADS; ++i) {
    const int c = tt_copy_chunk(tid, i, TT_THREADS);
    if (chunks % TT_THREADS != 0 && c >= chunks) break;
    const int r = tt_copy_row(c, chunks_per_row), col = tt_copy_col(c, chunks_per_row, TT_CHUNK);
    const int valid = tt_copy_valid(r, col, rows_left, cols_left, TT_CHUNK);
    const ab_t* src = g + tt_row_offset(r, ld) + col;
    ab_t* dst = s + tt_swizzled_offset(r, col, COLS, TT_AB_BYTES, KC);
#pragma unroll 1
    for (int e = 0; e < TT_CHUNK; ++e) dst[e] = e < valid ? src[e] : ab_t(0);
  }
}

// The main loop's copies of one operand (16-byte aligned rows): what does not
// change from k-tile to k-tile is computed once, so a k-tile costs each copy
// a bound check, an address and the cp.async. Copy i of this thread is row
// r0 + i * STEP, column col (tt_copy_row0 and the rest: mma_addressing.cuh),
// at s_off + i * STEP rows in the stage; g points at copy 0 in the current
// k-tile and moves one k-tile per issue.
template <int ROWS, int COLS, int KC>
struct tt_tile_copier {
  static constexpr int CPR = COLS / TT_CHUNK;
  static constexpr int CHUNKS = ROWS * CPR;
  static constexpr int COPIES = (CHUNKS + TT_THREADS - 1) / TT_THREADS;
  static constexpr int STEP = tt_copy_row_step(TT_THREADS, CPR);
  static_assert(TT_THREADS % CPR == 0, "a thread's copies share one column");
  static_assert(tt_copy_masks_repeat(STEP, COLS, TT_AB_BYTES, KC), "copies share one swizzle mask");
  const ab_t* g;
  long long row_step;  // STEP rows of the stored matrix, in elements
  unsigned s_off;      // copy 0's byte offset in a stage
  int r0, col;

  __device__ __forceinline__ void init(const ab_t* tile, int ld, int tid) {
    r0 = tt_copy_row0(tid, CPR);
    col = tt_copy_col0(tid, CPR, TT_CHUNK);
    g = tile + tt_row_offset(r0, ld) + col;
    row_step = tt_kept(tt_row_offset(STEP, ld));
    s_off = tt_swizzled_offset(r0, col, COLS, TT_AB_BYTES, KC) * TT_AB_BYTES;
  }
  // Copy i of this thread: past the tile's end (where the threads outnumber
  // its last row of chunks), and where it lands in the stage at s_stage.
  __device__ __forceinline__ static bool past_end(int i, int tid) {
    return CHUNKS % TT_THREADS != 0 && tid + i * TT_THREADS >= CHUNKS;
  }
  __device__ __forceinline__ unsigned landing(unsigned s_stage, int i) const {
    return s_stage + s_off + tt_copy_step_offset(i, STEP, COLS) * TT_AB_BYTES;
  }
  // One tile into the stage at shared byte s_stage. BOUNDS: rows_left /
  // cols_left as tt_load_tile's, and chunks that read nothing point at
  // `inside` (in the matrix); without, every chunk is whole and inside.
  template <bool BOUNDS>
  __device__ __forceinline__ void issue(unsigned s_stage, int rows_left, int cols_left,
                                        const ab_t* inside, int tid) {
#pragma unroll
    for (int i = 0; i < COPIES; ++i) {
      if (past_end(i, tid)) break;
      const unsigned dst = landing(s_stage, i);
      if (BOUNDS) {
        const int valid = tt_copy_valid(r0 + i * STEP, col, rows_left, cols_left, TT_CHUNK);
        tt_cp_async16(dst, valid > 0 ? g + i * row_step : inside, valid * TT_AB_BYTES);
      } else {
        tt_cp_async16_whole(dst, g + i * row_step);
      }
    }
  }
#if TT_DTYPE == TT_TF32
  // tf32: this thread's copies into the stage at s_stage, rounded in place
  // (tt_to_tf32) once they have landed (after its cp.async.wait_group) and
  // before the barrier publishes them, so that every warp's fragments read
  // rounded operands: each element is rounded once in the block, not once per
  // warp that reads it. Only a stage that a tile has just landed in: a second
  // rounding would add a second half ulp.
  __device__ __forceinline__ void round_landed(unsigned s_stage, int tid) const {
#pragma unroll
    for (int i = 0; i < COPIES; ++i) {
      if (past_end(i, tid)) break;
      const unsigned at = landing(s_stage, i);
      float v[4];
      asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];\n"
                   : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
                   : "r"(at)
                   : "memory");
      asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(at), "r"(tt_to_tf32(v[0])), "r"(tt_to_tf32(v[1])),
                   "r"(tt_to_tf32(v[2])), "r"(tt_to_tf32(v[3]))
                   : "memory");
    }
  }
#endif
};
