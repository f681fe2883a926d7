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
// TT_TMA_STORE (1: the TMA-store epilogue, 16-bit C and beta 0: stmatrix into swizzled staging,
// a bulk tensor store per 64 x 64 chunk; a tensor map of C, tmap_c, is the last parameter),
// TT_PINGPONG (1: two consumers take alternate tiles whole, below),
// TT_CLUSTER_SPLIT (S > 1: split-K inside a cluster of S CTAs, the partial tiles reduced in the
// leader's shared memory, wgmma_schedule.cuh; the grid is S x the clusters, clusters of S x 1 x 1),
// TT_GROUPED (1: a grouped GEMM, wgmma_grouped.cuh: `batch` is the number of groups, at
// most TT_GROUPS_MAX, A and C hold every group's rows (batch 1 in A's tensor map), B one
// matrix per group, and the parameters group_rows and group_stride follow beta).
// tiletune prepends tt_wgmma(acc, desc_a, desc_b, scale_d), the one wgmma
// instruction of this variant (m64 x BN x k16, or k8 for tf32).
//
// Consumer warpgroup c owns rows [c*BM/C, (c+1)*BM/C) of the block tile and
// all BN columns: BM/C/64 wgmma instructions per k-step.
// Kernel parameters: the tensor maps of A and B (built on the host,
// tensor_map_spec), then C and the scalars, then (stream-K) the workspace; the grid
// is persistent (min(tiles, SMs) CTAs, every SM with stream-K), 128 * (1 + TT_CONSUMERS)
// threads, and every CTA resident at once (one per SM), as the fixup's waits need.
// Status: ran correct on an H100 (2026-11-23; every variant, odd shapes,
// batch, alpha/beta, compute-sanitizer clean) at 0.93-1.00x cuBLASLt on large
// bf16/f16/tf32 shapes (profiles/measured/h100-2026-11-23), and on an H200 (2026-11-26)
// through the schedule; stream-K ran correct there too (smoke cases, memcheck, racecheck,
// synccheck, every timed variant verified; profiles/measured/h200-2026-11-26). Not yet run on a
// GPU (host emulation, model checks and compiles only): swap-AB, evict-first, split-K in a
// cluster, the TMA-store epilogue, ping-pong and 2x1 multicast clusters.

#ifndef TT_SWAP_AB
#define TT_SWAP_AB 0
#endif
// The kernel's own tile, TT_KM x TT_KN: the variant's BM x BN, or with swap-AB BN x BM, the
// kernel then computing C^T = op(B)^T op(A)^T (its A the problem's B, its M the problem's N).
#if TT_SWAP_AB
#define TT_KM TT_BN
#define TT_KN TT_BM
#define TT_A_KMAJOR (TT_B_T)  // the problem's B: K-major when stored N x K ('t')
#define TT_B_KMAJOR (!TT_A_T)
#define TT_EPI_CONSUMERS 0  // the transposed epilogue stores from registers, no staging
#else
#define TT_KM TT_BM
#define TT_KN TT_BN
#define TT_A_KMAJOR (!TT_A_T)
#define TT_B_KMAJOR (TT_B_T)
#define TT_EPI_CONSUMERS TT_CONSUMERS
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
#if TT_ELEM_BYTES == 2
#define TT_MMA_K 16
#else
#define TT_MMA_K 8
#endif
#define TT_A_STAGE (TT_KM * TT_BK * TT_ELEM_BYTES)
#define TT_B_STAGE (TT_KN * TT_BK * TT_ELEM_BYTES)
#define TT_STAGE_BYTES (TT_A_STAGE + TT_B_STAGE)
#define TT_EPI_N (128 / TT_ELEM_BYTES)  // columns staged per chunk: 128 bytes of C
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
#define TT_ACC_VALUES (TT_MI * TT_KN / 2)  // fp32 accumulators per consumer thread

struct __align__(16) tt_vec16 {
  unsigned x, y, z, w;
};
__device__ __forceinline__ void tt_syncwarp() { asm volatile("bar.warp.sync -1;\n" ::: "memory"); }

// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct __align__(64) tt_tensor_map {
  unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned tt_smem_addr(const void* p) {
  unsigned r;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}

__device__ __forceinline__ void tt_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void tt_mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void tt_mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
// Spins until the phase of the given parity has completed.
__device__ __forceinline__ void tt_mbar_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\nTT_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra TT_WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// One TMA box: coordinates innermost first (element, row, batch).
__device__ __forceinline__ void tt_tma_load_3d(unsigned dst, const tt_tensor_map* map, int c0,
                                               int c1, int c2, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

__device__ __forceinline__ void tt_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void tt_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void tt_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Accumulator layout of wgmma m64nN (fp32; tt_acc_* in wgmma_tile_math.cuh):
// warp w of the warpgroup holds rows 16w + lane/4 and 16w + lane/4 + 8; value
// 4j + e sits in column 8j + 2*(lane%4) + (e&1), row + 8*(e>>1).
// The warp stages 16 rows x 128 bytes of C at a time in shared memory and
// writes them back as 16-byte vectors (element-wise at edges and for C rows
// that are not 16-byte aligned).
__device__ __forceinline__ void tt_epilogue(const float* acc, unsigned char* stage, elem_t* C,
                                            int ldc, int M, int N, int row0, int col0,
                                            bool c_vectors, float alpha, float beta, int lane) {
  // beta made opaque so the optimizer does not clone the epilogue per beta.
  asm("" : "+f"(beta));
#pragma unroll
  for (int chunk = 0; chunk < TT_KN / TT_EPI_N; ++chunk) {
    const int cc0 = col0 + chunk * TT_EPI_N;
#pragma unroll
    for (int j = 0; j < TT_EPI_N / 8; ++j) {
      const int jj = chunk * (TT_EPI_N / 8) + j;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = tt_acc_row(lane, h);
        const int col = tt_acc_col(lane, j, 0);
        float v0 = alpha * acc[tt_acc_index(jj, h, 0)], v1 = alpha * acc[tt_acc_index(jj, h, 1)];
        if (beta != 0.0f) {
          const int gr = row0 + r, gc = cc0 + col;
          const elem_t* p = C + (long long)gr * ldc + gc;
          if (gr < M && gc < N) v0 += beta * tt_to_float(p[0]);
          if (gr < M && gc + 1 < N) v1 += beta * tt_to_float(p[1]);
        }
#if TT_ELEM_BYTES == 2
        const unsigned packed = (unsigned)tt_from_float(v0) | ((unsigned)tt_from_float(v1) << 16);
        *reinterpret_cast<unsigned*>(stage + r * TT_EPI_ROW_BYTES + col * 2) = packed;
#else
        float* const s = reinterpret_cast<float*>(stage + r * TT_EPI_ROW_BYTES + col * 4);
        s[0] = v0;
        s[1] = v1;
#endif
      }
    }
    tt_syncwarp();
    // 16 rows x 8 vectors of 16 bytes: four rows per pass of the warp.
#pragma unroll
    for (int pass = 0; pass < 4; ++pass) {
      const int r = tt_epi_copy_row(pass, lane), v = tt_epi_copy_vector(lane);
      const int gr = row0 + r, gc = cc0 + v * (16 / TT_ELEM_BYTES);
      const tt_vec16 x = *reinterpret_cast<const tt_vec16*>(stage + r * TT_EPI_ROW_BYTES + v * 16);
      if (gr >= M) continue;
      elem_t* p = C + (long long)gr * ldc + gc;
      if (c_vectors && gc + 16 / TT_ELEM_BYTES <= N) {
        *reinterpret_cast<tt_vec16*>(p) = x;
      } else {
        // Read back from shared memory: indexing x would put it in local memory.
        const elem_t* e = reinterpret_cast<const elem_t*>(stage + r * TT_EPI_ROW_BYTES + v * 16);
#pragma unroll 1
        for (int i = 0; i < 16 / TT_ELEM_BYTES; ++i)
          if (gc + i < N) p[i] = e[i];
      }
    }
    tt_syncwarp();
  }
}

#if TT_SWAP_AB
// Swap-AB's epilogue: the kernel's rows are C's columns and its columns C's rows, so value (r, c)
// of the kernel's tile is C[c][r], stored element by element from the accumulators (C of a
// decode step is a few rows: its bytes are a small share of what the GEMM moves). Kernel rows at
// or past M (the problem's N) and columns at or past N (the problem's M: rows of A that TMA
// zero-filled) are never stored; beta reads C the same way.
__device__ __forceinline__ void tt_epilogue_transposed(const float* acc, elem_t* C, int ldc, int M, int N, int row0,
                                                       int col0, float alpha, float beta, int lane) {
#pragma unroll
  for (int j = 0; j < TT_KN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        tt_store_c(C, ldc, col0 + tt_acc_col(lane, j, e), row0 + tt_acc_row(lane, h), N, M,
                   acc[tt_acc_index(j, h, e)], alpha, beta);
}
#endif

// The same with an L2 cache policy (createpolicy) for the box's global reads.
__device__ __forceinline__ void tt_tma_load_3d_hint(unsigned dst, const tt_tensor_map* map, int c0, int c1, int c2,
                                                    unsigned bar, unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "l"(policy)
      : "memory");
}
__device__ __forceinline__ void tt_tma_box(unsigned dst, const tt_tensor_map* map, int c0, int c1, int c2,
                                           unsigned bar, int hint, unsigned long long policy) {
  if (hint)
    tt_tma_load_3d_hint(dst, map, c0, c1, c2, bar, policy);
  else
    tt_tma_load_3d(dst, map, c0, c1, c2, bar);
}

#if TT_TMA_STORE
// Named barrier 2 + c: consumer warpgroup c's 128 threads (immediate ids: a register id makes
// ptxas reserve all 16 barriers).
__device__ __forceinline__ void tt_consumer_sync(int consumer) {
  if (consumer == 0)
    asm volatile("bar.sync 2, 128;\n" ::: "memory");
  else
    asm volatile("bar.sync 3, 128;\n" ::: "memory");
}
// Warp `warp` writes its 16 rows of the m64 tile `acc`, columns [64 chunk, 64 chunk + 64), times
// alpha and rounded to 16 bits, into the staging buffer at shared address `buf`: four stmatrix x4,
// each two 8-column blocks (wgmma_tile_math.cuh, tt_stmatrix_*, tt_staging_offset).
__device__ __forceinline__ void tt_stage_chunk(const float* acc, unsigned buf, int chunk, int warp, int lane,
                                               float alpha) {
#pragma unroll
  for (int jj = 0; jj < 8; jj += 2) {
    const int j = chunk * 8 + jj;
    unsigned r[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      r[i] = (unsigned)tt_from_float(alpha * acc[tt_stmatrix_acc(i, j, 0)]) |
             ((unsigned)tt_from_float(alpha * acc[tt_stmatrix_acc(i, j, 1)]) << 16);
    const unsigned addr = buf + tt_staging_offset(16 * warp + tt_stmatrix_row(lane), tt_stmatrix_block(lane, jj));
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]),
                 "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
  }
}
// The TMA-store epilogue of one m64 tile of a consumer: for each 64-column chunk, the staging
// buffer it takes (they alternate, `chunks` counting every chunk the consumer stored) must have
// been read by the store issued two chunks ago; then every warp stages its rows, makes them
// visible to the async proxy, and after the consumer's barrier one thread issues the store. TMA
// writes only the box's elements inside C (rows past M, columns past N are not written).
__device__ __forceinline__ void tt_epilogue_tma(const float* acc, unsigned staging, const tt_tensor_map* tmap_c,
                                                int row0, int col0, int batch, int consumer, int warp, int lane,
                                                float alpha, int& chunks) {
  const bool leader = warp == 0 && lane == 0;
  // Unrolled: the chunk picks accumulators by constant index (a loop would put them in local memory).
#pragma unroll
  for (int chunk = 0; chunk < TT_KN / 64; ++chunk) {
    const unsigned buf = staging + ((chunks + chunk) & 1) * TT_TMA_STORE_BUFFER_BYTES;
    if (leader) asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
    tt_consumer_sync(consumer);
    tt_stage_chunk(acc, buf, chunk, warp, lane, alpha);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    tt_consumer_sync(consumer);
    if (leader) {
      asm volatile(
          "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n"
          "cp.async.bulk.commit_group;\n" ::"l"((unsigned long long)tmap_c),
          "r"(col0 + 64 * chunk), "r"(row0), "r"(batch), "r"(buf)
          : "memory");
    }
  }
  chunks += TT_KN / 64;
}
#endif

#if TT_MULTICAST
// One box into the same offset of every CTA in `mask`, completing bytes on each one's barrier.
__device__ __forceinline__ void tt_tma_load_3d_multicast(unsigned dst, const tt_tensor_map* map, int c0, int c1, int c2,
                                                         unsigned bar, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
      : "memory");
}
// This CTA's half of B's share of a stage (the rows or boxes tt_multicast_* name), into both CTAs.
template <int K_MAJOR, int ROWS>
__device__ __forceinline__ void tt_load_half_multicast(unsigned dst, const tt_tensor_map* map, int k0, int mn0,
                                                       int batch, unsigned bar, int rank) {
  if (K_MAJOR) {
    tt_tma_load_3d_multicast(dst + tt_multicast_kmajor_offset(ROWS, rank), map, k0, mn0 + tt_multicast_first_row(ROWS, rank),
                             batch, bar, 3);
  } else {
#pragma unroll
    for (int j = 0; j < ROWS / 128; ++j) {
      const int box = tt_multicast_first_box(ROWS, rank) + j;
      tt_tma_load_3d_multicast(dst + box * TT_BK * 128, map, mn0 + 64 * box, k0, batch, bar, 3);
    }
  }
}
#endif

// One operand's share of a stage: a K-major operand is one [ROWS][BK] box; an
// MN-major one is ROWS/64 boxes of [BK][64 elements], 128-byte rows each.
// HINT: load with `policy` (TT_HINT_A / TT_HINT_B).
template <int K_MAJOR, int ROWS, int HINT>
__device__ __forceinline__ void tt_load_operand(unsigned dst, const tt_tensor_map* map, int k0, int mn0, int batch,
                                                unsigned bar, unsigned long long policy) {
  if (K_MAJOR) {
    tt_tma_box(dst, map, k0, mn0, batch, bar, HINT, policy);
  } else {
#pragma unroll
    for (int j = 0; j < ROWS / 64; ++j)
      tt_tma_box(dst + j * TT_BK * 128, map, mn0 + 64 * j, k0, batch, bar, HINT, policy);
  }
}

// Named barrier 1: the consumer warpgroups only (the producer runs ahead on the ring).
__device__ __forceinline__ void tt_consumers_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(TT_CONSUMER_THREADS) : "memory");
}

#if TT_CLUSTER_CODE
// Clusters (split-K, multicast): a CTA's rank and cluster, another CTA's shared address (mapa),
// the cluster barrier, mbarrier arrivals on another CTA with release at cluster scope and waits
// with acquire. A CTA's shared memory must outlive every remote access: with clusters the kernel
// ends with a cluster barrier, and starts with one after the barriers' init.
__device__ __forceinline__ unsigned tt_cluster_special(int which) {
  unsigned r;
  if (which == 0)
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  else if (which == 1)
    asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  else
    asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned tt_map_to_rank(unsigned addr, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ void tt_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
__device__ __forceinline__ void tt_mbar_arrive_remote_release(unsigned remote_bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote_bar) : "memory");
}
__device__ __forceinline__ void tt_mbar_wait_acquire_cluster(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\nTT_WAIT_CL:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra TT_WAIT_CL;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
#endif
#if TT_CLUSTER_SPLIT > 1
// Cluster split-K: the peers' partial tiles go into the leader's shared memory (st.shared::cluster
// at an address mapa gives), published by a remote mbarrier arrival with release at cluster scope;
// the leader waits with acquire, adds, and hands the slots back with one remote arrival on each
// peer's `empty` barrier.
// Peer `rank`'s part of its i-th tile: once the leader has read the slots of tile i - 1, every
// consumer thread stores its accumulators into slot rank - 1 of the leader's buffer; once all
// have, one thread arrives on the leader's `full` barrier with release.
__device__ __forceinline__ void tt_split_publish(float (*acc)[TT_KN / 2], unsigned buffer, unsigned full_bar,
                                                 unsigned empty_bar, int i, int rank, int ct) {
  tt_mbar_wait_acquire_cluster(empty_bar, tt_split_empty_parity(i));
  const unsigned slot = tt_map_to_rank(
      buffer + 4u * (unsigned)tt_sk_workspace_index(rank - 1, 0, ct, TT_CONSUMER_THREADS, TT_KM * TT_KN), 0);
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
    for (int v = 0; v < TT_KN / 2; ++v)
      asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(slot + 4u * (mi * (TT_KN / 2) + v) * TT_CONSUMER_THREADS),
                   "f"(acc[mi][v])
                   : "memory");
  tt_consumers_sync();
  if (ct == 0) tt_mbar_arrive_remote_release(tt_map_to_rank(full_bar, 0));
}
// The leader's fixup of its i-th tile: wait (acquire) for every peer's arrival, add the slots in
// rank order, then, once every consumer thread has read, one remote arrival on each peer's `empty`.
__device__ __forceinline__ void tt_split_gather(float (*acc)[TT_KN / 2], const float* buffer, unsigned full_bar,
                                                unsigned empty_bar, int i, int ct) {
  tt_mbar_wait_acquire_cluster(full_bar, tt_split_full_parity(i));
  const float* const slot = buffer + tt_sk_workspace_index(0, 0, ct, TT_CONSUMER_THREADS, TT_KM * TT_KN);
#pragma unroll
  for (int p = 0; p < TT_CLUSTER_SPLIT - 1; ++p)
#pragma unroll
    for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
      for (int v = 0; v < TT_KN / 2; ++v)
        acc[mi][v] += slot[p * TT_KM * TT_KN + (mi * (TT_KN / 2) + v) * TT_CONSUMER_THREADS];
  tt_consumers_sync();
  if (ct == 0)
    for (int r = 1; r < TT_CLUSTER_SPLIT; ++r) tt_mbar_arrive_remote_release(tt_map_to_rank(empty_bar, r));
}
#endif

#if TT_STREAM_K
// A peer's part of a tile: every consumer thread stores its accumulators into the worker's
// slot; once all have, one thread publishes the flag with the release pattern (fence, then a
// strong store), so an owner that acquires the flag sees every value.
// Value v of thread ct in worker w's slot sits at slot(w, ct)[v * TT_CONSUMER_THREADS]
// (tt_sk_workspace_index is linear in v): one base address, then immediate offsets.
__device__ __forceinline__ float* tt_sk_slot(float* workspace, int worker, int ct) {
  return workspace + tt_sk_workspace_index(worker, 0, ct, TT_CONSUMER_THREADS, TT_KM * TT_KN);
}
__device__ __forceinline__ void tt_sk_publish(float (*acc)[TT_KN / 2], float* workspace, unsigned* flags, int worker,
                                              int ct) {
  float* const slot = tt_sk_slot(workspace, worker, ct);
#pragma unroll
  for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
    for (int i = 0; i < TT_KN / 2; ++i) slot[(mi * (TT_KN / 2) + i) * TT_CONSUMER_THREADS] = acc[mi][i];
  tt_consumers_sync();
  if (ct == 0) {
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;\n" ::"l"(flags + worker), "r"(1u) : "memory");
  }
}
// An owner's fixup: for each peer in worker order, wait for its flag (acquire), add its
// partials; then clear the flags for the next launch once every thread has read.
__device__ __forceinline__ void tt_sk_gather(float (*acc)[TT_KN / 2], float* workspace, unsigned* flags,
                                             int first_peer, int last_peer, int ct) {
  for (int p = first_peer; p <= last_peer; ++p) {
    unsigned ready = 0;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(ready) : "l"(flags + p) : "memory");
    } while (ready == 0);
    const float* const slot = tt_sk_slot(workspace, p, ct);
#pragma unroll
    for (int mi = 0; mi < TT_MI; ++mi)
#pragma unroll
      for (int i = 0; i < TT_KN / 2; ++i) acc[mi][i] += slot[(mi * (TT_KN / 2) + i) * TT_CONSUMER_THREADS];
  }
  if (first_peer <= last_peer) {
    tt_consumers_sync();
    if (ct == 0)
      for (int p = first_peer; p <= last_peer; ++p)
        asm volatile("st.relaxed.gpu.global.u32 [%0], %1;\n" ::"l"(flags + p), "r"(0u) : "memory");
  }
}
#endif

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
) {
  extern __shared__ __align__(1024) unsigned char tt_smem_raw[];
  // 128-byte swizzled tiles need 1024-byte aligned addresses (smem_bytes keeps 1024 of slack).
  const unsigned raw_addr = tt_smem_addr(tt_smem_raw);
  unsigned char* const smem = tt_smem_raw + ((1024 - (raw_addr & 1023)) & 1023);
  const unsigned base = tt_smem_addr(smem);
  const unsigned a_base = base;
  const unsigned b_base = base + TT_STAGES * TT_A_STAGE;
  const unsigned bar_base =
      base + tt_smem_barrier_offset(TT_KM, TT_KN, TT_BK, TT_ELEM_BYTES, TT_STAGES, TT_EPI_CONSUMERS);
  const tt_smem_layout layout = {TT_KM, TT_KN, TT_BK, TT_ELEM_BYTES, TT_STAGES, TT_EPI_CONSUMERS,
                                 TT_TMA_STORE ? TT_CONSUMERS : 0, TT_CLUSTER_SPLIT, TT_PINGPONG};
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
      tt_mbar_init(TT_EMPTY(s), tt_empty_arrivals(TT_STAGE_READERS) * (TT_MULTICAST ? 2 : 1));
    }
#if TT_PINGPONG
    tt_mbar_init(turn_bar, 1);      // consumer 0's turn: consumer 1's arrival after each main loop
    tt_mbar_init(turn_bar + 8, 1);  // consumer 1's turn: consumer 0's
#endif
#if TT_CLUSTER_SPLIT > 1
    tt_mbar_init(split_full, TT_CLUSTER_SPLIT - 1);  // each peer's arrival
    tt_mbar_init(split_empty, 1);                    // the leader's
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
  const int wg = threadIdx.x / 128;

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
          tt_mbar_arrive_expect_tx(TT_FULL(stage),
                                   tt_stage_tx_bytes(TT_KM, TT_KN, TT_BK, TT_ELEM_BYTES));
          const unsigned sa = a_base + stage * TT_A_STAGE, sb = b_base + stage * TT_B_STAGE;
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
        smem + tt_smem_epilogue_offset(TT_KM, TT_KN, TT_BK, TT_ELEM_BYTES, TT_STAGES) +
        (consumer * 4 + warp) * 16 * TT_EPI_ROW_BYTES;
    const bool c_vectors = (ldc * TT_ELEM_BYTES) % 16 == 0 && ((unsigned long long)C & 15) == 0 &&
                           (batch_stride_c * TT_ELEM_BYTES) % 16 == 0;
#endif
    const unsigned lbo_a = tt_operand_lbo(TT_A_KMAJOR, TT_BK), lbo_b = tt_operand_lbo(TT_B_KMAJOR, TT_BK);
    int stage = 0;
    unsigned phase = 0;
#if TT_TMA_STORE
    if (beta != 0.0f) __trap();  // the host never pairs this epilogue with beta != 0
    const unsigned staging = base + tt_smem_tma_store_offset(layout) + consumer * 2 * TT_TMA_STORE_BUFFER_BYTES;
    int chunks = 0;
#endif
    float acc[TT_MI][TT_KN / 2];
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
      int prev = -1;
      for (int kt = u.k_begin; kt < u.k_end; ++kt) {
        tt_mbar_wait(TT_FULL(stage), tt_consumer_wait_parity(phase));
        tt_wgmma_fence();
        const unsigned sa = a_base + stage * TT_A_STAGE, sb = b_base + stage * TT_B_STAGE;
#pragma unroll
        for (int kk = 0; kk < TT_BK; kk += TT_MMA_K) {
          const unsigned long long db = tt_wgmma_desc(
              sb + tt_operand_offset(TT_B_KMAJOR, 0, kk, TT_BK, TT_ELEM_BYTES), lbo_b, tt_operand_sbo());
#pragma unroll
          for (int mi = 0; mi < TT_MI; ++mi) {
            const unsigned long long da = tt_wgmma_desc(
                sa + tt_operand_offset(TT_A_KMAJOR, TT_ROW0(consumer) + mi * 64, kk, TT_BK, TT_ELEM_BYTES),
                lbo_a, tt_operand_sbo());
            tt_wgmma(acc[mi], da, db, (kt > u.k_begin || kk > 0) ? 1 : 0);
          }
        }
        tt_wgmma_commit();
        // The previous k-tile's wgmmas are done once at most one group is pending.
        tt_wgmma_wait<1>();
        const int release = tt_release_after_commit(prev, stage);
        if (release >= 0 && lane == 0) TT_RELEASE(release);
        phase = tt_ring_advance(stage, phase, TT_STAGES);
      }
#if TT_PINGPONG
      // Every full wait of this main loop passed: the other consumer's next one may start.
      if ((threadIdx.x & 127) == 0) tt_mbar_arrive(turn_bar + 8 * (1 - consumer));
#endif
      tt_wgmma_wait<0>();
      const int last = tt_release_at_tile_end(prev);
      if (last >= 0 && lane == 0) TT_RELEASE(last);
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
#if !TT_TMA_STORE
      elem_t* Cb = C + place.c_offset;
#endif
#pragma unroll
      for (int mi = 0; mi < TT_MI; ++mi) {
        const int row0 = place.a_row0 + TT_ROW0(consumer) + mi * 64 + tt_acc_warp_row0(warp);
#if TT_SWAP_AB
        tt_epilogue_transposed(acc[mi], Cb, ldc, place.row_bound, N, row0, tc.n_tile * TT_KN, alpha, beta, lane);
#elif TT_TMA_STORE
        tt_epilogue_tma(acc[mi], staging, &tmap_c, row0 - tt_acc_warp_row0(warp), tc.n_tile * TT_KN, tc.batch, consumer,
                        warp, lane, alpha, chunks);
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
}
