// wgmma family: grouped GEMM (mixture-of-experts). Integer math the kernel and the host
// tests share (TT_HOST_DEVICE as in wgmma_tile_math.cuh); nothing here includes a header.
//
// G problems share N, K and the kernel: group g multiplies its rows of A by B's slice g
// (B holds G matrices, the third tensor-map coordinate) into the same rows of C. Two layouts:
//   contiguous: group g's rows follow group g-1's with no padding (A is [sum rows, K]);
//   masked:     group g owns `stride` rows from g * stride, of which its first rows[g]
//               are valid (A is [G, stride, K]); the rest are neither read for C nor written.
// The rows per group are read on the device, so one launch serves any routing (a CUDA
// graph's too). The tile space is that of one GEMM whose M tiles are the groups' M tiles
// laid end to end: the schedule (wgmma_schedule.cuh), stream-K and rasterization run on it
// unchanged, and each M tile maps to its group, first row and row bound here. A tile never
// holds two groups: rows past its group's end are loaded (another group's, or zeros past
// the buffer) and never stored.

#ifndef TT_HOST_DEVICE
#define TT_HOST_DEVICE __device__ __forceinline__
#endif

// M tiles of a group of `rows` rows (none for an empty group).
TT_HOST_DEVICE int tt_group_m_tiles(int rows, int bm) { return rows > 0 ? (rows + bm - 1) / bm : 0; }

// The rows of a group that count: none for a negative count, at most `stride` when masked.
TT_HOST_DEVICE int tt_group_valid_rows(int rows, int stride) {
  const int r = rows > 0 ? rows : 0;
  return stride > 0 && r > stride ? stride : r;
}

// The table each CTA builds once, in shared memory, from the device's rows per group:
// first_tile[g] = M tiles of the groups before g (first_tile[groups] = all of them),
// first_row[g] = the row of A and C where group g starts, end_row[g] = one past its last valid row.
// One warp builds it: lane l takes the groups [tt_group_chunk_begin(l), tt_group_chunk_begin(l + 1)),
// sums them (tt_group_chunk_sums), the warp scans the sums, and each lane fills its groups from
// its exclusive prefix (tt_group_chunk_fill).
TT_HOST_DEVICE int tt_group_chunk_begin(int lane, int groups) {
  const int per_lane = (groups + 31) / 32;
  const int b = lane * per_lane;
  return b < groups ? b : groups;
}

struct tt_group_sums {
  int tiles;  // M tiles of the chunk's groups
  int rows;   // rows they take in the contiguous layout (0 when masked: rows start at g * stride)
};

// stride > 0: the masked layout with that many rows per group; 0: contiguous.
TT_HOST_DEVICE tt_group_sums tt_group_chunk_sums(const int* rows, int begin, int end, int stride, int bm) {
  tt_group_sums s;
  s.tiles = 0;
  s.rows = 0;
  for (int g = begin; g < end; ++g) {
    const int valid = tt_group_valid_rows(rows[g], stride);
    s.tiles += tt_group_m_tiles(valid, bm);
    if (stride == 0) s.rows += valid;
  }
  return s;
}

TT_HOST_DEVICE void tt_group_chunk_fill(const int* rows, int begin, int end, int stride, int bm,
                                        tt_group_sums before, int* first_tile, int* first_row, int* end_row) {
  int tile = before.tiles, row = before.rows;
  for (int g = begin; g < end; ++g) {
    const int valid = tt_group_valid_rows(rows[g], stride);
    const int start = stride > 0 ? g * stride : row;
    first_tile[g] = tile;
    first_row[g] = start;
    end_row[g] = start + valid;
    tile += tt_group_m_tiles(valid, bm);
    row += stride > 0 ? 0 : valid;
  }
}

// An M tile of the grouped tile space: its group, its first row and the bound of its rows.
struct tt_group_tile {
  int group;
  int row0;     // first row of A and C
  int row_end;  // one past the last row it stores
};

// The group of M tile m_tile (0 <= m_tile < first_tile[groups]): the last group whose first
// tile is at or before it, which skips empty groups (their first tile is the next group's).
TT_HOST_DEVICE tt_group_tile tt_group_of_m_tile(int m_tile, const int* first_tile, const int* first_row,
                                                const int* end_row, int groups, int bm) {
  int lo = 0, hi = groups - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (first_tile[mid] <= m_tile)
      lo = mid;
    else
      hi = mid - 1;
  }
  tt_group_tile t;
  t.group = lo;
  t.row0 = first_row[lo] + (m_tile - first_tile[lo]) * bm;
  t.row_end = end_row[lo];
  return t;
}
