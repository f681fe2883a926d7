// wgmma family: the reductions of partial tiles: split-K inside a cluster, through the leader's
// shared memory (tt_split_*), and stream-K, through a workspace in global memory (tt_sk_*).

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
  if (TT_EVERY_THREAD_ARRIVES || ct == 0) tt_mbar_arrive_remote_release(tt_map_to_rank(full_bar, 0));
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
  if (TT_EVERY_THREAD_ARRIVES || ct == 0)
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
