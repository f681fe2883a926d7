// tiletune kernel templates: address math shared by the kernels and the host
// unit tests (tests/unit/tile_addressing_test.cpp replays every warp phase).
// Kernels get TT_HOST_DEVICE as __device__ __forceinline__; the host test
// defines it empty before including this file. Plain int arithmetic only.
#ifndef TT_HOST_DEVICE
#define TT_HOST_DEVICE __device__ __forceinline__
#endif

// ---- Swizzled shared-memory tiles ------------------------------------------
// A tile of rows x cols elements is stored unpadded, cols contiguous, in
// 16-byte chunks; chunk c of a row sits at c ^ mask(row) of that row. Shared
// memory has 32 banks of 4 bytes: a 128-byte line covers each bank once, so a
// warp phase is conflict-free when its 16-byte pieces fall in distinct chunk
// positions of the line. The mask depends on row % 8 only, so kernels compute
// it once per lane.
//   rows of >= 128 bytes: mask = row % 8. cp.async writes 8 chunks of one row
//     (a permutation); ldmatrix reads 8 rows at one chunk column (8 positions).
//   rows of 64 bytes: two rows share a line; mask = (row / 2) % 4 moves the
//     4 row pairs of an 8-row ldmatrix phase apart.
//   tf32 rows along m or n: a fragment reads rows k = t (t = 0..3) at 8
//     consecutive words, i.e. 2 chunks per row: mask = 2 * (row % 4) keeps
//     the chunk pairs apart.
TT_HOST_DEVICE constexpr int tt_swizzle_mask(int row, int chunks_per_row, int elem_bytes,
                                             int k_contiguous) {
  return (elem_bytes == 4 && !k_contiguous && chunks_per_row >= 8) ? ((row & 3) << 1)
         : chunks_per_row >= 8                                    ? (row & 7)
         : chunks_per_row == 4                                    ? ((row >> 1) & 3)
                                                                  : 0;
}

// Element offset of (row, col) in a swizzled rows x cols tile.
TT_HOST_DEVICE constexpr int tt_swizzled_offset(int row, int col, int cols, int elem_bytes,
                                                int k_contiguous) {
  return row * cols +
         (((col * elem_bytes / 16) ^ tt_swizzle_mask(row, cols * elem_bytes / 16, elem_bytes,
                                                     k_contiguous)) *
          (16 / elem_bytes)) +
         col % (16 / elem_bytes);
}

// tf32 fragment loads with the lane's constants split out (the kernels use
// these; the unit test checks them against tt_swizzled_offset). row8 is the
// row's value mod 8, known per lane: every other term is a multiple of 8.
// Rows along m/n (k-contiguous tile): element (row, k_base + t + 4j), k_base % 8 == 0.
TT_HOST_DEVICE constexpr int tt_tf32_offset_k_contiguous(int row, int row8, int k_base, int j, int t,
                                                         int cols) {
  return row * cols + ((((k_base >> 2) ^ j) ^ tt_swizzle_mask(row8, cols / 4, 4, 1)) << 2) + t;
}
// Rows along k: element (k_row, mn_base + g), mn_base % 8 == 0, g < 8.
TT_HOST_DEVICE constexpr int tt_tf32_offset_mn_contiguous(int k_row, int row8, int mn_base, int g,
                                                          int cols) {
  return k_row * cols + ((((mn_base >> 2) ^ (g >> 2)) ^ tt_swizzle_mask(row8, cols / 4, 4, 0)) << 2) +
         (g & 3);
}

// ---- Epilogue staging (fp32, rows of >= 32 floats) -----------------------
// Accumulators are written as float2 at (g, 2t) by each half-warp: rows g =
// 0..3, chunks c and c+1: mask 2 * (row % 4) keeps the 4 rows' chunk pairs
// apart. Reads take 8 consecutive chunks of a row per phase: a permutation.
TT_HOST_DEVICE constexpr int tt_stage_offset(int row, int col, int cols) {
  return row * cols + ((((col >> 2) ^ ((row & 3) << 1))) << 2) + (col & 3);
}

// ---- mma family: shared memory of a variant ----------------------------------
// The pipeline: STAGES x (A tile + B tile), unpadded. The epilogue reuses it
// for fp32 staging of warps_m * epi_mi * 16 rows x BN columns at a time,
// epi_mi m16 steps of each warp per pass: the most that fits, at least 1.
TT_HOST_DEVICE constexpr int tt_mma_pipeline_bytes(int bm, int bn, int bk, int stages,
                                                   int elem_bytes) {
  return stages * (bm * bk + bk * bn) * elem_bytes;
}
TT_HOST_DEVICE constexpr int tt_mma_stage_bytes(int warps_m, int epi_mi, int bn) {
  return warps_m * epi_mi * 16 * bn * 4;
}
TT_HOST_DEVICE constexpr int tt_mma_smem_bytes(int bm, int bn, int bk, int warps_m, int stages,
                                               int elem_bytes) {
  return tt_mma_pipeline_bytes(bm, bn, bk, stages, elem_bytes) >
                 tt_mma_stage_bytes(warps_m, 1, bn)
             ? tt_mma_pipeline_bytes(bm, bn, bk, stages, elem_bytes)
             : tt_mma_stage_bytes(warps_m, 1, bn);
}
// m16 steps per epilogue pass: mi (a power of two) halved until it fits.
TT_HOST_DEVICE constexpr int tt_mma_epi_mi(int mi, int warps_m, int bn, int smem_bytes) {
  return (mi <= 1 || tt_mma_stage_bytes(warps_m, mi, bn) <= smem_bytes)
             ? mi
             : tt_mma_epi_mi(mi / 2, warps_m, bn, smem_bytes);
}
// Staging row sr of a pass holds tile row: warp row sr / (epi_mi*16), then its
// m16 steps pass*epi_mi.. in order.
TT_HOST_DEVICE constexpr int tt_mma_stage_row_to_tile_row(int sr, int pass, int epi_mi,
                                                          int warp_tile_m) {
  return (sr / (epi_mi * 16)) * warp_tile_m + pass * epi_mi * 16 + sr % (epi_mi * 16);
}

// ---- simt family: shared tiles [k][m] and [k][n], 4-float chunks ------------
// Registers go to shared memory transposed for the k-contiguous layouts: a
// warp stores rows r of `groups` = BK / VEC k-groups; mask spreads the groups
// over the 8 chunk positions of a line. Reads are float4 along m/n with one k
// per warp (a permutation of a line).
TT_HOST_DEVICE constexpr int tt_simt_mask(int k, int bk, int vec) {
  return (bk / vec) >= 8 ? ((k / vec) & 7) : (((k / vec) % (bk / vec)) * (8 / (bk / vec))) & 7;
}
TT_HOST_DEVICE constexpr int tt_simt_offset(int k, int mn, int cols, int bk, int vec) {
  return k * cols + (((mn >> 2) ^ tt_simt_mask(k, bk, vec)) << 2) + (mn & 3);
}

// ---- Block rasterization -----------------------------------------------------
// Launch order l (blockIdx.x fastest) -> block tile (tm, tn). group 0: plain
// (tm = l % tiles_m). group G: G tile rows at a time (tile columns with
// along_n), walked down the group first, so consecutive blocks share B (or A)
// panels in L2. The last group may be smaller. A bijection for any counts.
TT_HOST_DEVICE void tt_raster(int l, int tiles_m, int tiles_n, int group, int along_n, int& tm,
                              int& tn) {
  if (group <= 0) {
    tm = l % tiles_m;
    tn = l / tiles_m;
    return;
  }
  const int major = along_n ? tiles_n : tiles_m;  // the grouped dimension
  const int minor = along_n ? tiles_m : tiles_n;
  const int per_group = group * minor;
  const int first = (l / per_group) * group;
  const int size = major - first < group ? major - first : group;
  const int within = l % per_group;
  const int a = first + within % size, b = within / size;
  tm = along_n ? b : a;
  tn = along_n ? a : b;
}
