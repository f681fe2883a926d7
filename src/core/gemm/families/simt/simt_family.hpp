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

}  // namespace tiletune
