// The padded copy of a K-major operand whose rows start off 16 bytes (kernels_templates/common/
// gemm_transpose.cuh, tt_pad_plan and tt_pad_shift): every thread of a launch run on the host as the
// kernel runs it, over a source placed at each address mod 16 its element size allows (the shift
// comes from the source's own address, as on the GPU), for 1-, 2- and 4-byte elements. Checked: the
// copy is the source's rows with zeros to 16 bytes, every 16-byte load is aligned and inside the
// source, every store inside the copy; and planted defects show each can fail.
#define TT_HOST_DEVICE inline
#include "common/gemm_transpose.cuh"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

enum class pad_defect { none, shift_from_offset_only, one_window_word, last_chunk_as_window };

struct pad_counts {
  long long windows = 0, shifted = 0, elements = 0;
};

// One launch: `matrices` matrices of `cols` rows of K = `rows` elements of `eb` bytes, `ld` apart,
// the source at address mod 16 = `misalign`. Returns the first error, "" when the copy is right.
std::string run_padded_copy(int eb, int rows, int cols, int matrices, long long ld, int misalign, pad_defect d,
                            pad_counts& n) {
  const int per16 = 16 / eb, row = (rows + per16 - 1) / per16 * per16;
  const long long matrix_stride = static_cast<long long>(cols) * ld;
  const long long extent = ((matrices - 1) * matrix_stride + static_cast<long long>(cols - 1) * ld + rows) * eb;
  // A 16-byte-aligned arena, the source at `misalign` in it, poison around.
  std::vector<std::uint64_t> arena(static_cast<std::size_t>((extent + misalign + 64) / 8 + 2), 0xa5a5a5a5a5a5a5a5ull);
  auto* const base = reinterpret_cast<std::uint8_t*>(arena.data());
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0) return "the arena is not 16-byte aligned";
  std::uint8_t* const src = base + misalign;
  for (long long i = 0; i < extent; ++i) src[i] = static_cast<std::uint8_t>(1 + (i * 7919) % 251);
  const long long copy_bytes = static_cast<long long>(matrices) * cols * row * eb;
  std::vector<std::uint8_t> dst(static_cast<std::size_t>(copy_bytes), 0xff);
  const long long chunks = static_cast<long long>(cols) * row * eb / 16;
  const long long blocks = (chunks + TT_PAD_CHUNKS_PER_BLOCK - 1) / TT_PAD_CHUNKS_PER_BLOCK;
  for (int bz = 0; bz < matrices; ++bz)
    for (long long bx = 0; bx < blocks; ++bx)
      for (int t = 0; t < TT_PAD_CHUNKS_PER_BLOCK; ++t) {
        tt_pad_chunk c =
            tt_pad_plan(static_cast<unsigned>(bx * TT_PAD_CHUNKS_PER_BLOCK + t), bz, rows, cols, ld, matrix_stride, row,
                        eb, d == pad_defect::shift_from_offset_only ? 0 : misalign, extent);
        if (c.kind == tt_pad_none) continue;
        if (d == pad_defect::last_chunk_as_window && c.kind == tt_pad_elements) c.kind = tt_pad_window;
        std::uint8_t out[16] = {};
        if (c.kind == tt_pad_window) {
          ++n.windows;
          if (c.shift) ++n.shifted;
          const int bytes = c.shift ? 32 : 16;
          if ((misalign + c.window) % 16 != 0) return fmt::format("a 16-byte load at source byte {} is off 16 bytes", c.window);
          if (c.window < 0 || c.window + bytes > extent)
            return fmt::format("a load of source bytes {} to {}, the source has {}", c.window, c.window + bytes, extent);
          unsigned w[8] = {};
          std::memcpy(w, src + c.window, static_cast<std::size_t>(d == pad_defect::one_window_word ? 16 : bytes));
          unsigned o[4];
          tt_pad_shift(w, c.shift, o);
          std::memcpy(out, o, 16);
        } else if (c.kind == tt_pad_elements) {
          ++n.elements;
          if (c.src < 0 || c.src + c.elements * eb > extent) return fmt::format("an element load at {}", c.src);
          std::memcpy(out, src + c.src, static_cast<std::size_t>(c.elements * eb));
        }
        if (c.dst < 0 || c.dst % 16 != 0 || c.dst + 16 > copy_bytes) return fmt::format("a store at {}", c.dst);
        std::memcpy(dst.data() + c.dst, out, 16);
      }
  for (int z = 0; z < matrices; ++z)
    for (int r = 0; r < cols; ++r)
      for (int k = 0; k < row; ++k)
        for (int b = 0; b < eb; ++b) {
          const std::uint8_t want =
              k < rows ? src[((z * matrix_stride) + static_cast<long long>(r) * ld + k) * eb + b] : 0;
          const std::uint8_t got = dst[static_cast<std::size_t>(((static_cast<long long>(z) * cols + r) * row + k) * eb + b)];
          if (got != want)
            return fmt::format("matrix {} row {} element {} byte {}: {} where the source has {}", z, r, k, b, got, want);
        }
  return "";
}

}  // namespace

TEST(padded_row_copy, copies_every_row_with_zeros_to_16_bytes_from_any_source_address) {
  pad_counts n;
  int cases = 0;
  for (const int eb : {1, 2, 4})
    for (const int rows : {1, 7, 167, 1001})
      for (const int cols : {1, 3, 33})
        for (const int matrices : {1, 2}) {
          if (rows * eb % 16 == 0) continue;  // aligned rows are read in place, not copied
          for (int misalign = 0; misalign < 16; misalign += eb) {
            EXPECT_EQ(run_padded_copy(eb, rows, cols, matrices, rows, misalign, pad_defect::none, n), "")
                << eb << "-byte elements, K " << rows << ", " << cols << " rows, " << matrices << " matrices, source at "
                << misalign << " mod 16";
            ++cases;
          }
        }
  // A K-major operand with a longer stride than K (a view): the same.
  EXPECT_EQ(run_padded_copy(2, 167, 5, 2, 203, 6, pad_defect::none, n), "");
  std::printf("padded row copy: %d cases; %lld windows (%lld shifted), %lld element by element\n", cases, n.windows,
              n.shifted, n.elements);
  EXPECT_GT(n.windows - n.shifted, 0);  // every kind of chunk ran
  EXPECT_GT(n.shifted, 0);
  EXPECT_GT(n.elements, 0);
}

TEST(padded_row_copy, planted_defects_are_caught) {
  pad_counts n;
  // The shift from the chunk's offset alone, the source's own address ignored.
  EXPECT_NE(run_padded_copy(2, 167, 3, 1, 167, 6, pad_defect::shift_from_offset_only, n), "");
  // Only the first 16 bytes of a window read.
  EXPECT_NE(run_padded_copy(2, 167, 3, 1, 167, 0, pad_defect::one_window_word, n), "");
  // A row's last chunk (across K's end) read as a window: past the source's last byte at the last row.
  const std::string past = run_padded_copy(2, 167, 3, 1, 167, 0, pad_defect::last_chunk_as_window, n);
  EXPECT_NE(past.find("the source has"), std::string::npos) << past;
}
