// wgmma family (sm_90a): TMA loads into 128-byte-swizzled shared memory,
// a ring of TT_STAGES stages guarded by full/empty mbarriers, one producer
// warpgroup (one thread issues the copies) and TT_CONSUMERS consumer
// warpgroups that run wgmma.mma_async with fp32 accumulators, over a
// persistent grid (tile scheduler in wgmma_tile_math.cuh).
// Macros (besides gemm_common.cuh's): TT_STAGES, TT_CONSUMERS (1 or 2),
// TT_RASTER_GROUP (0 = plain order), TT_RASTER_N (1: rasterize along N),
// TT_STREAM_K (1: stream-K on the tiles past the last whole wave, wgmma_schedule.cuh,
// with TT_SK_MIN_UNIT k-tiles per range at least and a workspace parameter),
// TT_SWAP_AB (1: the kernel computes C^T = op(B)^T op(A)^T on a BN x BM tile, its M and N
// parameters the problem's N and M, its tmap_a B's map and tmap_b A's, and stores C transposed),
// TT_EVICT_FIRST_B (1: B's boxes load with an L2 evict-first policy),
// TT_TMA_STORE (1: the TMA-store epilogue, 16-bit C: stmatrix into swizzled staging, a bulk tensor
// store per 64 x 64 chunk, with beta != 0 C's box TMA-loaded into the staging first; a tensor map
// of C, tmap_c, is the last parameter),
// TT_PINGPONG (1: two consumers take alternate tiles whole, in turn: wgmma_config.cuh),
// TT_CLUSTER_M (2: clusters of two CTAs over pairs of M tiles, B multicast: wgmma_config.cuh),
// TT_CLUSTER_SPLIT (S > 1: split-K inside a cluster of S CTAs, the partial tiles reduced in the
// leader's shared memory, wgmma_schedule.cuh; the grid is S x the clusters, clusters of S x 1 x 1),
// TT_GROUPED (1: a grouped GEMM, wgmma_grouped.cuh: `batch` is the number of groups, at
// most TT_GROUPS_MAX, A and C hold every group's rows (batch 1 in A's tensor map), B one
// matrix per group, and the parameters group_rows and group_stride follow beta).
// TT_PROMOTE (fp8, P >= 1: the QGMMAs of P k-tiles at a time run into a partial set, then added
// into the fp32 accumulators, wgmma_fp8.cuh), TT_SCALING (fp8: 1 rowwise, 2 block scales, whose
// pointers scale_a and scale_b are the last parameters, the problem's A's and B's also with
// swap-AB, whose scales index the kernel's rows as B's and its columns as A's; wgmma_fp8.cuh says
// their layouts), TT_TMA_SCALES (1: A's block scales copied into each stage by the producer).
// tiletune prepends tt_wgmma(acc, desc_a, desc_b, scale_d), the one wgmma
// instruction of this variant (m64 x BN x k16, k8 for tf32, k32 for fp8).
//
// Consumer warpgroup c owns rows [c*BM/C, (c+1)*BM/C) of the block tile and
// all BN columns: BM/C/64 wgmma instructions per k-step (ping-pong: all BM rows of its tiles).
// Kernel parameters: the tensor maps of A and B (built on the host,
// tensor_map_spec), then C and the scalars, then (grouped) the rows per group, (stream-K) the
// workspace, (TMA store) C's tensor map; the grid is persistent (min(tiles, SMs) CTAs, every SM
// with stream-K, whole clusters with split-K or multicast), 128 * (1 + TT_CONSUMERS) threads,
// and every CTA resident at once (one per SM), as the fixup's waits need.
// Status: ran correct on an H100 (2026-11-23; every variant, odd shapes,
// batch, alpha/beta, compute-sanitizer clean) at 0.93-1.00x cuBLASLt on large
// bf16/f16/tf32 shapes (profiles/measured/h100-2026-11-23), and on an H200 (2026-11-26)
// through the schedule; stream-K ran correct there too (profiles/measured/h200-2026-11-26). Every
// mechanism since (swap-AB, evict-first, split-K in a cluster, the TMA-store epilogue, ping-pong,
// 2x1 multicast clusters, grouped, fp8 and its scales by TMA) ran correct on an H200 (2026-12-04,
// profiles/measured/h200-2026-12-04-2; memcheck and synccheck clean, racecheck but for two reports
// read as the tool's: TT_EVERY_THREAD_ARRIVES).
// The kernel's parts, rendered before this file: wgmma_config.cuh (macros), wgmma_primitives.cuh
// (PTX), wgmma_epilogue.cuh (the epilogues), wgmma_fixup.cuh (split-K and stream-K reductions).

// Where a tile's operands and output are: A's first row and batch, B's batch, C's row bound
// and offset. A plain (batched) GEMM: the tile's batch for all three. A grouped one: the
// group's rows of A and C (one batch) and the group's matrix of B.
struct tt_tile_place {
  int a_row0, a_batch, b_batch, row_bound;
  long long c_offset;
};
#if TT_GROUPED
struct tt_group_table {
  int first_tile[TT_GROUPS_MAX + 1];
  int first_row[TT_GROUPS_MAX];
  int end_row[TT_GROUPS_MAX];
};
// One warp builds the table (wgmma_grouped.cuh): its lanes' chunk sums, a shuffle scan, the fills.
__device__ __forceinline__ void tt_build_group_table(tt_group_table& t, const int* rows, int groups, int stride,
                                                     int lane) {
  const int b = tt_group_chunk_begin(lane, groups), e = tt_group_chunk_begin(lane + 1, groups);
  const tt_group_sums mine = tt_group_chunk_sums(rows, b, e, stride, TT_KM);
  tt_group_sums incl = mine;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int tiles = __shfl_up_sync(0xffffffffu, incl.tiles, d), r = __shfl_up_sync(0xffffffffu, incl.rows, d);
    if (lane >= d) {
      incl.tiles += tiles;
      incl.rows += r;
    }
  }
  tt_group_sums before;
  before.tiles = incl.tiles - mine.tiles;
  before.rows = incl.rows - mine.rows;
  tt_group_chunk_fill(rows, b, e, stride, TT_KM, before, t.first_tile, t.first_row, t.end_row);
  if (lane == 31) t.first_tile[groups] = incl.tiles;
}
__device__ __forceinline__ tt_tile_place tt_place_of(const tt_tile_coord& tc, const tt_group_table& t, int groups) {
  const tt_group_tile g = tt_group_of_m_tile(tc.m_tile, t.first_tile, t.first_row, t.end_row, groups, TT_KM);
  tt_tile_place p;
  p.a_row0 = g.row0;
  p.a_batch = 0;
  p.b_batch = g.group;
  p.row_bound = g.row_end;
  p.c_offset = 0;
  return p;
}
#else
__device__ __forceinline__ tt_tile_place tt_place_of(const tt_tile_coord& tc, int M, long long batch_stride_c) {
  tt_tile_place p;
  p.a_row0 = tc.m_tile * TT_KM;
  p.a_batch = tc.batch;
  p.b_batch = tc.batch;
  p.row_bound = M;
  p.c_offset = tc.batch * batch_stride_c;
  return p;
}
#endif

extern "C" __global__ void __launch_bounds__(TT_THREADS, 1)
tiletune_gemm(const __grid_constant__ tt_tensor_map tmap_a,
              const __grid_constant__ tt_tensor_map tmap_b, elem_t* __restrict__ C, int M, int N,
              int K, int ldc, long long batch_stride_c, int batch, float alpha, float beta
#if TT_GROUPED
              , const int* __restrict__ group_rows, int group_stride
#endif
#if TT_STREAM_K
              , float* __restrict__ workspace
#endif
#if TT_TMA_STORE
              , const __grid_constant__ tt_tensor_map tmap_c
#endif
#if TT_SCALING
              , const float* __restrict__ scale_a, const float* __restrict__ scale_b
#endif
) {
  extern __shared__ __align__(1024) unsigned char tt_smem_raw[];
  // 128-byte swizzled tiles need 1024-byte aligned addresses (smem_bytes keeps 1024 of slack).
  const unsigned raw_addr = tt_smem_addr(tt_smem_raw);
  unsigned char* const smem = tt_smem_raw + ((1024 - (raw_addr & 1023)) & 1023);
  const unsigned base = tt_smem_addr(smem);
  const unsigned a_base = base;
  const unsigned b_base = base + TT_STAGES * TT_A_STAGE;
  const unsigned bar_base =
      base + tt_smem_barrier_offset(TT_KM, TT_KN, TT_BK, TT_AB_BYTES, TT_STAGES, TT_EPI_CONSUMERS);
  constexpr tt_smem_layout layout = {TT_KM, TT_KN, TT_BK, TT_AB_BYTES, TT_STAGES, TT_EPI_CONSUMERS,
                                     TT_TMA_STORE ? TT_CONSUMERS : 0, TT_CLUSTER_SPLIT, TT_PINGPONG, TT_SCALE_STAGE};
  (void)layout;  // read only by some configurations: no unused-variable warning in an export's build
#ifdef TT_SMEM_BYTES
  // The launch's dynamic shared memory (the host's wgmma_smem_bytes, 1024 of it alignment slack)
  // must hold this layout: a variant whose two disagree does not compile.
  static_assert(tt_smem_layout_total(layout) + 1024 == TT_SMEM_BYTES,
                "the kernel's shared-memory layout differs from the launch's (wgmma_smem_bytes)");
#endif
#if TT_TMA_SCALES
  const int scales_offset = tt_smem_scales_offset(layout);  // stage s's scales at + s * TT_SCALE_STAGE
#endif
#if TT_PINGPONG
  const unsigned turn_bar = base + tt_smem_turn_offset(layout);  // turn[c] at turn_bar + 8c
#endif
#if TT_CLUSTER_SPLIT > 1
  const int split_buffer = tt_smem_split_buffer_offset(layout);
  const unsigned split_full = base + tt_smem_split_barrier_offset(layout);
  const unsigned split_empty = split_full + 8;
#endif
  // full[s] at bar_base + 8s, empty[s] at bar_base + 8 (STAGES + s).
#define TT_FULL(s) (bar_base + 8 * (s))
#define TT_EMPTY(s) (bar_base + 8 * (TT_STAGES + (s)))
#if TT_MULTICAST  // a stage's release reaches both CTAs' producers: the peer's B half lands here too
#define TT_RELEASE(s)                                                            \
  do {                                                                           \
    tt_mbar_arrive(TT_EMPTY(s));                                                 \
    tt_mbar_arrive_remote_release(tt_map_to_rank(TT_EMPTY(s), (unsigned)(rank ^ 1))); \
  } while (0)
#else
#define TT_RELEASE(s) tt_mbar_arrive(TT_EMPTY(s))
#endif

  if (threadIdx.x == 0) {
    for (int s = 0; s < TT_STAGES; ++s) {
      tt_mbar_init(TT_FULL(s), tt_full_arrivals());                // the producer's expect_tx
      // one arrival per warp that reads it, in both CTAs with multicast
      tt_mbar_init(TT_EMPTY(s), tt_empty_arrivals(TT_STAGE_READERS) * (TT_MULTICAST ? 2 : 1) *
                                    (TT_EVERY_THREAD_ARRIVES ? 32 : 1));
    }
#if TT_PINGPONG
    tt_mbar_init(turn_bar, 1);      // consumer 0's turn: consumer 1's arrival after each main loop
    tt_mbar_init(turn_bar + 8, 1);  // consumer 1's turn: consumer 0's
#endif
#if TT_TMA_STORE
    // beta != 0: each staging buffer's C load, one arrival a use (the leader's expect_tx).
    for (int b = 0; b < 2 * TT_CONSUMERS; ++b) tt_mbar_init(base + tt_smem_c_load_barrier_offset(layout) + 8 * b, 1);
#endif
#if TT_CLUSTER_SPLIT > 1
    // each peer's arrival, and the leader's (every consumer thread's with TT_EVERY_THREAD_ARRIVES)
    tt_mbar_init(split_full, (TT_CLUSTER_SPLIT - 1) * (TT_EVERY_THREAD_ARRIVES ? TT_CONSUMER_THREADS : 1));
    tt_mbar_init(split_empty, TT_EVERY_THREAD_ARRIVES ? TT_CONSUMER_THREADS : 1);
#endif
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
#if TT_GROUPED
  __shared__ tt_group_table group_table;
  if (batch > TT_GROUPS_MAX) __trap();  // the host refuses such a problem; never read past the table
  // Warp 1 (the producer warpgroup's, idle while thread 0 sets up the barriers) builds the table.
  if (threadIdx.x / 32 == 1) tt_build_group_table(group_table, group_rows, batch, group_stride, threadIdx.x & 31);
#define TT_PLACE(tc) tt_place_of(tc, group_table, batch)
#else
#define TT_PLACE(tc) tt_place_of(tc, M, batch_stride_c)
#endif
  __syncthreads();

  const int n_tiles = (N + TT_KN - 1) / TT_KN;
#if TT_GROUPED
  const int m_tiles = group_table.first_tile[batch];
  const long long tiles = (long long)m_tiles * n_tiles;
#else
  const int m_tiles = (M + TT_KM - 1) / TT_KM;
  const long long tiles = (long long)m_tiles * n_tiles * batch;
#endif
  (void)tiles;  // (a multicast cluster schedules pairs of M tiles instead)
  const int k_tiles = (K + TT_BK - 1) / TT_BK;
#if TT_CLUSTER_SPLIT > 1
  // Every CTA's barriers are initialized before any remote arrival.
  tt_cluster_sync();
  const int rank = (int)tt_cluster_special(0), cta = (int)tt_cluster_special(1);
  const tt_schedule sched = tt_make_schedule(tiles, k_tiles, (int)tt_cluster_special(2), TT_SK_MIN_UNIT, 0);
#define TT_UNIT(ui) tt_split_unit(tt_unit(sched, cta, ui), rank, TT_CLUSTER_SPLIT)
#define TT_TILE(u) tt_tile_of((u).tile, m_tiles, n_tiles, TT_RASTER_GROUP, TT_RASTER_N)
#elif TT_MULTICAST
  tt_cluster_sync();  // every CTA's barriers initialized before a multicast or remote arrival reaches them
  const int rank = (int)tt_cluster_special(0), cta = (int)tt_cluster_special(1);
  // The clusters walk pairs of M tiles (a last odd tile pairs with an empty one past M).
  const tt_schedule sched =
      tt_make_schedule(tt_multicast_pairs(m_tiles, n_tiles, batch), k_tiles, (int)tt_cluster_special(2), TT_SK_MIN_UNIT, 0);
#define TT_UNIT(ui) tt_unit(sched, cta, ui)
#define TT_TILE(u) tt_pair_tile(tt_tile_of((u).tile, (m_tiles + 1) / 2, n_tiles, TT_RASTER_GROUP, TT_RASTER_N), rank)
#else
  const int cta = blockIdx.x;
  const tt_schedule sched = tt_make_schedule(tiles, k_tiles, gridDim.x, TT_SK_MIN_UNIT, TT_STREAM_K);
#define TT_UNIT(ui) tt_unit(sched, cta, ui)
#define TT_TILE(u) tt_tile_of((u).tile, m_tiles, n_tiles, TT_RASTER_GROUP, TT_RASTER_N)
#endif
  const int units = tt_units_of(sched, cta);
  // Warp-uniform (a shuffle from lane 0, as CUTLASS's canonical_warp_group_idx): threadIdx.x / 128
  // is per-thread to the compiler, so every operand descriptor derived from the consumer index went
  // through R2UR into uniform registers between the HGMMAs.
#if TT_PER_THREAD_CONSUMER
  const int wg = threadIdx.x / 128;
#else
  const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);
#endif

  if (wg == 0) {
    // Producer: one thread issues every copy; the rest of the warpgroup idles
    // with few registers so the consumers can have more.
#if TT_CONSUMERS == 2
    // 384 threads start at 168 registers (launch bounds); 128 x 40 + 256 x 232
    // is the same 64512, so the consumers' increase can always be granted.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
#endif
    if (threadIdx.x == 0) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)&tmap_a) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)&tmap_b) : "memory");
      unsigned long long policy = 0;
#if TT_EVICT_FIRST_B
      asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
#endif
      int stage = 0;
      unsigned phase = 0;
      for (int ui = 0; ui < units; ++ui) {
        const tt_work_unit u = TT_UNIT(ui);
        const tt_tile_coord tc = TT_TILE(u);
        const tt_tile_place place = TT_PLACE(tc);
        const int n0 = tc.n_tile * TT_KN;
        for (int kt = u.k_begin; kt < u.k_end; ++kt) {
          const int k0 = kt * TT_BK;
          // A fresh barrier passes parity 1.
#if TT_MULTICAST
          tt_mbar_wait_acquire_cluster(TT_EMPTY(stage), tt_producer_wait_parity(phase));  // both CTAs released it
#else
          tt_mbar_wait(TT_EMPTY(stage), tt_producer_wait_parity(phase));
#endif
#if TT_TMA_SCALES
          // A's scales of this k-block into the stage by a bulk copy that expect_tx counts (wgmma_fp8.cuh).
          const unsigned scale_a_bytes = tt_scale_a_copy_bytes(place.a_row0, TT_KM, M);
#else
          const unsigned scale_a_bytes = 0;
#endif
          tt_mbar_arrive_expect_tx(TT_FULL(stage),
                                   tt_stage_tx_bytes(TT_KM, TT_KN, TT_BK, TT_AB_BYTES) + scale_a_bytes);
          const unsigned sa = a_base + stage * TT_A_STAGE, sb = b_base + stage * TT_B_STAGE;
#if TT_TMA_SCALES
          if (scale_a_bytes > 0)
            tt_bulk_copy(base + scales_offset + stage * TT_SCALE_STAGE, scale_a + tt_block_scale_a_index(kt, place.a_row0, M),
                         scale_a_bytes, TT_FULL(stage));
#endif
          tt_load_operand<TT_A_KMAJOR, TT_KM, TT_HINT_A>(sa, &tmap_a, k0, place.a_row0, place.a_batch, TT_FULL(stage),
                                                         policy);
#if TT_MULTICAST
          tt_load_half_multicast<TT_B_KMAJOR, TT_KN>(sb, &tmap_b, k0, n0, place.b_batch, TT_FULL(stage), rank);
#else
          tt_load_operand<TT_B_KMAJOR, TT_KN, TT_HINT_B>(sb, &tmap_b, k0, n0, place.b_batch, TT_FULL(stage), policy);
#endif
          phase = tt_ring_advance(stage, phase, TT_STAGES);
        }
      }
    }
  } else {
#if TT_CONSUMERS == 2
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
#endif
    const int consumer = wg - 1;
    const int warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31;
#if !TT_SWAP_AB
    unsigned char* const epi_stage =
        smem + tt_smem_epilogue_offset(TT_KM, TT_KN, TT_BK, TT_AB_BYTES, TT_STAGES) +
        (consumer * 4 + warp) * 16 * TT_EPI_ROW_BYTES;
    const bool c_vectors = (ldc * TT_ELEM_BYTES) % 16 == 0 && ((unsigned long long)C & 15) == 0 &&
                           (batch_stride_c * TT_ELEM_BYTES) % 16 == 0;
    (void)c_vectors;  // (the TMA store does not read it)
#endif
    const unsigned lbo_a = tt_operand_lbo(TT_A_KMAJOR, TT_BK), lbo_b = tt_operand_lbo(TT_B_KMAJOR, TT_BK);
    int stage = 0;
    unsigned phase = 0;
#if TT_TMA_STORE
    const unsigned staging = base + tt_smem_tma_store_offset(layout) + consumer * 2 * TT_TMA_STORE_BUFFER_BYTES;
    const unsigned c_bars = base + tt_smem_c_load_barrier_offset(layout) + consumer * 2 * 8;
    int chunks = 0;
#endif
    float acc[TT_MI][TT_KN / 2];
#if TT_PROMOTE
    float part[TT_MI][TT_KN / 2];  // fp8: the running sums of the current interval (wgmma_fp8.cuh)
#define TT_FENCE_ACCUMULATORS() \
  do {                          \
    tt_fence_accumulators(acc); \
    tt_fence_accumulators(part); \
  } while (0)
#else
#define TT_FENCE_ACCUMULATORS() tt_fence_accumulators(acc)
#endif
    for (int ui = 0; ui < units; ++ui) {
      const tt_work_unit u = TT_UNIT(ui);
#if TT_PINGPONG
      if (!tt_pingpong_mine(ui, consumer)) {  // the other consumer's unit: its k-tiles pass on the ring
        for (int kt = u.k_begin; kt < u.k_end; ++kt) phase = tt_ring_advance(stage, phase, TT_STAGES);
        continue;
      }
#endif
      const tt_tile_coord tc = TT_TILE(u);
#if TT_PINGPONG
      if (tt_pingpong_waits_turn(ui)) tt_mbar_wait(turn_bar + 8 * consumer, tt_pingpong_turn_parity(ui));
#endif
#if TT_SCALING == 2 && TT_GROUPED
      // Block scales of a grouped tile: its first row in A and its group's scales of B, held
      // across the main loop (a plain tile's come from tc: held, they spilled).
      const tt_tile_place scale_place = TT_PLACE(tc);
      const float* const group_scale_b = scale_b + tt_block_scale_b_offset(scale_place.b_batch, K, N);
#define TT_SCALE_ROW0 scale_place.a_row0
#define TT_SCALE_B group_scale_b
#else
#define TT_SCALE_ROW0 (tc.m_tile * TT_KM)
#define TT_SCALE_B scale_b
#endif
#if TT_PROMOTE
#pragma unroll
      for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
        for (int i = 0; i < TT_KN / 2; ++i) acc[mi][i] = 0.0f;
#endif
      int prev = -1;
      for (int kt = u.k_begin; kt < u.k_end; ++kt) {
#if TT_TMA_SCALES
        float b_scales[2];
        tt_load_b_block_scales(b_scales, scale_b, kt, tc.n_tile * TT_KN, N);
#endif
        tt_mbar_wait(TT_FULL(stage), tt_consumer_wait_parity(phase));
        TT_FENCE_ACCUMULATORS();
        tt_wgmma_fence();
        const unsigned sa = a_base + stage * TT_A_STAGE, sb = b_base + stage * TT_B_STAGE;
#pragma unroll
        for (int kk = 0; kk < TT_BK; kk += TT_MMA_K) {
          const unsigned long long db = tt_wgmma_desc(
              sb + tt_operand_offset(TT_B_KMAJOR, 0, kk, TT_BK, TT_AB_BYTES), lbo_b, tt_operand_sbo());
#pragma unroll
          for (int mi = 0; mi < TT_MI; ++mi) {
            const unsigned long long da = tt_wgmma_desc(
                sa + tt_operand_offset(TT_A_KMAJOR, TT_ROW0(consumer) + mi * 64, kk, TT_BK, TT_AB_BYTES),
                lbo_a, tt_operand_sbo());
#if TT_PROMOTE
            tt_wgmma(part[mi], da, db, tt_part_scale_d(kt, u.k_begin, TT_PROMOTE, kk));
#else
            tt_wgmma(acc[mi], da, db, (kt > u.k_begin || kk > 0) ? 1 : 0);
#endif
          }
        }
        tt_wgmma_commit();
#if TT_PROMOTE
        if (tt_promotes_after(kt, u.k_begin, u.k_end, TT_PROMOTE)) {
#if TT_SCALING == 2 && TT_SWAP_AB
          // This k-block's scales, loaded while the QGMMAs run: B's of the thread's rows (the
          // weights'), A's of its columns (the tokens').
          float srow[TT_MI], scol[TT_KN / 8][2];
          tt_load_block_scales_swapped(srow, scol, scale_a, scale_b, kt,
                                       TT_SCALE_ROW0 + TT_ROW0(consumer) + tt_acc_warp_row0(warp), tc.n_tile * TT_KN, M,
                                       N, lane);
#elif TT_SCALING == 2 && TT_TMA_SCALES
          // A's scales of the thread's rows, copied into the stage with its operands (held: released
          // after); B's were loaded before the full wait.
          float sa[TT_MI][2], sb[2] = {b_scales[0], b_scales[1]};
          tt_read_stage_scales(sa, reinterpret_cast<const float*>(smem + scales_offset + stage * TT_SCALE_STAGE),
                               TT_ROW0(consumer) + tt_acc_warp_row0(warp), lane);
#elif TT_SCALING == 2
          // This k-block's scales, loaded while the QGMMAs run: the thread's rows' of A, B's two blocks.
          float sa[TT_MI][2], sb[2];
          tt_load_block_scales(sa, sb, scale_a, TT_SCALE_B, kt, TT_SCALE_ROW0 + TT_ROW0(consumer) + tt_acc_warp_row0(warp),
                               tc.n_tile * TT_KN, M, N, lane);
#endif
          // The interval's QGMMAs complete (this k-tile's and the previous one's: the release
          // below stays right), then their sums join the fp32 accumulators.
          tt_wgmma_wait<0>();
          TT_FENCE_ACCUMULATORS();
#pragma unroll
          for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
            for (int i = 0; i < TT_KN / 2; ++i)
#if TT_SCALING == 2 && TT_SWAP_AB
              acc[mi][i] += part[mi][i] * (srow[mi] * scol[i >> 2][i & 1]);
#elif TT_SCALING == 2
              // (a select, not sb[half]: an index known only at run time would put sb in local memory)
              acc[mi][i] += part[mi][i] * (sa[mi][(i >> 1) & 1] * (tt_scale_b_half(tc.n_tile * TT_KN, i >> 2) ? sb[1] : sb[0]));
#else
              acc[mi][i] += part[mi][i];
#endif
        } else {
          tt_wgmma_wait<1>();
          TT_FENCE_ACCUMULATORS();
        }
#else
        // The previous k-tile's wgmmas are done once at most one group is pending.
        tt_wgmma_wait<1>();
        TT_FENCE_ACCUMULATORS();
#endif
        const int release = tt_release_after_commit(prev, stage);
#if TT_TMA_SCALES
        // Every lane's reads of the stage's scales (plain loads, unlike wgmma's) happen before lane
        // 0 hands the stage back: racecheck found the producer's next bulk copy racing them (H200).
        __syncwarp();
#endif
        if (release >= 0 && (TT_EVERY_THREAD_ARRIVES || lane == 0)) TT_RELEASE(release);
        phase = tt_ring_advance(stage, phase, TT_STAGES);
      }
#if TT_PINGPONG
      // Every full wait of this main loop passed: the other consumer's next one may start.
      if ((threadIdx.x & 127) == 0) tt_mbar_arrive(turn_bar + 8 * (1 - consumer));
#endif
      tt_wgmma_wait<0>();
      TT_FENCE_ACCUMULATORS();
      const int last = tt_release_at_tile_end(prev);
      if (last >= 0 && (TT_EVERY_THREAD_ARRIVES || lane == 0)) TT_RELEASE(last);
      if (u.k_end == u.k_begin) {
#pragma unroll
        for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
          for (int i = 0; i < TT_KN / 2; ++i) acc[mi][i] = 0.0f;
      }
#if TT_CLUSTER_SPLIT > 1
      if (rank != 0) {
        tt_split_publish(acc, base + split_buffer, split_full, split_empty, ui, rank, threadIdx.x - 128);
        continue;
      }
      tt_split_gather(acc, reinterpret_cast<const float*>(smem + split_buffer), split_full, split_empty, ui,
                      threadIdx.x - 128);
#endif
#if TT_STREAM_K
      if (u.worker >= 0) {
        const int ct = threadIdx.x - 128;
        unsigned* const flags = reinterpret_cast<unsigned*>(workspace + (long long)sched.sk_workers * TT_KM * TT_KN);
        if (!u.owner) {
          tt_sk_publish(acc, workspace, flags, u.worker, ct);
          continue;
        }
        tt_sk_gather(acc, workspace, flags, u.first_peer, u.last_peer, ct);
      }
#endif

      const tt_tile_place place = TT_PLACE(tc);
#if TT_SCALING == 1
      // (Row and column computed here and at the promotion, not once per tile: held across the
      // main loop they spilled 8-16 bytes of the two-set 192-column tiles, ptxas 13.0.)
      // Swap-AB: the kernel's rows are C's columns (B's scales), its columns C's rows (A's).
      // Grouped: the rows of A its group's tile starts at, and the group's scales of B.
      tt_scale_rows_columns(acc, TT_SWAP_AB ? scale_b : scale_a,
                            (TT_SWAP_AB ? scale_a : scale_b) + (TT_GROUPED ? tt_rowwise_scale_b_offset(place.b_batch, N) : 0),
                            place.a_row0 + TT_ROW0(consumer) + tt_acc_warp_row0(warp), tc.n_tile * TT_KN, M, N, lane);
#endif
#if !TT_TMA_STORE
      elem_t* Cb = C + place.c_offset;
#endif
#pragma unroll
      for (int mi = 0; mi < TT_MI; ++mi) {
        const int row0 = place.a_row0 + TT_ROW0(consumer) + mi * 64 + tt_acc_warp_row0(warp);
#if TT_SWAP_AB
        tt_epilogue_transposed(acc[mi], Cb, ldc, place.row_bound, N, row0, tc.n_tile * TT_KN, alpha, beta, lane);
#elif TT_TMA_STORE
        tt_epilogue_tma(acc[mi], staging, c_bars, &tmap_c, row0 - tt_acc_warp_row0(warp), tc.n_tile * TT_KN, tc.batch,
                        consumer, warp, lane, alpha, beta, chunks);
#else
        tt_epilogue(acc[mi], epi_stage, Cb, ldc, place.row_bound, N, row0, tc.n_tile * TT_KN, c_vectors, alpha,
                    beta, lane);
#endif
      }
    }
#if TT_TMA_STORE
    // The staging buffers must outlive the stores' reads of them: wait for the last before exit.
    if (warp == 0 && lane == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
  }
#if TT_CLUSTER_CODE
  // No CTA leaves while a peer may still write into its shared memory or arrive on its barriers.
  tt_cluster_sync();
#endif
#undef TT_FULL
#undef TT_EMPTY
#undef TT_PLACE
#undef TT_UNIT
#undef TT_TILE
#undef TT_RELEASE
#undef TT_FENCE_ACCUMULATORS
#undef TT_SCALE_ROW0
#undef TT_SCALE_B
}
