// mma family: the warps' fragments read from shared memory.

#define TT_A_COLS16 (TT_A_COLS * TT_AB_BYTES / 2)  // the tile's columns as 16-bit elements
#define TT_B_COLS16 (TT_B_COLS * TT_AB_BYTES / 2)

#if TT_AB_BYTES == 4
// tf32 m16n8k8 fragments, element by element (PTX ISA, "Matrix Fragments
// for mma.m16n8k8"): a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);
// b0 (k t, n g), b1 (k t+4, n g); each rounded to tf32. A stored [k][m] with
// its rows paired (tt_pair_row), as the main loop reads it.
__device__ __forceinline__ void tt_load_a_tf32(const ab_t* as, int k_base, int wm0, int lane,
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
__device__ __forceinline__ void tt_load_b_tf32(const ab_t* bs, int k_base, int wn0, int lane,
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
// 16 (8 for tf32, 32 for fp8), so the swizzle mask is the lane's, and a chunk
// index c + d with c even and d < 2 (or < 4 for c a multiple of 4) is c ^ d.
// fp8's tiles (K-major) are read as 16-bit ones of half the columns: an
// m16n8k32 fragment register holds the 4 bytes of k at 4t of row g, the
// bytes an m16n8k16 register holds of its 2 elements at 2t.
__device__ __forceinline__ void tt_load_fragments(const ab_t* as, const ab_t* bs,
                                                  unsigned as_addr, unsigned bs_addr, int k_base,
                                                  int wm0, int wn0, int lane,
                                                  unsigned (&a)[TT_MI][4],
                                                  unsigned (&b)[TT_NI][2]) {
#if TT_AB_BYTES <= 2
  // ldmatrix.x4: lanes 8q..8q+7 give the row addresses of 8x8 matrix q
  // (the maps and the .trans choice: tile_addressing.cuh, tt_ldsm_*).
  const int q = tt_ldsm_matrix(lane), r = tt_ldsm_row(lane);
  const int a_mask = tt_swizzle_mask(r, TT_A_CPR, 2, TT_A_KC);
  const int b_mask = tt_swizzle_mask(r, TT_B_CPR, 2, TT_B_KC);
  const int k16 = k_base * TT_AB_BYTES / 2;  // k_base in 16-bit columns
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi) {
    const int m = wm0 + mi * 16;
    // Stored [k][m]: matrices (k+0,m+0) (k+0,m+8) (k+8,m+0) (k+8,m+8), transposed;
    // stored [m][k]: matrices (m+0,k+0) (m+8,k+0) (m+0,k+8) (m+8,k+8).
    const int row = tt_ldsm_a_row(TT_A_T, m, k16, q, r);
    const int chunk = tt_ldsm_a_chunk(TT_A_T, m, k16, q, a_mask);
    if (tt_ldsm_a_trans(TT_A_T))
      tt_ldmatrix_x4_trans(a[mi], as_addr + tt_ldsm_offset(row, chunk, TT_A_COLS16));
    else
      tt_ldmatrix_x4(a[mi], as_addr + tt_ldsm_offset(row, chunk, TT_A_COLS16));
  }
#pragma unroll
  for (int ni = 0; ni < TT_NI; ni += 2) {
    const int n = wn0 + ni * 8;
    unsigned t[4];
    // Stored [n][k]: matrices (n+0,k+0) (n+0,k+8) (n+8,k+0) (n+8,k+8);
    // stored [k][n]: matrices (k+0,n+0) (k+8,n+0) (k+0,n+8) (k+8,n+8), transposed.
    const int row = tt_ldsm_b_row(TT_B_T, n, k16, q, r);
    const int chunk = tt_ldsm_b_chunk(TT_B_T, n, k16, q, b_mask);
    if (tt_ldsm_b_trans(TT_B_T))
      tt_ldmatrix_x4_trans(t, bs_addr + tt_ldsm_offset(row, chunk, TT_B_COLS16));
    else
      tt_ldmatrix_x4(t, bs_addr + tt_ldsm_offset(row, chunk, TT_B_COLS16));
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
#define TT_A_LDSM (TT_AB_BYTES <= 2 || !TT_A_T)
#define TT_B_LDSM (TT_AB_BYTES <= 2 || TT_B_T)
#define TT_PAIR_A (!TT_A_LDSM)  // tf32 A stored [k][m]: its rows paired
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
