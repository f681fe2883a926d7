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
