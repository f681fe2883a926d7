// tiletune kernel templates: the simt family's address math, shared by
// simt_gemm.cu and the host unit tests (tile_addressing_test.cpp), after
// common/tile_addressing.cuh. Plain int arithmetic only.
#ifndef TT_HOST_DEVICE
#define TT_HOST_DEVICE __device__ __forceinline__
#endif

// ---- Shared tiles [k][m] and [k][n], 4-float chunks ------------
// Registers go to shared memory transposed for the k-contiguous layouts: a
// warp stores rows r of `groups` = BK / VEC k-groups; mask spreads the groups
// over the 8 chunk positions of a line. Reads are float4 along m/n with one k
// per warp (a permutation of a line).
TT_HOST_DEVICE constexpr int tt_simt_mask(int k, int bk, int vec) {
  return (bk / vec) >= 8 ? ((k / vec) & 7) : (((k / vec) % (bk / vec)) * (8 / (bk / vec))) & 7;
}
TT_HOST_DEVICE constexpr int tt_simt_offset(int k, int mn, int cols, int bk, int vec) {
  return k * cols + (((mn >> 2) ^ tt_simt_mask(k, bk, vec)) << 2) + (mn & 3);
}
