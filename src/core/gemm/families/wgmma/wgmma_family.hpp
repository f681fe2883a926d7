#pragma once
#include "core/gemm/family.hpp"
#include "core/gemm/k_major_copies.hpp"

namespace tiletune {

// The wgmma family (kernels_templates/wgmma/wgmma_gemm.cu): Hopper's warpgroup MMA
// with TMA operand loads, a producer and 1 or 2 consumer warpgroups, a
// persistent grid (sm_90a only).
const gemm_family& wgmma_family();

// Its knobs (tile_config::knobs): consumer warpgroups, 1 or 2; stream-K on the tiles past
// the last whole wave (1) or every tile whole (0), kernels_templates/wgmma/wgmma_schedule.cuh;
// the grouped kernel; swap-AB, evict-first on B, the TMA-store epilogue and ping-pong (four bits).
inline int wgmma_consumers(const tile_config& c) { return c.knobs[0]; }
inline int& wgmma_consumers(tile_config& c) { return c.knobs[0]; }
inline bool wgmma_stream_k(const tile_config& c) { return c.knobs[1] != 0; }
inline void set_wgmma_stream_k(tile_config& c, bool on) { c.knobs[1] = on ? 1 : 0; }
// A grouped GEMM's kernel (1: TT_GROUPED, kernels_templates/wgmma/wgmma_grouped.cuh): the copy of
// every tile that a grouped problem's space holds instead of the plain one.
inline bool wgmma_grouped(const tile_config& c) { return c.knobs[2] != 0; }
inline void set_wgmma_grouped(tile_config& c, bool on) { c.knobs[2] = on ? 1 : 0; }
// The most groups one launch takes (the template's TT_GROUPS_MAX), and the static shared memory of
// the table each CTA builds of them: first tiles (groups + 1), first rows and end rows, 4 bytes each,
// which ptxas rounds up to 1 KB (the dynamic region after it is 1024-byte aligned): 4096 bytes, as
// compile.sm_90a.grouped reads in the cubin.
inline constexpr int wgmma_groups_max = 256;
inline constexpr std::int64_t wgmma_group_table_bytes = ((3 * wgmma_groups_max + 1) * 4 + 1023) / 1024 * 1024;

// Swap-AB (1: TT_SWAP_AB): the kernel computes C^T = op(B)^T op(A)^T, so that the problem's N
// (a decode step's weight rows) fills wgmma's 64-row M and the problem's few rows of A (the
// tokens) become the instruction's N of 8-64; its epilogue stores C transposed. The tile keeps
// the problem's meaning (BM rows of C, BN columns), so the tuner, the model and the schedule's
// tile count see an ordinary BM x BN tile; the kernel's own tile is BN x BM (wgmma_kernel_m/n).
// Knob 3 holds four bits: 1 swap-AB, 2 evict-first on B, 4 the TMA-store epilogue, 8 ping-pong.
inline bool wgmma_flag(const tile_config& c, int bit) { return (c.knobs[3] & bit) != 0; }
inline void set_wgmma_flag(tile_config& c, int bit, bool on) { c.knobs[3] = on ? c.knobs[3] | bit : c.knobs[3] & ~bit; }
inline bool wgmma_swap_ab(const tile_config& c) { return wgmma_flag(c, 1); }
inline void set_wgmma_swap_ab(tile_config& c, bool on) { set_wgmma_flag(c, 1, on); }
// Evict-first on B (TT_EVICT_FIRST_B): B's TMA boxes carry an L2 evict-first policy. A decode
// step's B (the weights) is read once, A and the stream-K partials again and again.
inline bool wgmma_evict_first_b(const tile_config& c) { return wgmma_flag(c, 2); }
inline void set_wgmma_evict_first_b(tile_config& c, bool on) { set_wgmma_flag(c, 2, on); }
// The TMA-store epilogue (TT_TMA_STORE): each consumer writes C 64 x 64 at a time with stmatrix
// into a 128-byte-swizzled staging buffer (two a consumer), and one thread stores it with a TMA
// bulk tensor store that drains while the next chunk is staged (16-bit C, beta 0).
inline bool wgmma_tma_store(const tile_config& c) { return wgmma_flag(c, 4); }
inline void set_wgmma_tma_store(tile_config& c, bool on) { set_wgmma_flag(c, 4, on); }
// Ping-pong consumers (TT_PINGPONG, two consumers): each takes alternate tiles whole, so that one's
// epilogue runs while the other's main loop has the tensor cores (CUTLASS's ping-pong schedule);
// without it the two cooperate on every tile, half the rows each.
inline bool wgmma_pingpong(const tile_config& c) { return wgmma_flag(c, 8); }
inline void set_wgmma_pingpong(tile_config& c, bool on) { set_wgmma_flag(c, 8, on); }
// fp8's promotion interval (TT_PROMOTE, kernels_templates/wgmma/wgmma_fp8.cuh), knob 3's bits
// 8-15: every this many k-tiles the tensor core's short running sum is added into fp32 registers
// (a second accumulator set). 0 for the other dtypes; an fp8 tile needs one of
// wgmma_promotion_intervals.
inline int wgmma_promotion(const tile_config& c) { return (c.knobs[3] >> 8) & 0xff; }
inline void set_wgmma_promotion(tile_config& c, int k_tiles) { c.knobs[3] = (c.knobs[3] & ~0xff00) | (k_tiles << 8); }
// fp8's scales the kernel applies (TT_SCALING, knob 3's bits 16-17, the scaling_mode): none (also
// for per-tensor scales, which are alpha's), rowwise (before the epilogue) or block (at each
// k-tile's promotion), the problem's; with scales the kernel takes scale_a and scale_b.
inline scaling_mode wgmma_scales(const tile_config& c) { return static_cast<scaling_mode>((c.knobs[3] >> 16) & 3); }
inline void set_wgmma_scales(tile_config& c, scaling_mode s) {
  const int applied = s == scaling_mode::tensor ? 0 : static_cast<int>(s);
  c.knobs[3] = (c.knobs[3] & ~0x30000) | (applied << 16);
}
// fp8's C where it is not the dtype's (TT_OUT, knob 3's bits 18-20: the element type + 1), the
// problem's `out`.
inline std::optional<element_type> wgmma_out(const tile_config& c) {
  const int e = (c.knobs[3] >> 18) & 7;
  return e ? std::optional(static_cast<element_type>(e - 1)) : std::nullopt;
}
inline void set_wgmma_out(tile_config& c, std::optional<element_type> out) {
  c.knobs[3] = (c.knobs[3] & ~0x1C0000) | ((out ? static_cast<int>(*out) + 1 : 0) << 18);
}
// K-major copies (knob 3's bit 21, TT_K_MAJOR_COPIES, "_kc"): tf32 and fp8 wgmma read both operands
// K-major only, so for a problem that stores one MN-major (tf32 or fp8 in any layout but nt) a
// transposing pre-pass of the same cubin (tiletune_gemm_transpose, core/gemm/k_major_copies.hpp) first writes
// a K-major copy of each such operand into a scratch buffer, and the GEMM reads the copies: it runs
// as layout nt. Both kernels are timed, together, as the variant.
inline constexpr int wgmma_k_major_copies_bit = 1 << 21;
inline bool wgmma_k_major_copies(const tile_config& c) { return wgmma_flag(c, wgmma_k_major_copies_bit); }
inline void set_wgmma_k_major_copies(tile_config& c, bool on) { set_wgmma_flag(c, wgmma_k_major_copies_bit, on); }
// Whether a problem needs them: a tf32 or fp8 operand stored MN-major, or rows TMA cannot read
// (off 16 bytes: K = 50257, an odd N stored K x N), which the copies pad.
bool wgmma_needs_k_major_copies(const gemm_problem& p);
// The problem as the GEMM kernel reads it: with K-major copies, layout nt (A M x K and B N x K,
// rows of K padded to 16 bytes, problem_on_k_major_copies); otherwise p.
gemm_problem wgmma_kernel_problem(const tile_config& c, const gemm_problem& p);
// One operand's K-major copy (core/gemm/k_major_copies.hpp): none where the variant makes no copies.
inline k_major_copy wgmma_k_major_copy_of(const tile_config& c, const gemm_problem& p, char operand) {
  return wgmma_k_major_copies(c) ? k_major_copy_of(p, operand) : k_major_copy{};
}
inline std::int64_t wgmma_k_major_copy_bytes(const tile_config& c, const gemm_problem& p, char operand) {
  return wgmma_k_major_copy_of(c, p, operand).bytes;
}
// fp8 fast accumulation (knob 3's bit 22, TT_FAST_ACCUMULATION, "_fa"): no promotion (interval 0),
// every QGMMA adds into the fp32 accumulators through the tensor core's short running sum, as
// cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM and CUTLASS's FP8FastAccum schedules do: one
// accumulator set (128 a thread, as 16-bit types), no waits for promotion, a looser error bound
// (wgmma_fast_accumulation_bound). Tensor and rowwise scales only (block scales apply at a
// k-tile's promotion).
inline constexpr int wgmma_fast_accumulation_bit = 1 << 22;
inline bool wgmma_fast_accumulation(const tile_config& c) { return wgmma_flag(c, wgmma_fast_accumulation_bit); }
inline void set_wgmma_fast_accumulation(tile_config& c, bool on) { set_wgmma_flag(c, wgmma_fast_accumulation_bit, on); }
// The relative Frobenius error verification allows fast accumulation at a K: the dtype's bound, or
// ceil(K / 32) * 2^-14 where that is larger. Each QGMMA (32 of k) leaves the running sum to about
// 14 significant bits (DeepSeek-V3's figure for H800), cutting up to one unit of its last place,
// half a unit on average, always toward zero: the cuts add up, ceil(K / 32) of them of about
// 2^-14 of the sum each (0.031 at K 16384; the promoting variants hold 0.01 at any K).
double wgmma_fast_accumulation_bound(dtype t, std::int64_t k);
// fp8 block scales by TMA (knob 3's bit 23, TT_TMA_SCALES, "_ts"): the producer copies each
// k-block's scales of A (the tile's rows) into the stage with the operands by one bulk copy that
// the stage's full barrier counts, and the consumers read theirs from shared memory at the
// promotion instead of loading them from global memory (B's two stay loads: wgmma_fp8.cuh).
// Plain (batched) unswapped tiles whose A scale rows are whole 16-byte units: M a multiple of 4
// (wgmma_fp8.cuh); swap-AB and grouped tiles load theirs. Every block-scaled tile that can takes it (wgmma_tma_scales_fit), unless its scale stages take it past the GPU's shared memory where the tile itself fits.
inline constexpr int wgmma_tma_scales_bit = 1 << 23;
inline bool wgmma_tma_scales(const tile_config& c) { return wgmma_flag(c, wgmma_tma_scales_bit); }
inline void set_wgmma_tma_scales(tile_config& c, bool on) { set_wgmma_flag(c, wgmma_tma_scales_bit, on); }
bool wgmma_tma_scales_fit(const tile_config& c, const gemm_problem& p);
inline constexpr int wgmma_promotion_intervals[] = {1, 2};
// fp32 accumulators a consumer thread may hold in each of the two sets promotion keeps.
inline constexpr int wgmma_fp8_accumulators_max = 96;
// The kernel's tile (TT_KM x TT_KN in wgmma_gemm.cu): BM x BN, or BN x BM with swap-AB.
inline int wgmma_kernel_m(const tile_config& c) { return wgmma_swap_ab(c) ? c.block_n : c.block_m; }
inline int wgmma_kernel_n(const tile_config& c) { return wgmma_swap_ab(c) ? c.block_m : c.block_n; }
// The layout the kernel runs: nt on K-major copies; with swap-AB its A is the problem's B and its B
// the problem's A, so an operand the problem stores MN-major is MN-major to the kernel too ("nn"
// runs as "tt", "nt" as "nt").
inline layout wgmma_kernel_layout(const tile_config& c, layout l) {
  if (wgmma_k_major_copies(c)) l = k_major_layout();
  if (!wgmma_swap_ab(c)) return l;
  return layout{!l.b_transposed, !l.a_transposed};
}

// Consumers whose warps stage C in the classic epilogue's shared memory: none with swap-AB (it
// stores from registers) or the TMA-store epilogue (its own staging buffers).
inline int wgmma_epilogue_staging_consumers(const tile_config& c) {
  return wgmma_swap_ab(c) || wgmma_tma_store(c) ? 0 : wgmma_consumers(c);
}

// The kernel's rows each consumer computes per tile: all of them with ping-pong.
inline int wgmma_consumer_rows(const tile_config& c) {
  return wgmma_pingpong(c) ? wgmma_kernel_m(c) : wgmma_kernel_m(c) / wgmma_consumers(c);
}
// fp32 accumulators each consumer thread holds: (its rows / 64) x kernel N / 2, at most 128.
inline int wgmma_accumulators_per_thread(const tile_config& c) {
  return wgmma_consumer_rows(c) / 64 * wgmma_kernel_n(c) / 2;
}
// Whether ptxas compiles the variant at --register-usage-level 3 (of 0-10, default 5): the
// stream-K copies with two consumers of 128 accumulators each (232 registers a thread, after
// setmaxnreg) that read an MN-major operand. At the default their fixup (128 partials added per
// peer, the loads batched up to the register budget) spills 4-20 bytes of a value live across
// the tile (ptxas 13.0; found on an H100, 2026-11-26); at 3 it does not, and the main loop is
// the same code. One consumer of 128 (64x256) has 255 registers and never spilled.
bool wgmma_lower_register_usage(const tile_config& c, layout l);
// Whether the kernel keeps its consumer index per thread (threadIdx.x / 128, TT_PER_THREAD_CONSUMER)
// instead of warp-uniform: the stream-K copies that hold 128 or more accumulator registers a
// thread (fp8's partial set counted). The uniform index spilled 4 bytes in 128x256 c2 nn (at
// register-usage levels 1-3) and 12 in fp8's block-scaled 64x192 _tmas (ptxas 13.0); elsewhere it
// keeps operand descriptors out of R2UR between the HGMMAs.
bool wgmma_per_thread_consumer(const tile_config& c);
// Whether A (stored K x M) or B (stored K x N) is MN-major in shared memory.
inline bool wgmma_mn_major_operand(layout l) { return has_mn_major_operand(l); }

// BM x BN x BK, consumer warpgroups, stages, rasterization (cluster 1x1).
tile_config wgmma_tile(int block_m, int block_n, int block_k, int consumers, int stages,
                       int raster_group = 8, bool raster_along_n = false);

}  // namespace tiletune
