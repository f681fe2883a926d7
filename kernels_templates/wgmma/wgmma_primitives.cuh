// wgmma family: the PTX the kernel is built of: mbarriers, TMA loads (plain, with an L2 policy,
// multicast), an operand's share of a stage, the scales' copies, wgmma fences, the consumers' named barrier, and with
// clusters the cluster's ranks, DSMEM addresses, barriers and remote arrivals.

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
// The accumulators as operands of an empty asm: the compiler may not move their reads or writes
// across it. Around wgmma.fence and after each wgmma.wait_group (as CUTLASS's
// warpgroup_fence_operand): the asm of an mma_async says it writes its accumulators at once, so
// without the fence an epilogue read could be scheduled before the wait that completes them.
template <int R, int C>
__device__ __forceinline__ void tt_fence_accumulators(float (&acc)[R][C]) {
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int c = 0; c < C; ++c) asm volatile("" : "+f"(acc[r][c])::"memory");
}

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

// fp8 block scales by TMA (wgmma_fp8.cuh): a bulk copy of `bytes` (a multiple of 16, both addresses
// 16-byte aligned) completing its bytes on `bar`.
__device__ __forceinline__ void tt_bulk_copy(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(dst), "l"((unsigned long long)src), "r"(bytes), "r"(bar)
               : "memory");
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
