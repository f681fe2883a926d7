// wgmma family: the integer math the kernel and the host tests share.
// The template embeds this file with TT_HOST_DEVICE defined as
// `__device__ __forceinline__`; tests/unit includes it with TT_HOST_DEVICE
// defined as `inline`, so the same code is checked on the host.
// Nothing here includes a header or uses a CUDA builtin.

#ifndef TT_HOST_DEVICE
#define TT_HOST_DEVICE __device__ __forceinline__
#endif

// One output tile of the persistent grid.
struct tt_tile_coord {
  int batch;
  int m_tile;
  int n_tile;
};

// Tile index -> (batch, m tile, n tile). Within one batch, grouped
// rasterization walks `group` block rows (along M) or block columns (along N)
// together so that consecutive CTAs share operand tiles in L2; group 0 is the
// plain order (M fastest, or N fastest when along_n).
TT_HOST_DEVICE tt_tile_coord tt_tile_of(long long tile, int m_tiles, int n_tiles, int group,
                                        int along_n) {
  const long long per_batch = (long long)m_tiles * n_tiles;
  tt_tile_coord c;
  c.batch = (int)(tile / per_batch);
  const long long t = tile - (long long)c.batch * per_batch;
  // Swap roles so that one code path serves both orders: "major" is the
  // dimension walked fastest inside a group.
  const int major_tiles = along_n ? n_tiles : m_tiles;
  const int minor_tiles = along_n ? m_tiles : n_tiles;
  int major, minor;
  if (group <= 0) {
    major = (int)(t % major_tiles);
    minor = (int)(t / major_tiles);
  } else {
    const long long group_tiles = (long long)group * minor_tiles;
    const int group_id = (int)(t / group_tiles);
    const int first = group_id * group;
    const int rest = major_tiles - first;
    const int size = rest < group ? rest : group;  // the last group may be short
    const int in_group = (int)(t - (long long)group_id * group_tiles);
    major = first + in_group % size;
    minor = in_group / size;
  }
  c.m_tile = along_n ? minor : major;
  c.n_tile = along_n ? major : minor;
  return c;
}

// Shared-memory matrix descriptor of wgmma (PTX ISA, "Matrix Descriptor
// Format"): bits 0-13 start address >> 4, 16-29 leading-dimension byte offset
// >> 4, 32-45 stride-dimension byte offset >> 4, 49-51 base offset (0: tiles
// are 1024-byte aligned), 62-63 swizzle mode (1 = 128-byte swizzle).
TT_HOST_DEVICE unsigned long long tt_wgmma_desc(unsigned smem_addr, unsigned lbo_bytes,
                                                unsigned sbo_bytes) {
  unsigned long long d = 0;
  d |= (unsigned long long)((smem_addr >> 4) & 0x3FFF);
  d |= (unsigned long long)((lbo_bytes >> 4) & 0x3FFF) << 16;
  d |= (unsigned long long)((sbo_bytes >> 4) & 0x3FFF) << 32;
  d |= 1ull << 62;
  return d;
}

// Operand tiles in shared memory, 128-byte swizzled, as TMA writes them:
// K-major (A 'n', B 't'): one box of [rows][128 bytes of k]; 8-row groups of
//   1024 bytes follow each other (SBO 1024), LBO unused; a k-step adds its
//   byte offset inside the 128-byte row to the start address.
// MN-major (A 't', B 'n', 16-bit only): boxes of [BK k-rows][64 elements],
//   one per 64 elements of M or N, each BK*128 bytes (LBO, the step between
//   64-wide blocks); 8 k-rows are 1024 bytes (SBO); a k16 step is 16 rows.
#define TT_SW_BYTES 128
TT_HOST_DEVICE unsigned tt_operand_offset(int k_major, int mn0, int k0, int bk, int elem_bytes) {
  if (k_major) return (unsigned)(mn0 * TT_SW_BYTES + k0 * elem_bytes);
  const int per_block = TT_SW_BYTES / elem_bytes;  // elements of M or N per box
  return (unsigned)((mn0 / per_block) * bk * TT_SW_BYTES + (mn0 % per_block) * elem_bytes +
                    k0 * TT_SW_BYTES);
}
TT_HOST_DEVICE unsigned tt_operand_lbo(int k_major, int bk) {
  return k_major ? 16u : (unsigned)(bk * TT_SW_BYTES);
}
TT_HOST_DEVICE unsigned tt_operand_sbo() { return 8u * TT_SW_BYTES; }

// Dynamic shared memory of one variant, in bytes from the (1024-aligned)
// base: operand stages, then the epilogue staging of every consumer warp,
// then the full/empty mbarriers. tile_config::smem_bytes adds 1024 bytes of
// slack for aligning the base.
#define TT_EPI_ROW_BYTES 144  // 128 bytes of one staged row + 16 against bank conflicts
TT_HOST_DEVICE constexpr int tt_smem_a_stage(int bm, int bk, int eb) { return bm * bk * eb; }
TT_HOST_DEVICE constexpr int tt_smem_b_stage(int bn, int bk, int eb) { return bn * bk * eb; }
TT_HOST_DEVICE constexpr int tt_smem_epilogue_offset(int bm, int bn, int bk, int eb, int stages) {
  return stages * (tt_smem_a_stage(bm, bk, eb) + tt_smem_b_stage(bn, bk, eb));
}
TT_HOST_DEVICE constexpr int tt_smem_barrier_offset(int bm, int bn, int bk, int eb, int stages, int consumers) {
  return tt_smem_epilogue_offset(bm, bn, bk, eb, stages) + consumers * 4 * 16 * TT_EPI_ROW_BYTES;
}
TT_HOST_DEVICE constexpr int tt_smem_total(int bm, int bn, int bk, int eb, int stages, int consumers) {
  return tt_smem_barrier_offset(bm, bn, bk, eb, stages, consumers) + 2 * stages * 8;
}
// After the ring's barriers (tt_smem_total) come, where a variant has them:
// - the TMA-store epilogue's staging (TT_TMA_STORE), 1024-byte aligned for the 128-byte swizzle:
//   `tma_consumers` x 2 buffers of 64 rows x 128 bytes (64 16-bit columns), each consumer
//   staging one while the other's store drains;
//   then one mbarrier per buffer for beta != 0, on which the TMA load of C's box into the
//   buffer completes (one arrival a use, the leader's expect_tx: tt_c_load_parity);
// - cluster split-K's (TT_CLUSTER_SPLIT, wgmma_schedule.cuh) reduction buffer, 16-byte aligned:
//   the leader's S - 1 slots of bm x bn fp32 partials, then its two mbarriers, `full` (S - 1
//   arrivals a tile, one per peer, release at cluster scope) and `empty` (on every CTA: one
//   arrival, the leader's, once it has read the slots of a tile).
// A layout is (bm, bn, bk, element bytes, stages, consumers that stage C in the classic epilogue,
// consumers with TMA-store staging, split); tt_smem_layout_total is what the kernel uses.
#define TT_TMA_STORE_BUFFER_BYTES (64 * 128)
struct tt_smem_layout {
  int bm, bn, bk, eb, stages, epi_consumers, tma_consumers, split;
  int pingpong;     // 1: the two consumers' turn mbarriers come last
  int scale_stage;  // fp8 block scales by TMA: bytes of each stage's scales (wgmma_fp8.cuh), else 0
};
TT_HOST_DEVICE constexpr int tt_smem_tma_store_offset(const tt_smem_layout& l) {
  const int end = tt_smem_total(l.bm, l.bn, l.bk, l.eb, l.stages, l.epi_consumers);
  return l.tma_consumers > 0 ? (end + 1023) / 1024 * 1024 : end;
}
// The C-load mbarrier of consumer c's buffer b is at this offset + 8 (2c + b).
TT_HOST_DEVICE constexpr int tt_smem_c_load_barrier_offset(const tt_smem_layout& l) {
  return tt_smem_tma_store_offset(l) + l.tma_consumers * 2 * TT_TMA_STORE_BUFFER_BYTES;
}
TT_HOST_DEVICE constexpr int tt_smem_tma_store_end(const tt_smem_layout& l) {
  return tt_smem_c_load_barrier_offset(l) + l.tma_consumers * 2 * 8;
}
TT_HOST_DEVICE constexpr int tt_smem_split_buffer_offset(const tt_smem_layout& l) {
  return (tt_smem_tma_store_end(l) + 15) / 16 * 16;
}
TT_HOST_DEVICE constexpr int tt_smem_split_barrier_offset(const tt_smem_layout& l) {
  return tt_smem_split_buffer_offset(l) + (l.split - 1) * l.bm * l.bn * 4;
}
// Ping-pong's two turn mbarriers (tt_pingpong_turn_parity) follow everything else, 8-byte aligned.
TT_HOST_DEVICE constexpr int tt_smem_turn_offset(const tt_smem_layout& l) {
  if (l.split > 1) return tt_smem_split_barrier_offset(l) + 16;
  return (tt_smem_tma_store_end(l) + 7) / 8 * 8;
}
// Then, with fp8 block scales by TMA, the stages' scales, 16-byte aligned for the bulk copies.
TT_HOST_DEVICE constexpr int tt_smem_scales_offset(const tt_smem_layout& l) {
  return (tt_smem_turn_offset(l) + (l.pingpong ? 16 : 0) + 15) / 16 * 16;
}
TT_HOST_DEVICE constexpr int tt_smem_layout_total(const tt_smem_layout& l) {
  if (l.scale_stage > 0) return tt_smem_scales_offset(l) + l.stages * l.scale_stage;
  return tt_smem_turn_offset(l) + (l.pingpong ? 16 : 0);
}

// ---- accumulator fragments and the epilogue map
// wgmma's fp32 accumulator D (64 x N) of m64nNk16 and m64nNk8 (PTX ISA,
// "Register Fragments and Shared Memory Matrix Layouts", "Matrix fragments for
// wgmma .m64nNk16 / .m64nNk8", the D fragment): warp w of the warpgroup holds
// rows 16w .. 16w + 15; lane l holds, for each 8-column block j, the values
// d[4j + 2h + e] at row l/4 + 8h of those 16 and column 8j + 2(l%4) + e.
// tt_epilogue and the host emulation (tests/unit) both use these.
TT_HOST_DEVICE int tt_acc_warp_row0(int warp) { return 16 * warp; }  // first row of the warp's 16
TT_HOST_DEVICE int tt_acc_row(int lane, int h) { return (lane >> 2) + 8 * h; }
TT_HOST_DEVICE int tt_acc_col(int lane, int j, int e) { return 8 * j + 2 * (lane & 3) + e; }
TT_HOST_DEVICE int tt_acc_index(int j, int h, int e) { return 4 * j + 2 * h + e; }
// The epilogue stages 16 rows x 128 bytes per warp and copies them out as
// 16-byte vectors: 8 lanes per row, four rows per pass of the warp.
TT_HOST_DEVICE int tt_epi_copy_row(int pass, int lane) { return pass * 4 + (lane >> 3); }
TT_HOST_DEVICE int tt_epi_copy_vector(int lane) { return lane & 7; }
// The TMA-store epilogue: a warp writes its 16 rows of an m64 tile, 64 columns at a time, with
// stmatrix .m8n8.x4 (PTX ISA, "stmatrix"): four 8 x 8 matrices of 16-bit values, thread t
// holding row t / 4, columns 2(t % 4) and +1 of matrix i in register i, which is where the
// accumulator fragment has them; matrices 0 and 1 are rows 0-7 and 8-15 of 8-column block j,
// 2 and 3 those of block j + 1, and lane l gives the address of row l % 8 of matrix l / 8.
TT_HOST_DEVICE int tt_stmatrix_row(int lane) { return ((lane >> 3) & 1) * 8 + (lane & 7); }  // of the warp's 16
TT_HOST_DEVICE int tt_stmatrix_block(int lane, int j) { return j + (lane >> 4); }
// Register i of stmatrix x4 for blocks j, j + 1 holds accumulators tt_acc_index(j + i / 2, i % 2, 0 and 1).
TT_HOST_DEVICE int tt_stmatrix_acc(int i, int j, int e) { return tt_acc_index(j + (i >> 1), i & 1, e); }
// ---- 2-CTA clusters with TMA multicast (TT_CLUSTER_M 2)
// A pair p of M tiles: rank r of the cluster takes M tile 2p + r (p from tt_tile_of over
// ceil(m_tiles / 2) pairs); a last odd tile's partner lies past M (its A is TMA's zero fill and
// the epilogue stores nothing of it).
TT_HOST_DEVICE long long tt_multicast_pairs(int m_tiles, int n_tiles, int batch) {
  return (long long)((m_tiles + 1) / 2) * n_tiles * batch;
}
TT_HOST_DEVICE tt_tile_coord tt_pair_tile(tt_tile_coord pair, int rank) {
  pair.m_tile = 2 * pair.m_tile + rank;
  return pair;
}
// The halves of B's tile that rank r loads and multicasts: K-major, rows [r * BN / 2, (r + 1) * BN / 2)
// (one box of BN / 2 rows, 1024-byte aligned in the stage); MN-major, boxes [r * BN / 128, ...) of
// the BN / 64 boxes of 64 columns.
TT_HOST_DEVICE int tt_multicast_first_row(int rows, int rank) { return rank * (rows / 2); }
TT_HOST_DEVICE unsigned tt_multicast_kmajor_offset(int rows, int rank) { return (unsigned)(rank * (rows / 2) * 128); }
TT_HOST_DEVICE int tt_multicast_first_box(int rows, int rank) { return rank * (rows / 128); }

// Byte offset of row `row`, 8-column block `block` of a staging buffer (64 rows x 128 bytes) as
// the store's tensor map reads it: the 128-byte swizzle XORs the 16-byte chunk with row mod 8.
TT_HOST_DEVICE unsigned tt_staging_offset(int row, int block) {
  return (unsigned)(row * 128 + (((block ^ row) & 7) << 4));
}
// A consumer's n-th chunk (counted over all its tiles) takes staging buffer n % 2. With beta != 0
// the chunk's C box is loaded by TMA into that buffer first, completing the buffer's C-load
// mbarrier once per use: the n-th chunk waits for the phase of parity (n / 2) % 2.
TT_HOST_DEVICE int tt_staging_buffer(int n) { return n & 1; }
TT_HOST_DEVICE unsigned tt_c_load_parity(int n) { return (unsigned)(n >> 1) & 1u; }

// ---- the stage ring
// full[s] and empty[s] mbarriers guard stage s (PTX ISA, "mbarrier"): a phase
// completes when its pending arrivals and its tx-count both reach zero;
// try_wait.parity(p) passes once the phase of parity p has completed. The
// model checker in tests/unit explores every interleaving of these steps.
// full[s]: one arrival, the producer's arrive.expect_tx; empty[s]: one
// arrival per consumer warp (lane 0, 4 warps per consumer warpgroup).
TT_HOST_DEVICE unsigned tt_full_arrivals() { return 1u; }
TT_HOST_DEVICE unsigned tt_empty_arrivals(int consumers) { return 4u * (unsigned)consumers; }
// The tx bytes the producer announces per fill: A's and B's boxes in full,
// since TMA credits out-of-bounds elements (zero-filled) as well.
TT_HOST_DEVICE unsigned tt_stage_tx_bytes(int bm, int bn, int bk, int eb) {
  return (unsigned)(tt_smem_a_stage(bm, bk, eb) + tt_smem_b_stage(bn, bk, eb));
}
// Producer and consumers walk the stages in the same order, across tiles
// too; the phase bit flips at each wrap of the ring. Moves `stage` on and
// returns the phase that goes with it (returned, not a second reference:
// that keeps the kernel's machine code as it was).
TT_HOST_DEVICE unsigned tt_ring_advance(int& stage, unsigned phase, int stages) {
  if (++stage == stages) {
    stage = 0;
    return phase ^ 1u;
  }
  return phase;
}
// The producer refills a stage once the consumers released the previous
// fill: the phase before its own, so a fresh barrier passes parity 1 at once.
TT_HOST_DEVICE unsigned tt_producer_wait_parity(unsigned phase) { return phase ^ 1u; }
// A consumer waits until the fill of this round has landed.
TT_HOST_DEVICE unsigned tt_consumer_wait_parity(unsigned phase) { return phase; }
// A consumer releases a stage once the wgmmas reading it are complete: after
// committing the k-tile in `stage` and wgmma.wait_group 1, the previous
// k-tile's stage (-1: none yet in this tile), and it remembers `stage`.
TT_HOST_DEVICE int tt_release_after_commit(int& prev, int stage) {
  const int release = prev;
  prev = stage;
  return release;
}
// At the end of a tile, after wgmma.wait_group 0: the last stage it read.
TT_HOST_DEVICE int tt_release_at_tile_end(int prev) { return prev; }
// Ping-pong: consumer c runs the CTA's units c, c + 2, ...; both walk the whole ring in the
// producer's order, the other's k-tiles passed without a wait.
TT_HOST_DEVICE bool tt_pingpong_mine(int unit, int consumer) { return (unit & 1) == consumer; }
// Skipping is safe only in turn: a consumer that passed the other's k-tiles before they landed
// could wait on a stage two fills ahead, which a parity wait cannot tell from the fill it wants.
// So unit u's main loop starts once the other consumer's main loop of unit u - 1 has passed all its
// full waits (every earlier fill landed): consumer c waits on its `turn` mbarrier (one arrival a
// phase, the other consumer's after each of its main loops) for phase (u - 1) / 2.
TT_HOST_DEVICE bool tt_pingpong_waits_turn(int unit) { return unit > 0; }
TT_HOST_DEVICE unsigned tt_pingpong_turn_parity(int unit) { return (unsigned)((unit - 1) >> 1) & 1u; }
