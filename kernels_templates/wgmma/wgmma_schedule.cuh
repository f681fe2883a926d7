// wgmma family: the persistent grid's work schedule. Integer math the kernel and the host
// tests share (TT_HOST_DEVICE as in wgmma_tile_math.cuh); nothing here includes a header.
//
// Data-parallel waves, stream-K on the rest: the tiles that fill whole waves of `ctas`
// persistent CTAs are done whole (CTA c takes tiles c, c + ctas, ...); the k-iterations of
// the remaining tiles are laid end to end and cut into `sk_workers` contiguous ranges, one
// per CTA 0..sk_workers-1, each at least `min_unit` k-tiles (or one whole tile when a tile
// has fewer) and at most one tile's k-tiles, so a range touches at most two tiles.
// With fewer tiles than CTAs every tile is in the rest: split-K across the whole GPU.
//
// The fixup, deterministic: the range that covers a tile's k-tile 0 owns the tile. Every
// other range that touches the tile is a peer: it touches it with its first part, stores
// that partial tile in its own workspace slot (the worker's index) and publishes it with a
// release; the owner computes its part, then acquires each peer's flag in worker order,
// adds its slot and stores C. A worker publishes at most one partial, before it waits on
// anything, and waits only on higher workers: no cycle, so no deadlock among co-resident CTAs.

#ifndef TT_HOST_DEVICE
#define TT_HOST_DEVICE __device__ __forceinline__
#endif

struct tt_schedule {
  long long tiles;     // output tiles, all batches
  int k_tiles;         // k-tiles per output tile
  int ctas;            // persistent CTAs
  long long dp_tiles;  // tiles done whole: tiles [0, dp_tiles)
  int sk_workers;      // CTAs [0, sk_workers) each take one stream-K range
  long long sk_iters;  // k-iterations of the tiles [dp_tiles, tiles)
};

// stream_k 0 (or no k-tiles): every tile whole, in the persistent grid's plain order (tile += ctas).
TT_HOST_DEVICE tt_schedule tt_make_schedule(long long tiles, int k_tiles, int ctas, int min_unit, int stream_k) {
  tt_schedule s;
  s.tiles = tiles;
  s.k_tiles = k_tiles;
  s.ctas = ctas;
  const long long rest = tiles % ctas;
  if (!stream_k || rest == 0 || k_tiles <= 0) {
    s.dp_tiles = tiles;
    s.sk_workers = 0;
    s.sk_iters = 0;
    return s;
  }
  s.dp_tiles = tiles - rest;
  s.sk_iters = rest * k_tiles;
  const long long unit = min_unit > 0 ? min_unit : 1;
  long long workers = s.sk_iters / unit;
  if (workers < rest) workers = rest;  // a tile of fewer than min_unit k-tiles stays whole
  if (workers > ctas) workers = ctas;
  // Tile-aligned instead: each rest tile cut into d equal ranges (d = ctas / rest, each range at
  // least min_unit k-tiles), so that no range runs into a second tile: every worker starts one
  // unit, and a tile has d - 1 peers. The end-to-end cut's ranges mostly straddle two tiles: each
  // such worker publishes one partial tile and then owns the next, waiting on its peers, a second
  // epilogue and pipeline fill on its path. The aligned cut is taken while its longest range is
  // at most one unit longer; with fewer tiles than CTAs (decode shapes, bound by reading B once,
  // where a range's length costs little and the fixup's path much), two units, as the performance
  // model prices them (perf_model.cpp, fixup_us): 62 tiles of 32 k-tiles on 132 CTAs run 124
  // ranges of 16, not 132 of 15 or 16 that straddle; 100 left over beside 7 whole waves of 64
  // k-tiles keep the end-to-end cut (49 each against 64). Chosen on the CPU (2026-12-04), not
  // yet timed on a GPU.
  // (32-bit divisions, and the end-to-end cut's longest range ceil(sk_iters / workers) compared by
  // a product: each 64-bit division is a subroutine call in every CTA's prologue.)
  int d = ctas / (int)rest;
  if (d > k_tiles / (int)unit) d = k_tiles / (int)unit;
  if (d < 1) d = 1;
  const int aligned_longest = (k_tiles + d - 1) / d, slack = (int)unit * (s.dp_tiles == 0 ? 2 : 1);
  // aligned_longest <= ceil(sk_iters / workers) + slack, as (aligned_longest - slack - 1) * workers < sk_iters.
  if (rest * d != workers && (long long)(aligned_longest - slack - 1) * workers < s.sk_iters) workers = rest * d;
  s.sk_workers = (int)workers;
  return s;
}

// First k-iteration (of the rest, laid end to end) of worker w's range; w = sk_workers gives the end.
TT_HOST_DEVICE long long tt_sk_begin(const tt_schedule& s, int w) {
  return s.sk_iters * w / s.sk_workers;
}

// The worker whose range holds k-iteration i of the rest.
TT_HOST_DEVICE int tt_sk_worker_of(const tt_schedule& s, long long i) {
  return (int)(((i + 1) * s.sk_workers - 1) / s.sk_iters);
}

// One piece of a CTA's work: k-tiles [k_begin, k_end) of a tile.
struct tt_work_unit {
  long long tile;
  int k_begin;
  int k_end;
  int owner;       // stores C (after adding the peers' partials when it has peers)
  int worker;      // the stream-K worker (its workspace slot), -1 for a data-parallel tile
  int first_peer;  // an owner's peers are workers [first_peer, last_peer]; none when first_peer > last_peer
  int last_peer;
};

// How many units CTA `cta` runs: its data-parallel tiles, then the (at most two) parts of its range.
TT_HOST_DEVICE int tt_units_of(const tt_schedule& s, int cta) {
  int n = s.dp_tiles > cta ? (int)((s.dp_tiles - cta + s.ctas - 1) / s.ctas) : 0;
  if (cta < s.sk_workers) {
    const long long b = tt_sk_begin(s, cta), e = tt_sk_begin(s, cta + 1);
    n += 1 + (b / s.k_tiles != (e - 1) / s.k_tiles);
  }
  return n;
}

// Unit `index` (0 .. tt_units_of - 1) of CTA `cta`, in the order the CTA runs them.
TT_HOST_DEVICE tt_work_unit tt_unit(const tt_schedule& s, int cta, int index) {
  tt_work_unit u;
  const int dp_units = s.dp_tiles > cta ? (int)((s.dp_tiles - cta + s.ctas - 1) / s.ctas) : 0;
  if (index < dp_units) {
    u.tile = cta + (long long)index * s.ctas;
    u.k_begin = 0;
    u.k_end = s.k_tiles;
    u.owner = 1;
    u.worker = -1;
    u.first_peer = 0;
    u.last_peer = -1;
    return u;
  }
  const long long b = tt_sk_begin(s, cta), e = tt_sk_begin(s, cta + 1);
  // The second part starts at the first tile boundary after b.
  const long long start = index == dp_units ? b : (b / s.k_tiles + 1) * s.k_tiles;
  const long long rest_tile = start / s.k_tiles;
  const long long tile_end = (rest_tile + 1) * s.k_tiles;
  const long long stop = e < tile_end ? e : tile_end;
  u.tile = s.dp_tiles + rest_tile;
  u.k_begin = (int)(start - rest_tile * s.k_tiles);
  u.k_end = (int)(stop - rest_tile * s.k_tiles);
  u.owner = u.k_begin == 0;
  u.worker = cta;
  u.first_peer = cta + 1;
  u.last_peer = u.owner ? tt_sk_worker_of(s, tile_end - 1) : cta;  // a peer lists none
  return u;
}

// The workspace: one slot of BM x BN fp32 partials per stream-K worker, each consumer thread's
// accumulators interleaved with its neighbours' (value v of thread t at v * threads + t) so that a
// warp's stores and loads are contiguous; the owner's thread t reads back what the peer's thread t
// wrote. The flags follow the slots: one 32-bit word per worker, zero between launches.
TT_HOST_DEVICE long long tt_sk_workspace_index(int worker, int value, int thread, int threads, int slot_floats) {
  return (long long)worker * slot_floats + (long long)value * threads + thread;
}
TT_HOST_DEVICE long long tt_sk_workspace_bytes(int workers, int slot_floats) {
  return (long long)workers * slot_floats * 4 + (long long)workers * 4;
}

// ---- cluster split-K (TT_CLUSTER_SPLIT S > 1)
// The S CTAs of a cluster (cluster dims S x 1 x 1) share each of the cluster's tiles: rank r takes
// k-tiles [tt_split_k_begin(r), tt_split_k_begin(r + 1)). The clusters walk the tiles as the
// persistent CTAs of a plain schedule would (tt_make_schedule with ctas = clusters, no stream-K).
// Ranks 1..S-1 write their partial tiles into the leader's (rank 0's) shared memory, slot r - 1,
// laid out as the stream-K workspace (tt_sk_workspace_index), and the leader adds them in rank
// order and stores C: the reduction never leaves the cluster.
TT_HOST_DEVICE int tt_split_k_begin(int k_tiles, int rank, int split) {
  return (int)((long long)k_tiles * rank / split);
}
// The leader's buffer and barriers in shared memory: wgmma_tile_math.cuh (tt_smem_split_*).
// The parities of the i-th tile a cluster reduces (i = 0, 1, ...): the leader waits for `full`'s
// phase i to complete; a peer waits for `empty`'s phase i - 1 (the leader read tile i - 1's
// slots), which a fresh barrier passes at once (parity 1).
TT_HOST_DEVICE unsigned tt_split_full_parity(int i) { return (unsigned)i & 1u; }
TT_HOST_DEVICE unsigned tt_split_empty_parity(int i) { return ((unsigned)i & 1u) ^ 1u; }
// A cluster's whole-tile unit as rank `rank` of `split` runs it: its slice of the k-tiles; the
// leader (rank 0) owns the tile. split = 1: the unit as it is.
TT_HOST_DEVICE tt_work_unit tt_split_unit(tt_work_unit u, int rank, int split) {
  if (split <= 1) return u;
  const int k0 = u.k_begin, k_tiles = u.k_end - u.k_begin;
  u.k_begin = k0 + tt_split_k_begin(k_tiles, rank, split);
  u.k_end = k0 + tt_split_k_begin(k_tiles, rank + 1, split);
  u.owner = rank == 0;
  return u;
}
