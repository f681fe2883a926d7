// wgmma family: fp8 (e4m3, e5m2) promotion, the integer math the kernel and the host emulation
// share (TT_HOST_DEVICE as in wgmma_tile_math.cuh).
//
// wgmma .k32 .e4m3/.e5m2 (QGMMA in SASS) keeps a short running sum: DeepSeek-V3's report
// measured about 14 bits retained on H800, so a K of thousands added into one accumulator loses
// percents. The kernel therefore issues each k-tile's QGMMAs into a partial set `part`, starting
// from zero every TT_PROMOTE k-tiles (scale-d 0), and after the last k-tile of an interval waits
// for them and adds `part` into the fp32 set `acc` (CUTLASS's promotion, its default interval
// one k-tile of 4 instructions; DeepGEMM promotes every 128-k block with the scales). The last
// k-tile of a unit (a whole tile, a stream-K range, a split-K slice) always promotes: nothing is
// left in `part` when the epilogue or the fixup reads `acc`.

// Whether the k-tile kt of a unit [k_begin, k_end) ends an interval of `interval` k-tiles.
TT_HOST_DEVICE bool tt_promotes_after(int kt, int k_begin, int k_end, int interval) {
  return (kt - k_begin + 1) % interval == 0 || kt + 1 == k_end;
}

// scale-d of the instruction at byte step kk of k-tile kt: 0 (start from zero) for the first of
// an interval, 1 (add to `part`) after it.
TT_HOST_DEVICE int tt_part_scale_d(int kt, int k_begin, int interval, int kk) {
  return ((kt - k_begin) % interval != 0 || kk > 0) ? 1 : 0;
}
