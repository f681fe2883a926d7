#pragma once
// The pieces of the wgmma kernel's host emulation (wgmma_emulation.hpp runs the whole kernel on
// them): element formats, the planted defects, 128-byte-swizzled shared memory and TMA boxes,
// wgmma's operand fetch from its descriptors and its fragments, and the problem's data and the
// host GEMM it is compared with.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>
#define TT_HOST_DEVICE inline
#include "core/device/device_spec.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/tile_config.hpp"
#include "core/gemm/tensor_map_spec.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/compile/kernel_templates.hpp"
#include "core/gemm/family.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "wgmma/wgmma_tile_math.cuh"
#include "wgmma/wgmma_schedule.cuh"
#include "wgmma/wgmma_fp8.cuh"
#include "core/measure/host_data.hpp"
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "emulated_number_formats.hpp"
#include "transpose_emulation.hpp"

namespace wgmma_emu {
using namespace tiletune;

// ---- element formats (emulated_number_formats.hpp) ------------------------
using tiletune_test::bf16_to_float;
using tiletune_test::emulate_transpose;
using tiletune_test::bits_float;
using tiletune_test::f16_to_float;
using tiletune_test::float_bits;
using tiletune_test::float_to_bf16;
using tiletune_test::float_to_f16;
using tiletune_test::f16_table;
// tf32 keeps 10 mantissa bits: inputs are rounded once (to nearest even) when
// generated, and the tensor core ignores the low 13 bits of what it reads.
inline float round_to_tf32(float f) {
  std::uint32_t u = float_bits(f);
  u += 0xFFFu + ((u >> 13) & 1u);
  return bits_float(u & ~0x1FFFu);
}
inline float truncate_to_tf32(float f) { return bits_float(float_bits(f) & ~0x1FFFu); }
// f with its mantissa cut to `bits` bits toward zero (0: left as it is).
inline float truncate_mantissa(float f, int bits) {
  if (bits <= 0 || bits >= 23) return f;
  return bits_float(float_bits(f) & ~((1u << (23 - bits)) - 1u));
}

// The dtype C is stored in: the problem's C element type (fp8: bf16, or --out-dtype's f16 or
// f32; tf32 writes f32 bits).
inline dtype c_dtype(const gemm_problem& p) {
  switch (p.elements().c) {
    case element_type::f16: return dtype::f16;
    case element_type::bf16: return dtype::bf16;
    default: return dtype::f32;
  }
}
inline element_type fp8_element(dtype t) { return t == dtype::e4m3 ? element_type::e4m3 : element_type::e5m2; }
// The single-format dtype of one operand's elements (mixed fp8's A or B; tf32 as tf32).
inline dtype operand_dtype(element_type e) {
  switch (e) {
    case element_type::f32: return dtype::f32;
    case element_type::tf32: return dtype::tf32;
    case element_type::f16: return dtype::f16;
    case element_type::bf16: return dtype::bf16;
    case element_type::e4m3: return dtype::e4m3;
    default: return dtype::e5m2;
  }
}
inline float load_element(const std::uint8_t* p, dtype t) {
  if (is_fp8(t)) return fp8_bits_to_float(fp8_element(t), *p);
  if (t == dtype::f16 || t == dtype::bf16) {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return t == dtype::f16 ? f16_table()[h] : bf16_to_float(h);
  }
  float f;
  std::memcpy(&f, p, 4);
  return f;
}
inline void store_element(std::uint8_t* p, dtype t, float v) {
  if (is_fp8(t)) {
    *p = float_to_fp8_bits(fp8_element(t), v);
  } else if (t == dtype::f16 || t == dtype::bf16) {
    const std::uint16_t h = t == dtype::f16 ? float_to_f16(v) : float_to_bf16(v);
    std::memcpy(p, &h, 2);
  } else {
    std::memcpy(p, &v, 4);
  }
}
inline float round_to(dtype t, float v) {
  switch (t) {
    case dtype::f16:
      return f16_to_float(float_to_f16(v));
    case dtype::bf16:
      return bf16_to_float(float_to_bf16(v));
    case dtype::tf32:
      return round_to_tf32(v);
    case dtype::e4m3:
    case dtype::e5m2:
      return fp8_bits_to_float(fp8_element(t), float_to_fp8_bits(fp8_element(t), v));
    default:
      return v;
  }
}

// ---- planted defects: test-local switches, the kernel is never edited -------
struct defects {
  bool swap_lbo_sbo = false;             // descriptor built with LBO and SBO exchanged
  int tma_swizzle_row_mask = 7;          // 3: the XOR takes the 128-byte row index mod 4, not mod 8
  bool descriptor_no_swizzle = false;    // descriptor's layout type left at "no swizzle"
  bool half_k_step = false;              // k-step advance of half the right amount
  bool fragment_col_off_by_one = false;  // epilogue puts a value one column right
  // Out-of-bounds box elements read from past the row instead of zeros.
  bool tma_no_zero_fill = false;
  bool fixup_skips_last_peer = false;   // stream-K: an owner adds all but its last peer's partial
  bool peer_publishes_next_slot = false;  // stream-K: a peer writes into the next worker's slot
  bool swap_store_untransposed = false;   // swap-AB: the epilogue stores C[r][c] instead of C[c][r]
  bool swap_stores_padded_rows = false;   // swap-AB: rows of C past M (zero-filled A) stored too
  bool swap_maps_in_problem_order = false;  // swap-AB: tmap_a bound to A's map, as without the swap
  bool split_skips_last_peer = false;     // cluster split-K: the leader adds all but the last slot
  bool split_peer_in_next_slot = false;   // cluster split-K: a peer writes into its neighbour's slot
  bool split_same_k_slice = false;        // cluster split-K: every rank multiplies the leader's k-tiles
  bool tma_staging_no_swizzle = false;    // TMA store: stmatrix addresses without the 128-byte swizzle
  bool tma_stmatrix_rows_off_by_8 = false;  // TMA store: matrices 1 and 3 given rows 0-7, not 8-15
  bool tma_store_unclipped = false;       // TMA store: box elements past C's bounds written too
  bool tma_c_load_no_swizzle = false;     // TMA store, beta != 0: C's box lands without the 128-byte swizzle
  bool tma_c_load_next_chunk = false;     // TMA store, beta != 0: the box 64 columns right of the chunk loaded
  bool multicast_own_half_only = false;   // 2x1 cluster: the peer's half of B never lands here
  bool multicast_same_offset = false;     // 2x1 cluster: both halves of B land at the first half's place
  bool promote_only_on_interval = false;  // fp8: no promotion after a unit's last k-tile unless it ends an interval
  bool scale_k_block_off_by_one = false;  // fp8 block scales: the next k-block's scales read
  bool scale_b_first_block_only = false;  // fp8 block scales: a straddling tile's second B block takes the first's
  bool scale_after_add = false;           // fp8 block scales: acc = (acc + part) * s, not acc + part * s
  bool rowwise_without_b = false;         // fp8 rowwise scales: the rows' applied, the columns' forgotten
  bool swap_scales_unswapped = false;     // fp8 rowwise or block scales, swap-AB: A's scales on the kernel's rows (C's columns)
  bool part_never_reset = false;          // fp8: every QGMMA adds to the partial set (scale-d 1 after a promotion)
  bool no_promotion = false;              // fp8: the partial set promoted only at the unit's end ("fast accumulation")
  bool copy_rows_of_cols = false;         // K-major copies: the copy's rows cols apart, not rows (K)
  bool copy_unguarded = false;            // K-major copies: a tile's elements past the matrix moved too
  bool copy_skipped = false;              // K-major copies: the GEMM launched without its prologue
  bool copy_maps_operand = false;         // K-major copies: the GEMM's map addresses the operand, not the copy
  bool copy_pad_unwritten = false;        // K-major copies: the copy's rows padded to 16 bytes, the pad left unwritten
  bool copy_k_major_as_mn = false;        // K-major copies: a K-major operand in unaligned rows read as if MN-major
  bool mixed_types_unswapped = false;     // mixed fp8, swap-AB: the instruction names the problem's A type first
  bool mixed_as_one_format = false;       // mixed fp8: the instruction names A's type for B too
  bool scale_copy_unannounced = false;    // block scales by TMA: expect_tx without the scales' bytes
  bool scale_copy_whole_tile = false;     // block scales by TMA: bm rows copied, past M too
  bool scale_copy_next_stage = false;     // block scales by TMA: the consumers read the next stage's scales
  // Not a defect: the tensor core's running sum kept to this many mantissa bits (truncated after
  // each instruction), as a model of fp8's short accumulator; 0 keeps fp32's 23.
  int accumulator_mantissa_bits = 0;
};

// ---- shared memory and TMA -------------------------------------------------
// The 128-byte swizzle (CUDA driver API, cuTensorMapEncodeTiled,
// CU_TENSOR_MAP_SWIZZLE_128B; PTX ISA "Tensor Memory Accelerator", tensor copy
// swizzling modes): in each 1024-byte atom the 16-byte chunk index (address
// bits 4-6) is XORed with the index of the 128-byte row (bits 7-9), on the
// shared-memory address itself.
inline std::uint32_t swizzle_128b(std::uint32_t addr, int row_mask = 7) {
  return addr ^ (((addr >> 7) & static_cast<std::uint32_t>(row_mask)) << 4);
}

struct shared_memory {
  std::vector<std::uint8_t> bytes;  // index = shared-memory address
  std::uint64_t generation = 0;     // counts writes to the operand stages
};

inline int map_element_bytes(const tensor_map_spec& m) {
  return m.type == tensor_map_spec::element::f32 ? 4 : m.type == tensor_map_spec::element::u8 ? 1 : 2;
}

// One cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes
// (PTX ISA "cp.async.bulk.tensor"; driver API cuTensorMapEncodeTiled): the box
// of box[0] x box[1] x box[2] elements at coordinates (c0, c1, c2) of the
// tensor, innermost first, lands densely (box[0] elements a row) at dst with
// the swizzle applied; elements outside dims are zeros
// (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE). Returns the bytes the copy credits to
// the mbarrier's tx-count: the whole box, zero fill included.
inline std::int64_t tma_copy_box(const tensor_map_spec& map, const std::vector<std::uint8_t>& global,
                          shared_memory& smem, std::uint32_t dst, std::int64_t c0, std::int64_t c1,
                          std::int64_t c2, const defects& d, std::vector<std::string>& errors) {
  const int eb = map_element_bytes(map);
  // The driver's rules for a tiled map with 128-byte swizzle, and TMA's for the destination.
  if (map.rank != 3 || map.swizzle_bytes != 128 || map.interleave || !map.oob_fill_zero ||
      map.element_strides != std::array<std::uint32_t, 3>{1, 1, 1})
    errors.push_back(
        "tensor map: not the tiled, 128B-swizzled, zero-filled map this emulation knows");
  for (int i = 0; i < 3; ++i)
    if (map.box[i] < 1 || map.box[i] > 256)
      errors.push_back(fmt::format("box[{}] = {} is not in 1..256", i, map.box[i]));
  const std::uint32_t row_bytes = map.box[0] * static_cast<std::uint32_t>(eb);
  if (row_bytes % 16 != 0 || row_bytes > 128)
    errors.push_back(fmt::format(
        "box inner extent {} bytes: must be a multiple of 16 and at most the 128-byte swizzle",
        row_bytes));
  if (map.strides_bytes[0] % 16 || map.strides_bytes[1] % 16)
    errors.push_back("global strides must be multiples of 16 bytes");
  // 1024: the swizzle atom, so the pattern the descriptor assumes starts at the box.
  if (dst % 1024 != 0)
    errors.push_back(fmt::format("TMA destination {:#x} is not 1024-byte aligned", dst));
  if (!errors.empty()) return 0;
  ++smem.generation;
  for (std::uint32_t i2 = 0; i2 < map.box[2]; ++i2)
    for (std::uint32_t i1 = 0; i1 < map.box[1]; ++i1)
      for (std::uint32_t i0 = 0; i0 < map.box[0]; ++i0) {
        const std::int64_t x0 = c0 + i0, x1 = c1 + i1, x2 = c2 + i2;
        const bool inside = x0 >= 0 && x1 >= 0 && x2 >= 0 &&
                            x0 < static_cast<std::int64_t>(map.dims[0]) &&
                            x1 < static_cast<std::int64_t>(map.dims[1]) &&
                            x2 < static_cast<std::int64_t>(map.dims[2]);
        const std::int64_t src = x0 * eb + x1 * static_cast<std::int64_t>(map.strides_bytes[0]) +
                                 x2 * static_cast<std::int64_t>(map.strides_bytes[1]);
        const std::uint32_t linear =
            (i2 * map.box[1] + i1) * row_bytes + i0 * static_cast<std::uint32_t>(eb);
        const std::uint32_t addr = swizzle_128b(dst + linear, d.tma_swizzle_row_mask);
        if (addr + eb > smem.bytes.size()) {
          errors.push_back(fmt::format("TMA writes past shared memory at {:#x}", addr));
          return 0;
        }
        std::uint8_t* out = smem.bytes.data() + addr;
        // A map that describes more than its tensor's buffer holds (the copies' map on the operand):
        // a read past the allocation, which a GPU would fault on or take garbage from.
        if (inside && src + eb > static_cast<std::int64_t>(global.size())) {
          errors.push_back(fmt::format("TMA reads past its tensor's {} bytes at {}", global.size(), src));
          return 0;
        }
        if (inside) {
          std::memcpy(out, global.data() + src, static_cast<std::size_t>(eb));
        } else if (d.tma_no_zero_fill) {
          // The defect: whatever lies there, garbage (NaN bits) past the allocation.
          if (src >= 0 && src + eb <= static_cast<std::int64_t>(global.size()))
            std::memcpy(out, global.data() + src, static_cast<std::size_t>(eb));
          else
            std::memset(out, 0xFF, static_cast<std::size_t>(eb));
        } else {
          std::memset(out, 0, static_cast<std::size_t>(eb));
        }
      }
  return static_cast<std::int64_t>(map.box[0]) * map.box[1] * map.box[2] * eb;
}

// The producer's tt_load_operand (wgmma_gemm.cu): a K-major operand is one box
// at (k0, mn0, batch); an MN-major one is rows/64 boxes at (mn0 + 64j, k0,
// batch), each bk*128 bytes after the previous.
inline std::int64_t load_operand(bool k_major, int rows, int bk, std::uint32_t dst,
                          const tensor_map_spec& map, const std::vector<std::uint8_t>& global,
                          shared_memory& smem, int k0, int mn0, int batch, const defects& d,
                          std::vector<std::string>& errors) {
  if (k_major) return tma_copy_box(map, global, smem, dst, k0, mn0, batch, d, errors);
  std::int64_t credited = 0;
  for (int j = 0; j < rows / 64; ++j)
    credited += tma_copy_box(map, global, smem, dst + static_cast<std::uint32_t>(j * bk * 128),
                             mn0 + 64 * j, k0, batch, d, errors);
  return credited;
}

// ---- wgmma ------------------------------------------------------------------
// What one rendered wgmma instruction says (wgmma_instruction_source): shape,
// and whether A / B are transposed (imm-trans-a/b = 1: MN-major).
struct wgmma_instruction {
  int n = 0, k = 0;
  bool a_mn_major = false, b_mn_major = false;
  dtype a_type = dtype::f16, b_type = dtype::f16;  // as the instruction's .atype.btype name them
};
// The instruction of a rendered source (after its "// tt_wgmma" marker), or of one generated.
inline wgmma_instruction parse_instruction_text(const std::string& source) {
  const auto marker = source.find("// tt_wgmma");
  const std::string s = source.substr(marker == std::string::npos ? 0 : marker);
  wgmma_instruction w;
  const auto at = s.find("m64n");
  EXPECT_NE(at, std::string::npos) << s;
  if (at == std::string::npos) return w;
  w.n = std::stoi(s.substr(at + 4));
  w.k = std::stoi(s.substr(s.find('k', at + 4) + 1));
  // ".f32.<atype>.<btype> {"
  const auto types = s.find(".f32.", at);
  if (types != std::string::npos) {
    const std::string both = s.substr(types + 5, s.find(' ', types) - types - 5);
    const auto dot = both.find('.');
    w.a_type = parse_dtype(both.substr(0, dot));
    w.b_type = parse_dtype(both.substr(dot + 1));
  }
  // "..., p, 1, 1, ta, tb;" for 16-bit types, "..., p, 1, 1;" for tf32 (no transposes: K-major).
  const auto imm = s.find("p, 1, 1");
  EXPECT_NE(imm, std::string::npos) << s;
  if (imm != std::string::npos && s[imm + 7] == ',') {
    w.a_mn_major = s[imm + 9] == '1';
    w.b_mn_major = s[imm + 12] == '1';
  }
  return w;
}
inline wgmma_instruction parse_instruction(dtype t, int n, layout l) {
  return parse_instruction_text(wgmma_instruction_source(t, n, l));
}

// The shared-memory byte address wgmma reads for element (mn, k) of an
// operand (mn: a row of A's M or a column of B's N; k inside the instruction)
// from its descriptor. PTX ISA, "Matrix Descriptor Format": start address,
// leading- and stride-dimension byte offsets (each >> 4 in 14 bits), base
// offset (bits 49-51), layout type (bits 62-63: 0 no swizzle, 1 128B).
// "Shared Memory Matrix Layout" / "Strides", canonical layouts in units of
// elements with T = 16 bytes / element size:
//   K-major,  128B swizzle: ((8,m),(T,2k)) : ((8T,SBO),(1,T))
//   MN-major, 128B swizzle: ((T,8,m),(8,k)) : ((1,T,LBO),(8T,SBO))
//   K-major,  no swizzle:   ((8,m),(T,2k)) : ((1T,SBO),(1,LBO))
//   MN-major, no swizzle:   ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))
// then the 128B swizzle on the absolute address (bits 4-6 ^= bits 7-9).
inline std::int64_t wgmma_operand_address(std::uint64_t desc, bool mn_major, int mn, int k, int eb,
                                   std::vector<std::string>& errors) {
  const std::int64_t start = static_cast<std::int64_t>(desc & 0x3FFF) << 4;
  const std::int64_t lbo = static_cast<std::int64_t>((desc >> 16) & 0x3FFF) << 4;
  const std::int64_t sbo = static_cast<std::int64_t>((desc >> 32) & 0x3FFF) << 4;
  const int base_offset = static_cast<int>((desc >> 49) & 7);
  const int mode = static_cast<int>(desc >> 62);
  const int t = 16 / eb;
  if (mode == 1) {
    // Tiles here start on the 1024-byte pattern boundary (bits 7-9 of the
    // start address clear), so the base offset must be 0.
    if (base_offset != 0 || ((start >> 7) & 7) != 0) {
      errors.push_back(
          fmt::format("descriptor start {:#x}, base offset {}: not on the swizzle pattern", start,
                      base_offset));
      return -1;
    }
    const std::int64_t off = mn_major
                                 ? (mn % t) * eb + ((mn / t) % 8) * 16 + (mn / (8 * t)) * lbo +
                                       (k % 8) * 128 + (k / 8) * sbo
                                 : (mn % 8) * 128 + (mn / 8) * sbo + (k % t) * eb + (k / t) * 16;
    return swizzle_128b(static_cast<std::uint32_t>(start + off));
  }
  if (mode == 0) {
    const std::int64_t off = mn_major
                                 ? (mn % t) * eb + (mn / t) * sbo + (k % 8) * 16 + (k / 8) * lbo
                                 : (mn % 8) * 16 + (mn / 8) * sbo + (k % t) * eb + (k / t) * lbo;
    return start + off;
  }
  errors.push_back(fmt::format("descriptor layout type {} is not emulated", mode));
  return -1;
}

// The D fragment of wgmma m64nN with fp32 accumulators as the PTX ISA draws it
// ("Matrix fragments for wgmma .m64nNk16" / ".m64nNk8", accumulator D): warp
// w holds rows 16w..16w+15; its lane l holds d[i] at row 16w + l/4 + 8*((i/2)%2)
// and column 8*(i/4) + 2*(l%4) + i%2. Stated here on its own, independently
// of the kernel's tt_acc_* functions, which are checked against it.
struct fragment_coord {
  int row, col;
};
inline fragment_coord isa_d_fragment(int warp, int lane, int i) {
  return {16 * warp + lane / 4 + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * (lane % 4) + i % 2};
}

// A warpgroup's accumulators for one m64 tile: [warp][lane][N/2].
struct accumulators {
  int n = 0;
  std::vector<float> v;
  explicit accumulators(int n_) : n(n_), v(static_cast<std::size_t>(4 * 32 * n_ / 2), 0.0f) {}
  float& at(int warp, int lane, int i) {
    return v[static_cast<std::size_t>((warp * 32 + lane) * (n / 2) + i)];
  }
};

// One warpgroup's tensor core as emulated: scratch space, the D fragment map
// (row * N + col of each register, from isa_d_fragment) and the B tiles read
// since shared memory last changed, reused for the same descriptor (B is the
// same for every m64 tile and consumer of a k-step; this only saves time).
struct tensor_core {
  wgmma_instruction ins;
  dtype t = dtype::f16;
  int accumulator_bits = 0;  // defects::accumulator_mantissa_bits
  std::vector<float> a, d;
  std::vector<int> fragment;
  std::vector<std::pair<std::uint64_t, std::vector<float>>> b_read;
  std::uint64_t generation = 0;
  tensor_core(const wgmma_instruction& i, dtype type) : ins(i), t(type) {
    a.resize(static_cast<std::size_t>(64 * ins.k));
    d.resize(static_cast<std::size_t>(64 * ins.n));
    for (int w = 0; w < 4; ++w)
      for (int lane = 0; lane < 32; ++lane)
        for (int r = 0; r < ins.n / 2; ++r) {
          const fragment_coord c = isa_d_fragment(w, lane, r);
          fragment.push_back(c.row * ins.n + c.col);
        }
  }
};

// One wgmma.mma_async m64nNkK: D = A x B + (scale_d ? D : 0), A and B read
// from shared memory through their descriptors, the products summed in fp32,
// D spread over the warpgroup's registers as the ISA's fragment says.
inline void emulate_wgmma(tensor_core& tc, const shared_memory& smem, std::uint64_t desc_a,
                   std::uint64_t desc_b, bool scale_d, accumulators& acc,
                   std::vector<std::string>& errors) {
  const dtype t = tc.t;
  const int eb = element_bytes(t);
  const int n = tc.ins.n, k = tc.ins.k;
  // Each operand decoded as the instruction's type for it says (mixed fp8: two formats).
  auto fetch = [&](std::uint64_t desc, bool mn_major, int mn, int kk, dtype as) -> float {
    const std::int64_t addr = wgmma_operand_address(desc, mn_major, mn, kk, eb, errors);
    if (addr < 0 || addr + eb > static_cast<std::int64_t>(smem.bytes.size())) {
      if (addr >= 0) errors.push_back(fmt::format("wgmma reads past shared memory at {:#x}", addr));
      return 0.0f;
    }
    const float x = load_element(smem.bytes.data() + addr, as == dtype::tf32 ? dtype::f32 : as);
    return as == dtype::tf32 ? truncate_to_tf32(x) : x;
  };
  if (tc.generation != smem.generation) {
    tc.b_read.clear();
    tc.generation = smem.generation;
  }
  const std::vector<float>* b = nullptr;
  for (const auto& [desc, tile] : tc.b_read)
    if (desc == desc_b) b = &tile;
  if (!b) {
    std::vector<float> tile(static_cast<std::size_t>(k * n));
    for (int kk = 0; kk < k; ++kk)
      for (int nn = 0; nn < n; ++nn)
        tile[static_cast<std::size_t>(kk * n + nn)] = fetch(desc_b, tc.ins.b_mn_major, nn, kk, tc.ins.b_type);
    tc.b_read.emplace_back(desc_b, std::move(tile));
    b = &tc.b_read.back().second;
  }
  for (int m = 0; m < 64; ++m)
    for (int kk = 0; kk < k; ++kk)
      tc.a[static_cast<std::size_t>(m * k + kk)] = fetch(desc_a, tc.ins.a_mn_major, m, kk, tc.ins.a_type);
  if (!errors.empty()) return;
  std::fill(tc.d.begin(), tc.d.end(), 0.0f);
  for (int m = 0; m < 64; ++m)
    for (int kk = 0; kk < k; ++kk) {
      const float x = tc.a[static_cast<std::size_t>(m * k + kk)];
      float* row = tc.d.data() + m * n;
      const float* brow = b->data() + kk * n;
      for (int nn = 0; nn < n; ++nn) row[nn] += x * brow[nn];
    }
  for (std::size_t r = 0; r < acc.v.size(); ++r) {
    const float x = tc.d[static_cast<std::size_t>(tc.fragment[r])];
    acc.v[r] = truncate_mantissa(scale_d ? acc.v[r] + x : x, tc.accumulator_bits);
  }
}

// ---- the problem's data and the reference -----------------------------------
// One problem's inputs (stored layouts, the dtype's bits, tf32 as f32) and
// its host GEMM, shared by every variant that runs it.
struct prepared {
  gemm_problem p;
  problem_scales scales;  // fp8 with rowwise or block scales: the kernel's scale_a and scale_b
  std::vector<std::uint8_t> a, b, c, c_nan;  // c_nan: C where beta == 0, which must not be read
  std::vector<double> dot, magnitude;        // op(A) op(B) and the sum of |terms|, per element of C
};
// Values in [-1, 1) rounded to the dtype, from a fixed seed (deterministic).
// A straightforward host GEMM in double gives the reference.
inline prepared prepare(const gemm_problem& p, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const int eb = element_bytes(p.type);
  // Each operand in its own format (mixed fp8: A's and B's differ); tf32 stored as f32 bits.
  const dtype a_type = operand_dtype(p.elements().a), b_type = operand_dtype(p.elements().b);
  const dtype store_a = a_type == dtype::tf32 ? dtype::f32 : a_type, store_b = b_type == dtype::tf32 ? dtype::f32 : b_type;
  // `as`: how the elements are stored; `rounded`: the values they hold (tf32 in f32 bits).
  auto fill = [&](std::vector<std::uint8_t>& v, std::int64_t count, bool nan, dtype as, dtype rounded) {
    const int bytes = element_bytes(as);
    v.assign(static_cast<std::size_t>(count * bytes), 0);
    for (std::int64_t i = 0; i < count; ++i) {
      const float x = static_cast<float>(rng() >> 8) * 0x1p-23f - 1.0f;
      store_element(v.data() + i * bytes, as, nan ? std::nanf("") : round_to(rounded, x));
    }
  };
  prepared x;
  x.p = p;
  fill(x.a, p.m * p.k * p.batch, false, store_a, a_type);
  fill(x.b, p.k * p.n * p.batch, false, store_b, b_type);
  fill(x.c, p.m * p.n * p.batch, false, c_dtype(p), is_fp8(p.type) ? c_dtype(p) : p.type);
  fill(x.c_nan, p.m * p.n * p.batch, true, c_dtype(p), c_dtype(p));
  x.scales = random_scales(p, seed + 5);
  // The reference's scales, from their definition (host_data.hpp), not the kernel's index math.
  const bool rowwise = p.scaling == scaling_mode::rowwise, block = p.scaling == scaling_mode::block;
  const std::int64_t n_blocks = (p.n + 127) / 128;
  auto scale_of_a = [&](std::int64_t m, std::int64_t k) -> double {
    return rowwise ? x.scales.a[static_cast<std::size_t>(m)]
           : block ? x.scales.a[static_cast<std::size_t>((k / 128) * p.m + m)]
                   : 1.0;
  };
  auto scale_of_b = [&](std::int64_t n, std::int64_t k) -> double {
    return rowwise ? x.scales.b[static_cast<std::size_t>(n)]
           : block ? x.scales.b[static_cast<std::size_t>((k / 128) * n_blocks + n / 128)]
                   : 1.0;
  };
  const std::int64_t lda = p.lda(), ldb = p.ldb();
  x.dot.assign(static_cast<std::size_t>(p.m * p.n * p.batch), 0.0);
  x.magnitude.assign(x.dot.size(), 0.0);
  std::vector<double> a_row(static_cast<std::size_t>(p.k)),
      b_col(static_cast<std::size_t>(p.k * p.n));
  for (std::int64_t bt = 0; bt < p.batch; ++bt) {
    // op(B) of this batch as [n][k], then each row of op(A) against it.
    for (std::int64_t k = 0; k < p.k; ++k)
      for (std::int64_t n = 0; n < p.n; ++n) {
        const std::int64_t bi =
            bt * p.k * p.n + (p.layout.b_transposed ? n * ldb + k : k * ldb + n);
        b_col[static_cast<std::size_t>(n * p.k + k)] = load_element(x.b.data() + bi * eb, store_b) * scale_of_b(n, k);
      }
    for (std::int64_t m = 0; m < p.m; ++m) {
      for (std::int64_t k = 0; k < p.k; ++k) {
        const std::int64_t ai =
            bt * p.m * p.k + (p.layout.a_transposed ? k * lda + m : m * lda + k);
        a_row[static_cast<std::size_t>(k)] = load_element(x.a.data() + ai * eb, store_a) * scale_of_a(m, k);
      }
      for (std::int64_t n = 0; n < p.n; ++n) {
        double sum = 0, magnitude = 0;
        const double* bc = b_col.data() + n * p.k;
        for (std::int64_t k = 0; k < p.k; ++k) {
          const double t = a_row[static_cast<std::size_t>(k)] * bc[k];
          sum += t;
          magnitude += std::fabs(t);
        }
        x.dot[static_cast<std::size_t>((bt * p.m + m) * p.n + n)] = sum;
        x.magnitude[static_cast<std::size_t>((bt * p.m + m) * p.n + n)] = magnitude;
      }
    }
  }
  return x;
}

struct compare_result {
  std::int64_t mismatches = 0;
  std::int64_t unwritten_or_rewritten = 0;
  std::string first;
};

// C = alpha op(A) op(B) + beta C against the host GEMM. The tolerance covers
// fp32 accumulation in any order ((K + 2) * 2^-24 of the sum of |terms|,
// doubled) plus one rounding of the result to the output type (half an ulp,
// taken as 2^-8 relative for bf16, 2^-11 for f16, 2^-24 for the fp32 that
// tf32 writes).
inline compare_result compare_with_host_gemm(const prepared& x, double alpha, double beta,
                                      const std::vector<std::uint8_t>& out,
                                      const std::vector<int>& writes) {
  const gemm_problem& p = x.p;
  const dtype store = c_dtype(p);
  const int eb = element_bytes(store);
  const double out_rel = store == dtype::bf16 ? 0x1p-8 : store == dtype::f16 ? 0x1p-11 : 0x1p-24;
  compare_result r;
  for (std::int64_t bt = 0; bt < p.batch; ++bt)
    for (std::int64_t m = 0; m < p.m; ++m)
      for (std::int64_t n = 0; n < p.n; ++n) {
        const std::int64_t ci = (bt * p.m + m) * p.n + n;
        double ref = alpha * x.dot[static_cast<std::size_t>(ci)];
        double bound = std::fabs(alpha) * x.magnitude[static_cast<std::size_t>(ci)];
        if (beta != 0.0) {
          const double c0 = load_element(x.c.data() + ci * eb, store);
          ref += beta * c0;
          bound += std::fabs(beta * c0);
        }
        const double acc_err = 2.0 * static_cast<double>(p.k + 2) * 0x1p-24 * bound;
        const double tol = out_rel * (std::fabs(ref) + acc_err) + acc_err + 1e-30;
        const double got = load_element(out.data() + ci * eb, store);
        if (writes[static_cast<std::size_t>(ci)] != 1) ++r.unwritten_or_rewritten;
        if (!(std::fabs(got - ref) <= tol)) {
          if (r.mismatches == 0)
            r.first =
                fmt::format("C[{}][{}][{}] = {} instead of {} (tolerance {:.3g}, written {} times)",
                            bt, m, n, got, ref, tol, writes[static_cast<std::size_t>(ci)]);
          ++r.mismatches;
        }
      }
  return r;
}

}  // namespace wgmma_emu
