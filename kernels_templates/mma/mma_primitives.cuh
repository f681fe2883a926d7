// mma family: the PTX it is written in (cp.async, ldmatrix, ld/st.shared,
// mma.sync) and the small helpers every part uses.

// A value computed once that the compiler must keep in a register, not
// recompute inside the loop from what it was computed from (the empty asm
// hides its origin). Every variant has the registers for it.
__device__ __forceinline__ int tt_kept(int v) {
  asm("" : "+r"(v));
  return v;
}
__device__ __forceinline__ long long tt_kept(long long v) {
  asm("" : "+l"(v));
  return v;
}

__device__ __forceinline__ unsigned tt_smem_addr(const void* p) {
  unsigned r;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}

// Shared memory is addressed with 32-bit offsets from one base computed once:
// generic 64-bit pointers per copy and per ldmatrix cost registers that the
// 64x64 warp tiles need for their accumulators.
__device__ __forceinline__ void tt_cp_async16(unsigned dst, const void* src, int src_bytes) {
  // Bytes past src_bytes are zero-filled: that is the edge-tile predicate.
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void tt_cp_async16_whole(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void tt_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void tt_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

#if TT_DTYPE == TT_TF32
// tf32 operand bits (tt_tf32_round_bits: cvt.rna's value, the low bits left to mma.sync).
__device__ __forceinline__ unsigned tt_to_tf32(float x) {
  return tt_tf32_round_bits(__float_as_uint(x), tt_tf32_finite(fabsf(x)));
}
#endif

__device__ __forceinline__ void tt_ldmatrix_x4(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ unsigned tt_ld_shared(unsigned addr) {
  unsigned x;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(x) : "r"(addr));
  return x;
}
__device__ __forceinline__ void tt_ld_shared_v2(unsigned& x, unsigned& y, unsigned addr) {
  asm volatile("ld.shared.v2.b32 {%0,%1}, [%2];\n" : "=r"(x), "=r"(y) : "r"(addr));
}
__device__ __forceinline__ void tt_ldmatrix_x4_trans(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D += A B for one m16n8 tile: m16n8k8 for tf32, m16n8k16 for the 16-bit
// types, m16n8k32 for fp8 (sm_89 and later; A's and B's formats may differ).
#if TT_DTYPE == TT_TF32
#define TT_MMA_PTX "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
#elif TT_DTYPE == TT_BF16
#define TT_MMA_PTX "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#elif TT_DTYPE == TT_F16
#define TT_MMA_PTX "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#elif TT_DTYPE == TT_E4M3
#define TT_MMA_PTX "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"
#elif TT_DTYPE == TT_E5M2
#define TT_MMA_PTX "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32"
#elif TT_DTYPE == TT_E4M3_E5M2
#define TT_MMA_PTX "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"
#elif TT_DTYPE == TT_E5M2_E4M3
#define TT_MMA_PTX "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32"
#else
#error "the mma family has no mma.sync for this TT_DTYPE"
#endif
__device__ __forceinline__ void tt_mma(float* d, const unsigned* a, const unsigned* b) {
  asm volatile(TT_MMA_PTX " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
