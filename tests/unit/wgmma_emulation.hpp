// The host emulation of the wgmma kernel's data path (kernels_templates/wgmma/), written from the
// PTX ISA and the CUDA driver API rather than from the kernel: element formats, TMA boxes into
// 128-byte-swizzled shared memory, wgmma's operand fetch from its descriptors and its fragments,
// and the whole kernel (emulate_kernel) as the rendered variant and its launch description say,
// with planted defects switched in by the tests only (`defects`). Shared by
// wgmma_datapath_emulation_test (the pieces, the default variants, stream-K) and
// wgmma_emulation_mechanisms_test (swap-AB, split-K in a cluster, TMA store, ping-pong, multicast).
#pragma once

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

// ---- the whole kernel --------------------------------------------------------
struct emulation {
  std::vector<std::uint8_t> c;
  std::vector<int> writes;  // per element of C: how often the epilogue stored it
  std::vector<std::string> errors;
};

// Runs tiletune_gemm for variant c on problem p the way wgmma_gemm.cu does,
// CTA by CTA over a persistent grid of `sm_count`-limited size (fewer CTAs
// than tiles walks the stage ring across tiles), each CTA through its units of
// the schedule (wgmma_schedule.cuh). Producer and consumers run in lock step
// here: their interleavings are the ring model checker's business, the
// stream-K fixup's order the fixup model checker's; here every peer has
// published (into an emulated workspace, NaN until written) before its owner
// adds the partials, so what is checked is the data: which k-tiles each unit
// multiplies, where partials go and come from, and the sum the owner stores.
// The value of `#define NAME value` in a rendered kernel source (0 when it is not defined).
inline int rendered_macro(const std::string& source, const std::string& name) {
  const std::string key = "#define " + name + " ";
  const auto at = source.find(key);
  return at == std::string::npos ? 0 : std::stoi(source.substr(at + key.size()));
}

inline emulation emulate_kernel(const tile_config& c, const gemm_problem& p,
                         const std::vector<std::uint8_t>& a_in,
                         const std::vector<std::uint8_t>& b_in,
                         const std::vector<std::uint8_t>& c_in, int sm_count,
                         const defects& d = {}, int stream_k = 0, const problem_scales* scales = nullptr) {
  emulation out;
  auto& errors = out.errors;
  const dtype t = p.type;
  const int eb = element_bytes(t);  // A's and B's; C's are ceb, stored as c_store
  const dtype c_store = c_dtype(p);
  const int ceb = element_bytes(c_store);
  // What the kernel is told: its rendered macros (swap-AB, raster order) and its launch
  // description (which matrix each tensor map holds, the M and N it gets). With swap-AB the
  // kernel computes C^T: its A is the problem's B, its M the problem's N, and it stores C
  // transposed; everything below is in the kernel's terms.
  const std::string source = render_kernel_source(c, t, p.layout);
  const bool swap = rendered_macro(source, "TT_SWAP_AB") != 0;
  const bool tma_store = rendered_macro(source, "TT_TMA_STORE") != 0;
  const int raster_n = rendered_macro(source, "TT_RASTER_N");
  kernel_launch launch = c.family->describe_launch(c, p, find_preset("h100-sxm"));
  auto map_tensor = [&](const char* parameter) {
    for (const auto& m : launch.tensor_maps)
      if (m.parameter == parameter) return m.tensor;
    errors.push_back(fmt::format("the launch has no tensor map {}", parameter));
    return std::string("A");
  };
  const std::string a_tensor = map_tensor("tmap_a"), b_tensor = map_tensor("tmap_b");
  char a_matrix = a_tensor[0], b_matrix = b_tensor[0];
  if (d.swap_maps_in_problem_order) a_matrix = 'A', b_matrix = 'B';
  // K-major copies (TT_K_MAJOR_COPIES): the prologue's launches first, each writing its operand's
  // copy; a map whose tensor is the copy reads it. The kernel reads both operands K-major.
  const bool copies = rendered_macro(source, "TT_K_MAJOR_COPIES") != 0;
  std::vector<std::uint8_t> copy_of[2];
  if (copies != !launch.prologue.empty())
    errors.push_back(fmt::format("TT_K_MAJOR_COPIES {} with {} prologue launches", copies, launch.prologue.size()));
  for (const kernel_launch& before : launch.prologue) {
    const char operand = before.parameters.at(0).name.at(0);
    if (before.parameters.at(1).name != std::string(1, operand) + "_k_major")
      errors.push_back(fmt::format("{} writes {}, not {}'s copy", before.entry, before.parameters.at(1).name, operand));
    if (!d.copy_skipped)
      emulate_transpose(before, eb, operand == 'A' ? a_in : b_in, copy_of[operand - 'A'],
                        {d.copy_rows_of_cols, d.copy_unguarded}, errors);
    else
      copy_of[operand - 'A'].assign(static_cast<std::size_t>(before.parameters.at(1).buffer_bytes), 0);
  }
  auto operand_memory = [&](char matrix, const std::string& tensor) -> const std::vector<std::uint8_t>& {
    if (tensor.size() > 1 && !d.copy_maps_operand) {
      if (copy_of[matrix - 'A'].empty()) errors.push_back(fmt::format("a map of {}, which no prologue writes", tensor));
      return copy_of[matrix - 'A'];
    }
    return matrix == 'B' ? b_in : a_in;
  };
  const std::vector<std::uint8_t>& ka_in = operand_memory(a_matrix, a_tensor);
  const std::vector<std::uint8_t>& kb_in = operand_memory(b_matrix, b_tensor);
  const int bm = swap ? c.block_n : c.block_m, bn = swap ? c.block_m : c.block_n, bk = c.block_k,
            stages = c.stages, consumers = wgmma_consumers(c);
  // Ping-pong: the consumer of a unit (tt_pingpong_mine) computes all its rows; the other passes.
  const bool pingpong = rendered_macro(source, "TT_PINGPONG") != 0;
  const int wg_m = pingpong ? bm : bm / consumers, mi_count = wg_m / 64;
  auto row_of = [&](int consumer) { return pingpong ? 0 : consumer * wg_m; };
  int only_consumer = -1;  // ping-pong: the consumer of the unit at hand
  const int mma_k = wgmma_instruction_k(t);
  // The kernel's TT_A_KMAJOR / TT_B_KMAJOR: A 'n' and B 't' are K-major; with swap-AB its A is
  // the problem's B (K-major when 't') and its B the problem's A (K-major when 'n').
  const layout kl = copies ? layout{false, true} : p.layout;
  const bool a_kmajor = swap ? kl.b_transposed : !kl.a_transposed;
  const bool b_kmajor = swap ? !kl.a_transposed : kl.b_transposed;
  // The instruction as the rendered source has it (its shape, transposes and operand types).
  wgmma_instruction ins = parse_instruction_text(source);
  if (d.mixed_types_unswapped && swap) std::swap(ins.a_type, ins.b_type);
  if (d.mixed_as_one_format) ins.b_type = ins.a_type;
  tensor_core tc_unit(ins, t);
  tc_unit.accumulator_bits = d.accumulator_mantissa_bits;
  // fp8 (TT_PROMOTE, wgmma_fp8.cuh): each interval's QGMMAs into a partial set, then added into acc.
  // Fast accumulation (TT_FAST_ACCUMULATION): fp8 without promotion, every QGMMA into acc.
  const int promote = rendered_macro(source, "TT_PROMOTE");
  const bool fast = rendered_macro(source, "TT_FAST_ACCUMULATION") != 0;
  if (is_fp8(t) != (promote > 0 || fast) || (promote > 0 && fast))
    errors.push_back(fmt::format("{} rendered with TT_PROMOTE {} and TT_FAST_ACCUMULATION {}", to_string(t), promote,
                                 fast));
  // fp8 scales (TT_SCALING 1 rowwise, 2 block), read through the kernel's index math; a read past
  // the caller's scale buffers is an error.
  const int scaling = rendered_macro(source, "TT_SCALING");
  if (scaling != (p.scaling == scaling_mode::rowwise ? 1 : p.scaling == scaling_mode::block ? 2 : 0) ||
      (scaling && (!scales || scales->a.empty())))
    errors.push_back(fmt::format("TT_SCALING {} for a problem scaled {}", scaling, to_string(p.scaling)));
  auto scale_at = [&](const std::vector<float>& v, long long i) {
    if (i < 0 || i >= static_cast<long long>(v.size())) {
      errors.push_back(fmt::format("a scale read at {} of {}", i, v.size()));
      return 0.0f;
    }
    return v[static_cast<std::size_t>(i)];
  };
  if (ins.n != bn || ins.k != mma_k || ins.a_mn_major != !a_kmajor || ins.b_mn_major != !b_kmajor)
    errors.push_back(
        fmt::format("instruction m64n{}k{} trans {}/{} does not fit the variant's operands", ins.n,
                    ins.k, ins.a_mn_major, ins.b_mn_major));
  const tensor_map_spec map_a = tensor_map_for(p, c, static_cast<char>(a_matrix - 'A' + 'a')),
                        map_b = tensor_map_for(p, c, static_cast<char>(b_matrix - 'A' + 'a'));

  // Dynamic shared memory starts wherever the driver puts it; the kernel
  // rounds up to 1024 within wgmma_smem_bytes' slack.
  const std::uint32_t raw = 0x230;
  shared_memory smem;
  smem.bytes.assign(raw + static_cast<std::size_t>(wgmma_smem_bytes(c, t)), 0xFF);
  const std::uint32_t base = raw + ((1024 - (raw & 1023)) & 1023);
  if (base + static_cast<std::uint32_t>(tt_smem_total(bm, bn, bk, eb, stages, swap ? 0 : consumers)) >
      smem.bytes.size())
    errors.push_back("the aligned layout does not fit wgmma_smem_bytes");
  const std::uint32_t a_stage = static_cast<std::uint32_t>(tt_smem_a_stage(bm, bk, eb));
  const std::uint32_t b_stage = static_cast<std::uint32_t>(tt_smem_b_stage(bn, bk, eb));
  const std::uint32_t a_base = base, b_base = base + stages * a_stage;
  const std::uint32_t epi_base =
      base + static_cast<std::uint32_t>(tt_smem_epilogue_offset(bm, bn, bk, eb, stages));
  // Block scales by TMA (TT_TMA_SCALES, wgmma_fp8.cuh): each stage's A scales after everything else,
  // inside what wgmma_smem_bytes sized.
  const bool tma_scales = rendered_macro(source, "TT_TMA_SCALES") != 0;
  const tt_smem_layout layout = {bm, bn, bk, eb, stages, swap || tma_store ? 0 : consumers, tma_store ? consumers : 0,
                                 std::max(1, rendered_macro(source, "TT_CLUSTER_SPLIT")), pingpong ? 1 : 0,
                                 tma_scales ? tt_scale_stage_bytes(bm) : 0};
  const std::uint32_t scale_stage = static_cast<std::uint32_t>(layout.scale_stage);
  const std::uint32_t scales_base = base + static_cast<std::uint32_t>(tt_smem_scales_offset(layout));
  if (tma_scales && (scaling != 2 || swap || scales_base % 16 != 0 ||
                     scales_base + stages * scale_stage > smem.bytes.size()))
    errors.push_back(fmt::format("TT_TMA_SCALES: scaling {}, swap-AB {}, the stages' scales at {:#x} + {} x {} in {} "
                                 "bytes", scaling, swap, scales_base, stages, scale_stage, smem.bytes.size()));

  const int M = static_cast<int>(parameter_named(launch, "M").value.get<std::int64_t>()),
            N = static_cast<int>(parameter_named(launch, "N").value.get<std::int64_t>()),
            ldc = static_cast<int>(p.ldc());
  const int m_tiles = (M + bm - 1) / bm, n_tiles = (N + bn - 1) / bn;
  const long long tiles = static_cast<long long>(m_tiles) * n_tiles * p.batch;
  const int k_tiles = static_cast<int>((p.k + bk - 1) / bk);
  const int grid = static_cast<int>(wgmma_grid_size(c, p, sm_count));
  const long long batch_stride_c = p.m * p.n;
  const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  // C is 16-byte aligned here, as the runtime's allocations are.
  const bool c_vectors = (ldc * ceb) % 16 == 0 && (batch_stride_c * ceb) % 16 == 0;
  const unsigned lbo_a = tt_operand_lbo(a_kmajor, bk), lbo_b = tt_operand_lbo(b_kmajor, bk);
  const unsigned sbo = tt_operand_sbo();
  auto desc = [&](unsigned addr, unsigned lbo) {
    std::uint64_t v =
        d.swap_lbo_sbo ? tt_wgmma_desc(addr, sbo, lbo) : tt_wgmma_desc(addr, lbo, sbo);
    if (d.descriptor_no_swizzle) v &= ~(3ull << 62);
    return v;
  };
  out.c = c_in;
  out.writes.assign(static_cast<std::size_t>(p.m * p.n * p.batch), 0);
  const int epi_n = 128 / ceb;  // TT_EPI_N

  // Cluster split-K: the launch's grid in clusters of `split` CTAs, which walk the tiles whole.
  const int split = std::max(1, rendered_macro(source, "TT_CLUSTER_SPLIT"));
  if (split > 1 && (launch.cluster[0] != split || launch.grid[0] % split != 0 || stream_k))
    errors.push_back(fmt::format("cluster split-K {} launched as grid {} in clusters of {}", split, launch.grid[0],
                                 launch.cluster[0]));
  // 2x1 clusters with TMA multicast: the grid's clusters walk pairs of M tiles (tt_multicast_*).
  const bool multicast = rendered_macro(source, "TT_CLUSTER_M") == 2;
  if (multicast && (launch.cluster[0] != 2 || launch.grid[0] % 2 != 0))
    errors.push_back(fmt::format("a 2x1 cluster launched as grid {} in clusters of {}", launch.grid[0], launch.cluster[0]));
  const int sm_grid = split > 1 || multicast ? static_cast<int>(launch.grid[0]) : stream_k ? sm_count : grid;
  const int cluster_size = multicast ? 2 : split;
  const tt_schedule sched =
      multicast ? tt_make_schedule(tt_multicast_pairs(m_tiles, n_tiles, static_cast<int>(p.batch)), k_tiles, sm_grid / 2, 8, 0)
                : tt_make_schedule(tiles, k_tiles, sm_grid / split, 8, split > 1 ? 0 : stream_k);
  // The leaders' buffers: slot s of the i-th tile of cluster c, NaN until a peer writes it.
  std::map<std::array<int, 3>, std::vector<float>> split_slots;
  const int consumer_threads = 128 * consumers, slot_floats = bm * bn;
  std::vector<float> workspace(static_cast<std::size_t>(sched.sk_workers) * slot_floats,
                               std::numeric_limits<float>::quiet_NaN());
  // A consumer thread's accumulator `value` (the kernel's mi * BN/2 + i) in a unit's accumulators.
  auto acc_value = [&](std::vector<accumulators>& acc, int ct, int value) -> float& {
    const int consumer = ct / 128, warp = ct / 32 % 4, lane = ct % 32;
    return acc[static_cast<std::size_t>(consumer * mi_count + value / (bn / 2))].at(warp, lane, value % (bn / 2));
  };
  struct waiting_owner {
    tt_work_unit u;
    tt_tile_coord tc;
    std::vector<accumulators> acc;
  };
  std::vector<waiting_owner> owners;
  // f(value, row, column) for every accumulator of the unit's consumers (ping-pong: its one), at the
  // kernel's row and column as the kernel's fragment map (tt_acc_*) places them.
  auto each_accumulator = [&](std::vector<accumulators>& acc, int m0, int n0, const auto& f) {
    for (int consumer = 0; consumer < consumers; ++consumer)
      if (only_consumer < 0 || consumer == only_consumer)
        for (int mi = 0; mi < mi_count; ++mi)
          for (int warp = 0; warp < 4; ++warp)
            for (int lane = 0; lane < 32; ++lane)
              for (int j = 0; j < bn / 8; ++j)
                for (int h = 0; h < 2; ++h)
                  for (int e = 0; e < 2; ++e)
                    f(acc[static_cast<std::size_t>(consumer * mi_count + mi)].at(warp, lane, tt_acc_index(j, h, e)),
                      m0 + row_of(consumer) + mi * 64 + tt_acc_warp_row0(warp) + tt_acc_row(lane, h),
                      n0 + tt_acc_col(lane, j, e));
  };
  std::function<void(const tt_tile_coord&, std::vector<accumulators>&)> epilogue;
  epilogue = [&](const tt_tile_coord& tc, std::vector<accumulators>& acc) {
    const int m0 = tc.m_tile * bm, n0 = tc.n_tile * bn;
    if (scaling == 1)  // tt_scale_rows_columns: every accumulator times its row's and its column's scale
      each_accumulator(acc, m0, n0, [&](float& v, int r, int col) {
        // The kernel's rows and columns (M, N its parameters): with swap-AB C's columns and rows,
        // so its row scales are B's and its column scales A's.
        const std::vector<float>& rows = swap && !d.swap_scales_unswapped ? scales->b : scales->a;
        const std::vector<float>& cols = swap && !d.swap_scales_unswapped ? scales->a : scales->b;
        const float sb = d.rowwise_without_b ? 1.0f : scale_at(cols, std::min(col, N - 1));
        v *= scale_at(rows, std::min(r, M - 1)) * sb;
      });
    if (tma_store) {
      // The TMA-c_store epilogue (tt_epilogue_tma): per consumer, m64 tile and 64-column chunk, each
      // warp's stmatrix .m8n8.x4 as the PTX ISA defines it (lane 8m + r gives the address of row r
      // of matrix m; thread t's register m holds row t / 4, columns 2(t % 4) and +1) into a
      // 64-row x 128-byte staging buffer, then the bulk tensor c_store of the box at (column, row,
      // batch) through C's tensor map: read through the driver's 128-byte swizzle, written only
      // where the map's dimensions hold the element.
      const tensor_map_spec map_c = tensor_map_for(p, c, 'c');
      const long long cbatch_bytes = static_cast<long long>(tc.batch) * static_cast<long long>(map_c.strides_bytes[1]);
      for (int consumer = 0; consumer < consumers && errors.empty(); ++consumer)
        if (only_consumer < 0 || consumer == only_consumer)
        for (int mi = 0; mi < mi_count; ++mi)
          for (int chunk = 0; chunk < bn / 64; ++chunk) {
            std::vector<std::uint8_t> staging(TT_TMA_STORE_BUFFER_BYTES, 0xFF);
            const long long row0 = m0 + row_of(consumer) + mi * 64, col0 = n0 + 64 * chunk;
            if (beta != 0.0f) {
              // The leader's TMA load of C's box through the same map: swizzled like the store's
              // read, elements outside C zero-filled.
              const long long load_col0 = col0 + (d.tma_c_load_next_chunk ? 64 : 0);
              for (int row = 0; row < static_cast<int>(map_c.box[1]); ++row)
                for (int col = 0; col < static_cast<int>(map_c.box[0]); ++col) {
                  const long long gr = row0 + row, gc = load_col0 + col;
                  const auto at = static_cast<std::uint32_t>(row * 128 + col * ceb);
                  std::uint8_t* dst = staging.data() + (d.tma_c_load_no_swizzle ? at : swizzle_128b(at));
                  if (gc < static_cast<long long>(map_c.dims[0]) && gr < static_cast<long long>(map_c.dims[1]))
                    std::memcpy(dst, out.c.data() + (cbatch_bytes / ceb + gr * static_cast<long long>(map_c.strides_bytes[0]) / ceb + gc) * ceb,
                                static_cast<std::size_t>(ceb));
                  else
                    std::memset(dst, 0, static_cast<std::size_t>(ceb));
                }
            }
            for (int warp = 0; warp < 4; ++warp) {
              accumulators& a = acc[static_cast<std::size_t>(consumer * mi_count + mi)];
              for (int jj = 0; jj < 8; jj += 2) {
                const int j = chunk * 8 + jj;
                auto reg = [&](int t, int i, int e) {
                  return alpha * a.at(warp, t, tt_stmatrix_acc(i, j, e));
                };
                for (int m = 0; m < 4; ++m)
                  for (int r = 0; r < 8; ++r) {
                    const int lane = 8 * m + r;
                    const int row = 16 * warp + (d.tma_stmatrix_rows_off_by_8 ? (lane & 7) : tt_stmatrix_row(lane));
                    const int block = tt_stmatrix_block(lane, jj);
                    const unsigned addr = d.tma_staging_no_swizzle ? static_cast<unsigned>(row * 128 + block * 16)
                                                                   : tt_staging_offset(row, block);
                    // With beta != 0, ldmatrix x4 from the same addresses first: thread t's
                    // register m holds the same two elements it then writes.
                    for (int t = 4 * r; t < 4 * r + 4; ++t)
                      for (int e = 0; e < 2; ++e) {
                        std::uint8_t* at = staging.data() + addr + 4 * (t % 4) + 2 * e;
                        float v = reg(t, m, e);
                        if (beta != 0.0f) v += beta * load_element(at, c_store);
                        store_element(at, c_store, v);
                      }
                  }
              }
            }
            for (int row = 0; row < static_cast<int>(map_c.box[1]); ++row)
              for (int col = 0; col < static_cast<int>(map_c.box[0]); ++col) {
                const long long gr = row0 + row, gc = col0 + col;
                const bool inside = gc < static_cast<long long>(map_c.dims[0]) && gr < static_cast<long long>(map_c.dims[1]);
                if (!inside && !d.tma_store_unclipped) continue;
                const long long byte = cbatch_bytes + gr * static_cast<long long>(map_c.strides_bytes[0]) + gc * ceb;
                const long long at = byte / ceb;
                if (at < 0 || at >= static_cast<long long>(out.writes.size())) {
                  errors.push_back(fmt::format("the TMA store writes outside C (element {})", at));
                  return;
                }
                std::memcpy(out.c.data() + at * ceb, staging.data() + swizzle_128b(static_cast<std::uint32_t>(row * 128 + col * ceb)),
                            static_cast<std::size_t>(ceb));
                ++out.writes[static_cast<std::size_t>(at)];
              }
          }
      return;
    }
    if (swap) {
      // Swap-AB (tt_epilogue_transposed): the value at the kernel's row r and column c goes
      // to C[c][r] straight from the accumulators; the kernel's columns at or past N (C's rows
      // past M, which TMA zero-filled) and rows at or past M are never stored.
      const long long cbatch = tc.batch * batch_stride_c;
      each_accumulator(acc, m0, n0, [&](float& a, int r, int kernel_col) {
        const int col = kernel_col + (d.fragment_col_off_by_one ? 1 : 0);
        if (!errors.empty() || r >= M || (col >= N && !d.swap_stores_padded_rows)) return;
        const long long at = cbatch + (d.swap_store_untransposed ? static_cast<long long>(r) * ldc + col
                                                                 : static_cast<long long>(col) * ldc + r);
        if (at < 0 || at >= static_cast<long long>(out.writes.size())) {
          errors.push_back(fmt::format("the epilogue stores outside C (element {})", at));
          return;
        }
        std::uint8_t* cp = out.c.data() + at * ceb;
        float v = alpha * a;
        if (beta != 0.0f) v += beta * load_element(cp, c_store);
        store_element(cp, c_store, v);
        ++out.writes[static_cast<std::size_t>(at)];
      });
      return;
    }
    // Epilogue (tt_epilogue): each warp stages 16 rows x 128 bytes of C in its
    // own shared buffer and copies them out as 16-byte vectors, or element by
    // element at the edges and for unaligned C.
  for (int consumer = 0; consumer < consumers && errors.empty(); ++consumer)
        if (only_consumer < 0 || consumer == only_consumer)
    for (int mi = 0; mi < mi_count; ++mi)
      for (int warp = 0; warp < 4; ++warp) {
        accumulators& a = acc[static_cast<std::size_t>(consumer * mi_count + mi)];
        const std::uint32_t stage_buf =
            epi_base +
            static_cast<std::uint32_t>((consumer * 4 + warp) * 16 * TT_EPI_ROW_BYTES);
        const int row0 = m0 + row_of(consumer) + mi * 64 + tt_acc_warp_row0(warp);
        const long long cbatch = tc.batch * batch_stride_c;
        auto c_at = [&](int gr, int gc) {
          return out.c.data() + (cbatch + static_cast<long long>(gr) * ldc + gc) * ceb;
        };
        for (int chunk = 0; chunk < bn / epi_n; ++chunk) {
          const int cc0 = n0 + chunk * epi_n;
          std::fill_n(smem.bytes.begin() + stage_buf, 16 * TT_EPI_ROW_BYTES, 0xFF);
          for (int lane = 0; lane < 32; ++lane)
            for (int j = 0; j < epi_n / 8; ++j) {
              const int jj = chunk * (epi_n / 8) + j;
              for (int h = 0; h < 2; ++h) {
                const int r = tt_acc_row(lane, h);
                const int col = tt_acc_col(lane, j, 0) + (d.fragment_col_off_by_one ? 1 : 0);
                float v0 = alpha * a.at(warp, lane, tt_acc_index(jj, h, 0));
                float v1 = alpha * a.at(warp, lane, tt_acc_index(jj, h, 1));
                if (beta != 0.0f) {
                  const int gr = row0 + r, gc = cc0 + col;
                  if (gr < M && gc < N) v0 += beta * load_element(c_at(gr, gc), c_store);
                  if (gr < M && gc + 1 < N) v1 += beta * load_element(c_at(gr, gc + 1), c_store);
                }
                std::uint8_t* s =
                    smem.bytes.data() + stage_buf + r * TT_EPI_ROW_BYTES + col * ceb;
                store_element(s, c_store, v0);
                store_element(s + ceb, c_store, v1);
              }
            }
          for (int lane = 0; lane < 32; ++lane)
            for (int pass = 0; pass < 4; ++pass) {
              const int r = tt_epi_copy_row(pass, lane), v = tt_epi_copy_vector(lane);
              const int gr = row0 + r, gc = cc0 + v * (16 / ceb);
              const std::uint8_t* x =
                  smem.bytes.data() + stage_buf + r * TT_EPI_ROW_BYTES + v * 16;
              if (gr >= M) continue;
              const int count =
                  (c_vectors && gc + 16 / ceb <= N) ? 16 / ceb : std::min(16 / ceb, N - gc);
              for (int i = 0; i < count; ++i) {
                std::memcpy(c_at(gr, gc + i), x + i * ceb, static_cast<std::size_t>(ceb));
                ++out.writes[static_cast<std::size_t>(
                    cbatch + static_cast<long long>(gr) * ldc + gc + i)];
              }
            }
        }
      }
  };

  for (int cta = 0; cta < sm_grid && errors.empty(); ++cta) {
    int p_stage = 0, c_stage = 0;  // the producer's and the consumers' walk of the ring
    unsigned p_phase = 0, c_phase = 0;
    const int cluster = cta / cluster_size, rank = cta % cluster_size;
    for (int ui = 0; ui < tt_units_of(sched, cluster) && errors.empty(); ++ui) {
      const tt_work_unit u = tt_split_unit(tt_unit(sched, cluster, ui), d.split_same_k_slice ? 0 : rank, split);
      only_consumer = pingpong ? (tt_pingpong_mine(ui, 0) ? 0 : 1) : -1;
      const tt_tile_coord tc =
          multicast ? tt_pair_tile(tt_tile_of(u.tile, (m_tiles + 1) / 2, n_tiles, c.raster_group, raster_n), rank)
                    : tt_tile_of(u.tile, m_tiles, n_tiles, c.raster_group, raster_n);
      const int m0 = tc.m_tile * bm, n0 = tc.n_tile * bn;
      std::vector<accumulators> acc(static_cast<std::size_t>(consumers * mi_count),
                                    accumulators(bn));
      std::vector<accumulators> part = acc;
      for (int kt = u.k_begin; kt < u.k_end && errors.empty(); ++kt) {
        // Producer: the stage was released; poison it so that bytes TMA does not write show.
        const std::uint32_t sa = a_base + p_stage * a_stage, sb = b_base + p_stage * b_stage;
        ++smem.generation;
        std::fill_n(smem.bytes.begin() + sa, a_stage, 0xFF);
        std::fill_n(smem.bytes.begin() + sb, b_stage, 0xFF);
        std::int64_t credited =
            load_operand(a_kmajor, bm, bk, sa, map_a, ka_in, smem, kt * bk, m0, tc.batch, d, errors);
        if (!multicast) {
          credited += load_operand(b_kmajor, bn, bk, sb, map_b, kb_in, smem, kt * bk, n0, tc.batch, d, errors);
        } else {
          // tt_load_half_multicast of both CTAs: each half lands in this CTA's stage as well.
          for (int half = 0; half < 2; ++half) {
            if (half != rank && d.multicast_own_half_only) continue;
            const int place = d.multicast_same_offset ? 0 : half;
            if (b_kmajor) {
              credited += tma_copy_box(map_b, kb_in, smem, sb + tt_multicast_kmajor_offset(bn, place), kt * bk,
                                       n0 + tt_multicast_first_row(bn, half), tc.batch, d, errors);
            } else {
              for (int j = 0; j < bn / 128; ++j) {
                const int box = tt_multicast_first_box(bn, half) + j;
                const int at = tt_multicast_first_box(bn, place) + j;
                credited += tma_copy_box(map_b, kb_in, smem, sb + static_cast<std::uint32_t>(at * bk * 128),
                                         n0 + 64 * box, kt * bk, tc.batch, d, errors);
              }
            }
          }
        }
        std::uint32_t announced = tt_stage_tx_bytes(bm, bn, bk, eb);
        if (tma_scales) {
          // The bulk copy of A's scales of this k-block (cp.async.bulk: 16-byte units from a 16-byte
          // aligned address, scale_a's buffer being aligned so), into the poisoned stage.
          const std::uint32_t ss = scales_base + p_stage * scale_stage;
          std::fill_n(smem.bytes.begin() + ss, scale_stage, 0xFF);
          const int kb = kt + (d.scale_k_block_off_by_one ? 1 : 0);
          const std::uint32_t bytes = d.scale_copy_whole_tile ? 4u * static_cast<std::uint32_t>(bm)
                                                              : tt_scale_a_copy_bytes(m0, bm, M);
          const long long first = tt_block_scale_a_index(kb, m0, M);
          if (bytes % 16 != 0 || (first * 4) % 16 != 0)
            errors.push_back(fmt::format("a bulk copy of {} bytes of scale_a from float {}: not 16-byte units", bytes, first));
          else if (bytes > 0 && (first < 0 || first + bytes / 4 > static_cast<long long>(scales->a.size())))
            errors.push_back(fmt::format("a bulk copy of scale_a's floats {}..{} of {}", first, first + bytes / 4,
                                         scales->a.size()));
          else if (bytes > 0)
            std::memcpy(smem.bytes.data() + ss, scales->a.data() + first, bytes);
          credited += bytes;
          announced += d.scale_copy_unannounced ? 0 : tt_scale_a_copy_bytes(m0, bm, M);
        }
        if (credited != announced)
          errors.push_back(fmt::format("TMA credits {} bytes, expect_tx announces {}", credited, announced));
        p_phase = tt_ring_advance(p_stage, p_phase, stages);
        // Consumers: the k-steps of this k-tile, as the kernel's loop builds them.
        const std::uint32_t ca = a_base + c_stage * a_stage, cb = b_base + c_stage * b_stage;
        for (int consumer = 0; consumer < consumers; ++consumer)
          if (only_consumer < 0 || consumer == only_consumer)
          for (int kk = 0; kk < bk; kk += mma_k) {
            const int kq = d.half_k_step ? kk / 2 : kk;
            const std::uint64_t db = desc(cb + tt_operand_offset(b_kmajor, 0, kq, bk, eb), lbo_b);
            for (int mi = 0; mi < mi_count; ++mi) {
              const std::uint64_t da = desc(
                  ca + tt_operand_offset(a_kmajor, row_of(consumer) + mi * 64, kq, bk, eb), lbo_a);
              const std::size_t at = static_cast<std::size_t>(consumer * mi_count + mi);
              if (!promote) {
                emulate_wgmma(tc_unit, smem, da, db, kt > u.k_begin || kk > 0, acc[at], errors);
                continue;
              }
              const bool scale_d = d.part_never_reset ? true
                                   : d.no_promotion   ? kt > u.k_begin || kk > 0
                                                      : tt_part_scale_d(kt, u.k_begin, promote, kk) != 0;
              emulate_wgmma(tc_unit, smem, da, db, scale_d, part[at], errors);
            }
          }
        if (promote) {
          const bool now = d.no_promotion              ? kt + 1 == u.k_end
                           : d.promote_only_on_interval ? (kt - u.k_begin + 1) % promote == 0
                                                        : tt_promotes_after(kt, u.k_begin, u.k_end, promote);
          const int n_blocks = (N + TT_SCALE_BLOCK - 1) / TT_SCALE_BLOCK;
          const int kb = kt + (d.scale_k_block_off_by_one ? 1 : 0);
          if (now)
            for (int consumer = 0; consumer < consumers; ++consumer)
              for (int mi = 0; mi < mi_count; ++mi)
                for (int warp = 0; warp < 4; ++warp)
                  for (int lane = 0; lane < 32; ++lane)
                    for (int r = 0; r < bn / 2; ++r) {
                      const std::size_t at = static_cast<std::size_t>(consumer * mi_count + mi);
                      float& a = acc[at].at(warp, lane, r);
                      const float pv = part[at].at(warp, lane, r);
                      if (scaling != 2) {
                        a += pv;
                        continue;
                      }
                      // The kernel's register r: 8-column block r / 4, row half (r / 2) % 2.
                      const int row = m0 + row_of(consumer) + mi * 64 + tt_acc_warp_row0(warp) + tt_acc_row(lane, (r >> 1) & 1);
                      float s = 0;
                      if (swap) {
                        // The kernel's rows are the weights' (B's blocks of 128 rows, M of them), its
                        // columns the tokens' (A's k-block scales, N of them).
                        const int col = n0 + tt_acc_col(lane, r >> 2, r & 1);
                        const int m_blocks = (M + TT_SCALE_BLOCK - 1) / TT_SCALE_BLOCK;
                        const std::vector<float>& rows = d.swap_scales_unswapped ? scales->a : scales->b;
                        const std::vector<float>& cols = d.swap_scales_unswapped ? scales->b : scales->a;
                        s = scale_at(rows, tt_block_scale_b_index(kb, row / TT_SCALE_BLOCK, m_blocks)) *
                            scale_at(cols, tt_block_scale_a_index(kb, col, N));
                      } else {
                        const int half = d.scale_b_first_block_only ? 0 : tt_scale_b_half(n0, r >> 2);
                        float sa = 0;
                        if (tma_scales) {  // tt_read_stage_scales: the row's scale in the stage
                          const int read_stage = d.scale_copy_next_stage ? (c_stage + 1) % stages : c_stage;
                          std::memcpy(&sa, smem.bytes.data() + scales_base + read_stage * scale_stage + 4 * (row - m0), 4);
                        } else {
                          sa = scale_at(scales->a, tt_block_scale_a_index(kb, row, M));
                        }
                        s = sa * scale_at(scales->b, tt_block_scale_b_index(kb, n0 / TT_SCALE_BLOCK + half, n_blocks));
                      }
                      a = d.scale_after_add ? (a + pv) * s : a + pv * s;
                    }
        }
        c_phase = tt_ring_advance(c_stage, c_phase, stages);
      }
      if (p_stage != c_stage || p_phase != c_phase)
        errors.push_back("producer and consumers left the ring apart");
      if (split > 1) {  // tt_split_publish, or the leader waits for its peers (tt_split_gather)
        if (rank == 0) {
          owners.push_back({u, tc, std::move(acc)});
          owners.back().u.worker = cluster;
          owners.back().u.first_peer = ui;  // the leader's i-th tile
          continue;
        }
        const int slot = rank - 1 + (d.split_peer_in_next_slot ? 1 : 0);
        std::vector<float>& buffer = split_slots[{cluster, ui, slot}];
        buffer.assign(static_cast<std::size_t>(slot_floats), std::numeric_limits<float>::quiet_NaN());
        for (int ct = 0; ct < consumer_threads; ++ct)
          for (int value = 0; value < mi_count * bn / 2; ++value)
            buffer[static_cast<std::size_t>(tt_sk_workspace_index(0, value, ct, consumer_threads, slot_floats))] =
                acc_value(acc, ct, value);
        continue;
      }
      if (u.worker >= 0 && !u.owner) {  // tt_sk_publish
        const int slot = u.worker + (d.peer_publishes_next_slot ? 1 : 0);
        for (int ct = 0; ct < consumer_threads; ++ct)
          for (int value = 0; value < mi_count * bn / 2; ++value) {
            const long long at = tt_sk_workspace_index(slot, value, ct, consumer_threads, slot_floats);
            if (at < 0 || at >= static_cast<long long>(workspace.size())) {
              errors.push_back(fmt::format("worker {} writes past the workspace", u.worker));
              break;
            }
            workspace[static_cast<std::size_t>(at)] = acc_value(acc, ct, value);
          }
        continue;
      }
      if (u.worker >= 0 && u.first_peer <= u.last_peer) {
        owners.push_back({u, tc, std::move(acc)});
        continue;
      }
      epilogue(tc, acc);
    }
  }
  // tt_sk_gather: each owner adds its peers' partials in worker order, then stores C.
  for (waiting_owner& w : owners) {
    if (split > 1) {  // tt_split_gather: slots 0 .. split - 2 in rank order
      const int last = split - 2 - (d.split_skips_last_peer ? 1 : 0);
      for (int slot = 0; slot <= last && errors.empty(); ++slot) {
        const auto at = split_slots.find({w.u.worker, w.u.first_peer, slot});
        if (at == split_slots.end()) {
          errors.push_back(fmt::format("cluster {} tile {}: slot {} was never written", w.u.worker, w.u.first_peer, slot));
          break;
        }
        for (int ct = 0; ct < consumer_threads; ++ct)
          for (int value = 0; value < mi_count * bn / 2; ++value)
            acc_value(w.acc, ct, value) += at->second[static_cast<std::size_t>(
                tt_sk_workspace_index(0, value, ct, consumer_threads, slot_floats))];
      }
      epilogue(w.tc, w.acc);
      continue;
    }
    const int last = w.u.last_peer - (d.fixup_skips_last_peer ? 1 : 0);
    for (int peer = w.u.first_peer; peer <= last; ++peer)
      for (int ct = 0; ct < consumer_threads; ++ct)
        for (int value = 0; value < mi_count * bn / 2; ++value)
          acc_value(w.acc, ct, value) += workspace[static_cast<std::size_t>(
              tt_sk_workspace_index(peer, value, ct, consumer_threads, slot_floats))];
    epilogue(w.tc, w.acc);
  }
  return out;
}

inline gemm_problem problem(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, dtype t,
                     const char* l) {
  gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.type = t;
  p.scaling = default_scaling(t);
  p.layout = parse_layout(l);
  return p;
}

// Emulates and compares; returns "" when the emulated kernel is right.
inline std::string run_and_compare(const tile_config& c, const prepared& x, double alpha, double beta,
                            int sm_count, const defects& d = {}, int stream_k = 0) {
  gemm_problem p = x.p;
  p.alpha = alpha;
  p.beta = beta;
  const emulation e = emulate_kernel(c, p, x.a, x.b, beta == 0.0 ? x.c_nan : x.c, sm_count, d, stream_k, &x.scales);
  if (!e.errors.empty()) return "emulation error: " + e.errors.front();
  const compare_result r = compare_with_host_gemm(x, alpha, beta, e.c, e.writes);
  if (r.mismatches || r.unwritten_or_rewritten)
    return fmt::format("{} mismatches, {} elements not written exactly once; first: {}",
                       r.mismatches, r.unwritten_or_rewritten, r.first);
  return "";
}

struct case_layout {
  dtype t;
  const char* layout;
};
const case_layout all_layouts[] = {{dtype::f16, "nn"},  {dtype::f16, "nt"},  {dtype::f16, "tn"},
                                   {dtype::f16, "tt"},  {dtype::bf16, "nn"}, {dtype::bf16, "nt"},
                                   {dtype::bf16, "tn"}, {dtype::bf16, "tt"}, {dtype::tf32, "nt"}};


}  // namespace wgmma_emu
