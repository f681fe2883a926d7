#pragma once
// The pieces the mma kernel emulator (mma_emulation_kernel.hpp) runs on: the number formats, the
// variant's macros as the kernel sees them, the planted defects, what a run found, global memory
// with bounds-checked accesses, shared memory with the hazards a barrier or a cp.async wait must
// prevent, and the PTX instructions (ldmatrix, mma.sync) from the PTX ISA. mma_emulation.hpp says
// what the emulation covers.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/compile/kernel_templates.hpp"
#include "core/device/device_spec.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/families/mma/mma_family.hpp"
#include "core/measure/host_data.hpp"

#define TT_HOST_DEVICE inline
#include "common/tile_addressing.cuh"
#include "mma/mma_addressing.cuh"

#include "emulated_number_formats.hpp"
#include "transpose_emulation.hpp"

namespace mma_emu {
using namespace tiletune;

using u8 = std::uint8_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;

// ---- Number formats (emulated_number_formats.hpp) -------------------------------
using tiletune_test::bf16_to_float;
using tiletune_test::bits_float;
using tiletune_test::f16_table;
using tiletune_test::f16_to_float;
using tiletune_test::float_bits;
using tiletune_test::float_to_bf16;
using tiletune_test::float_to_f16;
// tt_to_tf32: cvt.rna.tf32.f32's value (PTX ISA "cvt": 10 mantissa bits, to
// nearest, ties away from zero) with the low 13 bits left for the emulated mma
// to ignore, as the kernel leaves them (tf32_rounding_test checks every pattern).
inline u32 float_to_tf32(float f) { return tt_tf32_round_bits(float_bits(f), tt_tf32_finite(std::fabs(f))); }

// An element's raw bits (1, 2 or 4 bytes) as the kernel's ab_t or elem_t holds them;
// fp8's t is one format (e4m3 or e5m2: element_dtype).
inline float decode(dtype t, u32 raw) {
  switch (t) {
    case dtype::f16: return f16_table()[raw & 0xffffu];
    case dtype::bf16: return bf16_to_float(static_cast<u16>(raw));
    case dtype::e4m3: return fp8_bits_to_float(element_type::e4m3, static_cast<u8>(raw));
    case dtype::e5m2: return fp8_bits_to_float(element_type::e5m2, static_cast<u8>(raw));
    default: return bits_float(raw);
  }
}
// An operand's value as the tensor cores multiply it; tf32: the stored fp32
// rounded to 11 significant bits, ties away from zero (std::round's), from
// the value, not its bits.
inline double operand_value(dtype t, u32 raw) {
  const double f = decode(t, raw);
  if (t != dtype::tf32 || !std::isfinite(f) || f == 0) return f;
  const double ulp = std::ldexp(1.0, std::max(std::ilogb(f), -126) - 10);
  return std::round(f / ulp) * ulp;
}
// tt_from_float: cvt.rn to the 16-bit types; tf32's C is stored as fp32.
inline u32 encode(dtype t, float v) {
  switch (t) {
    case dtype::f16: return float_to_f16(v);
    case dtype::bf16: return float_to_bf16(v);
    case dtype::e4m3: return float_to_fp8_bits(element_type::e4m3, v);
    case dtype::e5m2: return float_to_fp8_bits(element_type::e5m2, v);
    default: return float_bits(v);
  }
}
// The one-format dtype of an element type (mixed fp8's A or B).
inline dtype element_dtype(element_type e) {
  switch (e) {
    case element_type::e4m3: return dtype::e4m3;
    case element_type::e5m2: return dtype::e5m2;
    case element_type::f16: return dtype::f16;
    case element_type::bf16: return dtype::bf16;
    case element_type::tf32: return dtype::tf32;
    default: return dtype::f32;
  }
}
// One unit in the last place of the output type at |x| (for the tolerance).
inline double output_ulp(dtype t, double x) {
  const int bits = t == dtype::f16 ? 10 : t == dtype::bf16 ? 7 : 23;
  const int min_exp = t == dtype::f16 ? -14 : -126;
  int e = 0;
  std::frexp(std::max(std::fabs(x), std::ldexp(1.0, min_exp)), &e);
  return std::ldexp(1.0, e - 1 - bits);
}

// ---- The variant as the kernel sees it -----------------------------------------
// The macros render_kernel_source prepends and those mma_config.cuh derives from them.
struct kernel_macros {
  dtype type = dtype::bf16;
  int a_t = 0, b_t = 0;                                // TT_A_T, TT_B_T
  int bm = 0, bn = 0, bk = 0;                          // TT_BM, TT_BN, TT_BK
  int warps_m = 0, warps_n = 0, stages = 0;            // TT_WARPS_M, TT_WARPS_N, TT_STAGES
  int split_k = 1, raster_group = 0, raster_along_n = 0;
  int scaling = 0;                                     // TT_SCALING (fp8: 1 rowwise, the rendered source's)
  int eb() const { return element_bytes(type); }       // TT_AB_BYTES (the operands')
  dtype a_type() const { return element_dtype(row_of(type).a); }  // fp8: one format each
  dtype b_type() const { return element_dtype(row_of(type).b); }
  dtype c_type() const { return element_dtype(row_of(type).c); }  // fp8: bf16 (no TT_OUT)
  int c_eb() const { return element_bytes(c_type()); }  // TT_ELEM_BYTES (C's)
  int threads() const { return warps_m * warps_n * 32; }  // TT_THREADS
  int wm() const { return bm / warps_m; }              // TT_WM
  int wn() const { return bn / warps_n; }              // TT_WN
  int mi() const { return wm() / 16; }                 // TT_MI
  int ni() const { return wn() / 8; }                  // TT_NI
  int chunk() const { return 16 / eb(); }              // TT_CHUNK
  int mma_k() const { return 32 / eb(); }              // TT_MMA_K
  int a_rows() const { return a_t ? bk : bm; }         // TT_A_ROWS ...
  int a_cols() const { return a_t ? bm : bk; }
  int a_kc() const { return a_t ? 0 : 1; }
  int b_rows() const { return b_t ? bn : bk; }
  int b_cols() const { return b_t ? bk : bn; }
  int b_kc() const { return b_t ? 1 : 0; }
  int a_stage() const { return a_rows() * a_cols(); }  // TT_A_STAGE (elements)
  int b_stage() const { return b_rows() * b_cols(); }
  int smem_bytes() const { return tt_mma_smem_bytes(bm, bn, bk, warps_m, stages, eb()); }  // tt_smem_bytes
  int epi_mi() const { return tt_mma_epi_mi(mi(), warps_m, bn, smem_bytes()); }            // tt_epi_mi
  int epi_vec() const { return 16 / c_eb(); }                                              // TT_EPI_VEC
  int pass_rows() const { return warps_m * epi_mi() * 16; }                                // TT_PASS_ROWS
  int k_steps() const { return bk / mma_k(); }                                             // TT_KSTEPS
  int stage_bytes() const { return tt_mma_stage_bytes_ab(a_stage(), b_stage(), eb()); }    // TT_STAGE_BYTES
  int b_at() const { return a_stage() * eb(); }                                            // TT_B_AT
};

inline kernel_macros macros_for(const tile_config& c, dtype t, layout l) {
  kernel_macros k;
  k.type = t;
  k.a_t = l.a_transposed ? 1 : 0;
  k.b_t = l.b_transposed ? 1 : 0;
  k.bm = c.block_m;
  k.bn = c.block_n;
  k.bk = c.block_k;
  k.warps_m = mma_warps_m(c);
  k.warps_n = mma_warps_n(c);
  k.stages = c.stages;
  k.split_k = c.split_k;
  k.raster_group = c.raster_group;
  k.raster_along_n = c.raster_along_n ? 1 : 0;
  return k;
}

// ---- Planted defects: test-local changes of one map or step -----------------------
struct defects {
  bool read_mask_xor1 = false;          // A's fragment reads use the swizzle mask ^ 1 (the copies keep the kernel's)
  bool ldmatrix_without_trans = false;  // .trans left out where the layout needs it
  bool ldmatrix_row_lane_plus1 = false; // lane l supplies the address of row (l + 1) % 8
  bool acc_group_plus1 = false;         // the epilogue stages accumulators at group (lane/4 + 1) % 8
  bool no_zero_fill = false;            // cp.async always copies 16 bytes (src-size ignored)
  bool copy_stride_half = false;        // thread tid's copy i takes chunk tid + i * threads / 2
  bool wait_one_group_short = false;    // cp.async.wait_group STAGES-1 instead of STAGES-2
  bool no_barrier_after_wait = false;   // the main loop's __syncthreads left out
  bool split_slice0_twice = false;      // the reduction adds slice 0's partials once more
  bool split_skip_last_slice = false;   // the reduction stops before the last (short) slice
  bool split_floor_per_slice = false;   // per_slice = k_tiles / split: the remainder is lost
  bool fragments_before_barrier = false;  // the next k-tile's first fragments loaded before its wait and barrier
  bool refill_the_read_stage = false;   // the prologue leaves the write stage on the read stage
  bool inside_ignores_k = false;        // blocks copy without bounds when inside M and N, a short k-tile or not
  bool lane_offset_index_zero = false;  // every ldmatrix takes the lane offset of index 0
  bool tf32_ldsm_own_columns = false;   // tf32 (fp8) tiles along k read by ldmatrix with their 4-byte (1-byte) column count
  bool tf32_unrounded = false;          // tf32 operands passed to mma.sync as loaded (the cores truncate them)
  bool tf32_round_before_wait = false;  // the landed stage rounded before cp.async.wait_group
  bool tf32_round_read_stage = false;   // the stage being read rounded (again) instead of the one just landed
  bool tf32_pairs_kept = false;         // the epilogue writes tf32 A's paired rows as the mma's rows (tt_pair_row not undone)
  bool tf32_elements_unpaired = false;  // the element-wise path reads tf32 A's rows unpaired (the main loop's are paired)
  bool fp8_k_in_elements = false;       // the element-wise path's ldmatrix takes fp8's k in elements, not 16-bit columns
  bool fp8_b_in_a_format = false;       // mixed fp8: the mma reads B in A's format
  bool kc_rows_of_cols = false;         // K-major copies: the pre-pass writes the copy's rows cols apart, not K
  bool kc_unguarded = false;            // K-major copies: the pre-pass moves a tile's elements past the matrix too
  bool kc_skipped = false;              // K-major copies: the GEMM launched without its prologue
  bool kc_reads_operand = false;        // K-major copies: the GEMM reads the operand as stored, not its copy
  bool kc_pad_unwritten = false;        // K-major copies: the copy's rows padded to 16 bytes, the pad left unwritten
  bool kc_k_major_as_mn = false;        // K-major copies: a K-major operand in unaligned rows read as if MN-major
  bool rw_b_by_row = false;             // rowwise scales: B's scale taken at the row, not the column
  bool rw_split_unscaled = false;       // rowwise scales: split-K's reduction writes the sum unscaled
  bool rw_unclamped = false;            // rowwise scales: rows and columns past the matrix read past the scales
};

// ---- What a run found ----------------------------------------------------------------
struct report {
  long long checked = 0;     // elements of C compared
  long long mismatches = 0;  // outside the tolerance (NaN included)
  long long not_exact = 0;   // differ from the correctly rounded exact result
  long long hazards = 0;     // out-of-bounds, misaligned, races, unwritten reads, double writes
  double max_error = 0;
  std::vector<std::string> notes;  // the first few findings
  // Which paths of the kernel ran: so the recipes can be shown to reach every edge case.
  struct paths {
    long long cp_async_full = 0, cp_async_partial = 0, cp_async_empty = 0, element_copies = 0;
    long long c_vector_stores = 0, c_element_stores = 0, c_reads = 0;
    long long full_slices = 0, short_slices = 0, empty_slices = 0, split_reductions = 0;
    long long unbounded_blocks = 0, bounded_blocks = 0;
    void add(const paths& o) {
      unbounded_blocks += o.unbounded_blocks;
      bounded_blocks += o.bounded_blocks;
      cp_async_full += o.cp_async_full;
      cp_async_partial += o.cp_async_partial;
      cp_async_empty += o.cp_async_empty;
      element_copies += o.element_copies;
      c_vector_stores += o.c_vector_stores;
      c_element_stores += o.c_element_stores;
      c_reads += o.c_reads;
      split_reductions += o.split_reductions;
      full_slices += o.full_slices;
      empty_slices += o.empty_slices;
      short_slices += o.short_slices;
    }
  } ran;
  void note(const std::string& s) {
    ++hazards;
    if (notes.size() < 4) notes.push_back(s);
  }
  bool ok() const { return mismatches == 0 && hazards == 0 && not_exact == 0; }
  std::string describe() const {
    std::string s = fmt::format("{} of {} elements outside the tolerance, {} not exact, {} hazards, max error {}",
                                mismatches, checked, not_exact, hazards, max_error);
    for (const auto& n : notes) s += "\n    " + n;
    return s;
  }
};

// ---- Global memory: byte arrays, every access bounds-checked ------------------------
struct global_buffer {
  std::string name;
  std::vector<u8> bytes;
  bool in(long long byte, long long size) const {
    return byte >= 0 && size >= 0 && byte + size <= static_cast<long long>(bytes.size());
  }
};

// ---- Shared memory, with the hazards a barrier or a cp.async wait must prevent ------
// Per 4-byte word: the last writer (warp, barrier interval), the readers of the
// current interval, and whether a cp.async into it is still in flight. A warp
// reading what another warp wrote in the same interval, or writing what another
// read, is a race; so is touching a word whose copy has not been waited for.
class shared_memory {
 public:
  shared_memory(int bytes, report& r) : data_(static_cast<std::size_t>(bytes), 0xff), words_(static_cast<std::size_t>(bytes / 4)), r_(r) {}

  void barrier() { ++interval_; }
  // Loads whose values are never used (the main loop's last fragment
  // prefetch) may read what no one wrote; every other hazard still counts.
  void discard_loads(bool on) { discarded_ = on; }

  void store(int warp, int at, const void* src, int size, const char* what) {
    if (!check(at, size, what)) return;
    for (int w = at / 4; w < (at + size + 3) / 4; ++w) {
      word& s = words_[static_cast<std::size_t>(w)];
      if (s.in_flight) r_.note(fmt::format("{}: warp {} stores over a cp.async in flight at byte {}", what, warp, w * 4));
      if (s.read == interval_ && (s.readers & ~bit(warp)))
        r_.note(fmt::format("{}: warp {} stores byte {} that another warp read since the last barrier", what, warp, w * 4));
      if (s.written == interval_ && s.writer != warp)
        r_.note(fmt::format("{}: warps {} and {} store byte {} between two barriers", what, s.writer, warp, w * 4));
      s.written = interval_;
      s.writer = warp;
    }
    std::memcpy(data_.data() + at, src, static_cast<std::size_t>(size));
  }

  void load(int warp, int at, void* dst, int size, const char* what) {
    if (!check(at, size, what)) {
      std::memset(dst, 0xff, static_cast<std::size_t>(size));
      return;
    }
    for (int w = at / 4; w < (at + size + 3) / 4; ++w) {
      word& s = words_[static_cast<std::size_t>(w)];
      if (s.in_flight) r_.note(fmt::format("{}: warp {} reads byte {} before its cp.async was waited for", what, warp, w * 4));
      if (s.written < 0 && !discarded_)
        r_.note(fmt::format("{}: warp {} reads byte {}, never written in this block", what, warp, w * 4));
      if (s.written == interval_ && s.writer != warp)
        r_.note(fmt::format("{}: warp {} reads byte {} that warp {} wrote with no barrier between", what, warp, w * 4, s.writer));
      if (s.read != interval_) {
        s.read = interval_;
        s.readers = 0;
      }
      s.readers |= bit(warp);
    }
    std::memcpy(dst, data_.data() + at, static_cast<std::size_t>(size));
  }

  // cp.async: the 16 bytes land when their group completes.
  void copy_async(int warp, int at, const std::array<u8, 16>& bytes) {
    if (!check(at, 16, "cp.async")) return;
    for (int w = at / 4; w < at / 4 + 4; ++w) {
      word& s = words_[static_cast<std::size_t>(w)];
      if (s.in_flight) r_.note(fmt::format("cp.async: two copies in flight to byte {}", w * 4));
      if (s.read == interval_ && (s.readers & ~bit(warp)))
        r_.note(fmt::format("cp.async: warp {} refills byte {} that another warp read since the last barrier", warp, w * 4));
      s.in_flight = true;
    }
    open_.push_back({warp, at, bytes});
  }
  // cp.async.commit_group / cp.async.wait_group N (PTX ISA "cp.async.commit_group",
  // "cp.async.wait_group"): waits until at most N of the most recent groups are
  // pending. Every thread runs the same sequence, so the block's groups are the threads'.
  void commit() {
    groups_.push_back(std::move(open_));
    open_.clear();
  }
  void wait_group(int n) {
    while (static_cast<int>(groups_.size()) > n) {
      for (const pending& p : groups_.front()) {
        std::memcpy(data_.data() + p.at, p.bytes.data(), 16);
        for (int w = p.at / 4; w < p.at / 4 + 4; ++w) {
          word& s = words_[static_cast<std::size_t>(w)];
          s.in_flight = false;
          s.written = interval_;  // landed for the issuing warp; others need a barrier
          s.writer = p.warp;
        }
      }
      groups_.erase(groups_.begin());
    }
  }

 private:
  struct word {
    int written = -1, writer = -1, read = -1;
    u32 readers = 0;
    bool in_flight = false;
  };
  struct pending {
    int warp, at;
    std::array<u8, 16> bytes;
  };
  static u32 bit(int warp) { return 1u << warp; }
  bool check(int at, int size, const char* what) {
    if (at < 0 || at + size > static_cast<int>(data_.size())) {
      r_.note(fmt::format("{}: shared byte {} (+{}) outside the {} bytes allocated", what, at, size, data_.size()));
      return false;
    }
    if (at % size != 0) {
      r_.note(fmt::format("{}: shared byte {} not aligned to {}", what, at, size));
      return false;
    }
    return true;
  }
  std::vector<u8> data_;
  std::vector<word> words_;
  std::vector<pending> open_;
  std::vector<std::vector<pending>> groups_;
  int interval_ = 0;
  bool discarded_ = false;
  report& r_;
};

// ---- The PTX instructions -------------------------------------------------------------
// Registers of one warp: [lane][register].
using regs4 = std::array<std::array<u32, 4>, 32>;
using regs2 = std::array<std::array<u32, 2>, 32>;
using accs4 = std::array<std::array<float, 4>, 32>;

// ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16 (PTX ISA "ldmatrix", the
// warp-level matrix load): four 8x8 matrices of 16-bit elements; threads
// 8q..8q+7 supply the addresses of rows 0..7 of matrix q, each row 16
// contiguous, 16-byte aligned bytes. Destination register q of thread l holds
// two elements of matrix q: without .trans row l/4, columns 2(l%4) and
// 2(l%4)+1; with .trans the matrix is delivered transposed, i.e. rows 2(l%4)
// and 2(l%4)+1 of column l/4 as stored. The first element is the low half.
inline void ldmatrix_x4(shared_memory& smem, int warp, const std::array<int, 32>& row_address, bool trans,
                 regs4& out) {
  u16 rows[4][8][8];
  for (int lane = 0; lane < 32; ++lane)
    smem.load(warp, row_address[static_cast<std::size_t>(lane)], rows[lane / 8][lane % 8], 16, "ldmatrix");
  for (int lane = 0; lane < 32; ++lane)
    for (int q = 0; q < 4; ++q) {
      const int r = lane / 4, c = 2 * (lane % 4);
      const u16 lo = trans ? rows[q][c][r] : rows[q][r][c];
      const u16 hi = trans ? rows[q][c + 1][r] : rows[q][r][c + 1];
      out[static_cast<std::size_t>(lane)][static_cast<std::size_t>(q)] = lo | (static_cast<u32>(hi) << 16);
    }
}

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 and
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: D = A * B + C, A 16xK,
// B Kx8, fp32 C and D, with the fragment layouts of the PTX ISA sections
// "Matrix Fragments for mma.m16n8k16 with floating point type" and "Matrix
// Fragments for mma.m16n8k8" (groupID = lane / 4, threadID_in_group = lane % 4):
//  .f16/.bf16 A: a0..a7, two per register (a0 the low half of register 0):
//     row groupID for a0,a1,a4,a5, groupID + 8 otherwise; column
//     2 threadID_in_group + (i % 2), + 8 for i >= 4.
//  .f16/.bf16 B: b0..b3, two per register: row 2 threadID_in_group + (i % 2),
//     + 8 for i >= 2; column groupID.
//  .tf32 A: a0..a3, one per register: row groupID for a0,a2, groupID + 8 for
//     a1,a3; column threadID_in_group, + 4 for a2,a3.
//  .tf32 B: b0,b1: row threadID_in_group, + 4 for b1; column groupID.
//  f32 C/D: c0..c3: row groupID for c0,c1, groupID + 8 for c2,c3; column
//     2 threadID_in_group + (i % 2).
//  fp8 (m16n8k32, "Matrix Fragments for mma.m16n8k32"; A and B each in its
//     format, bt): four per register, the first in the low byte. A: a0..a15,
//     row groupID for registers 0 and 2, groupID + 8 for 1 and 3; column
//     4 threadID_in_group + (i % 4), + 16 for i >= 8. B: b0..b7, row
//     4 threadID_in_group + (i % 4), + 16 for i >= 4; column groupID.
inline void mma_sync(dtype t, dtype bt, const regs4& a, const std::array<u32, 32 * 2>& b, accs4& d) {
  const int kdim = 32 / element_bytes(t);
  float am[16][32] = {}, bm[32][8] = {}, cm[16][8] = {};
  auto half = [t](u32 reg, int i) { return decode(t, i ? reg >> 16 : reg & 0xffffu); };
  auto byte = [](u32 reg, int i) { return (reg >> (8 * i)) & 0xffu; };
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, tig = lane % 4;
    const auto& ar = a[static_cast<std::size_t>(lane)];
    if (is_fp8(t)) {
      for (int i = 0; i < 16; ++i)
        am[group + 8 * ((i / 4) % 2)][4 * tig + (i % 4) + (i >= 8 ? 16 : 0)] =
            decode(t, byte(ar[static_cast<std::size_t>(i / 4)], i % 4));
      for (int i = 0; i < 8; ++i)
        bm[4 * tig + (i % 4) + (i >= 4 ? 16 : 0)][group] =
            decode(bt, byte(b[static_cast<std::size_t>(lane * 2 + i / 4)], i % 4));
    } else if (t == dtype::tf32) {
      for (int i = 0; i < 4; ++i)
        am[group + 8 * (i % 2)][tig + 4 * (i / 2)] = bits_float(ar[static_cast<std::size_t>(i)] & 0xffffe000u);
      for (int i = 0; i < 2; ++i) bm[tig + 4 * i][group] = bits_float(b[static_cast<std::size_t>(lane * 2 + i)] & 0xffffe000u);
    } else {
      for (int i = 0; i < 8; ++i) {
        const int row = group + ((i / 2) % 2) * 8, col = 2 * tig + (i % 2) + (i >= 4 ? 8 : 0);
        am[row][col] = half(ar[static_cast<std::size_t>(i / 2)], i % 2);
      }
      for (int i = 0; i < 4; ++i)
        bm[2 * tig + (i % 2) + (i >= 2 ? 8 : 0)][group] = half(b[static_cast<std::size_t>(lane * 2 + i / 2)], i % 2);
    }
    for (int i = 0; i < 4; ++i) cm[group + 8 * (i / 2)][2 * tig + (i % 2)] = d[static_cast<std::size_t>(lane)][static_cast<std::size_t>(i)];
  }
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) {
      float s = cm[r][c];
      for (int kk = 0; kk < kdim; ++kk) s += am[r][kk] * bm[kk][c];
      cm[r][c] = s;
    }
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i)
      d[static_cast<std::size_t>(lane)][static_cast<std::size_t>(i)] = cm[lane / 4 + 8 * (i / 2)][2 * (lane % 4) + (i % 2)];
}

}  // namespace mma_emu
