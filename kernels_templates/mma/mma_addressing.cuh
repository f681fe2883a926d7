// tiletune kernel templates: the mma family's address math, shared by
// the mma kernel (mma_*.cuh, mma_gemm.cu) and the host unit tests (tile_addressing_test.cpp,
// mma_datapath_emulation_test.cpp), after common/tile_addressing.cuh.
// Plain int arithmetic only.
#ifndef TT_HOST_DEVICE
#define TT_HOST_DEVICE __device__ __forceinline__
#endif

// ---- Shared memory of a variant ----------------------------------------------
// The pipeline: STAGES x (A tile, then B tile), unpadded. The epilogue reuses it
// for fp32 staging of warps_m * epi_mi * 16 rows x BN columns at a time,
// epi_mi m16 steps of each warp per pass: the most that fits, at least 1.
TT_HOST_DEVICE constexpr int tt_mma_pipeline_bytes(int bm, int bn, int bk, int stages,
                                                   int elem_bytes) {
  return stages * (bm * bk + bk * bn) * elem_bytes;
}
// One stage: A's tile, then B's; stage s starts s stage sizes into the ring.
TT_HOST_DEVICE constexpr int tt_mma_stage_bytes_ab(int a_elems, int b_elems, int elem_bytes) {
  return (a_elems + b_elems) * elem_bytes;
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
// tf32 A stored [k][m], paired (see tt_tf32_pair_lane_offset): the tile row
// of the mma's row r16 (0..15) of an m16 step.
TT_HOST_DEVICE constexpr int tt_pair_row(int r16, bool paired) { return paired ? (r16 & 7) * 2 + (r16 >> 3) : r16; }
// Staging row sr of a pass holds tile row: warp row sr / (epi_mi*16), then its
// m16 steps pass*epi_mi.. in order. Staging rows are the mma's rows: with A's
// rows paired, row r of each m16 step is tile row tt_pair_row(r).
TT_HOST_DEVICE constexpr int tt_mma_stage_row_to_tile_row(int sr, int pass, int epi_mi,
                                                          int warp_tile_m, bool paired) {
  return paired ? (sr / (epi_mi * 16)) * warp_tile_m + pass * epi_mi * 16 + (sr % (epi_mi * 16) - sr % 16) +
                      tt_pair_row(sr % 16, true)
                : (sr / (epi_mi * 16)) * warp_tile_m + pass * epi_mi * 16 + sr % (epi_mi * 16);
}

// ---- Data path: thread and lane maps -----------------------------------------
// The index arithmetic of the mma kernel, one small function per map, so that
// tests/unit/mma_datapath_emulation_test.cpp replays the kernel end to end with
// the kernel's own maps. These are the kernel's expressions with the kernel's
// types (blockIdx/gridDim are unsigned): the generated code must not change.

// Block: launch order (blockIdx.x fastest), the input of tt_raster.
TT_HOST_DEVICE constexpr int tt_mma_launch_order(unsigned bx, unsigned by, unsigned grid_x) {
  return bx + by * grid_x;
}
// blockIdx.z = batch * split + slice.
TT_HOST_DEVICE constexpr int tt_mma_batch(unsigned bz, int split) { return bz / (unsigned)split; }
TT_HOST_DEVICE constexpr int tt_mma_slice(unsigned bz, int split) { return bz % (unsigned)split; }
// Warp w's place in the block: warp row w / warps_n, warp column w % warps_n.
TT_HOST_DEVICE constexpr int tt_mma_warp_m(int warp, int warps_n) { return warp / warps_n; }
TT_HOST_DEVICE constexpr int tt_mma_warp_n0(int warp, int warps_n, int warp_tile_n) {
  return (warp % warps_n) * warp_tile_n;
}

// Split-K: the k-tiles of slice s are [first, end), per_slice = ceil(all / split)
// each; the last non-empty slice may be short and later ones empty.
TT_HOST_DEVICE constexpr int tt_mma_k_tiles(int k, int bk) { return (k + bk - 1) / bk; }
TT_HOST_DEVICE constexpr int tt_mma_per_slice(int k_tiles_all, int split) {
  return (k_tiles_all + split - 1) / split;
}
TT_HOST_DEVICE constexpr int tt_mma_slice_first(int slice, int per_slice) { return slice * per_slice; }
TT_HOST_DEVICE constexpr int tt_mma_slice_end(int first, int per_slice, int k_tiles_all) {
  return first + per_slice < k_tiles_all ? first + per_slice : k_tiles_all;
}
TT_HOST_DEVICE constexpr int tt_mma_slice_tiles(int first, int end) { return end > first ? end - first : 0; }
// The tile's counter and workspace tile: [batch][launch-order tile]. The
// counter's address adds tile to tile_counters + tt_mma_batch_tiles, as the
// kernel always did (one add more or less changes the code).
TT_HOST_DEVICE constexpr unsigned tt_mma_batch_tiles(int batch, unsigned grid_x, unsigned grid_y) {
  return batch * grid_x * grid_y;
}
TT_HOST_DEVICE constexpr unsigned tt_mma_tile_slot(int batch, unsigned grid_x, unsigned grid_y, int tile) {
  return batch * grid_x * grid_y + tile;
}
// First float of a slice's BM x BN partials: [batch][tile][slice][BM x BN].
TT_HOST_DEVICE constexpr long long tt_mma_partial_offset(unsigned tile_slot, int split, int slice,
                                                         int tile_elems) {
  return ((long long)tile_slot * split + slice) * tile_elems;
}
// The block that brings the counter from split - 1 to split is the last: it reduces.
TT_HOST_DEVICE constexpr bool tt_mma_is_last_slice(unsigned counter_before, int split) {
  return counter_before == (unsigned)(split - 1);
}

// cp.async (tt_load_tile): copy i of thread tid takes chunk tid + i * threads
// of the tile, counted row-major in 16-byte chunks of chunk_elems elements.
TT_HOST_DEVICE constexpr int tt_copy_chunk(int tid, int i, int threads) { return tid + i * threads; }
TT_HOST_DEVICE constexpr int tt_copy_row(int c, int chunks_per_row) { return c / chunks_per_row; }
TT_HOST_DEVICE constexpr int tt_copy_col(int c, int chunks_per_row, int chunk_elems) {
  return (c % chunks_per_row) * chunk_elems;
}
// The same map with its loop-invariant parts split out, as the kernel's
// main loop uses it (threads a multiple of chunks_per_row): copy i of thread
// tid is row tt_copy_row0 + i * tt_copy_row_step, column tt_copy_col0, and
// sits tt_copy_step_offset(i, ...) elements past copy 0 in the stage. That
// holds where every row has the swizzle mask of the row step rows further
// (tt_copy_masks_repeat, a static_assert of the kernel; every default
// variant meets it).
TT_HOST_DEVICE constexpr int tt_copy_row0(int tid, int chunks_per_row) { return tid / chunks_per_row; }
TT_HOST_DEVICE constexpr int tt_copy_col0(int tid, int chunks_per_row, int chunk_elems) {
  return (tid % chunks_per_row) * chunk_elems;
}
TT_HOST_DEVICE constexpr int tt_copy_row_step(int threads, int chunks_per_row) { return threads / chunks_per_row; }
TT_HOST_DEVICE constexpr int tt_copy_step_offset(int i, int row_step, int cols) { return i * row_step * cols; }
TT_HOST_DEVICE constexpr bool tt_copy_masks_repeat(int row_step, int cols, int elem_bytes, int k_contiguous) {
  for (int r = 0; r < 8; ++r)
    if (tt_swizzle_mask(r, cols * elem_bytes / 16, elem_bytes, k_contiguous) !=
        tt_swizzle_mask(r + row_step, cols * elem_bytes / 16, elem_bytes, k_contiguous))
      return false;
  return true;
}
// Elements of the chunk inside the matrix, 0..chunk_elems; cp.async zero-fills
// the rest. Written through two helpers because the clamp as one expression
// here compiled to other SASS than the kernel's inline clamp did.
TT_HOST_DEVICE constexpr int tt_copy_left(int r, int col, int rows_left, int cols_left) {
  return r < rows_left ? cols_left - col : 0;
}
TT_HOST_DEVICE constexpr int tt_copy_at_most(int v, int chunk_elems) { return v > chunk_elems ? chunk_elems : v; }
TT_HOST_DEVICE constexpr int tt_copy_valid(int r, int col, int rows_left, int cols_left,
                                           int chunk_elems) {
  return tt_copy_left(r, col, rows_left, cols_left) < 0
             ? 0
             : tt_copy_at_most(tt_copy_left(r, col, rows_left, cols_left), chunk_elems);
}
// Elements from a tile's first element to the start of its row r (row stride
// ld). 64-bit parameters: the caller widens r and ld first, as the kernel's
// inline (long long)r * ld did (widening them in here compiled to other SASS).
TT_HOST_DEVICE constexpr long long tt_row_offset(long long r, long long ld) { return r * ld; }

// ldmatrix.x4 (PTX ISA "ldmatrix"): lanes 8q..8q+7 give the addresses of rows
// 0..7 of matrix q; the 16x16 piece's four 8x8 matrices are, for A,
// (m+0,k+0) (m+8,k+0) (m+0,k+8) (m+8,k+8) = registers a0..a3 of mma.m16n8k16,
// and for B, (n+0,k+0) (n+0,k+8) (n+8,k+0) (n+8,k+8) = b0, b1 of the n8 tile
// ni and b0, b1 of ni + 1. A tile stored along k is read with .trans.
TT_HOST_DEVICE constexpr int tt_ldsm_matrix(int lane) { return lane >> 3; }
TT_HOST_DEVICE constexpr int tt_ldsm_row(int lane) { return lane & 7; }
TT_HOST_DEVICE constexpr int tt_ldsm_a_trans(int a_t) { return a_t; }
TT_HOST_DEVICE constexpr int tt_ldsm_b_trans(int b_t) { return !b_t; }
// The tile row lane (q, r) points at, and its chunk (mask: the swizzle mask of
// row r, which the row shares: row offsets are multiples of 8).
TT_HOST_DEVICE constexpr int tt_ldsm_a_row(int a_t, int m, int k_base, int q, int r) {
  return a_t ? k_base + r + (q >> 1) * 8 : m + r + (q & 1) * 8;
}
TT_HOST_DEVICE constexpr int tt_ldsm_a_chunk(int a_t, int m, int k_base, int q, int mask) {
  return a_t ? (m >> 3) ^ (q & 1) ^ mask : (k_base >> 3) ^ (q >> 1) ^ mask;
}
TT_HOST_DEVICE constexpr int tt_ldsm_b_row(int b_t, int n, int k_base, int q, int r) {
  return b_t ? n + r + (q >> 1) * 8 : k_base + r + (q & 1) * 8;
}
TT_HOST_DEVICE constexpr int tt_ldsm_b_chunk(int b_t, int n, int k_base, int q, int mask) {
  return b_t ? (k_base >> 3) ^ (q & 1) ^ mask : (n >> 3) ^ (q >> 1) ^ mask;
}
// Byte offset of that row's 16 bytes in a tile of cols 16-bit elements per row.
TT_HOST_DEVICE constexpr int tt_ldsm_offset(int row, int chunk, int cols) { return (row * cols + chunk * 8) * 2; }
// The main loop splits each lane's ldmatrix offset into a part computed once
// per lane and a constant: the swizzle XORs the chunk index, so whichever of
// (m-step mi or n-pair, k-step ks) moves the chunk gets its own lane offset,
// and the one that moves whole rows (multiples of 8: the mask stays) adds.
// A stored [m][k] (a_t 0): lane offsets per ks, mi adds 16 rows; [k][m]: per mi, ks adds 16 rows.
TT_HOST_DEVICE constexpr int tt_ldsm_a_lanes(int a_t, int mi_count, int k_steps) { return a_t ? mi_count : k_steps; }
TT_HOST_DEVICE constexpr int tt_ldsm_a_lane_offset(int a_t, int wm0, int idx, int q, int r, int mask, int cols) {
  return a_t ? tt_ldsm_offset(tt_ldsm_a_row(1, wm0 + idx * 16, 0, q, r), tt_ldsm_a_chunk(1, wm0 + idx * 16, 0, q, mask), cols)
             : tt_ldsm_offset(tt_ldsm_a_row(0, wm0, idx * 16, q, r), tt_ldsm_a_chunk(0, wm0, idx * 16, q, mask), cols);
}
TT_HOST_DEVICE constexpr int tt_ldsm_a_lane_index(int a_t, int mi, int ks) { return a_t ? mi : ks; }
TT_HOST_DEVICE constexpr int tt_ldsm_a_added(int a_t, int mi, int ks, int cols) {
  return (a_t ? ks : mi) * 16 * cols * 2;
}
// B stored [n][k] (b_t 1): lane offsets per ks, n-pair np (n8 tiles 2np, 2np+1) adds 16 rows; [k][n]: per np, ks adds 16 rows.
TT_HOST_DEVICE constexpr int tt_ldsm_b_lanes(int b_t, int ni_count, int k_steps) { return b_t ? k_steps : ni_count / 2; }
TT_HOST_DEVICE constexpr int tt_ldsm_b_lane_offset(int b_t, int wn0, int idx, int q, int r, int mask, int cols) {
  return b_t ? tt_ldsm_offset(tt_ldsm_b_row(1, wn0, idx * 16, q, r), tt_ldsm_b_chunk(1, wn0, idx * 16, q, mask), cols)
             : tt_ldsm_offset(tt_ldsm_b_row(0, wn0 + idx * 16, 0, q, r), tt_ldsm_b_chunk(0, wn0 + idx * 16, 0, q, mask), cols);
}
TT_HOST_DEVICE constexpr int tt_ldsm_b_lane_index(int b_t, int np, int ks) { return b_t ? ks : np; }
TT_HOST_DEVICE constexpr int tt_ldsm_b_added(int b_t, int np, int ks, int cols) {
  return (b_t ? np : ks) * 16 * cols * 2;
}
// B's matrix q lands in n8 tile ni + tt_ldsm_b_tile(q), register tt_ldsm_b_reg(q).
TT_HOST_DEVICE constexpr int tt_ldsm_b_tile(int q) { return q >> 1; }
TT_HOST_DEVICE constexpr int tt_ldsm_b_reg(int q) { return q & 1; }

// tf32 fragments of B stored [k][n], element by element with each lane's
// offsets computed once: element (k_base + t + 4j, warp0 + 8u + g) (u: the n8
// tile ni) lies at the lane offset of index u % 4 plus tt_tf32_mn_added. This
// holds for warp0 a multiple of 32 and rows of >= 32 elements: the chunk's
// three low bits and the swizzle mask (2 (row % 4), row % 4 = t) see u % 4 only.
TT_HOST_DEVICE constexpr int tt_tf32_mn_lane_offset(int warp0, int idx, int lane, int cols) {
  return tt_tf32_offset_mn_contiguous(lane & 3, lane & 3, warp0 + 8 * idx, lane >> 2, cols);
}
TT_HOST_DEVICE constexpr int tt_tf32_mn_added(int u, int k_base, int j, int cols) {
  return (k_base + 4 * j) * cols + 32 * (u / 4);
}

// tf32 A stored [k][m] is read in pairs: which tile row each of the mma's
// rows is, is the kernel's to choose, as long as the epilogue puts C's rows
// back where they belong. Row r of an m16 step (g + 8h) is its tile row
// 2g + h (tt_pair_row), so a_{2j} and a_{2j+1} (rows g and g+8 at k t + 4j)
// lie side by side and one ld.shared.v2 reads them into the register pair
// the mma wants; accumulator (h, x) of (mi, ni) is tile row 16 mi + 2g + h.
// The pair (k_base + t + 4j, warp0 + 16 mi + 2g) lies at the lane offset of
// index mi % 2 plus tt_tf32_pair_added, in elements, for warp0 a multiple of
// 32 and rows of >= 32 elements: the swizzle mask 2 (row % 4) sees chunk bit 2
// (mi % 2) and g, not mi / 2. A half-warp's 16 pairs, rows t = 0..3 at chunks
// {c, c+1} ^ 2t, hit 32 banks.
TT_HOST_DEVICE constexpr int tt_tf32_pair_lane_offset(int warp0, int idx, int lane, int cols) {
  return tt_tf32_offset_mn_contiguous(lane & 3, lane & 3, warp0 + 16 * idx + 8 * (lane >> 4), 2 * ((lane >> 2) & 3),
                                      cols);
}
TT_HOST_DEVICE constexpr int tt_tf32_pair_added(int v, int k_base, int j, int cols) {
  return (k_base + 4 * j) * cols + 32 * (v / 2);
}
// The same element one at a time (the element-wise path): register (h, k
// t + 4j) of lane (g, t) of the m16 step at base16 (k_row, its row % 8 row8).
TT_HOST_DEVICE constexpr int tt_tf32_pair_offset(int k_row, int row8, int base16, int g, int h, int cols) {
  return tt_tf32_offset_mn_contiguous(k_row, row8, base16 + 8 * (g >> 2), 2 * (g & 3) + h, cols);
}

// mma fragments (PTX ISA "Matrix Fragments for mma.m16n8k16 / mma.m16n8k8"):
// lane = 4 * group + thread in group.
TT_HOST_DEVICE constexpr int tt_frag_group(int lane) { return lane >> 2; }
TT_HOST_DEVICE constexpr int tt_frag_thread(int lane) { return lane & 3; }
// tf32 A register i: rows group + 8 * (i & 1), k thread + 4 * (i >> 1); B register j: k thread + 4 j.
TT_HOST_DEVICE constexpr int tt_frag_tf32_a_half(int i) { return i & 1; }
TT_HOST_DEVICE constexpr int tt_frag_tf32_a_kq(int i) { return i >> 1; }
// Accumulator 2h + x of an m16n8 tile: row group + 8h, column 2 * thread + x.
TT_HOST_DEVICE constexpr int tt_frag_acc(int h, int x) { return 2 * h + x; }

// ---- tf32 operands -------------------------------------------------------------
// mma.sync's .tf32 operands are 32-bit registers whose low 13 bits the tensor
// cores ignore (as wgmma's tf32 reads from shared memory). Adding half a tf32
// ulp (bit 12) to a finite value's bits and leaving the rest to that
// truncation rounds to nearest, ties away from zero: the tf32 value
// cvt.rna.tf32.f32 gives, in two instructions (a compare of |x| and a
// predicated add) against cvt.rna's three (it also clears the low bits).
// Infinities and NaNs keep their bits: the add would carry a NaN whose
// payload's high bits are all ones (CUDA's 0x7fffffff) into the sign, a zero.
// finite: |x| <= FLT_MAX (false for NaN), tested as the kernel tests it.
TT_HOST_DEVICE constexpr bool tt_tf32_finite(float magnitude) { return magnitude <= 3.40282347e+38f; }
TT_HOST_DEVICE constexpr unsigned tt_tf32_round_bits(unsigned bits, bool finite) {
  return finite ? bits + 0x1000u : bits;
}

// Epilogue staging: the float2 of half h of m16 step j (of this pass) and n8
// tile ni lands at staging (row, col); see tt_stage_offset. The row is summed
// in this grouping: warp_m * epi_mi * 16 + j * 16 + ... as one sum compiled to
// other SASS than the kernel's inline expression.
TT_HOST_DEVICE constexpr int tt_mma_stage_row(int warp_m, int epi_mi, int j, int group, int h) {
  return warp_m * epi_mi * 16 + (j * 16 + group + h * 8);
}
TT_HOST_DEVICE constexpr int tt_mma_stage_col(int wn0, int ni, int thread) { return wn0 + ni * 8 + 2 * thread; }
// Read-back (and the split-K reduction): item -> row, first column of its vec results.
TT_HOST_DEVICE constexpr int tt_epi_item_row(int item, int bn, int vec) { return item / (bn / vec); }
TT_HOST_DEVICE constexpr int tt_epi_item_col(int item, int bn, int vec) { return (item % (bn / vec)) * vec; }
// 8-wide items: the threads with bit 5 of col set read their two chunks in the other order.
TT_HOST_DEVICE constexpr int tt_epi_swap(int col) { return (col >> 5) & 1; }
