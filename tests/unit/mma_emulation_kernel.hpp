#pragma once
// The mma kernel (kernels_templates/mma/) block by block on the host (namespace mma_emu): one GEMM
// case, its operands in their stored layouts, and the emulator that runs every block's copies,
// fragments, mma.sync, epilogue and split-K reduction through mma_emulation_parts.hpp.
#include "mma_emulation_parts.hpp"

namespace mma_emu {

// ---- One GEMM to run ------------------------------------------------------------------
struct gemm_case {
  std::string label;
  int m = 0, n = 0, k = 0, batch = 1;
  int lda = 0, ldb = 0, ldc = 0;           // elements between stored rows
  long long stride_a = 0, stride_b = 0, stride_c = 0;
  float alpha = 1, beta = 0;
  bool rowwise = false;  // fp8 rowwise scales (scale_a_at, scale_b_at)
};

// Rowwise scales, powers of two (as tiletune's random_scales draws them), so every product stays exact.
inline float scale_a_at(int m) { return std::ldexp(1.0f, (m * 5) % 7 - 3); }
inline float scale_b_at(int n) { return std::ldexp(1.0f, (n * 3) % 5 - 2); }

// A, B and C in their stored layouts. Padding past a row's end holds NaN (a
// read of it poisons the result); C's padding holds a marked NaN that must
// survive. Values are small multiples of 1/4, exact in every input type, so
// every fp32 sum of their products is exact in any order.
struct operands {
  global_buffer a{"A", {}}, b{"B", {}}, c{"C", {}};
  global_buffer scale_a{"scale_a", {}}, scale_b{"scale_b", {}};  // rowwise: M and N floats
  std::vector<u8> c_initial;
  std::vector<u8> c_inside;  // 1 where an element of C lies inside M x N of a batch
};

inline u32 quiet_nan(dtype t, u32 payload) {
  if (is_fp8(t)) return t == dtype::e4m3 ? 0x7fu : 0x7cu | (payload & 3u) | 1u;  // e4m3 has one NaN (S.1111.111)
  return t == dtype::f16 ? 0x7e00u | payload : t == dtype::bf16 ? 0x7fc0u | payload : 0x7fc00000u | payload;
}
inline void put(global_buffer& g, dtype t, long long index, u32 raw) {
  std::memcpy(g.bytes.data() + index * element_bytes(t), &raw, static_cast<std::size_t>(element_bytes(t)));
}
inline u32 get(const std::vector<u8>& bytes, dtype t, long long index) {
  u32 raw = 0;
  std::memcpy(&raw, bytes.data() + index * element_bytes(t), static_cast<std::size_t>(element_bytes(t)));
  return raw;
}

inline operands make_operands(const kernel_macros& k, const gemm_case& g, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> mag(1, 8), sign(0, 1);
  auto value = [&] { return (sign(rng) ? -0.25f : 0.25f) * static_cast<float>(mag(rng)); };
  const dtype t = k.type;
  // tf32 operands are stored a tf32 ulp under their value (in magnitude) plus
  // half an ulp or more in the 13 low bits: the kernel's rounding carries them
  // up to the value, and an operand the cores read unrounded is an ulp short.
  std::mt19937 low_rng(seed ^ 0x9e3779b9u);
  auto operand = [&](dtype et, float v) {
    const u32 bits = encode(et, v);
    return t == dtype::tf32 ? ((bits - 0x2000u) | 0x1000u | (static_cast<u32>(low_rng()) & 0xfffu)) : bits;
  };
  operands o;
  auto fill = [&](global_buffer& buf, dtype et, int rows, int cols, int ld, long long stride, bool random_inside,
                  u32 outside, std::vector<u8>* inside) {
    const long long elems = stride * g.batch;
    buf.bytes.assign(static_cast<std::size_t>(elems * element_bytes(et)), 0);
    if (inside) inside->assign(static_cast<std::size_t>(elems), 0);
    for (long long e = 0; e < elems; ++e) put(buf, et, e, outside);
    for (int bt = 0; bt < g.batch; ++bt)
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
          const long long e = bt * stride + static_cast<long long>(r) * ld + c;
          // A and B are operands; C (the one with `inside`) is stored as it is.
          put(buf, et, e, random_inside ? (inside ? encode(et, value()) : operand(et, value())) : quiet_nan(et, 0));
          if (inside) (*inside)[static_cast<std::size_t>(e)] = 1;
        }
  };
  fill(o.a, k.a_type(), k.a_t ? g.k : g.m, k.a_t ? g.m : g.k, g.lda, g.stride_a, true, quiet_nan(k.a_type(), 1),
       nullptr);
  fill(o.b, k.b_type(), k.b_t ? g.n : g.k, k.b_t ? g.k : g.n, g.ldb, g.stride_b, true, quiet_nan(k.b_type(), 1),
       nullptr);
  // beta 0: C is not read, so it starts as NaN; its padding carries a marked NaN.
  fill(o.c, k.c_type(), g.m, g.n, g.ldc, g.stride_c, g.beta != 0.0f, quiet_nan(k.c_type(), 5), &o.c_inside);
  o.c_initial = o.c.bytes;
  if (g.rowwise) {
    auto floats = [](global_buffer& buf, int count, float (*at)(int)) {
      buf.bytes.resize(static_cast<std::size_t>(count) * 4);
      for (int i = 0; i < count; ++i) {
        const float v = at(i);
        std::memcpy(buf.bytes.data() + static_cast<std::size_t>(i) * 4, &v, 4);
      }
    };
    floats(o.scale_a, g.m, scale_a_at);
    floats(o.scale_b, g.n, scale_b_at);
  }
  return o;
}

// ---- The kernel, block by block -----------------------------------------------------------
class mma_kernel_emulator {
 public:
  mma_kernel_emulator(const kernel_macros& k, const gemm_case& g, operands& ops, const defects& d, report& r,
                      unsigned grid_x, unsigned grid_y, unsigned grid_z, long long workspace_floats, long long counters)
      : k_(k), g_(g), ops_(ops), d_(d), r_(r), gx_(grid_x), gy_(grid_y), gz_(grid_z),
        workspace_{"workspace", std::vector<u8>(static_cast<std::size_t>(workspace_floats * 4), 0xff)},
        counters_(static_cast<std::size_t>(counters), 0u),
        c_writes_(static_cast<std::size_t>(g.stride_c * g.batch), 0) {}

  // Runs every block once, in a shuffled order (any slice may finish a tile last).
  void launch(std::uint32_t seed) {
    std::vector<std::array<unsigned, 3>> blocks;
    for (unsigned z = 0; z < gz_; ++z)
      for (unsigned y = 0; y < gy_; ++y)
        for (unsigned x = 0; x < gx_; ++x) blocks.push_back({x, y, z});
    std::mt19937 rng(seed);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    for (const auto& b : blocks) run_block(b[0], b[1], b[2]);
    for (std::size_t i = 0; i < counters_.size(); ++i)
      if (counters_[i] != 0) r_.note(fmt::format("split-K counter {} is {} after the launch, not 0", i, counters_[i]));
  }

  const std::vector<int>& c_writes() const { return c_writes_; }

 private:
  // ---- global memory accesses
  bool read_global(const global_buffer& g, long long byte, void* dst, int size, const char* what) {
    if (!g.in(byte, size)) {
      r_.note(fmt::format("{}: reads {} bytes at byte {} outside {}", what, size, byte, g.name));
      std::memset(dst, 0xff, static_cast<std::size_t>(size));
      return false;
    }
    std::memcpy(dst, g.bytes.data() + byte, static_cast<std::size_t>(size));
    return true;
  }
  void write_c(long long elem, u32 raw) {
    const int eb = k_.c_eb();
    if (!ops_.c.in(elem * eb, eb)) {
      r_.note(fmt::format("store of C at element {} outside C", elem));
      return;
    }
    if (!ops_.c_inside[static_cast<std::size_t>(elem)]) r_.note(fmt::format("store of C at element {}, outside M x N", elem));
    ++c_writes_[static_cast<std::size_t>(elem)];
    std::memcpy(ops_.c.bytes.data() + elem * eb, &raw, static_cast<std::size_t>(eb));
  }
  float read_c(long long elem) {
    ++r_.ran.c_reads;
    u32 raw = 0;
    read_global(ops_.c, elem * k_.c_eb(), &raw, k_.c_eb(), "C load");
    return decode(k_.c_type(), raw);
  }

  // cp.async.cg.shared.global [dst], [src], 16, src_size (PTX ISA "cp.async"):
  // dst and src aligned to the 16-byte copy size; src_size bytes are read from
  // src and the remaining 16 - src_size bytes of dst are filled with zeros.
  void cp_async16(shared_memory& smem, int warp, int dst, const global_buffer& src_buf, long long src_elem, int src_bytes) {
    const long long src = src_elem * k_.eb();
    if (src % 16 != 0) r_.note(fmt::format("cp.async: global source byte {} of {} not 16-byte aligned", src, src_buf.name));
    if (dst % 16 != 0) r_.note(fmt::format("cp.async: shared destination byte {} not 16-byte aligned", dst));
    if (src_bytes < 0 || src_bytes > 16) r_.note(fmt::format("cp.async: src-size {} outside 0..16", src_bytes));
    ++(src_bytes == 16 ? r_.ran.cp_async_full : src_bytes == 0 ? r_.ran.cp_async_empty : r_.ran.cp_async_partial);
    std::array<u8, 16> bytes{};
    if (src_bytes > 0) read_global(src_buf, src, bytes.data(), std::min(src_bytes, 16), "cp.async");
    smem.copy_async(warp, dst, bytes);
  }

  // tt_load_tile (rows that are not 16-byte aligned): one rows x cols tile,
  // top-left element g_off of the stored matrix, element-wise loads and
  // st.shared, zeros past each chunk's valid elements.
  void load_tile(shared_memory& smem, int rows, int cols, int kc, int s_addr, const global_buffer& buf,
                 long long g_off, int ld, int rows_left, int cols_left) {
    const int chunk = k_.chunk(), eb = k_.eb(), threads = k_.threads();
    const int chunks_per_row = cols / chunk, chunks = rows * chunks_per_row;
    const int step = d_.copy_stride_half ? threads / 2 : threads;
    for (int i = 0; i < (chunks + threads - 1) / threads; ++i)
      for (int tid = 0; tid < threads; ++tid) {
        const int c = tt_copy_chunk(tid, i, step);
        if (chunks % threads != 0 && c >= chunks) continue;  // the kernel's break: later copies are past the end too
        const int r = tt_copy_row(c, chunks_per_row), col = tt_copy_col(c, chunks_per_row, chunk);
        const int valid = d_.no_zero_fill ? chunk : tt_copy_valid(r, col, rows_left, cols_left, chunk);
        const long long src = g_off + tt_row_offset(r, ld) + col;
        const int at = tt_swizzled_offset(r, col, cols, eb, kc);
        ++r_.ran.element_copies;
        for (int e = 0; e < chunk; ++e) {
          u32 raw = 0;
          if (e < valid) read_global(buf, (src + e) * eb, &raw, eb, "element copy");
          smem.store(tid / 32, s_addr + (at + e) * eb, &raw, eb, "element copy");
        }
      }
  }

  // tt_tile_copier's map of one tile's copies into the stage at stage_addr:
  // fn(tid, i, r0, col, step, dst) for copy i of thread tid (row r0 + i * step,
  // column col), in the kernel's order, past-the-end copies left out.
  template <typename Fn>
  void for_each_copy(int rows, int cols, int kc, int stage_addr, Fn fn) {
    const int chunk = k_.chunk(), eb = k_.eb(), threads = k_.threads();
    const int cpr = cols / chunk, chunks = rows * cpr;
    const int step = d_.copy_stride_half ? tt_copy_row_step(threads, cpr) / 2 : tt_copy_row_step(threads, cpr);
    for (int i = 0; i < (chunks + threads - 1) / threads; ++i)
      for (int tid = 0; tid < threads; ++tid) {
        if (chunks % threads != 0 && tid + i * threads >= chunks) continue;  // the kernel's break
        const int r0 = tt_copy_row0(tid, cpr), col = tt_copy_col0(tid, cpr, chunk);
        const int s_off = tt_swizzled_offset(r0, col, cols, eb, kc) * eb;
        fn(tid, i, r0, col, step, stage_addr + s_off + tt_copy_step_offset(i, step, cols) * eb);
      }
  }

  // tt_tile_copier::issue: the main loop's copies of one tile into the stage
  // at stage_addr, tile's top-left element at `origin`. bounds: rows_left /
  // cols_left as load_tile's, chunks that read nothing point at the matrix's
  // first element (matrix); without, every chunk is whole.
  void issue_copies(shared_memory& smem, int rows, int cols, int kc, int stage_addr, const global_buffer& buf,
                    long long origin, int ld, int rows_left, int cols_left, bool bounds, long long matrix) {
    const int chunk = k_.chunk(), eb = k_.eb(), threads = k_.threads(), cpr = cols / chunk;
    const int step = d_.copy_stride_half ? tt_copy_row_step(threads, cpr) / 2 : tt_copy_row_step(threads, cpr);
    if (threads % cpr != 0 || !tt_copy_masks_repeat(step, cols, eb, kc))
      r_.note(fmt::format("copier: {} threads over {} chunks per row: the static_asserts fail", threads, cpr));
    for_each_copy(rows, cols, kc, stage_addr, [&](int tid, int i, int r0, int col, int step_rows, int dst) {
      const long long g = origin + tt_row_offset(r0, ld) + col;  // init: tile + row_offset(r0, ld) + col
      const long long src = g + i * tt_row_offset(step_rows, ld);
      if (bounds) {
        const int valid = d_.no_zero_fill ? chunk : tt_copy_valid(r0 + i * step_rows, col, rows_left, cols_left, chunk);
        cp_async16(smem, tid / 32, dst, buf, valid > 0 ? src : matrix, valid * eb);
      } else {
        cp_async16(smem, tid / 32, dst, buf, src, 16);
      }
    });
  }

  // tt_tile_copier::round_landed (tf32): each thread's copies into the stage
  // at stage_addr, read (ld.shared.v4) and written back rounded (st.shared.v4)
  // by the thread that issued them.
  void round_landed(shared_memory& smem, int rows, int cols, int kc, int stage_addr) {
    for_each_copy(rows, cols, kc, stage_addr, [&](int tid, int, int, int, int, int at) {
      std::array<u32, 4> v{};
      smem.load(tid / 32, at, v.data(), 16, "tf32 rounding");
      for (u32& x : v) x = float_to_tf32(bits_float(x));
      smem.store(tid / 32, at, v.data(), 16, "tf32 rounding");
    });
  }
  // Both operands' tiles of the stage, as the kernel rounds them after its wait.
  void round_stage(shared_memory& smem, int stage_addr) {
    if (k_.type != dtype::tf32 || d_.tf32_unrounded) return;
    round_landed(smem, k_.a_rows(), k_.a_cols(), k_.a_kc(), stage_addr);
    round_landed(smem, k_.b_rows(), k_.b_cols(), k_.b_kc(), stage_addr + k_.b_at());
  }

  // tt_fragment_offsets: ldmatrix for every 16-bit operand and tf32's along
  // k (read as 16-bit tiles of twice the columns), with the lane offsets
  // computed once; tf32 along m or n element by element. tf32's stage was
  // rounded in place (round_landed). k-step ks of the stage at stage_addr (A's tile; B's at + TT_B_AT).
  void load_fragments_pipelined(shared_memory& smem, int warp, int stage_addr, int ks, regs4* a,
                                std::array<u32, 64>* b) {
    const int wm0 = tt_mma_warp_m(warp, k_.warps_n) * k_.wm();
    const int wn0 = tt_mma_warp_n0(warp, k_.warps_n, k_.wn());
    const bool tf32 = k_.eb() == 4;
    const bool a_ldsm = !tf32 || !k_.a_t, b_ldsm = !tf32 || k_.b_t;  // TT_A_LDSM, TT_B_LDSM
    const int a_cols16 = d_.tf32_ldsm_own_columns ? k_.a_cols() : k_.a_cols() * k_.eb() / 2;
    const int b_cols16 = d_.tf32_ldsm_own_columns ? k_.b_cols() : k_.b_cols() * k_.eb() / 2;
    const int a_lanes = tt_ldsm_a_lanes(k_.a_t, k_.mi(), k_.k_steps()), b_lanes = tt_ldsm_b_lanes(k_.b_t, k_.ni(), k_.k_steps());
    const int a_cpr = k_.a_cols() / k_.chunk(), b_cpr = k_.b_cols() / k_.chunk();
    auto lane_q_r = [&](int lane) {
      return std::pair<int, int>{tt_ldsm_matrix(lane), tt_ldsm_row(d_.ldmatrix_row_lane_plus1 ? lane + 1 : lane)};
    };
    auto a_index = [&](int mi) { return d_.lane_offset_index_zero ? 0 : tt_ldsm_a_lane_index(k_.a_t, mi, ks); };
    auto b_index = [&](int np) { return d_.lane_offset_index_zero ? 0 : tt_ldsm_b_lane_index(k_.b_t, np, ks); };
    // tf32 A along m: pairs (ld.shared.v2 at tt_tf32_pair_lane_offset + tt_tf32_pair_added);
    // B along n: elements (tt_tf32_mn_lane_offset + tt_tf32_mn_added). The stage is already rounded.
    const int k_base = ks * k_.mma_k();
    auto tf32_element = [&](int at, const char* what) {
      u32 v = 0;
      smem.load(warp, at * 4, &v, 4, what);
      return v;
    };
    for (int lane = 0; lane < 32; ++lane) {
      for (int mi = 0; !a_ldsm && mi < k_.mi(); ++mi)
        for (int j = 0; j < 2; ++j) {  // registers 2j (row g, tile row 2g) and 2j + 1 (row g + 8, tile row 2g + 1)
          const int idx = d_.lane_offset_index_zero ? 0 : mi % 2;
          const int off = tt_tf32_pair_lane_offset(wm0, idx, lane, k_.a_cols()) ^ (d_.read_mask_xor1 ? 4 : 0);
          std::array<u32, 2> v{};
          smem.load(warp, (stage_addr / 4 + off + tt_tf32_pair_added(mi, k_base, j, k_.a_cols())) * 4, v.data(), 8,
                    "tf32 A pair load");
          a[mi][static_cast<std::size_t>(lane)][static_cast<std::size_t>(2 * j)] = v[0];
          a[mi][static_cast<std::size_t>(lane)][static_cast<std::size_t>(2 * j + 1)] = v[1];
        }
      for (int ni = 0; !b_ldsm && ni < k_.ni(); ++ni)
        for (int j = 0; j < 2; ++j) {
          const int idx = d_.lane_offset_index_zero ? 0 : ni % 4;
          b[ni][static_cast<std::size_t>(lane * 2 + j)] =
              tf32_element((stage_addr + k_.b_at()) / 4 + tt_tf32_mn_lane_offset(wn0, idx, lane, k_.b_cols()) +
                               tt_tf32_mn_added(ni, k_base, j, k_.b_cols()),
                           "tf32 B load");
        }
    }
    for (int mi = 0; a_ldsm && mi < k_.mi(); ++mi) {
      std::array<int, 32> addr{};
      for (int lane = 0; lane < 32; ++lane) {
        const auto [q, r] = lane_q_r(lane);
        const int mask = tt_swizzle_mask(r, a_cpr, 2, k_.a_kc()) ^ (d_.read_mask_xor1 ? 1 : 0);
        const int idx = a_index(mi);
        if (idx >= a_lanes) r_.note("A lane offset index past the lane offsets");
        addr[static_cast<std::size_t>(lane)] = stage_addr + tt_ldsm_a_lane_offset(k_.a_t, wm0, idx, q, r, mask, a_cols16) +
                                               tt_ldsm_a_added(k_.a_t, mi, ks, a_cols16);
      }
      ldmatrix_x4(smem, warp, addr, tt_ldsm_a_trans(k_.a_t) && !d_.ldmatrix_without_trans, a[mi]);
    }
    for (int np = 0; b_ldsm && np < k_.ni() / 2; ++np) {
      std::array<int, 32> addr{};
      for (int lane = 0; lane < 32; ++lane) {
        const auto [q, r] = lane_q_r(lane);
        const int mask = tt_swizzle_mask(r, b_cpr, 2, k_.b_kc());
        const int idx = b_index(np);
        if (idx >= b_lanes) r_.note("B lane offset index past the lane offsets");
        addr[static_cast<std::size_t>(lane)] = stage_addr + k_.b_at() +
                                               tt_ldsm_b_lane_offset(k_.b_t, wn0, idx, q, r, mask, b_cols16) +
                                               tt_ldsm_b_added(k_.b_t, np, ks, b_cols16);
      }
      regs4 t{};
      ldmatrix_x4(smem, warp, addr, tt_ldsm_b_trans(k_.b_t) && !d_.ldmatrix_without_trans, t);
      for (int lane = 0; lane < 32; ++lane)
        for (int x = 0; x < 4; ++x)
          b[2 * np + tt_ldsm_b_tile(x)][static_cast<std::size_t>(lane * 2 + tt_ldsm_b_reg(x))] =
              t[static_cast<std::size_t>(lane)][static_cast<std::size_t>(x)];
    }
  }

  // tt_load_fragments for one warp at k-step k_base of the stage at as_addr/bs_addr.
  void load_fragments(shared_memory& smem, int warp, int as_addr, int bs_addr, int k_base, std::vector<regs4>& a,
                      std::vector<std::array<u32, 64>>& b) {
    const int wm0 = tt_mma_warp_m(warp, k_.warps_n) * k_.wm();
    const int wn0 = tt_mma_warp_n0(warp, k_.warps_n, k_.wn());
    if (k_.eb() <= 2) {
      const int a_cpr = k_.a_cols() / k_.chunk(), b_cpr = k_.b_cols() / k_.chunk();
      // fp8's tiles as 16-bit ones: k and the columns halved (the kernel's k16 and TT_A_COLS16).
      const int k16 = d_.fp8_k_in_elements ? k_base : k_base * k_.eb() / 2;
      const int a_cols16 = k_.a_cols() * k_.eb() / 2, b_cols16 = k_.b_cols() * k_.eb() / 2;
      std::array<int, 32> a_row_addr{}, b_row_addr{};
      for (int mi = 0; mi < k_.mi(); ++mi) {
        for (int lane = 0; lane < 32; ++lane) {
          const int q = tt_ldsm_matrix(lane), r = tt_ldsm_row(d_.ldmatrix_row_lane_plus1 ? lane + 1 : lane);
          const int a_mask = tt_swizzle_mask(r, a_cpr, 2, k_.a_kc()) ^ (d_.read_mask_xor1 ? 1 : 0);
          const int m = wm0 + mi * 16;
          const int row = tt_ldsm_a_row(k_.a_t, m, k16, q, r);
          const int chunk = tt_ldsm_a_chunk(k_.a_t, m, k16, q, a_mask);
          a_row_addr[static_cast<std::size_t>(lane)] = as_addr + tt_ldsm_offset(row, chunk, a_cols16);
        }
        const bool trans = tt_ldsm_a_trans(k_.a_t) && !d_.ldmatrix_without_trans;
        ldmatrix_x4(smem, warp, a_row_addr, trans, a[static_cast<std::size_t>(mi)]);
      }
      for (int ni = 0; ni < k_.ni(); ni += 2) {
        for (int lane = 0; lane < 32; ++lane) {
          const int q = tt_ldsm_matrix(lane), r = tt_ldsm_row(d_.ldmatrix_row_lane_plus1 ? lane + 1 : lane);
          const int b_mask = tt_swizzle_mask(r, b_cpr, 2, k_.b_kc());
          const int n = wn0 + ni * 8;
          const int row = tt_ldsm_b_row(k_.b_t, n, k16, q, r);
          const int chunk = tt_ldsm_b_chunk(k_.b_t, n, k16, q, b_mask);
          b_row_addr[static_cast<std::size_t>(lane)] = bs_addr + tt_ldsm_offset(row, chunk, b_cols16);
        }
        regs4 t{};
        const bool trans = tt_ldsm_b_trans(k_.b_t) && !d_.ldmatrix_without_trans;
        ldmatrix_x4(smem, warp, b_row_addr, trans, t);
        for (int lane = 0; lane < 32; ++lane)
          for (int x = 0; x < 4; ++x)
            b[static_cast<std::size_t>(ni + tt_ldsm_b_tile(x))][static_cast<std::size_t>(lane * 2 + tt_ldsm_b_reg(x))] =
                t[static_cast<std::size_t>(lane)][static_cast<std::size_t>(x)];
      }
      return;
    }
    load_tf32_elements(smem, warp, as_addr, bs_addr, k_base, a.data(), b.data(), true, true);
  }

  // tt_to_tf32: an operand register from its fp32 value.
  u32 tf32_operand(float v) const { return d_.tf32_unrounded ? float_bits(v) : float_to_tf32(v); }

  // tt_load_a_tf32 / tt_load_b_tf32: ld.shared.f32 per fragment element, then
  // tt_to_tf32. A wrong mask flips chunk bit 0 within the
  // row: element offset ^ 4. Only A's: the same k permutation of both
  // operands would leave every sum as it was.
  void load_tf32_elements(shared_memory& smem, int warp, int as_addr, int bs_addr, int k_base, regs4* a,
                          std::array<u32, 64>* b, bool do_a, bool do_b) {
    const int wm0 = tt_mma_warp_m(warp, k_.warps_n) * k_.wm();
    const int wn0 = tt_mma_warp_n0(warp, k_.warps_n, k_.wn());
    const int flip = d_.read_mask_xor1 ? 4 : 0;
    for (int lane = 0; lane < 32; ++lane) {
      const int g = tt_frag_group(lane), t = tt_frag_thread(lane);
      for (int mi = 0; do_a && mi < k_.mi(); ++mi)
        for (int reg = 0; reg < 4; ++reg) {
          const int h = tt_frag_tf32_a_half(reg), j = tt_frag_tf32_a_kq(reg);
          const int off = !k_.a_t ? tt_tf32_offset_k_contiguous(wm0 + mi * 16 + 8 * h + g, g, k_base, j, t, k_.a_cols())
                          : d_.tf32_elements_unpaired
                              ? tt_tf32_offset_mn_contiguous(k_base + t + 4 * j, t + 4 * j, wm0 + mi * 16 + 8 * h, g, k_.a_cols())
                              : tt_tf32_pair_offset(k_base + t + 4 * j, t + 4 * j, wm0 + mi * 16, g, h, k_.a_cols());
          float v = 0;
          smem.load(warp, as_addr + (off ^ flip) * 4, &v, 4, "tf32 A load");
          a[mi][static_cast<std::size_t>(lane)][static_cast<std::size_t>(reg)] = tf32_operand(v);
        }
      for (int ni = 0; do_b && ni < k_.ni(); ++ni)
        for (int j = 0; j < 2; ++j) {
          const int off = k_.b_t ? tt_tf32_offset_k_contiguous(wn0 + ni * 8 + g, g, k_base, j, t, k_.b_cols())
                                 : tt_tf32_offset_mn_contiguous(k_base + t + 4 * j, t + 4 * j, wn0 + ni * 8, g, k_.b_cols());
          float v = 0;
          smem.load(warp, bs_addr + off * 4, &v, 4, "tf32 B load");
          b[ni][static_cast<std::size_t>(lane * 2 + j)] = tf32_operand(v);
        }
    }
  }

  // tt_scale_piece (mma_gemm.cu, TT_SCALING): VEC sums at (m, n) times scale_a[m] * scale_b[n + e],
  // rows and columns past the matrix clamped to its last.
  void scale_piece(float* v, int m, int n) {
    if (!k_.scaling) return;
    auto at = [&](const global_buffer& buf, int i, int count) {
      float x = 0;
      read_global(buf, static_cast<long long>(d_.rw_unclamped ? i : std::min(i, count - 1)) * 4, &x, 4, "scale load");
      return x;
    };
    const float sa = at(ops_.scale_a, m, g_.m);
    for (int e = 0; e < k_.epi_vec(); ++e)
      v[e] *= sa * at(ops_.scale_b, d_.rw_b_by_row ? m : n + e, g_.n);
  }

  // tt_store_c_vec and tt_store_c (gemm_common.cuh): VEC results at (m, n).
  void store_c_vec(long long c_base, int m, int n, const float* v, bool c_vec) {
    const int vec = k_.epi_vec(), eb = k_.c_eb();
    if (m >= g_.m) return;
    const float alpha = g_.alpha, beta = g_.beta;
    if (vec * eb == 16 && c_vec && n + vec <= g_.n) {
      const long long p = c_base + static_cast<long long>(m) * g_.ldc + n;
      ++r_.ran.c_vector_stores;
      if ((p * eb) % 16 != 0) r_.note(fmt::format("16-byte store of C at element {} not aligned", p));
      float c[8] = {};
      if (beta != 0.0f)
        for (int e = 0; e < vec; ++e) c[e] = read_c(p + e);  // one 16-byte load
      for (int e = 0; e < vec; ++e) {
        float o = alpha * v[e];
        if (beta != 0.0f) o = std::fma(beta, c[e], o);  // o += beta * c, contracted as nvcc does
        write_c(p + e, encode(k_.c_type(), o));
      }
      return;
    }
    for (int e = 0; e < vec; ++e) {
      if (m >= g_.m || n + e >= g_.n) continue;
      const long long p = c_base + static_cast<long long>(m) * g_.ldc + n + e;
      ++r_.ran.c_element_stores;
      float o = alpha * v[e];
      if (beta != 0.0f) o = std::fma(beta, read_c(p), o);
      write_c(p, encode(k_.c_type(), o));
    }
  }

  void run_block(unsigned bx, unsigned by, unsigned bz) {
    const kernel_macros& k = k_;
    const int eb = k.eb(), threads = k.threads(), warps = threads / 32;
    shared_memory smem(k.smem_bytes(), r_);

    const int tile = tt_mma_launch_order(bx, by, gx_);
    int tile_m = 0, tile_n = 0;
    tt_raster(tile, static_cast<int>(gx_), static_cast<int>(gy_), k.raster_group, k.raster_along_n, tile_m, tile_n);
    const int m0 = tile_m * k.bm, n0 = tile_n * k.bn;
    const int batch = tt_mma_batch(bz, k.split_k), slice = tt_mma_slice(bz, k.split_k);
    const long long a_base = batch * g_.stride_a, b_base = batch * g_.stride_b, c_base = batch * g_.stride_c;
    const bool a_aligned = g_.lda % k.chunk() == 0 && (a_base * eb) % 16 == 0;
    const bool b_aligned = g_.ldb % k.chunk() == 0 && (b_base * eb) % 16 == 0;
    const int M = g_.m, N = g_.n, K = g_.k;

    // acc[warp][mi][ni]: one m16n8 accumulator fragment of the warp.
    std::vector<accs4> acc(static_cast<std::size_t>(warps * k.mi() * k.ni()), accs4{});
    auto acc_at = [&](int warp, int mi, int ni) -> accs4& {
      return acc[static_cast<std::size_t>((warp * k.mi() + mi) * k.ni() + ni)];
    };
    auto mma_all = [&](int warp, const regs4* a, const std::array<u32, 64>* b) {
      for (int mi = 0; mi < k.mi(); ++mi)
        for (int ni = 0; ni < k.ni(); ++ni)
          mma_sync(k.a_type(), d_.fp8_b_in_a_format ? k.a_type() : k.b_type(), a[mi], b[ni], acc_at(warp, mi, ni));
    };

    const int k_tiles_all = tt_mma_k_tiles(K, k.bk);
    const int per_slice = d_.split_floor_per_slice ? std::max(1, k_tiles_all / k.split_k)
                                                   : tt_mma_per_slice(k_tiles_all, k.split_k);
    const int kt_first = tt_mma_slice_first(slice, per_slice);
    const int kt_end = tt_mma_slice_end(kt_first, per_slice, k_tiles_all);
    const int k_tiles = tt_mma_slice_tiles(kt_first, kt_end);
    if (k.split_k > 1) ++(k_tiles == 0 ? r_.ran.empty_slices : k_tiles < per_slice ? r_.ran.short_slices : r_.ran.full_slices);
    const int k_begin = kt_first * k.bk;
    // The operands' tiles at k_begin and one k-tile's step (elements of the buffers).
    const long long a_tile = a_base + (k.a_t ? tt_row_offset(k_begin, g_.lda) + m0 : tt_row_offset(m0, g_.lda) + k_begin);
    const long long a_k_step = k.a_t ? tt_row_offset(k.bk, g_.lda) : k.bk;
    const long long b_tile = b_base + (k.b_t ? tt_row_offset(n0, g_.ldb) + k_begin : tt_row_offset(k_begin, g_.ldb) + n0);
    const long long b_k_step = k.b_t ? k.bk : tt_row_offset(k.bk, g_.ldb);
    auto a_left = [&](int k_left) { return k.a_t ? std::pair<int, int>{k_left, M - m0} : std::pair<int, int>{M - m0, k_left}; };
    auto b_left = [&](int k_left) { return k.b_t ? std::pair<int, int>{N - n0, k_left} : std::pair<int, int>{k_left, N - n0}; };
    const bool inside = m0 + k.bm <= M && n0 + k.bn <= N && (d_.inside_ignores_k || k_begin + k_tiles * k.bk <= K);

    if (a_aligned && b_aligned) {
      // tt_pipelined<!inside>.
      const bool bounds = !inside;
      ++(bounds ? r_.ran.bounded_blocks : r_.ran.unbounded_blocks);
      const int stage_bytes = k.stage_bytes(), ring_end = k.stages * stage_bytes;
      int w_stage = 0, r_stage = 0, k_left = K - k_begin;
      long long ga = a_tile, gb = b_tile;
      auto next_stage = [&](int at) { return at + stage_bytes == ring_end ? 0 : at + stage_bytes; };
      auto copy_next = [&]() {
        const auto [ar, ac] = a_left(k_left);
        issue_copies(smem, k.a_rows(), k.a_cols(), k.a_kc(), w_stage, ops_.a, ga, g_.lda, ar, ac, bounds, a_base);
        const auto [br, bc] = b_left(k_left);
        issue_copies(smem, k.b_rows(), k.b_cols(), k.b_kc(), w_stage + k.b_at(), ops_.b, gb, g_.ldb, br, bc, bounds, b_base);
        ga += a_k_step;
        gb += b_k_step;
        if (bounds) k_left -= k.bk;
      };
      for (int s = 0; s < k.stages - 1; ++s) {
        if (s < k_tiles) copy_next();
        smem.commit();
        if (!d_.refill_the_read_stage) w_stage += stage_bytes;
      }
      // Per warp: fragments [warp][buffer][mi or ni].
      std::vector<regs4> a(static_cast<std::size_t>(warps * 2 * k.mi()));
      std::vector<std::array<u32, 64>> b(static_cast<std::size_t>(warps * 2 * k.ni()));
      auto a_buf = [&](int warp, int buf) { return &a[static_cast<std::size_t>((warp * 2 + buf) * k.mi())]; };
      auto b_buf = [&](int warp, int buf) { return &b[static_cast<std::size_t>((warp * 2 + buf) * k.ni())]; };
      auto load = [&](int warp, int stage, int ks, int buf) {
        load_fragments_pipelined(smem, warp, stage, ks, a_buf(warp, buf), b_buf(warp, buf));
      };
      if (k_tiles > 0 && d_.tf32_round_before_wait) round_stage(smem, r_stage);
      smem.wait_group(k.stages - 2);
      if (k_tiles > 0 && !d_.tf32_round_before_wait) round_stage(smem, r_stage);
      smem.barrier();
      if (k_tiles > 0)
        for (int warp = 0; warp < warps; ++warp) load(warp, r_stage, 0, 0);
      const int wait = d_.wait_one_group_short ? k.stages - 1 : k.stages - 2;
      for (int kt = 0; kt < k_tiles; ++kt)
        for (int ks = 0; ks < k.k_steps(); ++ks) {
          if (ks == 0) {
            if (kt + k.stages - 1 < k_tiles) copy_next();
            smem.commit();
            w_stage = next_stage(w_stage);
          }
          const bool last_step = ks == k.k_steps() - 1;
          const int next_ks = (ks + 1) % k.k_steps();
          if (last_step && d_.fragments_before_barrier)
            for (int warp = 0; warp < warps; ++warp) load(warp, next_stage(r_stage), next_ks, (ks + 1) % 2);
          if (last_step) {
            const int landed = d_.tf32_round_read_stage ? r_stage : next_stage(r_stage);
            if (kt + 1 < k_tiles && d_.tf32_round_before_wait) round_stage(smem, landed);
            smem.wait_group(wait);
            if (kt + 1 < k_tiles && !d_.tf32_round_before_wait) round_stage(smem, landed);
            if (!d_.no_barrier_after_wait) smem.barrier();
            r_stage = next_stage(r_stage);
          }
          smem.discard_loads(last_step && kt + 1 == k_tiles);
          for (int warp = 0; warp < warps; ++warp) {
            if (!(last_step && d_.fragments_before_barrier)) load(warp, r_stage, next_ks, (ks + 1) % 2);
            mma_all(warp, a_buf(warp, ks % 2), b_buf(warp, ks % 2));
          }
          smem.discard_loads(false);
        }
    } else {
      // Unaligned rows: element-wise into stage 0, one k-tile at a time.
      std::vector<regs4> a(static_cast<std::size_t>(k.mi()));
      std::vector<std::array<u32, 64>> b(static_cast<std::size_t>(k.ni()));
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int k_left = K - k_begin - kt * k.bk;
        smem.barrier();
        const auto [ar, ac] = a_left(k_left);
        load_tile(smem, k.a_rows(), k.a_cols(), k.a_kc(), 0, ops_.a, a_tile + kt * a_k_step, g_.lda, ar, ac);
        const auto [br, bc] = b_left(k_left);
        load_tile(smem, k.b_rows(), k.b_cols(), k.b_kc(), k.b_at(), ops_.b, b_tile + kt * b_k_step, g_.ldb, br, bc);
        smem.barrier();
        for (int kk = 0; kk < k.bk; kk += k.mma_k())
          for (int warp = 0; warp < warps; ++warp) {
            load_fragments(smem, warp, 0, k.b_at(), kk, a, b);
            mma_all(warp, a.data(), b.data());
          }
      }
    }
    smem.wait_group(0);
    smem.barrier();

    // Epilogue: staging through shared memory as fp32, then 16-byte pieces.
    const int c_eb = k.c_eb();  // C's bytes (TT_ELEM_BYTES), not the operands': fp8's C is 2 or 4
    const bool c_vec = (g_.ldc * c_eb) % 16 == 0 && (c_base * c_eb) % 16 == 0;
    const int vec = k.epi_vec(), epi_mi = k.epi_mi();
    const long long partial =
        k.split_k > 1 ? tt_mma_partial_offset(tt_mma_tile_slot(batch, gx_, gy_, tile), k.split_k, slice, k.bm * k.bn) : 0;
    for (int pass = 0; pass < k.mi() / epi_mi; ++pass) {
      for (int warp = 0; warp < warps; ++warp) {
        const int warp_m = tt_mma_warp_m(warp, k.warps_n), wn0 = tt_mma_warp_n0(warp, k.warps_n, k.wn());
        for (int lane = 0; lane < 32; ++lane) {
          const int g = d_.acc_group_plus1 ? (tt_frag_group(lane) + 1) % 8 : tt_frag_group(lane);
          const int t = tt_frag_thread(lane);
          for (int j = 0; j < epi_mi; ++j)
            for (int ni = 0; ni < k.ni(); ++ni)
              for (int h = 0; h < 2; ++h) {
                const int sr = tt_mma_stage_row(warp_m, epi_mi, j, g, h);
                const accs4& f = acc_at(warp, pass * epi_mi + j, ni);
                const float v[2] = {f[static_cast<std::size_t>(lane)][static_cast<std::size_t>(tt_frag_acc(h, 0))],
                                    f[static_cast<std::size_t>(lane)][static_cast<std::size_t>(tt_frag_acc(h, 1))]};
                smem.store(warp, tt_stage_offset(sr, tt_mma_stage_col(wn0, ni, t), k.bn) * 4, v, 8, "staging store");
              }
        }
      }
      smem.barrier();
      for (int tid = 0; tid < threads; ++tid)
        for (int item = tid; item < k.pass_rows() * (k.bn / vec); item += threads) {
          const int warp = tid / 32;
          const int sr = tt_epi_item_row(item, k.bn, vec), col = tt_epi_item_col(item, k.bn, vec);
          const bool paired = k.eb() == 4 && k.a_t && !d_.tf32_pairs_kept;  // TT_PAIR_A
          const int row = tt_mma_stage_row_to_tile_row(sr, pass, epi_mi, k.wm(), paired);
          float v[8] = {};
          if (vec == 8) {
            const int swap = tt_epi_swap(col);
            float x[4], y[4];
            smem.load(warp, tt_stage_offset(sr, col + 4 * swap, k.bn) * 4, x, 16, "staging load");
            smem.load(warp, tt_stage_offset(sr, col + 4 - 4 * swap, k.bn) * 4, y, 16, "staging load");
            for (int e = 0; e < 4; ++e) {
              v[e] = swap ? y[e] : x[e];
              v[4 + e] = swap ? x[e] : y[e];
            }
          } else {
            smem.load(warp, tt_stage_offset(sr, col, k.bn) * 4, v, 16, "staging load");
          }
          if (k.split_k > 1) {
            // This slice's unscaled partials; rows past M are never read back.
            if (m0 + row < M) {
              const long long at = (partial + static_cast<long long>(row) * k.bn + col) * 4;
              if (!workspace_.in(at, vec * 4) || at % 16 != 0)
                r_.note(fmt::format("partial store at workspace byte {}: outside the workspace or not 16-byte aligned", at));
              else
                std::memcpy(workspace_.bytes.data() + at, v, static_cast<std::size_t>(vec) * 4);
            }
          } else {
            scale_piece(v, m0 + row, n0 + col);
            store_c_vec(c_base, m0 + row, n0 + col, v, c_vec);
          }
        }
      smem.barrier();
    }
    if (k.split_k <= 1) return;

    // The last slice to finish the tile sums the partials (slice order) and writes C.
    smem.barrier();  // __syncthreads; thread 0: fence.acq_rel.gpu, the count, fence.acq_rel.gpu
    const u32 counter = tt_mma_batch_tiles(batch, gx_, gy_) + static_cast<u32>(tile);
    if (counter >= counters_.size()) {
      r_.note(fmt::format("split-K counter {} outside the {} counters", counter, counters_.size()));
      return;
    }
    const u32 last_flag = tt_mma_is_last_slice(counters_[counter]++, k.split_k) ? 1u : 0u;  // atom.global.add by thread 0
    smem.store(0, 0, &last_flag, 4, "split-K flag");
    smem.barrier();
    u32 last = 0;
    for (int warp = 0; warp < warps; ++warp) smem.load(warp, 0, &last, 4, "split-K flag");
    if (!last) return;
    ++r_.ran.split_reductions;
    const long long slots = partial - static_cast<long long>(slice) * (k.bm * k.bn);
    const int reads = d_.split_slice0_twice ? k.split_k + 1 : d_.split_skip_last_slice ? k.split_k - 1 : k.split_k;
    for (int tid = 0; tid < threads; ++tid)
      for (int item = tid; item < k.bm * (k.bn / vec); item += threads) {
        const int row = tt_epi_item_row(item, k.bn, vec), col = tt_epi_item_col(item, k.bn, vec);
        if (m0 + row >= M || n0 + col >= N) continue;
        float v[8] = {};
        for (int s = 0; s < reads; ++s)
          for (int e = 0; e < vec; e += 4) {
            float w[4];
            const long long at = (slots + static_cast<long long>(s % k.split_k) * (k.bm * k.bn) +
                                  static_cast<long long>(row) * k.bn + col + e) * 4;
            read_global(workspace_, at, w, 16, "partial load");  // ld.global.cg.v4.f32
            for (int x = 0; x < 4; ++x) v[e + x] += w[x];
          }
        if (!d_.rw_split_unscaled) scale_piece(v, m0 + row, n0 + col);
        store_c_vec(c_base, m0 + row, n0 + col, v, c_vec);
      }
    counters_[counter] = 0;  // ready for the next launch
  }

  const kernel_macros& k_;
  const gemm_case& g_;
  operands& ops_;
  const defects& d_;
  report& r_;
  unsigned gx_, gy_, gz_;
  global_buffer workspace_;
  std::vector<u32> counters_;
  std::vector<int> c_writes_;
};

}  // namespace mma_emu
