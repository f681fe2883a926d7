// A host emulation of the wgmma kernel's data path (kernels_templates/wgmma/wgmma_gemm.cu),
// written from the PTX ISA and the CUDA driver API rather than from the kernel:
// TMA box copies into 128-byte-swizzled shared memory as tensor_map_for()
// describes them, wgmma's operand fetch decoded from the descriptors the kernel
// builds, the accumulator fragments of m64nNk16 / m64nNk8, and the epilogue.
// The kernel's own index math (wgmma_tile_math.cuh) is called, never copied, so
// a bug there shows here as a wrong product against a plain host GEMM; planted
// defects show that the comparison can fail.
#include <fmt/format.h>
#include <gtest/gtest.h>

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

using namespace tiletune;

namespace {

// ---- element formats -------------------------------------------------------
// f16 and bf16 are exact in float; the kernel rounds its results with
// cvt.rn (round to nearest even), as these do.
std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
float bf16_to_float(std::uint16_t b) { return bits_float(static_cast<std::uint32_t>(b) << 16); }
std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
float f16_to_float(std::uint16_t h) {
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  const int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -24);
  if (exp == 31) return mant ? std::nanf("") : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(1024 + mant), exp - 25);
}
std::uint16_t float_to_f16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7E00;
  if (a >= 65520.0f) return sign | 0x7C00;  // rounds to infinity
  if (a < std::ldexp(1.0f, -14)) {
    // Subnormal: units of 2^-24, rounded to nearest even (the default rounding mode).
    return sign | static_cast<std::uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  std::uint32_t h = ((((u >> 23) & 0xFF) - 127 + 15) << 10) | ((u & 0x7FFFFF) >> 13);
  const std::uint32_t rest = u & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry into the exponent is right too
  return sign | static_cast<std::uint16_t>(h);
}
// tf32 keeps 10 mantissa bits: inputs are rounded once (to nearest even) when
// generated, and the tensor core ignores the low 13 bits of what it reads.
float round_to_tf32(float f) {
  std::uint32_t u = float_bits(f);
  u += 0xFFFu + ((u >> 13) & 1u);
  return bits_float(u & ~0x1FFFu);
}
float truncate_to_tf32(float f) { return bits_float(float_bits(f) & ~0x1FFFu); }

// Every f16 as a float, computed once: the emulation converts many.
const std::vector<float>& f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (std::uint32_t h = 0; h < 65536; ++h) t[h] = f16_to_float(static_cast<std::uint16_t>(h));
    return t;
  }();
  return table;
}
float load_element(const std::uint8_t* p, dtype t) {
  if (t == dtype::f16 || t == dtype::bf16) {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return t == dtype::f16 ? f16_table()[h] : bf16_to_float(h);
  }
  float f;
  std::memcpy(&f, p, 4);
  return f;
}
void store_element(std::uint8_t* p, dtype t, float v) {
  if (t == dtype::f16 || t == dtype::bf16) {
    const std::uint16_t h = t == dtype::f16 ? float_to_f16(v) : float_to_bf16(v);
    std::memcpy(p, &h, 2);
  } else {
    std::memcpy(p, &v, 4);
  }
}
float round_to(dtype t, float v) {
  switch (t) {
    case dtype::f16:
      return f16_to_float(float_to_f16(v));
    case dtype::bf16:
      return bf16_to_float(float_to_bf16(v));
    case dtype::tf32:
      return round_to_tf32(v);
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
  bool multicast_own_half_only = false;   // 2x1 cluster: the peer's half of B never lands here
  bool multicast_same_offset = false;     // 2x1 cluster: both halves of B land at the first half's place
};

// ---- shared memory and TMA -------------------------------------------------
// The 128-byte swizzle (CUDA driver API, cuTensorMapEncodeTiled,
// CU_TENSOR_MAP_SWIZZLE_128B; PTX ISA "Tensor Memory Accelerator", tensor copy
// swizzling modes): in each 1024-byte atom the 16-byte chunk index (address
// bits 4-6) is XORed with the index of the 128-byte row (bits 7-9), on the
// shared-memory address itself.
std::uint32_t swizzle_128b(std::uint32_t addr, int row_mask = 7) {
  return addr ^ (((addr >> 7) & static_cast<std::uint32_t>(row_mask)) << 4);
}

struct shared_memory {
  std::vector<std::uint8_t> bytes;  // index = shared-memory address
  std::uint64_t generation = 0;     // counts writes to the operand stages
};

int map_element_bytes(const tensor_map_spec& m) {
  return m.type == tensor_map_spec::element::f32 ? 4 : 2;
}

// One cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes
// (PTX ISA "cp.async.bulk.tensor"; driver API cuTensorMapEncodeTiled): the box
// of box[0] x box[1] x box[2] elements at coordinates (c0, c1, c2) of the
// tensor, innermost first, lands densely (box[0] elements a row) at dst with
// the swizzle applied; elements outside dims are zeros
// (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE). Returns the bytes the copy credits to
// the mbarrier's tx-count: the whole box, zero fill included.
std::int64_t tma_copy_box(const tensor_map_spec& map, const std::vector<std::uint8_t>& global,
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
std::int64_t load_operand(bool k_major, int rows, int bk, std::uint32_t dst,
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
};
wgmma_instruction parse_instruction(dtype t, int n, layout l) {
  const std::string s = wgmma_instruction_source(t, n, l);
  wgmma_instruction w;
  const auto at = s.find("m64n");
  EXPECT_NE(at, std::string::npos) << s;
  if (at == std::string::npos) return w;
  w.n = std::stoi(s.substr(at + 4));
  w.k = std::stoi(s.substr(s.find('k', at + 4) + 1));
  // "..., p, 1, 1, ta, tb;" for 16-bit types, "..., p, 1, 1;" for tf32 (no transposes: K-major).
  const auto imm = s.find("p, 1, 1");
  EXPECT_NE(imm, std::string::npos) << s;
  if (imm != std::string::npos && s[imm + 7] == ',') {
    w.a_mn_major = s[imm + 9] == '1';
    w.b_mn_major = s[imm + 12] == '1';
  }
  return w;
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
std::int64_t wgmma_operand_address(std::uint64_t desc, bool mn_major, int mn, int k, int eb,
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
fragment_coord isa_d_fragment(int warp, int lane, int i) {
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
void emulate_wgmma(tensor_core& tc, const shared_memory& smem, std::uint64_t desc_a,
                   std::uint64_t desc_b, bool scale_d, accumulators& acc,
                   std::vector<std::string>& errors) {
  const dtype t = tc.t;
  const int eb = element_bytes(t);
  const int n = tc.ins.n, k = tc.ins.k;
  auto fetch = [&](std::uint64_t desc, bool mn_major, int mn, int kk) -> float {
    const std::int64_t addr = wgmma_operand_address(desc, mn_major, mn, kk, eb, errors);
    if (addr < 0 || addr + eb > static_cast<std::int64_t>(smem.bytes.size())) {
      if (addr >= 0) errors.push_back(fmt::format("wgmma reads past shared memory at {:#x}", addr));
      return 0.0f;
    }
    const float x = load_element(smem.bytes.data() + addr, t);
    return t == dtype::tf32 ? truncate_to_tf32(x) : x;
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
        tile[static_cast<std::size_t>(kk * n + nn)] = fetch(desc_b, tc.ins.b_mn_major, nn, kk);
    tc.b_read.emplace_back(desc_b, std::move(tile));
    b = &tc.b_read.back().second;
  }
  for (int m = 0; m < 64; ++m)
    for (int kk = 0; kk < k; ++kk)
      tc.a[static_cast<std::size_t>(m * k + kk)] = fetch(desc_a, tc.ins.a_mn_major, m, kk);
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
    acc.v[r] = scale_d ? acc.v[r] + x : x;
  }
}

// ---- the problem's data and the reference -----------------------------------
// One problem's inputs (stored layouts, the dtype's bits, tf32 as f32) and
// its host GEMM, shared by every variant that runs it.
struct prepared {
  gemm_problem p;
  std::vector<std::uint8_t> a, b, c, c_nan;  // c_nan: C where beta == 0, which must not be read
  std::vector<double> dot, magnitude;        // op(A) op(B) and the sum of |terms|, per element of C
};
// Values in [-1, 1) rounded to the dtype, from a fixed seed (deterministic).
// A straightforward host GEMM in double gives the reference.
prepared prepare(const gemm_problem& p, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const int eb = element_bytes(p.type);
  const dtype store = p.type == dtype::tf32 ? dtype::f32 : p.type;
  auto fill = [&](std::vector<std::uint8_t>& v, std::int64_t count, bool nan) {
    v.assign(static_cast<std::size_t>(count * eb), 0);
    for (std::int64_t i = 0; i < count; ++i) {
      const float x = static_cast<float>(rng() >> 8) * 0x1p-23f - 1.0f;
      store_element(v.data() + i * eb, store, nan ? std::nanf("") : round_to(p.type, x));
    }
  };
  prepared x;
  x.p = p;
  fill(x.a, p.m * p.k * p.batch, false);
  fill(x.b, p.k * p.n * p.batch, false);
  fill(x.c, p.m * p.n * p.batch, false);
  fill(x.c_nan, p.m * p.n * p.batch, true);
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
        b_col[static_cast<std::size_t>(n * p.k + k)] = load_element(x.b.data() + bi * eb, store);
      }
    for (std::int64_t m = 0; m < p.m; ++m) {
      for (std::int64_t k = 0; k < p.k; ++k) {
        const std::int64_t ai =
            bt * p.m * p.k + (p.layout.a_transposed ? k * lda + m : m * lda + k);
        a_row[static_cast<std::size_t>(k)] = load_element(x.a.data() + ai * eb, store);
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
compare_result compare_with_host_gemm(const prepared& x, double alpha, double beta,
                                      const std::vector<std::uint8_t>& out,
                                      const std::vector<int>& writes) {
  const gemm_problem& p = x.p;
  const int eb = element_bytes(p.type);
  const dtype store = p.type == dtype::tf32 ? dtype::f32 : p.type;
  const double out_rel = p.type == dtype::bf16 ? 0x1p-8 : p.type == dtype::f16 ? 0x1p-11 : 0x1p-24;
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
int rendered_macro(const std::string& source, const std::string& name) {
  const std::string key = "#define " + name + " ";
  const auto at = source.find(key);
  return at == std::string::npos ? 0 : std::stoi(source.substr(at + key.size()));
}

emulation emulate_kernel(const tile_config& c, const gemm_problem& p,
                         const std::vector<std::uint8_t>& a_in,
                         const std::vector<std::uint8_t>& b_in,
                         const std::vector<std::uint8_t>& c_in, int sm_count,
                         const defects& d = {}, int stream_k = 0) {
  emulation out;
  auto& errors = out.errors;
  const dtype t = p.type;
  const int eb = element_bytes(t);
  const dtype store = t == dtype::tf32 ? dtype::f32 : t;
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
  char a_matrix = map_tensor("tmap_a")[0], b_matrix = map_tensor("tmap_b")[0];
  if (d.swap_maps_in_problem_order) a_matrix = 'A', b_matrix = 'B';
  const std::vector<std::uint8_t>& ka_in = a_matrix == 'B' ? b_in : a_in;
  const std::vector<std::uint8_t>& kb_in = b_matrix == 'A' ? a_in : b_in;
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
  const bool a_kmajor = swap ? p.layout.b_transposed : !p.layout.a_transposed;
  const bool b_kmajor = swap ? !p.layout.a_transposed : p.layout.b_transposed;
  const wgmma_instruction ins = parse_instruction(t, bn, wgmma_kernel_layout(c, p.layout));
  tensor_core tc_unit(ins, t);
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
  const bool c_vectors = (ldc * eb) % 16 == 0 && (batch_stride_c * eb) % 16 == 0;
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
  const int epi_n = 128 / eb;  // TT_EPI_N

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
  std::function<void(const tt_tile_coord&, std::vector<accumulators>&)> epilogue;
  epilogue = [&](const tt_tile_coord& tc, std::vector<accumulators>& acc) {
    const int m0 = tc.m_tile * bm, n0 = tc.n_tile * bn;
    if (tma_store) {
      // The TMA-store epilogue (tt_epilogue_tma): per consumer, m64 tile and 64-column chunk, each
      // warp's stmatrix .m8n8.x4 as the PTX ISA defines it (lane 8m + r gives the address of row r
      // of matrix m; thread t's register m holds row t / 4, columns 2(t % 4) and +1) into a
      // 64-row x 128-byte staging buffer, then the bulk tensor store of the box at (column, row,
      // batch) through C's tensor map: read through the driver's 128-byte swizzle, written only
      // where the map's dimensions hold the element.
      const tensor_map_spec map_c = tensor_map_for(p, c, 'c');
      const long long cbatch_bytes = static_cast<long long>(tc.batch) * static_cast<long long>(map_c.strides_bytes[1]);
      for (int consumer = 0; consumer < consumers && errors.empty(); ++consumer)
        if (only_consumer < 0 || consumer == only_consumer)
        for (int mi = 0; mi < mi_count; ++mi)
          for (int chunk = 0; chunk < bn / 64; ++chunk) {
            std::vector<std::uint8_t> staging(TT_TMA_STORE_BUFFER_BYTES, 0xFF);
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
                    for (int t = 4 * r; t < 4 * r + 4; ++t) {
                      store_element(staging.data() + addr + 4 * (t % 4), store, reg(t, m, 0));
                      store_element(staging.data() + addr + 4 * (t % 4) + 2, store, reg(t, m, 1));
                    }
                  }
              }
            }
            const long long row0 = m0 + row_of(consumer) + mi * 64, col0 = n0 + 64 * chunk;
            for (int row = 0; row < static_cast<int>(map_c.box[1]); ++row)
              for (int col = 0; col < static_cast<int>(map_c.box[0]); ++col) {
                const long long gr = row0 + row, gc = col0 + col;
                const bool inside = gc < static_cast<long long>(map_c.dims[0]) && gr < static_cast<long long>(map_c.dims[1]);
                if (!inside && !d.tma_store_unclipped) continue;
                const long long byte = cbatch_bytes + gr * static_cast<long long>(map_c.strides_bytes[0]) + gc * eb;
                const long long at = byte / eb;
                if (at < 0 || at >= static_cast<long long>(out.writes.size())) {
                  errors.push_back(fmt::format("the TMA store writes outside C (element {})", at));
                  return;
                }
                std::memcpy(out.c.data() + at * eb, staging.data() + swizzle_128b(static_cast<std::uint32_t>(row * 128 + col * eb)),
                            static_cast<std::size_t>(eb));
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
      for (int consumer = 0; consumer < consumers && errors.empty(); ++consumer)
        if (only_consumer < 0 || consumer == only_consumer)
        for (int mi = 0; mi < mi_count; ++mi)
          for (int warp = 0; warp < 4; ++warp)
            for (int lane = 0; lane < 32; ++lane)
              for (int j = 0; j < bn / 8; ++j)
                for (int h = 0; h < 2; ++h)
                  for (int e = 0; e < 2; ++e) {
                    const int r = m0 + row_of(consumer) + mi * 64 + tt_acc_warp_row0(warp) + tt_acc_row(lane, h);
                    const int col = n0 + tt_acc_col(lane, j, e) + (d.fragment_col_off_by_one ? 1 : 0);
                    if (r >= M || (col >= N && !d.swap_stores_padded_rows)) continue;
                    const long long at =
                        cbatch + (d.swap_store_untransposed ? static_cast<long long>(r) * ldc + col
                                                            : static_cast<long long>(col) * ldc + r);
                    if (at < 0 || at >= static_cast<long long>(out.writes.size())) {
                      errors.push_back(fmt::format("the epilogue stores outside C (element {})", at));
                      return;
                    }
                    std::uint8_t* cp = out.c.data() + at * eb;
                    float v = alpha * acc[static_cast<std::size_t>(consumer * mi_count + mi)].at(
                                          warp, lane, tt_acc_index(j, h, e));
                    if (beta != 0.0f) v += beta * load_element(cp, store);
                    store_element(cp, store, v);
                    ++out.writes[static_cast<std::size_t>(at)];
                  }
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
          return out.c.data() + (cbatch + static_cast<long long>(gr) * ldc + gc) * eb;
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
                  if (gr < M && gc < N) v0 += beta * load_element(c_at(gr, gc), store);
                  if (gr < M && gc + 1 < N) v1 += beta * load_element(c_at(gr, gc + 1), store);
                }
                std::uint8_t* s =
                    smem.bytes.data() + stage_buf + r * TT_EPI_ROW_BYTES + col * eb;
                store_element(s, store, v0);
                store_element(s + eb, store, v1);
              }
            }
          for (int lane = 0; lane < 32; ++lane)
            for (int pass = 0; pass < 4; ++pass) {
              const int r = tt_epi_copy_row(pass, lane), v = tt_epi_copy_vector(lane);
              const int gr = row0 + r, gc = cc0 + v * (16 / eb);
              const std::uint8_t* x =
                  smem.bytes.data() + stage_buf + r * TT_EPI_ROW_BYTES + v * 16;
              if (gr >= M) continue;
              const int count =
                  (c_vectors && gc + 16 / eb <= N) ? 16 / eb : std::min(16 / eb, N - gc);
              for (int i = 0; i < count; ++i) {
                std::memcpy(c_at(gr, gc + i), x + i * eb, static_cast<std::size_t>(eb));
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
        if (credited != tt_stage_tx_bytes(bm, bn, bk, eb))
          errors.push_back(fmt::format("TMA credits {} bytes, expect_tx announces {}", credited,
                                       tt_stage_tx_bytes(bm, bn, bk, eb)));
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
              emulate_wgmma(tc_unit, smem, da, db, kt > u.k_begin || kk > 0,
                            acc[static_cast<std::size_t>(consumer * mi_count + mi)], errors);
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

gemm_problem problem(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, dtype t,
                     const char* l) {
  gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.type = t;
  p.layout = parse_layout(l);
  return p;
}

// Emulates and compares; returns "" when the emulated kernel is right.
std::string run_and_compare(const tile_config& c, const prepared& x, double alpha, double beta,
                            int sm_count, const defects& d = {}, int stream_k = 0) {
  gemm_problem p = x.p;
  p.alpha = alpha;
  p.beta = beta;
  const emulation e = emulate_kernel(c, p, x.a, x.b, beta == 0.0 ? x.c_nan : x.c, sm_count, d, stream_k);
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

}  // namespace

// ---- the pieces, each against its documentation -------------------------------

TEST(wgmma_emulation, element_conversions_round_trip) {
  // The host's f16 / bf16 conversions, which the comparison leans on: every
  // finite value survives float and back, and ties round to even.
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const std::uint16_t v = static_cast<std::uint16_t>(h);
    if (((v >> 10) & 0x1F) != 0x1F) {
      ASSERT_EQ(float_to_f16(f16_to_float(v)), v) << h;
    }
    if (((v >> 7) & 0xFF) != 0xFF) {
      ASSERT_EQ(float_to_bf16(bf16_to_float(v)), v) << h;
    }
  }
  EXPECT_EQ(f16_to_float(0x3C00), 1.0f);
  EXPECT_EQ(float_to_f16(1.0f + 0x1p-11f), 0x3C00);      // tie, to even
  EXPECT_EQ(float_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie, to even (up)
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(float_to_f16(0x1p-25f * 3), 0x0002);  // subnormal tie, to even
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-11f), 1.0f);
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);
}

TEST(wgmma_emulation, tma_box_lands_swizzled_and_zero_filled) {
  // A 9-row, 64-element bf16 box (one 128-byte row per tensor row, so the
  // XOR pattern wraps) whose last 4 elements lie past the tensor's 60 columns; element (r, x) holds
  // r*64+x+1.
  tensor_map_spec map;
  map.type = tensor_map_spec::element::bf16;
  map.dims = {60, 9, 1};
  map.strides_bytes = {128, 128 * 9};
  map.box = {64, 9, 1};
  std::vector<std::uint8_t> global(128 * 9);
  for (int r = 0; r < 9; ++r)
    for (int x = 0; x < 64; ++x) {
      const std::uint16_t v = static_cast<std::uint16_t>(r * 64 + x + 1);
      std::memcpy(global.data() + r * 128 + x * 2, &v, 2);
    }
  shared_memory smem;
  smem.bytes.assign(4096, 0xAB);
  std::vector<std::string> errors;
  EXPECT_EQ(tma_copy_box(map, global, smem, 1024, 0, 0, 0, {}, errors),
            64 * 9 * 2);  // the whole box
  ASSERT_TRUE(errors.empty()) << errors.front();
  for (int r = 0; r < 9; ++r)
    for (int x = 0; x < 64; ++x) {
      // Chunk x/8 of row r sits at chunk (x/8) ^ (r%8) of the 128-byte row r.
      const int chunk = (x / 8) ^ (r % 8);
      std::uint16_t got;
      std::memcpy(&got, smem.bytes.data() + 1024 + r * 128 + chunk * 16 + (x % 8) * 2, 2);
      EXPECT_EQ(got, x < 60 ? r * 64 + x + 1 : 0) << "row " << r << " element " << x;
    }
  // A destination off the 1024-byte pattern is refused.
  tma_copy_box(map, global, smem, 1024 + 128, 0, 0, 0, {}, errors);
  EXPECT_FALSE(errors.empty());
}

TEST(wgmma_emulation, accumulator_fragment_map_is_the_ptx_isas) {
  // The kernel's tt_acc_* against the ISA's D fragment, for every register of
  // every lane of the widest instruction; and the map covers 64 x 256 once.
  const int n = 256;
  std::vector<int> seen(64 * n, 0);
  for (int warp = 0; warp < 4; ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int j = 0; j < n / 8; ++j)
        for (int h = 0; h < 2; ++h)
          for (int e = 0; e < 2; ++e) {
            const int i = tt_acc_index(j, h, e);
            ASSERT_GE(i, 0);
            ASSERT_LT(i, n / 2);
            const fragment_coord isa = isa_d_fragment(warp, lane, i);
            EXPECT_EQ(tt_acc_warp_row0(warp) + tt_acc_row(lane, h), isa.row)
                << warp << " " << lane << " " << i;
            EXPECT_EQ(tt_acc_col(lane, j, e), isa.col) << warp << " " << lane << " " << i;
            ++seen[static_cast<std::size_t>(isa.row * n + isa.col)];
          }
  for (int v : seen) ASSERT_EQ(v, 1);
  // The copy-out covers the warp's 16 staged rows x 8 vectors once.
  std::vector<int> copied(16 * 8, 0);
  for (int pass = 0; pass < 4; ++pass)
    for (int lane = 0; lane < 32; ++lane)
      ++copied[static_cast<std::size_t>(tt_epi_copy_row(pass, lane) * 8 +
                                        tt_epi_copy_vector(lane))];
  for (int v : copied) EXPECT_EQ(v, 1);
}

TEST(wgmma_emulation, operand_fetch_reads_the_element_tma_wrote) {
  // Bit-exact: every element of A and B wgmma reads, per k-step of a k-tile,
  // through the kernel's descriptors, is the one op(A)(m, k) / op(B)(k, n) of
  // the global tensor (zero past its edges). Tags, not numbers: element
  // (row, col) of a stored matrix holds its own coordinates.
  const device_spec& h100 = find_preset("h100-sxm");
  int checked = 0;
  for (const auto& cl : all_layouts) {
    // An edge tile: M, N and K end inside the tile.
    const gemm_problem p = problem(200, 136, 72, 2, cl.t, cl.layout);
    const int eb = element_bytes(p.type);
    for (const tile_config& c : default_search_space(family_named("wgmma"), p.type)) {
      if (c.stages != 3 || c.raster_group != 8 || c.raster_along_n || check_constraints(c, p, h100))
        continue;
      const bool a_kmajor = !p.layout.a_transposed, b_kmajor = p.layout.b_transposed;
      const tensor_map_spec map_a = tensor_map_for(p, c, 'a'), map_b = tensor_map_for(p, c, 'b');
      auto tagged = [&](const tensor_map_spec& m) {
        std::vector<std::uint8_t> g(static_cast<std::size_t>(m.dims[2] * m.strides_bytes[1]));
        for (std::uint64_t b = 0; b < m.dims[2]; ++b)
          for (std::uint64_t r = 0; r < m.dims[1]; ++r)
            for (std::uint64_t x = 0; x < m.dims[0]; ++x) {
              const std::uint32_t tag =
                  eb == 2 ? 1 + ((r % 512) * 128 + x % 128) % 65535
                          : static_cast<std::uint32_t>(1 + (b * 4096 + r) * 4096 + x);
              std::memcpy(g.data() + b * m.strides_bytes[1] + r * m.strides_bytes[0] + x * eb, &tag,
                          static_cast<std::size_t>(eb));
            }
        return g;
      };
      auto tag_of = [&](const tensor_map_spec& m, std::int64_t row, std::int64_t col,
                        std::int64_t b) -> std::uint32_t {
        if (row >= static_cast<std::int64_t>(m.dims[1]) ||
            col >= static_cast<std::int64_t>(m.dims[0]))
          return 0;
        return eb == 2 ? static_cast<std::uint32_t>(1 + ((row % 512) * 128 + col % 128) % 65535)
                       : static_cast<std::uint32_t>(1 + (b * 4096 + row) * 4096 + col);
      };
      const auto ga = tagged(map_a), gb = tagged(map_b);
      const wgmma_instruction ins = parse_instruction(p.type, c.block_n, p.layout);
      shared_memory smem;
      smem.bytes.assign(static_cast<std::size_t>(wgmma_smem_bytes(c, p.type)), 0xFF);
      const std::uint32_t sa = 1024 * 2, sb = sa + static_cast<std::uint32_t>(
                                                       tt_smem_a_stage(c.block_m, c.block_k, eb));
      // The last m, n and k tiles of batch 1.
      const int m0 = static_cast<int>((p.m - 1) / c.block_m * c.block_m),
                n0 = static_cast<int>((p.n - 1) / c.block_n * c.block_n);
      const int k0 = static_cast<int>((p.k - 1) / c.block_k * c.block_k), batch = 1;
      std::vector<std::string> errors;
      load_operand(a_kmajor, c.block_m, c.block_k, sa, map_a, ga, smem, k0, m0, batch, {}, errors);
      load_operand(b_kmajor, c.block_n, c.block_k, sb, map_b, gb, smem, k0, n0, batch, {}, errors);
      ASSERT_TRUE(errors.empty()) << errors.front();
      const int wg_m = c.block_m / wgmma_consumers(c), mma_k = ins.k;
      auto read = [&](std::uint64_t desc, bool mn_major, int mn, int k) {
        const std::int64_t addr = wgmma_operand_address(desc, mn_major, mn, k, eb, errors);
        std::uint32_t v = 0;
        if (addr >= 0) std::memcpy(&v, smem.bytes.data() + addr, static_cast<std::size_t>(eb));
        return v;
      };
      for (int kk = 0; kk < c.block_k; kk += mma_k) {
        const std::uint64_t db =
            tt_wgmma_desc(sb + tt_operand_offset(b_kmajor, 0, kk, c.block_k, eb),
                          tt_operand_lbo(b_kmajor, c.block_k), tt_operand_sbo());
        for (int k = 0; k < mma_k; ++k)
          for (int n = 0; n < c.block_n; ++n) {
            const std::int64_t gk = k0 + kk + k, gn = n0 + n;
            const std::uint32_t want =
                b_kmajor ? tag_of(map_b, gn, gk, batch) : tag_of(map_b, gk, gn, batch);
            ASSERT_EQ(read(db, ins.b_mn_major, n, k), want)
                << c.id() << " " << p.describe() << " B k " << gk << " n " << gn;
          }
        for (int consumer = 0; consumer < wgmma_consumers(c); ++consumer)
          for (int mi = 0; mi < wg_m / 64; ++mi) {
            const int mn0 = consumer * wg_m + mi * 64;
            const std::uint64_t da =
                tt_wgmma_desc(sa + tt_operand_offset(a_kmajor, mn0, kk, c.block_k, eb),
                              tt_operand_lbo(a_kmajor, c.block_k), tt_operand_sbo());
            for (int m = 0; m < 64; ++m)
              for (int k = 0; k < mma_k; ++k) {
                const std::int64_t gm = m0 + mn0 + m, gk = k0 + kk + k;
                const std::uint32_t want =
                    a_kmajor ? tag_of(map_a, gm, gk, batch) : tag_of(map_a, gk, gm, batch);
                ASSERT_EQ(read(da, ins.a_mn_major, m, k), want)
                    << c.id() << " " << p.describe() << " A m " << gm << " k " << gk;
              }
          }
      }
      ASSERT_TRUE(errors.empty()) << errors.front();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6 * 9);  // six block shapes, nine dtype/layout pairs
}

// ---- the whole kernel against a host GEMM --------------------------------------

TEST(wgmma_emulation, every_default_variant_matches_a_host_gemm) {
  // Every default variant the constraints allow, every layout: M, N and K end
  // inside tiles, two batches, and two CTAs, so that each walks the ring
  // across two tiles (all block shapes but 128x256 have four tiles here). beta
  // alternates between 0 (C holds NaN and must not be read) and nonzero.
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0, pruned = 0;
  for (const auto& cl : all_layouts) {
    const prepared x = prepare(problem(72, 200, 72, 2, cl.t, cl.layout), 1);
    int index = 0;
    for (const tile_config& c : default_search_space(family_named("wgmma"), cl.t)) {
      const double beta = index++ % 2 ? 0.0 : -0.75;
      if (check_constraints(c, x.p, h100)) {
        ++pruned;
        continue;
      }
      EXPECT_EQ(run_and_compare(c, x, 1.25, beta, 2), "")
          << c.id() << " " << x.p.describe() << " beta " << beta;
      ++ran;
    }
  }
  // 54 per dtype and layout; only shared memory prunes (256x128 and 128x256 at 5 stages).
  EXPECT_GE(ran, 9 * 48);
  EXPECT_EQ(ran + pruned, 9 * 54);
}

TEST(wgmma_emulation, edge_shapes_match_a_host_gemm) {
  // Shapes the constraints allow, on one variant per block shape: a tile
  // that is almost all zero fill, a ring that wraps inside a tile (more
  // k-tiles than stages), whole tiles with vector stores, C rows that are not
  // 16-byte aligned (element-wise stores), three batches on two CTAs.
  struct shape {
    std::int64_t m, n, k, batch;
    double beta;
  };
  const shape shapes[] = {{8, 8, 8, 1, 0.5},
                          {264, 72, 200, 1, -1.0},
                          {256, 256, 128, 1, 0.0},
                          {72, 61, 40, 1, 2.0},
                          {64, 64, 264, 3, 0.25}};
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : all_layouts)
    for (const shape& s : shapes) {
      const prepared x = prepare(problem(s.m, s.n, s.k, s.batch, cl.t, cl.layout), 7);
      for (const tile_config& c : default_search_space(family_named("wgmma"), cl.t)) {
        if (c.raster_group != 8 || c.raster_along_n || c.stages != 3 ||
            check_constraints(c, x.p, h100))
          continue;
        EXPECT_EQ(run_and_compare(c, x, -0.5, s.beta, 2), "")
            << c.id() << " " << x.p.describe() << " beta " << s.beta;
        ++ran;
      }
    }
  // N = 61 is only allowed where B is K-major (ldb = K): nt and tt.
  EXPECT_GE(ran, 6 * (9 * 4 + 5));
}

// ---- the comparison can fail ----------------------------------------------------

TEST(wgmma_emulation, planted_defects_are_caught) {
  // Each defect, injected through the emulation's switches (not by editing the
  // kernel), must make the emulated kernel disagree with the host GEMM on a
  // variant with one K-major and one MN-major operand and on a tf32 one.
  struct planted {
    const char* name;
    defects d;
  };
  std::vector<planted> all;
  all.push_back({"LBO and SBO swapped", {}});
  all.back().d.swap_lbo_sbo = true;
  all.push_back({"swizzle XOR with the row mod 4", {}});
  all.back().d.tma_swizzle_row_mask = 3;
  all.push_back({"descriptor without the 128B swizzle", {}});
  all.back().d.descriptor_no_swizzle = true;
  all.push_back({"k-step advance halved", {}});
  all.back().d.half_k_step = true;
  all.push_back({"fragment column off by one", {}});
  all.back().d.fragment_col_off_by_one = true;
  all.push_back({"no zero fill past the edges", {}});
  all.back().d.tma_no_zero_fill = true;
  const tile_config c16 = wgmma_tile(128, 128, 64, 2, 3);
  const tile_config c32 = wgmma_tile(128, 128, 32, 1, 4);
  const prepared nn = prepare(problem(136, 200, 72, 2, dtype::bf16, "nn"), 3);
  const prepared tn = prepare(problem(136, 200, 72, 2, dtype::f16, "tn"), 4);
  const prepared tf = prepare(problem(136, 200, 72, 2, dtype::tf32, "nt"), 5);
  // Without a defect all three agree (so a failure below is the defect's).
  EXPECT_EQ(run_and_compare(c16, nn, 1.0, 0.5, 3), "");
  EXPECT_EQ(run_and_compare(c16, tn, 1.0, 0.0, 3), "");
  EXPECT_EQ(run_and_compare(c32, tf, 1.0, 0.0, 3), "");
  for (const planted& pl : all) {
    const std::string r_nn = run_and_compare(c16, nn, 1.0, 0.5, 3, pl.d);
    const std::string r_tn = run_and_compare(c16, tn, 1.0, 0.0, 3, pl.d);
    const std::string r_tf = run_and_compare(c32, tf, 1.0, 0.0, 3, pl.d);
    EXPECT_NE(r_nn, "") << pl.name << " went unnoticed on " << nn.p.describe();
    EXPECT_NE(r_tn, "") << pl.name << " went unnoticed on " << tn.p.describe();
    EXPECT_NE(r_tf, "") << pl.name << " went unnoticed on " << tf.p.describe();
    std::printf("%s:\n  %.160s\n  %.160s\n  %.160s\n", pl.name, r_nn.c_str(), r_tn.c_str(),
                r_tf.c_str());
  }
}

// ---- stream-K: units of k-tiles, partials through the workspace ----------------

TEST(wgmma_emulation, stream_k_units_and_their_fixup_match_a_host_gemm) {
  // The rest after whole waves split into ranges of k-tiles: 4 tiles of 40 k-tiles on 3 CTAs
  // (one whole wave, the last tile in three ranges: an owner and two peers), a decode shape
  // (2 tiles on 5 CTAs, split-K across the grid), two batches, beta reading C.
  struct shape {
    std::int64_t m, n, k, batch;
    int sms;
    double beta;
  };
  const shape shapes[] = {{136, 200, 2560, 1, 3, 0.0}, {16, 200, 1280, 1, 5, -0.5}, {72, 136, 1024, 2, 3, 1.5}};
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::f16, "tn"}, case_layout{dtype::tf32, "nt"}})
    for (const shape& sh : shapes) {
      const prepared x = prepare(problem(sh.m, sh.n, sh.k, sh.batch, cl.t, cl.layout), 11);
      const int bk = cl.t == dtype::tf32 ? 32 : 64;
      for (const tile_config& c : {wgmma_tile(128, 128, bk, 2, 4), wgmma_tile(64, 128, bk, 1, 6)}) {
        EXPECT_EQ(run_and_compare(c, x, 0.75, sh.beta, sh.sms, {}, 1), "") << c.id() << " " << x.p.describe();
        ++ran;
      }
    }
  EXPECT_EQ(ran, 18);
}

TEST(wgmma_emulation, stream_k_planted_defects_are_caught) {
  const prepared x = prepare(problem(16, 200, 1280, 1, dtype::bf16, "nt"), 12);
  const tile_config c = wgmma_tile(64, 128, 64, 1, 6);
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 5, {}, 1), "");
  defects skip;
  skip.fixup_skips_last_peer = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, skip, 1), "") << "an owner that forgets a peer";
  defects slot;
  slot.peer_publishes_next_slot = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 5, slot, 1), "") << "a peer in its neighbour's slot";
  // Without stream-K the same problem runs whole tiles and needs no workspace.
  EXPECT_EQ(run_and_compare(c, x, 1.0, 0.0, 5, skip, 0), "");
}

// ---- swap-AB: the kernel computes C^T, its A the problem's B -------------------------

namespace {
tile_config swap_tile(int rows, int cols, int bk, int consumers, int stages, bool along_n = false) {
  tile_config c = wgmma_tile(rows, cols, bk, consumers, stages, 8, along_n);
  set_wgmma_swap_ab(c, true);
  return c;
}
}  // namespace

TEST(wgmma_emulation, swap_ab_tiles_match_a_host_gemm) {
  // Few rows (1, 5, 16, 30) inside one tile of 8-32 (the instruction's N), the rest of the
  // kernel's N zero-filled by TMA and never stored; 72 rows over three tiles of 32; N ending
  // inside the kernel's 64-256-row tiles; two batches; beta reading C transposed; both raster
  // orders; stream-K splitting a decode shape's k-tiles across 5 CTAs. K-major A only (nt, nn).
  struct shape {
    std::int64_t m, n, k, batch;
    double beta;
  };
  const shape shapes[] = {{1, 200, 136, 1, 0.0}, {5, 136, 72, 2, -0.5}, {16, 200, 200, 1, 1.5},
                          {30, 72, 136, 1, 0.0}, {72, 136, 72, 1, 0.25}};
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::f16, "nn"}, case_layout{dtype::tf32, "nt"}})
    for (const shape& sh : shapes) {
      const prepared x = prepare(problem(sh.m, sh.n, sh.k, sh.batch, cl.t, cl.layout), 21);
      const int bk = cl.t == dtype::tf32 ? 32 : 64;
      int rows = 8;
      while (rows < std::min<std::int64_t>(sh.m, 32)) rows *= 2;
      for (const tile_config& c : {swap_tile(rows, 64, bk, 1, 4), swap_tile(rows, 128, bk, 1, 3, true),
                                   swap_tile(rows, 256, bk, 2, 2)}) {
        ASSERT_EQ(check_constraints(c, x.p, h100), std::nullopt) << c.id() << " " << x.p.describe();
        for (int stream_k : {0, 1}) {
          EXPECT_EQ(run_and_compare(c, x, 0.75, sh.beta, 5, {}, stream_k), "")
              << c.id() << " " << x.p.describe() << " stream-K " << stream_k;
          ++ran;
        }
      }
    }
  EXPECT_EQ(ran, 3 * 5 * 3 * 2);
}

TEST(wgmma_emulation, swap_ab_planted_defects_are_caught) {
  const prepared x = prepare(problem(5, 200, 136, 2, dtype::bf16, "nt"), 22);
  const tile_config c = swap_tile(8, 128, 64, 1, 4);
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.5, 3), "");
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 5, {}, 1), "");
  struct planted {
    const char* name;
    defects d;
  };
  std::vector<planted> all;
  all.push_back({"C stored untransposed", {}});
  all.back().d.swap_store_untransposed = true;
  all.push_back({"zero-filled rows of A stored into C", {}});
  all.back().d.swap_stores_padded_rows = true;
  all.push_back({"tensor maps in the problem's order", {}});
  all.back().d.swap_maps_in_problem_order = true;
  all.push_back({"fragment column off by one", {}});
  all.back().d.fragment_col_off_by_one = true;
  for (const planted& pl : all) {
    const std::string whole = run_and_compare(c, x, 1.0, 0.5, 3, pl.d);
    const std::string split = run_and_compare(c, x, 1.0, 0.0, 5, pl.d, 1);
    EXPECT_NE(whole, "") << pl.name << " went unnoticed";
    EXPECT_NE(split, "") << pl.name << " went unnoticed with stream-K";
    std::printf("%s:\n  %.160s\n  %.160s\n", pl.name, whole.c_str(), split.c_str());
  }
}

// The decode shapes' search space holds swap-AB tiles (with stream-K copies) that the constraints
// allow, and the tiles the space adds for them compute right on a smaller problem of the same rows.
TEST(wgmma_emulation, the_decode_space_holds_swap_ab_tiles_that_compute_right) {
  const device_spec& h100 = find_preset("h100-sxm");
  for (std::int64_t m : {1, 16, 64}) {
    const gemm_problem decode = problem(m, 4096, 4096, 1, dtype::bf16, "nt");
    const prepared x = prepare(problem(m, 200, 200, 1, dtype::bf16, "nt"), 23);
    int swapped = 0, streamed = 0;
    for (const tile_config& c : problem_search_space(family_named("wgmma"), decode, h100)) {
      if (!wgmma_swap_ab(c) || check_constraints(c, decode, h100)) continue;
      ++swapped;
      streamed += wgmma_stream_k(c);
      EXPECT_GE(c.block_m, m) << c.id();
      EXPECT_LT(c.block_m, std::max<std::int64_t>(16, 2 * m)) << c.id() << ": not the smallest that holds M";
      if (!wgmma_stream_k(c)) {
        EXPECT_EQ(run_and_compare(c, x, 1.0, 0.0, 4), "") << c.id();
      }
    }
    EXPECT_GE(swapped, 6) << "M = " << m;
    EXPECT_GE(streamed, 3) << "M = " << m;
  }
  // No swap-AB tile for 65 rows or more, nor for a transposed A.
  for (const gemm_problem& p : {problem(65, 4096, 4096, 1, dtype::bf16, "nt"), problem(16, 4096, 4096, 1, dtype::bf16, "tn")})
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, h100))
      EXPECT_FALSE(wgmma_swap_ab(c)) << c.id() << " " << p.describe();
}

// ---- cluster split-K: k-slices per rank, partials in the leader's shared memory ----------

namespace {
tile_config split_tile(tile_config c, int split) {
  c.split_k = split;
  return c;
}
}  // namespace

TEST(wgmma_emulation, cluster_split_k_matches_a_host_gemm) {
  // 2 and 4 CTAs a cluster on plain and swap-AB tiles: few tiles (decode), more tiles than the
  // clusters hold (each cluster walks several), K not a multiple of the split's k-tiles, two
  // batches, beta reading C; the launch's grid and cluster dims come from its description.
  struct shape {
    std::int64_t m, n, k, batch;
    double beta;
  };
  const shape shapes[] = {{16, 200, 1280, 1, 0.0}, {5, 136, 328, 2, -0.5}, {72, 520, 392, 1, 1.5}};
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::f16, "nn"}, case_layout{dtype::tf32, "nt"}})
    for (const shape& sh : shapes) {
      const prepared x = prepare(problem(sh.m, sh.n, sh.k, sh.batch, cl.t, cl.layout), 31);
      const int bk = cl.t == dtype::tf32 ? 32 : 64;
      for (int split : {2, 4})
        for (const tile_config& c : {split_tile(wgmma_tile(64, 128, bk, 1, 4), split),
                                     split_tile(swap_tile(sh.m <= 8 ? 8 : 16, 128, bk, 1, 3), split)}) {
          ASSERT_EQ(check_constraints(c, x.p, h100), std::nullopt) << c.id() << " " << x.p.describe();
          EXPECT_EQ(run_and_compare(c, x, 0.75, sh.beta, 6), "") << c.id() << " " << x.p.describe();
          ++ran;
        }
    }
  EXPECT_EQ(ran, 3 * 3 * 2 * 2);
}

TEST(wgmma_emulation, cluster_split_k_planted_defects_are_caught) {
  const prepared x = prepare(problem(16, 200, 1280, 1, dtype::bf16, "nt"), 32);
  const tile_config c = split_tile(swap_tile(16, 128, 64, 1, 4), 4);
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 8), "");
  defects skip;
  skip.split_skips_last_peer = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 8, skip), "") << "a leader that forgets a peer";
  defects next;
  next.split_peer_in_next_slot = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 8, next), "") << "a peer in its neighbour's slot";
  defects same;
  same.split_same_k_slice = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 8, same), "") << "every rank on the leader's k-tiles";
}

// ---- the TMA-store epilogue: stmatrix into swizzled staging, a clipped bulk store ------------

namespace {
tile_config tma_tile(int bm, int bn, int consumers, int stages, bool stream_k = false) {
  tile_config c = wgmma_tile(bm, bn, 64, consumers, stages);
  set_wgmma_tma_store(c, true);
  set_wgmma_stream_k(c, stream_k);
  return c;
}
}  // namespace

TEST(wgmma_emulation, tma_store_epilogue_matches_a_host_gemm) {
  // Every default tile shape with the TMA-store epilogue, f16 and bf16, nn and nt: M and N ending
  // inside tiles (the store clips), two batches (a box must not spill into the next matrix), whole
  // tiles and stream-K; C holds NaN (beta 0) and must be written exactly once where it lies.
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::f16, "nn"}})
    for (const auto& [m, n, k, batch] : {std::array<std::int64_t, 4>{200, 136, 136, 2}, {72, 328, 1280, 1}}) {
      const prepared x = prepare(problem(m, n, k, batch, cl.t, cl.layout), 41);
      for (const tile_config& c : default_search_space(family_named("wgmma"), cl.t)) {
        if (c.raster_group != 8 || c.raster_along_n || c.stages != 3) continue;
        tile_config t = c;
        set_wgmma_tma_store(t, true);
        if (check_constraints(t, x.p, h100)) continue;
        EXPECT_EQ(run_and_compare(t, x, 1.25, 0.0, 3, {}, 0), "") << t.id() << " " << x.p.describe();
        EXPECT_EQ(run_and_compare(t, x, 1.25, 0.0, 3, {}, 1), "") << t.id() << " stream-K " << x.p.describe();
        ran += 2;
      }
    }
  EXPECT_EQ(ran, 2 * 2 * 6 * 2);
}

TEST(wgmma_emulation, tma_store_planted_defects_are_caught) {
  const prepared x = prepare(problem(200, 136, 72, 2, dtype::bf16, "nt"), 42);
  const tile_config c = tma_tile(128, 128, 2, 3);
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 3), "");
  struct planted {
    const char* name;
    defects d;
  };
  std::vector<planted> all;
  all.push_back({"staging without the swizzle", {}});
  all.back().d.tma_staging_no_swizzle = true;
  all.push_back({"stmatrix rows off by 8", {}});
  all.back().d.tma_stmatrix_rows_off_by_8 = true;
  all.push_back({"a store box not clipped to C", {}});
  all.back().d.tma_store_unclipped = true;
  for (const planted& pl : all) {
    const std::string r = run_and_compare(c, x, 1.0, 0.0, 3, pl.d);
    EXPECT_NE(r, "") << pl.name << " went unnoticed";
    std::printf("%s:\n  %.160s\n", pl.name, r.c_str());
  }
}

// ---- ping-pong: two consumers take the CTA's tiles in turn, whole ----------------------------

TEST(wgmma_emulation, pingpong_tiles_match_a_host_gemm) {
  // 128x128 and 64x256 with two consumers in turn, whole tiles: several tiles per CTA (each
  // consumer gets some, an odd count leaves consumer 0 one more), both epilogues where they apply,
  // every layout of bf16 and tf32 nt, two batches, beta reading C.
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::bf16, "tn"}, case_layout{dtype::f16, "nn"},
                         case_layout{dtype::tf32, "nt"}})
    for (const double beta : {0.0, 0.5}) {
      const prepared x = prepare(problem(264, 520, 136, 2, cl.t, cl.layout), 51);
      const int bk = cl.t == dtype::tf32 ? 32 : 64;
      for (const auto& [bm, bn] : {std::pair{128, 128}, std::pair{64, 256}})
        for (const bool tma : {false, true}) {
          tile_config c = wgmma_tile(bm, bn, bk, 2, 3);
          set_wgmma_pingpong(c, true);
          set_wgmma_tma_store(c, tma);
          gemm_problem with_beta = x.p;
          with_beta.beta = beta;
          if (check_constraints(c, with_beta, h100)) continue;
          EXPECT_EQ(run_and_compare(c, x, 0.5, beta, 3), "") << c.id() << " " << x.p.describe() << " beta " << beta;
          ++ran;
        }
    }
  EXPECT_EQ(ran, 4 * 2 * 2 + 3 * 2);  // the TMA store: 16-bit, beta 0 only
}

TEST(wgmma_emulation, pingpong_with_the_cooperative_rows_is_caught) {
  // The host says ping-pong but the kernel were rendered without it: its consumers would split each
  // tile's rows and both store; the emulation, reading the rendered macros, shows the difference.
  const prepared x = prepare(problem(264, 520, 136, 1, dtype::bf16, "nt"), 52);
  tile_config c = wgmma_tile(128, 128, 64, 2, 3);
  set_wgmma_pingpong(c, true);
  ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 3), "");
  defects d;
  d.fragment_col_off_by_one = true;
  EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 3, d), "") << "a wrong fragment map goes unnoticed with ping-pong";
}

// ---- 2x1 clusters: pairs of M tiles sharing B, each CTA multicasting half of it ---------------

TEST(wgmma_emulation, multicast_clusters_match_a_host_gemm) {
  // Every default tile shape as a 2x1 cluster, K-major and MN-major B: an odd count of M tiles
  // (the last pair's second tile lies past M), N ending inside a tile, two batches, both
  // epilogues, a grid with fewer clusters than pairs.
  const device_spec& h100 = find_preset("h100-sxm");
  int ran = 0;
  for (const auto& cl : {case_layout{dtype::bf16, "nt"}, case_layout{dtype::f16, "nn"}, case_layout{dtype::tf32, "nt"}}) {
    const prepared x = prepare(problem(328, 264, 136, 2, cl.t, cl.layout), 61);
    for (const tile_config& d : default_search_space(family_named("wgmma"), cl.t)) {
      if (d.raster_group != 8 || d.raster_along_n || d.stages != 3) continue;
      tile_config c = d;
      c.cluster_m = 2;
      for (const bool tma : {false, true}) {
        set_wgmma_tma_store(c, tma);
        if (check_constraints(c, x.p, h100)) continue;
        EXPECT_EQ(run_and_compare(c, x, 1.5, 0.0, 4), "") << c.id() << " " << x.p.describe();
        ++ran;
      }
    }
  }
  EXPECT_GE(ran, 6 + 6 + 4 + 6);  // bf16 nt both epilogues; f16 nn (BN 128 and 256) both; tf32 plain
}

TEST(wgmma_emulation, multicast_planted_defects_are_caught) {
  for (const char* layout : {"nt", "nn"}) {
    const prepared x = prepare(problem(328, 264, 136, 1, dtype::bf16, layout), 62);
    tile_config c = wgmma_tile(128, 256, 64, 2, 3);
    c.cluster_m = 2;
    ASSERT_EQ(run_and_compare(c, x, 1.0, 0.0, 4), "") << layout;
    defects own;
    own.multicast_own_half_only = true;
    EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 4, own), "") << layout << ": the peer's half never landing";
    defects same;
    same.multicast_same_offset = true;
    EXPECT_NE(run_and_compare(c, x, 1.0, 0.0, 4, same), "") << layout << ": both halves in one place";
  }
}
