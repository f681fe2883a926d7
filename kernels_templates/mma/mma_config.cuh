// mma family: tensor cores through mma.sync (m16n8k16 for f16/bf16,
// m16n8k8 for tf32, m16n8k32 for fp8 on sm_89 and later), a cp.async
// multi-stage shared-memory pipeline, ldmatrix fragment loads for the 16-bit
// types and fp8, XOR-swizzled shared memory
// (tile_addressing.cuh), an epilogue staged through shared memory that writes
// C in 16-byte vectors, optional split-K (TT_SPLIT_K > 1) into an fp32
// workspace reduced by the last block of each tile, grouped rasterization.
// Macros (besides gemm_common.cuh's): TT_WARPS_M x TT_WARPS_N warps,
// TT_STAGES pipeline depth, TT_SPLIT_K, TT_RASTER_GROUP, TT_RASTER_ALONG_N,
// TT_SCALING (fp8: 1 rowwise scales).
// This file derives the rest; mma_primitives.cuh, mma_copies.cuh,
// mma_fragments.cuh, mma_mainloop.cuh and mma_gemm.cu follow it in that order
// (mma_family.cpp), after common/ and mma_addressing.cuh.
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
// The operands' element (A and B): C's elem_t, or a byte for fp8, whose C is
// bf16, f16 or f32 (gemm_common.cuh's TT_OUT).
#if TT_FP8
typedef unsigned char ab_t;
#else
typedef elem_t ab_t;
#endif
#define TT_CHUNK (16 / TT_AB_BYTES)  // operand elements per 16-byte copy

// One mma k-step is 32 bytes of k: m16n8k8 (tf32), m16n8k16 (f16, bf16),
// m16n8k32 (fp8), whose fragments hold the same bytes of the same rows.
#define TT_MMA_K (32 / TT_AB_BYTES)
// fp8 fragments along m or n would need a byte transpose that ldmatrix (16-bit
// elements) lacks: fp8 reads both operands K-major (layout nt), as the host's
// check_mma requires.
#if TT_FP8 && (TT_A_T || !TT_B_T)
#error "the mma family reads fp8 operands K-major only (layout nt)"
#endif

// fp8's rowwise scales (TT_SCALING 1, mma_gemm.cu's epilogue): scale_a[M] and scale_b[N]; 0, per-tensor
// scales, are alpha's.
#ifndef TT_SCALING
#define TT_SCALING 0
#endif
#if TT_SCALING && !TT_FP8
#error "rowwise scales are fp8's"
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
// (about 240 registers) never did: one block each. fp8 as the 16-bit types
// with the same bytes of k (BK 64).
#define TT_ACCUMULATORS (TT_MI * TT_NI * 4)
#if TT_ACCUMULATORS <= 64 && TT_THREADS == 128 && TT_AB_BYTES <= 2 && TT_BK * TT_AB_BYTES <= 64
#define TT_MIN_BLOCKS 3
#else
#define TT_MIN_BLOCKS 1
#endif
