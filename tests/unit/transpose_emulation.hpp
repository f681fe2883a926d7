#pragma once
// The transposing pre-pass of K-major copies (kernels_templates/common/gemm_transpose.cuh), emulated
// on the host through the template's own index math: shared by the wgmma and mma families'
// emulations, which run it from the launches their describe_launch gives (kernel_launch::prologue).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#ifndef TT_HOST_DEVICE
#define TT_HOST_DEVICE inline
#endif
#include "common/gemm_transpose.cuh"
#include "core/gemm/kernel_launch.hpp"

namespace tiletune_test {
using tiletune::kernel_launch;
using tiletune::kernel_parameter;

// Planted defects of the pre-pass.
struct transpose_defects {
  bool rows_of_cols = false;  // the copy's rows cols apart, not rows (K)
  bool unguarded = false;     // a tile's elements past the matrix moved too
  bool pad_unwritten = false; // the copy's rows padded to 16 bytes, the pad left as it was
  bool k_major_as_mn = false; // a K-major operand read as if stored MN-major
};

// A K-major operand's padded copy (k_major 1), thread by thread through tt_pad_plan and
// tt_pad_shift: each 16-byte window read from the source as the kernel reads it (aligned, so the
// source's own address mod 16 decides the shift, as on the GPU), a window or element outside the
// source an error, every store inside the copy.
inline void emulate_padded_rows(const kernel_launch& l, int eb, int rows, int cols, long long ld,
                                long long matrix_stride, int row, const std::vector<std::uint8_t>& src,
                                std::vector<std::uint8_t>& dst, const transpose_defects& d,
                                std::vector<std::string>& errors) {
  const auto base = reinterpret_cast<std::uintptr_t>(src.data());
  const int misalign = static_cast<int>(base & 15);
  const long long extent =
      tt_pad_source_bytes(static_cast<int>(l.grid[2]), matrix_stride, cols, ld, rows, eb);
  const auto size = static_cast<long long>(src.size());
  auto read = [&](long long at, int bytes, void* to) {  // `at` from the source pointer
    if (at < 0 || at + bytes > size) {
      errors.push_back(fmt::format("{}: a load of bytes {} to {} of {}", l.entry, at, at + bytes, size));
      std::memset(to, 0, static_cast<std::size_t>(bytes));
      return;
    }
    std::memcpy(to, src.data() + at, static_cast<std::size_t>(bytes));
  };
  for (int bz = 0; bz < l.grid[2]; ++bz)
    for (long long bx = 0; bx < l.grid[0]; ++bx)
      for (int t = 0; t < TT_PAD_CHUNKS_PER_BLOCK; ++t) {
        tt_pad_chunk c = tt_pad_plan(static_cast<unsigned>(bx * TT_PAD_CHUNKS_PER_BLOCK + t), bz, rows, cols, ld,
                                     matrix_stride, row, eb, misalign, extent);
        if (c.kind == tt_pad_none) continue;
        if (d.unguarded && c.kind == tt_pad_elements) {  // read as a window, past K's end or the source's
          c.kind = tt_pad_window;
          c.shift = static_cast<int>((misalign + c.src) & 15);
          c.window = c.src - c.shift;
        }
        if (d.rows_of_cols) {  // the copy's rows cols apart
          const long long g = bx * TT_PAD_CHUNKS_PER_BLOCK + t, per_row = static_cast<long long>(row) * eb / 16;
          c.dst = (static_cast<long long>(bz) * row * cols + g / per_row * cols) * eb + g % per_row * 16;
        }
        std::uint8_t out[16] = {};
        if (d.pad_unwritten) std::memset(out, 0xff, 16);  // the pad as the buffer held it (poison)
        if (c.kind == tt_pad_window) {
          if ((base + static_cast<std::uintptr_t>(c.window)) % 16 != 0)
            errors.push_back(fmt::format("{}: a 16-byte load at {} off 16 bytes", l.entry, c.window));
          unsigned w[8] = {};
          read(c.window, c.shift ? 32 : 16, w);
          unsigned o[4];
          tt_pad_shift(w, c.shift, o);
          std::memcpy(out, o, 16);
        } else if (c.kind == tt_pad_elements) {
          read(c.src, c.elements * eb, out);
        }
        if (c.dst < 0 || c.dst + 16 > static_cast<long long>(dst.size()) || c.dst % 16 != 0) {
          errors.push_back(fmt::format("{}: a 16-byte store at {} of {}", l.entry, c.dst, dst.size()));
          continue;
        }
        std::memcpy(dst.data() + c.dst, out, 16);
      }
}

// Runs one prologue launch of tiletune_gemm_transpose (common/gemm_transpose.cuh) block by block, thread
// by thread, through the template's own index math and a poisoned tile of shared memory: `src`
// the operand as stored, `dst` its copy (bytes as the launch's buffer_bytes says, poisoned: every
// byte 0xff, a NaN in each element type, so that an element the pre-pass leaves unwritten, the pad
// too, fails the GEMM's comparison). A read of shared memory no load wrote, or a global access
// outside its buffer, is an error.
inline void emulate_transpose(const kernel_launch& l, int eb, const std::vector<std::uint8_t>& src,
                              std::vector<std::uint8_t>& dst, const transpose_defects& d,
                              std::vector<std::string>& errors) {
  auto scalar = [&](const char* name) {
    for (const kernel_parameter& k : l.parameters)
      if (k.name == name) return k.value.get<long long>();
    errors.push_back(fmt::format("{} has no parameter {}", l.entry, name));
    return 0ll;
  };
  const int rows = static_cast<int>(scalar("rows")), cols = static_cast<int>(scalar("cols"));
  const long long ld = scalar("ld"), matrix_stride = scalar("matrix_stride");
  const int row = static_cast<int>(scalar("row")), k_major = d.k_major_as_mn ? 0 : static_cast<int>(scalar("k_major"));
  dst.assign(static_cast<std::size_t>(l.parameters[1].buffer_bytes), 0xff);
  if (l.block[0] != TT_XPOSE_TILE || l.block[1] != TT_XPOSE_THREAD_ROWS || l.block[2] != 1)
    errors.push_back(fmt::format("{}: block ({}, {}, {}), the kernel's is ({}, {}, 1)", l.entry, l.block[0], l.block[1],
                                 l.block[2], TT_XPOSE_TILE, TT_XPOSE_THREAD_ROWS));
  if (k_major) {
    emulate_padded_rows(l, eb, rows, cols, ld, matrix_stride, row, src, dst, d, errors);
    return;
  }
  const std::int64_t src_elements = static_cast<std::int64_t>(src.size()) / eb,
                     dst_elements = static_cast<std::int64_t>(dst.size()) / eb;
  const std::uint64_t poison = ~0ull;
  std::vector<std::uint64_t> tile(TT_XPOSE_TILE * TT_XPOSE_PITCH);
  for (int bz = 0; bz < l.grid[2]; ++bz)
    for (int by = 0; by < l.grid[1]; ++by)
      for (int bx = 0; bx < l.grid[0]; ++bx) {
        std::fill(tile.begin(), tile.end(), poison);
        for (int ty = 0; ty < TT_XPOSE_THREAD_ROWS; ++ty)
          for (int tx = 0; tx < TT_XPOSE_TILE; ++tx)
            for (int i = 0; i < TT_XPOSE_TILE / TT_XPOSE_THREAD_ROWS; ++i) {
              const tt_xpose_move m = tt_xpose_load(bx, by, bz, tx, ty, i, rows, cols, ld, matrix_stride, k_major);
              if (!m.valid && !d.unguarded) continue;
              if (m.global < 0 || m.global >= src_elements) {
                if (m.valid) errors.push_back(fmt::format("{}: a load at {} of {}", l.entry, m.global, src_elements));
                continue;
              }
              std::uint64_t v = 0;
              std::memcpy(&v, src.data() + m.global * eb, static_cast<std::size_t>(eb));
              tile[static_cast<std::size_t>(m.smem)] = v;
            }
        for (int ty = 0; ty < TT_XPOSE_THREAD_ROWS; ++ty)
          for (int tx = 0; tx < TT_XPOSE_TILE; ++tx)
            for (int i = 0; i < TT_XPOSE_TILE / TT_XPOSE_THREAD_ROWS; ++i) {
              tt_xpose_move m = tt_xpose_store(bx, by, bz, tx, ty, i, rows, cols, row);
              if (!m.valid && !d.unguarded) continue;
              if (m.pad && d.pad_unwritten) continue;
              if (d.rows_of_cols) {
                const int r = by * TT_XPOSE_TILE + tx, c = bx * TT_XPOSE_TILE + ty + TT_XPOSE_THREAD_ROWS * i;
                m.global = static_cast<long long>(bz) * row * cols + static_cast<long long>(c) * cols + r;
              }
              const std::uint64_t v = m.pad ? 0 : tile[static_cast<std::size_t>(m.smem)];
              if (v == poison) {
                if (m.valid) errors.push_back(fmt::format("{}: block ({}, {}, {}) stores shared memory no load wrote",
                                                          l.entry, bx, by, bz));
                continue;
              }
              if (m.global < 0 || m.global >= dst_elements) {
                errors.push_back(fmt::format("{}: a store at {} of {}", l.entry, m.global, dst_elements));
                continue;
              }
              std::memcpy(dst.data() + m.global * eb, &v, static_cast<std::size_t>(eb));
            }
      }
}

}  // namespace tiletune_test
