// wgmma family: the macros every part of the kernel reads (rendered first of the family's own
// parts; the variant's TT_* values come before it, wgmma_gemm.cu says what each means): the
// kernel's own tile with swap-AB, the operands' majors, consumer rows with ping-pong, stage sizes.

#ifndef TT_SWAP_AB
#define TT_SWAP_AB 0
#endif
// TT_EVERY_THREAD_ARRIVES (1, `--kernel-debug racecheck` only): every consumer thread arrives where
// one does (the stage ring's releases, split-K's publish and gather), the barriers' counts scaled to
// match. The same order; what compute-sanitizer's racecheck is asked to confirm: it reported the
// accesses a warp or CTA barrier ordered before one thread's release as races (H200, 2026-12-04).
#ifndef TT_EVERY_THREAD_ARRIVES
#define TT_EVERY_THREAD_ARRIVES 0
#endif
// K-major copies (TT_K_MAJOR_COPIES 1, wgmma_transpose.cuh): the GEMM reads the copies the pre-pass
// made K-major of the operands the problem stores MN-major, so it runs as layout nt whatever
// TT_A_T and TT_B_T say (they still say how the problem stores A and B: the pre-pass reads them).
#ifndef TT_K_MAJOR_COPIES
#define TT_K_MAJOR_COPIES 0
#endif
#if TT_K_MAJOR_COPIES
#define TT_RUN_A_T 0
#define TT_RUN_B_T 1
#else
#define TT_RUN_A_T TT_A_T
#define TT_RUN_B_T TT_B_T
#endif
// The kernel's own tile, TT_KM x TT_KN: the variant's BM x BN, or with swap-AB BN x BM, the
// kernel then computing C^T = op(B)^T op(A)^T (its A the problem's B, its M the problem's N).
#if TT_SWAP_AB
#define TT_KM TT_BN
#define TT_KN TT_BM
#define TT_A_KMAJOR (TT_RUN_B_T)  // the problem's B: K-major when stored N x K ('t')
#define TT_B_KMAJOR (!TT_RUN_A_T)
#define TT_EPI_CONSUMERS 0  // the transposed epilogue stores from registers, no staging
#else
#define TT_KM TT_BM
#define TT_KN TT_BN
#define TT_A_KMAJOR (!TT_RUN_A_T)
#define TT_B_KMAJOR (TT_RUN_B_T)
// The classic epilogue stages each consumer's rows in shared memory; the TMA-store epilogue has
// its own staging (tt_smem_tma_store_offset) and none of this.
#define TT_EPI_CONSUMERS (TT_TMA_STORE ? 0 : TT_CONSUMERS)
#endif
// TT_EVICT_FIRST_B (1): the problem's B (a decode step's weights: every byte read once) loads
// with an L2 evict-first policy, so that it does not push out what is read again (A, partials).
#ifndef TT_EVICT_FIRST_B
#define TT_EVICT_FIRST_B 0
#endif
#if TT_SWAP_AB
#define TT_HINT_A TT_EVICT_FIRST_B
#define TT_HINT_B 0
#else
#define TT_HINT_A 0
#define TT_HINT_B TT_EVICT_FIRST_B
#endif
#define TT_THREADS (128 * (1 + TT_CONSUMERS))
#ifndef TT_PINGPONG
#define TT_PINGPONG 0
#endif
// Ping-pong (TT_PINGPONG 1, two consumers): consumer c takes the CTA's units c, c + 2, ... whole,
// all TT_KM rows, while the other runs its epilogue; a stage is read by one warpgroup. Otherwise
// (cooperative) each consumer owns TT_KM / TT_CONSUMERS rows of every tile.
#if TT_PINGPONG
#define TT_WG_M TT_KM
#define TT_ROW0(consumer) 0
#define TT_STAGE_READERS 1
#else
#define TT_WG_M (TT_KM / TT_CONSUMERS)
#define TT_ROW0(consumer) ((consumer) * TT_WG_M)
#define TT_STAGE_READERS TT_CONSUMERS
#endif
#define TT_MI (TT_WG_M / 64)
#define TT_MMA_K (32 / TT_AB_BYTES)  // 32 bytes of k an instruction: k8 tf32, k16, k32 fp8
#define TT_A_STAGE (TT_KM * TT_BK * TT_AB_BYTES)
#define TT_B_STAGE (TT_KN * TT_BK * TT_AB_BYTES)
#define TT_EPI_N (128 / TT_ELEM_BYTES)  // columns staged per chunk: 128 bytes of C
// 1: the consumer index stays threadIdx.x / 128 (stream-K copies of 128 accumulator registers a
// thread or more, wgmma_per_thread_consumer: a warp-uniform index spilled 4-12 bytes there).
#ifndef TT_PER_THREAD_CONSUMER
#define TT_PER_THREAD_CONSUMER 0
#endif
#ifndef TT_STREAM_K
#define TT_STREAM_K 0
#endif
#ifndef TT_SK_MIN_UNIT
#define TT_SK_MIN_UNIT 8
#endif
#ifndef TT_GROUPED
#define TT_GROUPED 0
#endif
#ifndef TT_CLUSTER_SPLIT
#define TT_CLUSTER_SPLIT 1
#endif
#ifndef TT_TMA_STORE
#define TT_TMA_STORE 0
#endif
// 2-CTA clusters along M with TMA multicast (TT_CLUSTER_M 2): the two CTAs of a cluster take the
// tiles (2p, n) and (2p + 1, n) of a pair p, which share B's tile; each loads its own A and one
// half of B, multicast into both CTAs' stage (wgmma_tile_math.cuh, tt_multicast_*). A stage is
// refilled only once both CTAs' consumers released it: every consumer warp arrives on its own
// CTA's `empty` and on the peer's.
#if defined(TT_CLUSTER_M) && TT_CLUSTER_M == 2
#define TT_MULTICAST 1
#else
#define TT_MULTICAST 0
#endif
#define TT_CLUSTER_CODE (TT_CLUSTER_SPLIT > 1 || TT_MULTICAST)
#ifndef TT_GROUPS_MAX
#define TT_GROUPS_MAX 256
#endif
#define TT_CONSUMER_THREADS (128 * TT_CONSUMERS)
// fp8 (wgmma_fp8.cuh): the QGMMAs of TT_PROMOTE k-tiles run into a partial set that is then added
// into the fp32 accumulators; 0 (the other dtypes, and fp8 with TT_FAST_ACCUMULATION 1: every QGMMA
// through the tensor core's short running sum, a looser error bound) runs every wgmma into the
// accumulators.
#ifndef TT_PROMOTE
#define TT_PROMOTE 0
#endif
#ifndef TT_FAST_ACCUMULATION
#define TT_FAST_ACCUMULATION 0
#endif
#if TT_FP8 && !TT_PROMOTE && !TT_FAST_ACCUMULATION
#error "an fp8 variant promotes (TT_PROMOTE >= 1) or accumulates fast (TT_FAST_ACCUMULATION)"
#endif
// fp8 scales (wgmma_fp8.cuh): 0 none (per tensor: alpha), 1 rowwise, 2 block (promotes every k-tile).
#ifndef TT_SCALING
#define TT_SCALING 0
#endif
#if TT_SCALING == 2 && TT_PROMOTE != 1
#error "block scales promote every k-tile (TT_PROMOTE 1)"
#endif
// Block scales copied into the stages with the operands (wgmma_fp8.cuh), on plain (batched) tiles.
#ifndef TT_TMA_SCALES
#define TT_TMA_SCALES 0
#endif
#if TT_TMA_SCALES && (TT_SCALING != 2 || TT_SWAP_AB || TT_GROUPED)
#error "scales by TMA are block scales of plain tiles (no swap-AB, no groups)"
#endif
#define TT_SCALE_STAGE (TT_TMA_SCALES ? tt_scale_stage_bytes(TT_KM) : 0)
