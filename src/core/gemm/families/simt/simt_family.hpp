#pragma once
#include "core/gemm/family.hpp"

namespace tiletune {

// The simt family (kernels_templates/simt/simt_gemm.cu): fp32 FMA on the CUDA
// cores, a TM x TN register tile per thread, double-buffered shared memory.
const gemm_family& simt_family();

// Its knobs (tile_config::knobs): the thread tile TM x TN and the elements per global vector load.
inline int simt_thread_m(const tile_config& c) { return c.knobs[0]; }
inline int& simt_thread_m(tile_config& c) { return c.knobs[0]; }
inline int simt_thread_n(const tile_config& c) { return c.knobs[1]; }
inline int& simt_thread_n(tile_config& c) { return c.knobs[1]; }
inline int simt_vector_width(const tile_config& c) { return c.knobs[2]; }
inline int& simt_vector_width(tile_config& c) { return c.knobs[2]; }

// BM x BN x BK, thread tile TM x TN, elements per global vector load.
tile_config simt_tile(int block_m, int block_n, int block_k, int thread_m, int thread_n, int vector_width = 4);

// What one thread's main loop issues per k-tile (simt_gemm.cu): TM x TN x BK FFMA, (TM + TN) / 4
// x BK float4 shared loads, and for each of its global vector loads of A and B about 64
// instructions less 10 in all (the load's bounds, its element-by-element fallback, the stores
// to shared memory, their addresses): a line fitted to the SASS of the default variants (sm_80
// and sm_90, every layout alike); tests/compile holds it within 10% of every variant's SASS.
// A static count: the element-by-element fallback is compiled inside the loop, and a block
// whose rows are aligned branches over most of it (simt_64x128x16_t8x4_v4: 783 instructions
// in the loop, about 680 of them on the aligned path).
struct simt_loop_mix {
  double ffma = 0, lds = 0, other = 0;
  double total() const { return ffma + lds + other; }
};
simt_loop_mix simt_loop_instructions(const tile_config& c);

// The shared-memory wavefronts one warp's reads of a k take: a float4 read is served a quarter
// warp at a time, each quarter in as many wavefronts as the most distinct 16-byte chunks its 8
// lanes ask of one group of 4 banks (the same chunk read by several lanes is one). The k's
// XOR swizzle permutes whole chunks alike and changes none of it. t8x4 in 64x128: 12 (A's two
// reads broadcast, 4 each; B's one read 4); t4x8: 20 (B's two reads, lanes 32 bytes apart,
// 8 each), which is why t4x8 tiles measured 1.4-1.5x slower than their t8x4 twins.
int simt_read_wavefronts(const tile_config& c);

}  // namespace tiletune
