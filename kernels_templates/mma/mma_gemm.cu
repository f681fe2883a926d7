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
// blocks)): for the 16-bit types at BK 32, 4 warps of up to 64 accumulators
// take three blocks (170 registers). With the main loop's fragments double
// buffered, 8 warps of 64 accumulators no longer fit two blocks' 128
// registers (ptxas spilled on sm_90), and BK 64, tf32 and 128 accumulators
// (about 240 registers) never did: one block each.
#define TT_ACCUMULATORS (TT_MI * TT_NI * 4)
#if TT_ACCUMULATORS <= 64 && TT_THREADS == 128 && TT_ELEM_BYTES == 2 && TT_BK <= 32
#define TT_MIN_BLOCKS 3
#else
#define TT_MIN_BLOCKS 1
#endif

// A value computed once that the compiler must keep in a register, not
// recompute inside the loop from what it was computed from (the empty asm
// hides its origin). Every variant has the registers for it.
__device__ __forceinline__ int tt_kept(int v) {
  asm("" : "+r"(v));
  return v;
}
__device__ __forceinline__ long long tt_kept(long long v) {
  asm("" : "+l"(v));
  return v;
}

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
__device__ __forceinline__ void tt_cp_async16_whole(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void tt_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void tt_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

#if TT_DTYPE == TT_TF32
// tf32 operand bits (tt_tf32_round_bits: cvt.rna's value, the low bits left to mma.sync).
__device__ __forceinline__ unsigned tt_to_tf32(float x) {
  return tt_tf32_round_bits(__float_as_uint(x), tt_tf32_finite(fabsf(x)));
}
#endif

// Copies one rows x cols tile (cols contiguous in global and shared memory)
// whose top-left element is at `g` (row stride ld) element by element: the
// path of rows that are not 16-byte aligned. rows_left/cols_left say how much
// of the tile lies inside the matrix; the rest is zero. A loop, not unrolled,
// keeps the kernel small (NVRTC's time grows with the code).
template <int ROWS, int COLS, int KC>
__device__ __forceinline__ void tt_load_tile(elem_t* s, const elem_t* g, int ld, int rows_left, int cols_left,
                                             int tid) {
  constexpr int chunks_per_row = COLS / TT_CHUNK;
  constexpr int chunks = ROWS * chunks_per_row;
#pragma unroll
  for (int i = 0; i < (chunks + TT_THREADS - 1) / TT_THREADS; ++i) {
    const int c = tt_copy_chunk(tid, i, TT_THREADS);
    if (chunks % TT_THREADS != 0 && c >= chunks) break;
    const int r = tt_copy_row(c, chunks_per_row), col = tt_copy_col(c, chunks_per_row, TT_CHUNK);
    const int valid = tt_copy_valid(r, col, rows_left, cols_left, TT_CHUNK);
    const elem_t* src = g + tt_row_offset(r, ld) + col;
    elem_t* dst = s + tt_swizzled_offset(r, col, COLS, TT_ELEM_BYTES, KC);
#pragma unroll 1
    for (int e = 0; e < TT_CHUNK; ++e) dst[e] = e < valid ? src[e] : elem_t(0);
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
  static_assert(tt_copy_masks_repeat(STEP, COLS, TT_ELEM_BYTES, KC), "copies share one swizzle mask");
  const elem_t* g;
  long long row_step;  // STEP rows of the stored matrix, in elements
  unsigned s_off;      // copy 0's byte offset in a stage
  int r0, col;

  __device__ __forceinline__ void init(const elem_t* tile, int ld, int tid) {
    r0 = tt_copy_row0(tid, CPR);
    col = tt_copy_col0(tid, CPR, TT_CHUNK);
    g = tile + tt_row_offset(r0, ld) + col;
    row_step = tt_kept(tt_row_offset(STEP, ld));
    s_off = tt_swizzled_offset(r0, col, COLS, TT_ELEM_BYTES, KC) * TT_ELEM_BYTES;
  }
  // Copy i of this thread: past the tile's end (where the threads outnumber
  // its last row of chunks), and where it lands in the stage at s_stage.
  __device__ __forceinline__ static bool past_end(int i, int tid) {
    return CHUNKS % TT_THREADS != 0 && tid + i * TT_THREADS >= CHUNKS;
  }
  __device__ __forceinline__ unsigned landing(unsigned s_stage, int i) const {
    return s_stage + s_off + tt_copy_step_offset(i, STEP, COLS) * TT_ELEM_BYTES;
  }
  // One tile into the stage at shared byte s_stage. BOUNDS: rows_left /
  // cols_left as tt_load_tile's, and chunks that read nothing point at
  // `inside` (in the matrix); without, every chunk is whole and inside.
  template <bool BOUNDS>
  __device__ __forceinline__ void issue(unsigned s_stage, int rows_left, int cols_left,
                                        const elem_t* inside, int tid) {
#pragma unroll
    for (int i = 0; i < COPIES; ++i) {
      if (past_end(i, tid)) break;
      const unsigned dst = landing(s_stage, i);
      if (BOUNDS) {
        const int valid = tt_copy_valid(r0 + i * STEP, col, rows_left, cols_left, TT_CHUNK);
        tt_cp_async16(dst, valid > 0 ? g + i * row_step : inside, valid * TT_ELEM_BYTES);
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

__device__ __forceinline__ void tt_ldmatrix_x4(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ unsigned tt_ld_shared(unsigned addr) {
  unsigned x;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(x) : "r"(addr));
  return x;
}
__device__ __forceinline__ void tt_ld_shared_v2(unsigned& x, unsigned& y, unsigned addr) {
  asm volatile("ld.shared.v2.b32 {%0,%1}, [%2];\n" : "=r"(x), "=r"(y) : "r"(addr));
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


#if TT_ELEM_BYTES == 4
// tf32 m16n8k8 fragments, element by element (PTX ISA, "Matrix Fragments
// for mma.m16n8k8"): a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);
// b0 (k t, n g), b1 (k t+4, n g); each rounded to tf32. A stored [k][m] with
// its rows paired (tt_pair_row), as the main loop reads it.
__device__ __forceinline__ void tt_load_a_tf32(const elem_t* as, int k_base, int wm0, int lane,
                                               unsigned (&a)[TT_MI][4]) {
  const int g = tt_frag_group(lane), t = tt_frag_thread(lane);
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int h = tt_frag_tf32_a_half(r), j = tt_frag_tf32_a_kq(r);  // rows g + 8h, k t + 4j
#if TT_A_T
      a[mi][r] = tt_to_tf32(as[tt_tf32_pair_offset(k_base + t + 4 * j, t + 4 * j, wm0 + mi * 16, g, h, TT_A_COLS)]);
#else
      a[mi][r] = tt_to_tf32(as[tt_tf32_offset_k_contiguous(wm0 + mi * 16 + 8 * h + g, g, k_base, j, t,
                                                          TT_A_COLS)]);
#endif
    }
}
__device__ __forceinline__ void tt_load_b_tf32(const elem_t* bs, int k_base, int wn0, int lane,
                                               unsigned (&b)[TT_NI][2]) {
  const int g = tt_frag_group(lane), t = tt_frag_thread(lane);
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
  tt_load_a_tf32(as, k_base, wm0, lane, a);
  tt_load_b_tf32(bs, k_base, wn0, lane, b);
#endif
}

#define TT_KSTEPS (TT_BK / TT_MMA_K)  // mma k-steps per k-tile

// The main loop's fragment loads. ldmatrix reads every 16-bit operand, and
// tf32's operands along k (A 'n', B 't'): an 8x8 matrix of 16-bit elements
// is 8 rows of 4 tf32 elements, and lane l receives row l/4, element l%4,
// the m16n8k8 fragment's (group, thread); so such a tile is read as a
// 16-bit one of twice the columns. tf32's stage is already rounded
// (tt_tile_copier::round_landed). tf32 A stored [k][m] is read two registers
// at a time (ld.shared.v2) with its rows paired (tt_pair_row:
// mma_addressing.cuh), which the epilogue undoes; tf32 B stored [k][n]
// element by element (a pair there would be two n8 tiles' registers, which
// the mma wants in other register pairs: ptxas moves them, a move per
// register). The offsets: each lane's parts computed once
// (tt_ldsm_*_lane_offset, tt_tf32_pair_lane_offset, tt_tf32_mn_lane_offset),
// the rest constants, so a k-step costs its loads.
#define TT_A_LDSM (TT_ELEM_BYTES == 2 || !TT_A_T)
#define TT_B_LDSM (TT_ELEM_BYTES == 2 || TT_B_T)
#define TT_PAIR_A (!TT_A_LDSM)  // tf32 A stored [k][m]: its rows paired
#define TT_A_COLS16 (TT_A_COLS * TT_ELEM_BYTES / 2)  // the tile's columns as 16-bit elements
#define TT_B_COLS16 (TT_B_COLS * TT_ELEM_BYTES / 2)
// tf32 A's pairs: two lane offsets, B's elements four, in bytes
// (tt_tf32_pair_lane_offset, tt_tf32_mn_lane_offset).
#define TT_A_LANES (TT_A_LDSM ? tt_ldsm_a_lanes(TT_A_T, TT_MI, TT_KSTEPS) : 2)
#define TT_B_LANES (TT_B_LDSM ? tt_ldsm_b_lanes(TT_B_T, TT_NI, TT_KSTEPS) : 4)
struct tt_fragment_offsets {
  int a[TT_A_LANES];
  int b[TT_B_LANES];
  __device__ __forceinline__ void init(int wm0, int wn0, int lane) {
    const int q = tt_ldsm_matrix(lane), r = tt_ldsm_row(lane);
    const int a_mask = tt_swizzle_mask(r, TT_A_CPR, 2, TT_A_KC);
    const int b_mask = tt_swizzle_mask(r, TT_B_CPR, 2, TT_B_KC);
#pragma unroll
    for (int i = 0; i < TT_A_LANES; ++i)
      a[i] = tt_kept(TT_A_LDSM ? tt_ldsm_a_lane_offset(TT_A_T, wm0, i, q, r, a_mask, TT_A_COLS16)
                               : 4 * tt_tf32_pair_lane_offset(wm0, i, lane, TT_A_COLS));
#pragma unroll
    for (int i = 0; i < TT_B_LANES; ++i)
      b[i] = tt_kept(TT_B_LDSM ? tt_ldsm_b_lane_offset(TT_B_T, wn0, i, q, r, b_mask, TT_B_COLS16)
                               : 4 * tt_tf32_mn_lane_offset(wn0, i, lane, TT_B_COLS));
  }
  // The fragments of k-step KS of the stage whose A tile is at shared
  // address as_addr and B tile at bs_addr. KS: a constant once the caller's
  // loop is unrolled.
  __device__ __forceinline__ void load(int KS, unsigned as_addr, unsigned bs_addr, unsigned (&fa)[TT_MI][4],
                                       unsigned (&fb)[TT_NI][2]) const {
#if TT_A_LDSM
#pragma unroll
    for (int mi = 0; mi < TT_MI; ++mi) {
      const unsigned at =
          as_addr + a[tt_ldsm_a_lane_index(TT_A_T, mi, KS)] + tt_ldsm_a_added(TT_A_T, mi, KS, TT_A_COLS16);
      if (tt_ldsm_a_trans(TT_A_T))
        tt_ldmatrix_x4_trans(fa[mi], at);
      else
        tt_ldmatrix_x4(fa[mi], at);
    }
#else
    static_assert(TT_WM % 32 == 0 && TT_A_COLS >= 32, "tt_tf32_pair_lane_offset's premise");
#pragma unroll
    for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
      for (int j = 0; j < 2; ++j)  // a_{2j}, a_{2j+1}: rows g, g+8 (tile rows 2g, 2g+1), k t + 4j
        tt_ld_shared_v2(fa[mi][2 * j], fa[mi][2 * j + 1],
                        as_addr + a[mi % 2] + 4 * tt_tf32_pair_added(mi, KS * TT_MMA_K, j, TT_A_COLS));
#endif
#if TT_B_LDSM
#pragma unroll
    for (int np = 0; np < TT_NI / 2; ++np) {
      const unsigned at =
          bs_addr + b[tt_ldsm_b_lane_index(TT_B_T, np, KS)] + tt_ldsm_b_added(TT_B_T, np, KS, TT_B_COLS16);
      unsigned t[4];
      if (tt_ldsm_b_trans(TT_B_T))
        tt_ldmatrix_x4_trans(t, at);
      else
        tt_ldmatrix_x4(t, at);
#pragma unroll
      for (int x = 0; x < 4; ++x) fb[2 * np + tt_ldsm_b_tile(x)][tt_ldsm_b_reg(x)] = t[x];
    }
#else
    static_assert(TT_WN % 32 == 0 && TT_B_COLS >= 32, "tt_tf32_mn_lane_offset's premise");
#pragma unroll
    for (int ni = 0; ni < TT_NI; ++ni)
#pragma unroll
      for (int j = 0; j < 2; ++j)  // b_j: k t + 4j, n g
        fb[ni][j] = tt_ld_shared(bs_addr + b[ni % 4] + 4 * tt_tf32_mn_added(ni, KS * TT_MMA_K, j, TT_B_COLS));
#endif
  }
};

// What the main loop needs of its block: the operands, where its tiles start
// and how one k-tile moves them, its k-tiles and the warp's place, and the
// shared memory (smem, at shared address smem_base).
struct tt_block {
  const elem_t* A;
  const elem_t* B;
  const elem_t* a_tile;
  const elem_t* b_tile;
  long long a_k_step, b_k_step;
  int lda, ldb, M, N, K, m0, n0, k_begin, k_tiles, tid, lane, wm0, wn0;
  unsigned smem_base;
  const elem_t* smem;
};

// Rows and columns of a tile inside the matrix, k_left = K - k0 of the tile.
#define TT_A_LEFT(k_left) (TT_A_T ? (k_left) : blk.M - blk.m0), (TT_A_T ? blk.M - blk.m0 : (k_left))
#define TT_B_LEFT(k_left) (TT_B_T ? blk.N - blk.n0 : (k_left)), (TT_B_T ? (k_left) : blk.N - blk.n0)

// The ring of stages: stage s holds A's tile at byte s * TT_STAGE_BYTES and
// B's right after it (tt_mma_stage_bytes_ab: mma_addressing.cuh).
#define TT_STAGE_BYTES tt_mma_stage_bytes_ab(TT_A_STAGE, TT_B_STAGE, TT_ELEM_BYTES)
#define TT_B_AT (TT_A_STAGE * TT_ELEM_BYTES)  // B's tile in a stage, bytes

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
  const elem_t* const a_tile = A + tt_row_offset(k_begin, lda) + m0;
  const long long a_k_step = tt_row_offset(TT_BK, lda);
#else
  const elem_t* const a_tile = A + tt_row_offset(m0, lda) + k_begin;
  const long long a_k_step = TT_BK;
#endif
#if TT_B_T
  const elem_t* const b_tile = B + tt_row_offset(n0, ldb) + k_begin;
  const long long b_k_step = TT_BK;
#else
  const elem_t* const b_tile = B + tt_row_offset(k_begin, ldb) + n0;
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
    tt_store_c_vec<TT_EPI_VEC>(C, ldc, m0 + row, n0 + col, M, N, v, alpha, beta, c_vec);
  }
  if (tid == 0) *counter = 0;  // ready for the next launch
#endif
}
