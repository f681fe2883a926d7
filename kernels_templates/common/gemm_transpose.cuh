// The transposing pre-pass of K-major copies (core/gemm/k_major_copies.hpp; a family's "_kc"
// variants). Kernels that read both operands K-major (tf32 and fp8 where the hardware transposes
// only 16-bit elements) run a problem that stores an operand MN-major (A as K x M, layout 't'; B as
// K x N, layout 'n') on copies: the host launches this kernel first, once per such operand, into a
// scratch buffer, and the GEMM reads the copy as layout nt.
//
// tiletune_gemm_transpose: `src` holds `matrices` matrices, each `rows` x `cols` row-major with `ld`
// elements between rows and `matrix_stride` between matrices (rows = K and cols = M or N: the
// operand as stored); `dst` gets each one transposed, `cols` x `rows` dense (K elements a row), the
// matrices one after another. Grid (ceil(cols / 32), ceil(rows / 32), matrices), 32 x 8 threads: a
// block moves one 32 x 32 tile through shared memory padded to 33 elements a row, so that a warp's
// column reads meet 32 banks (4-byte elements: word 33 tx + j; bytes: word (33 tx + j) / 4, also
// distinct over tx). Each thread moves 4 elements in and 4 out; loads along the source's rows and
// stores along the copy's rows, so both are coalesced. It only moves bits: the element's type
// is its size (TT_AB_BYTES 4: tf32 in fp32 words; 1: fp8).
//
// The index math is TT_HOST_DEVICE so the host emulation (tests/unit) runs it as the kernel does.

#ifndef TT_HOST_DEVICE
#define TT_HOST_DEVICE __device__ __forceinline__
#endif

#define TT_XPOSE_TILE 32
#define TT_XPOSE_THREAD_ROWS 8  // the block's threadIdx.y extent: 4 steps of 8 rows cover the tile
#define TT_XPOSE_PITCH (TT_XPOSE_TILE + 1)

// One element a thread moves: its global offset (elements), its shared-memory index, and whether
// it lies inside the matrix.
struct tt_xpose_move {
  long long global;
  int smem;
  int valid;
};

// Step i (0..3) of thread (tx, ty) of block (bx, by, bz) loading: source row by*32 + ty + 8i,
// column bx*32 + tx of matrix bz, into tile row ty + 8i, column tx.
TT_HOST_DEVICE tt_xpose_move tt_xpose_load(int bx, int by, int bz, int tx, int ty, int i, int rows, int cols,
                                           long long ld, long long matrix_stride) {
  const int r = by * TT_XPOSE_TILE + ty + TT_XPOSE_THREAD_ROWS * i;
  const int c = bx * TT_XPOSE_TILE + tx;
  tt_xpose_move m;
  m.valid = r < rows && c < cols;
  m.global = (long long)bz * matrix_stride + (long long)r * ld + c;
  m.smem = (ty + TT_XPOSE_THREAD_ROWS * i) * TT_XPOSE_PITCH + tx;
  return m;
}

// Step i of the same thread storing: copy row bx*32 + ty + 8i (a source column), column
// by*32 + tx (a source row), from tile row tx, column ty + 8i.
TT_HOST_DEVICE tt_xpose_move tt_xpose_store(int bx, int by, int bz, int tx, int ty, int i, int rows, int cols) {
  const int c = bx * TT_XPOSE_TILE + ty + TT_XPOSE_THREAD_ROWS * i;  // the copy's row
  const int r = by * TT_XPOSE_TILE + tx;                             // the copy's column
  tt_xpose_move m;
  m.valid = r < rows && c < cols;
  m.global = (long long)bz * rows * cols + (long long)c * rows + r;
  m.smem = tx * TT_XPOSE_PITCH + ty + TT_XPOSE_THREAD_ROWS * i;
  return m;
}

#if defined(__CUDACC__)
#if TT_AB_BYTES == 4
typedef float tt_xpose_t;
#else
typedef unsigned char tt_xpose_t;
#endif

extern "C" __global__ void __launch_bounds__(TT_XPOSE_TILE * TT_XPOSE_THREAD_ROWS)
    tiletune_gemm_transpose(const tt_xpose_t* __restrict__ src, tt_xpose_t* __restrict__ dst, int rows, int cols,
                            long long ld, long long matrix_stride) {
  __shared__ tt_xpose_t tile[TT_XPOSE_TILE * TT_XPOSE_PITCH];
  const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
  for (int i = 0; i < TT_XPOSE_TILE / TT_XPOSE_THREAD_ROWS; ++i) {
    const tt_xpose_move m = tt_xpose_load(blockIdx.x, blockIdx.y, blockIdx.z, tx, ty, i, rows, cols, ld, matrix_stride);
    if (m.valid) tile[m.smem] = src[m.global];
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < TT_XPOSE_TILE / TT_XPOSE_THREAD_ROWS; ++i) {
    const tt_xpose_move m = tt_xpose_store(blockIdx.x, blockIdx.y, blockIdx.z, tx, ty, i, rows, cols);
    if (m.valid) dst[m.global] = tile[m.smem];
  }
}
#endif
