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
TT_HOST_DEVICE int tt_smem_a_stage(int bm, int bk, int eb) { return bm * bk * eb; }
TT_HOST_DEVICE int tt_smem_b_stage(int bn, int bk, int eb) { return bn * bk * eb; }
TT_HOST_DEVICE int tt_smem_epilogue_offset(int bm, int bn, int bk, int eb, int stages) {
  return stages * (tt_smem_a_stage(bm, bk, eb) + tt_smem_b_stage(bn, bk, eb));
}
TT_HOST_DEVICE int tt_smem_barrier_offset(int bm, int bn, int bk, int eb, int stages, int consumers) {
  return tt_smem_epilogue_offset(bm, bn, bk, eb, stages) + consumers * 4 * 16 * TT_EPI_ROW_BYTES;
}
TT_HOST_DEVICE int tt_smem_total(int bm, int bn, int bk, int eb, int stages, int consumers) {
  return tt_smem_barrier_offset(bm, bn, bk, eb, stages, consumers) + 2 * stages * 8;
}
