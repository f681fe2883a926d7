// The transposing pre-pass of K-major copies (core/gemm/k_major_copies.hpp; a family's "_kc"
// variants). Kernels that read both operands K-major (tf32 and fp8 where the hardware transposes
// only 16-bit elements) run a problem that stores an operand MN-major (A as K x M, layout 't'; B as
// K x N, layout 'n') on copies: the host launches this kernel first, once per such operand, into a
// scratch buffer, and the GEMM reads the copy as layout nt.
//
// tiletune_gemm_transpose: `src` holds `matrices` matrices, `matrix_stride` elements apart, each
// the operand as stored: `rows` (K) x `cols` (M or N) with `ld` elements between rows (MN-major),
// or, with `k_major` 1, `cols` rows of K elements `ld` apart (K-major in rows that start off 16
// bytes). `dst` gets each one K-major: `cols` rows of `row` elements (K padded to 16 bytes, the pad
// written zero), the matrices one after another. A K-major operand is not transposed but copied row
// by row (tt_pad_plan below: 16 bytes a thread). Otherwise: grid (ceil(cols / 32), ceil(row / 32),
// matrices), 32 x 8 threads: a block moves one 32 (K) x 32 (cols) tile through shared memory padded to 33
// elements a row, so that a warp's column reads meet 32 banks (4-byte elements: word 33 tx + j;
// bytes: word (33 tx + j) / 4, also distinct over tx). Each thread moves 4 elements in and 4 out;
// a warp loads along the source's rows (cols MN-major, K K-major) and stores along the copy's
// rows, so both are coalesced. It only moves bits: the element's type is its size (TT_AB_BYTES 4:
// tf32 in fp32 words; 2: f16 and bf16; 1: fp8).
//
// The index math is TT_HOST_DEVICE so the host emulation (tests/unit) runs it as the kernel does.

#ifndef TT_HOST_DEVICE
#define TT_HOST_DEVICE __device__ __forceinline__
#endif

#define TT_XPOSE_TILE 32
#define TT_XPOSE_THREAD_ROWS 8  // the block's threadIdx.y extent: 4 steps of 8 rows cover the tile
#define TT_XPOSE_PITCH (TT_XPOSE_TILE + 1)

// One element a thread moves: its global offset (elements), its shared-memory index, whether it
// lies inside the matrix, and (stores) whether it is the pad, written zero.
struct tt_xpose_move {
  long long global;
  int smem;
  int valid;
  int pad;
};

// Step i (0..3) of thread (tx, ty) of block (bx, by, bz) loading the source's element (k, c) of
// matrix bz into tile row k - by*32, column c - bx*32: MN-major, k = by*32 + ty + 8i and
// c = bx*32 + tx; K-major, k = by*32 + tx and c = bx*32 + ty + 8i (a warp reads along the rows).
TT_HOST_DEVICE tt_xpose_move tt_xpose_load(int bx, int by, int bz, int tx, int ty, int i, int rows, int cols,
                                           long long ld, long long matrix_stride, int k_major) {
  // One code path for both (arithmetic, not a branch the compiler would unswitch the loop on):
  // k_major (0 or 1) swaps which of tx and the step runs along K, and which stride is ld.
  const int along = TT_XPOSE_THREAD_ROWS * i + ty;
  const int kl = along + k_major * (tx - along), cl = tx + k_major * (along - tx);
  const int k = by * TT_XPOSE_TILE + kl, c = bx * TT_XPOSE_TILE + cl;
  const long long k_stride = ld + k_major * (1 - ld), c_stride = 1 + k_major * (ld - 1);
  tt_xpose_move m;
  m.valid = k < rows && c < cols;
  m.global = (long long)bz * matrix_stride + (long long)k * k_stride + (long long)c * c_stride;
  m.smem = kl * TT_XPOSE_PITCH + cl;
  m.pad = 0;
  return m;
}

// Step i of the same thread storing: copy row bx*32 + ty + 8i (a source column), column
// by*32 + tx (a source row, K), from tile row tx, column ty + 8i; columns from K to `row` are
// the pad, written zero.
TT_HOST_DEVICE tt_xpose_move tt_xpose_store(int bx, int by, int bz, int tx, int ty, int i, int rows, int cols,
                                            int row) {
  const int c = bx * TT_XPOSE_TILE + ty + TT_XPOSE_THREAD_ROWS * i;  // the copy's row
  const int k = by * TT_XPOSE_TILE + tx;                             // the copy's column
  tt_xpose_move m;
  m.valid = k < row && c < cols;
  m.pad = k >= rows;
  m.global = (long long)bz * row * cols + (long long)c * row + k;
  m.smem = tx * TT_XPOSE_PITCH + ty + TT_XPOSE_THREAD_ROWS * i;
  return m;
}

// The padded copy of a K-major operand (k_major 1): no transpose, each thread writes one 16-byte
// chunk of the copy. Grid (ceil(cols * row * eb / 16 / 256), 1, matrices), 32 x 8 threads; chunk g
// (block x * 256 + ty * 32 + tx) of matrix z is chunk q of the copy's row r. A chunk within K reads
// the 16 source bytes where they lie, off 16 bytes by `shift` (the row's start is not aligned: that
// is why there is a copy): the aligned 16 bytes at `window` and, shift > 0, the next 16, then
// tt_pad_shift takes 16 bytes at `shift` from the 32. So a warp reads 512 bytes (plus 16) and
// writes 512, where the transpose's tiles moved 64 a row. A chunk across K's end (the last of a
// row: the pad is under 16 bytes), or whose window would start before the source or run past its
// last byte, goes element by element, the pad zeros. base_misalign: the source pointer's address
// mod 16.
#define TT_PAD_CHUNKS_PER_BLOCK (TT_XPOSE_TILE * TT_XPOSE_THREAD_ROWS)
enum { tt_pad_none = 0, tt_pad_window = 1, tt_pad_elements = 2 };
struct tt_pad_chunk {
  long long dst;     // the chunk's first byte in the copy
  long long src;     // its first source byte, from the source pointer (tt_pad_elements: where to read)
  long long window;  // tt_pad_window: the aligned 16 bytes the chunk's bytes start in, from the source pointer
  int shift;         // tt_pad_window: src - window, 0 to 15
  int kind;
  int elements;      // tt_pad_elements: the chunk's elements within K (the rest zeros)
};
// The source's bytes a padded copy may read: from its first element to the last row's K-th of the
// last matrix (what tt_pad_plan's windows must stay within).
TT_HOST_DEVICE long long tt_pad_source_bytes(int matrices, long long matrix_stride, int cols, long long ld, int rows,
                                             int eb) {
  return ((long long)(matrices - 1) * matrix_stride + (long long)(cols - 1) * ld + rows) * eb;
}
TT_HOST_DEVICE tt_pad_chunk tt_pad_plan(unsigned g, int bz, int rows, int cols, long long ld, long long matrix_stride,
                                        int row, int eb, int base_misalign, long long src_extent) {
  tt_pad_chunk c;
  const unsigned per_row = (unsigned)(row * eb) / 16u, per_chunk = 16u / (unsigned)eb;
  c.kind = tt_pad_none;
  c.dst = c.src = c.window = 0;
  c.shift = 0;
  c.elements = 0;
  if (g >= per_row * (unsigned)cols) return c;
  const unsigned r = g / per_row, q = g - r * per_row;
  const int k0 = (int)(q * per_chunk);
  c.dst = ((long long)bz * row * cols + (long long)r * row + k0) * eb;
  c.src = ((long long)bz * matrix_stride + (long long)r * ld + k0) * eb;
  c.elements = rows - k0 < (int)per_chunk ? rows - k0 : (int)per_chunk;
  c.shift = (int)((base_misalign + c.src) & 15);
  c.window = c.src - c.shift;
  const long long end = c.window + (c.shift ? 32 : 16);
  c.kind = c.elements == (int)per_chunk && c.window >= 0 && end <= src_extent ? tt_pad_window : tt_pad_elements;
  return c;
}
// The 16 bytes at byte `shift` (0 to 15) of the 32 in w[0..7] (little-endian words) into out[0..3].
TT_HOST_DEVICE void tt_pad_shift(const unsigned* w, int shift, unsigned* out) {
  const int s = shift >> 2;
  const unsigned t = (unsigned)(shift & 3) * 8u;
  unsigned y[5];  // constant trip counts: nvcc unrolls both loops, y and out stay in registers
  for (int i = 0; i < 5; ++i) y[i] = s == 0 ? w[i] : s == 1 ? w[i + 1] : s == 2 ? w[i + 2] : w[i + 3];
  for (int i = 0; i < 4; ++i) out[i] = (unsigned)((((unsigned long long)y[i + 1] << 32) | y[i]) >> t);
}

#if defined(__CUDACC__)
#if TT_AB_BYTES == 4
typedef float tt_xpose_t;
#elif TT_AB_BYTES == 2
typedef unsigned short tt_xpose_t;
#else
typedef unsigned char tt_xpose_t;
#endif

extern "C" __global__ void __launch_bounds__(TT_XPOSE_TILE * TT_XPOSE_THREAD_ROWS)
    tiletune_gemm_transpose(const tt_xpose_t* __restrict__ src, tt_xpose_t* __restrict__ dst, int rows, int cols,
                            long long ld, long long matrix_stride, int row, int k_major) {
  __shared__ tt_xpose_t tile[TT_XPOSE_TILE * TT_XPOSE_PITCH];
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (k_major) {  // the launch's, uniform: a padded row copy, no barrier below is reached
    const long long extent =
        tt_pad_source_bytes((int)gridDim.z, matrix_stride, cols, ld, rows, (int)sizeof(tt_xpose_t));
    const tt_pad_chunk c = tt_pad_plan(blockIdx.x * TT_PAD_CHUNKS_PER_BLOCK + ty * TT_XPOSE_TILE + tx, blockIdx.z,
                                       rows, cols, ld, matrix_stride, row, (int)sizeof(tt_xpose_t),
                                       (int)((unsigned long long)src & 15), extent);
    const char* const s = (const char*)src;
    uint4 out = make_uint4(0u, 0u, 0u, 0u);
    if (c.kind == tt_pad_window) {
      const uint4* const w = (const uint4*)(s + c.window);
      const uint4 lo = __ldg(w), hi = c.shift ? __ldg(w + 1) : make_uint4(0u, 0u, 0u, 0u);
      const unsigned words[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      unsigned o[4];
      tt_pad_shift(words, c.shift, o);
      out = make_uint4(o[0], o[1], o[2], o[3]);
    } else if (c.kind == tt_pad_elements) {
      union {
        uint4 v;
        tt_xpose_t e[16 / sizeof(tt_xpose_t)];
      } u;
#pragma unroll
      for (int i = 0; i < (int)(16 / sizeof(tt_xpose_t)); ++i)
        u.e[i] = i < c.elements ? ((const tt_xpose_t*)(s + c.src))[i] : (tt_xpose_t)0;
      out = u.v;
    }
    if (c.kind != tt_pad_none) *(uint4*)((char*)dst + c.dst) = out;
    return;
  }
#pragma unroll
  for (int i = 0; i < TT_XPOSE_TILE / TT_XPOSE_THREAD_ROWS; ++i) {
    const tt_xpose_move m =
        tt_xpose_load(blockIdx.x, blockIdx.y, blockIdx.z, tx, ty, i, rows, cols, ld, matrix_stride, k_major);
    if (m.valid) tile[m.smem] = src[m.global];
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < TT_XPOSE_TILE / TT_XPOSE_THREAD_ROWS; ++i) {
    const tt_xpose_move m = tt_xpose_store(blockIdx.x, blockIdx.y, blockIdx.z, tx, ty, i, rows, cols, row);
    if (m.valid) dst[m.global] = m.pad ? (tt_xpose_t)0 : tile[m.smem];
  }
}
#endif
