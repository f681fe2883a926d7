#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "core/gemm/problem.hpp"

// A grouped GEMM cut into the plain GEMMs of its groups: what the measuring worker's reference
// (a loop of cuBLASLt calls, one per group) runs, and which rows of C a variant must write.
namespace tiletune {

struct group_slice {
  int group = 0;
  gemm_problem problem;        // the group's own GEMM: its valid rows, batch 1, no groups
  std::int64_t first_row = 0;  // of A and C
  // Elements from the start of A, B and C to the group's first (A and C rows are whole: A is
  // not transposed in a grouped problem).
  std::int64_t a_offset = 0, b_offset = 0, c_offset = 0;
};

// The groups that have rows, in order; a plain problem gives none.
std::vector<group_slice> group_slices(const gemm_problem& p);

// The rows of C a kernel writes, as [begin, end) over the m x batch rows it holds: all of them,
// or (masked groups) each group's valid rows; the rest must be left as they were.
using row_range = std::pair<std::int64_t, std::int64_t>;
std::vector<row_range> written_row_ranges(const gemm_problem& p);

// The rows of the ranges, each row_bytes long, one after another: the part of C a check compares.
std::vector<unsigned char> gather_rows(const unsigned char* data, std::int64_t row_bytes,
                                       const std::vector<row_range>& ranges);
// The first of total_rows rows outside the ranges whose bytes differ from expected's (nullptr:
// every byte 0xff, the poison a check writes first); -1 when every such row is as it was.
std::int64_t first_touched_row(const unsigned char* result, const unsigned char* expected, std::int64_t row_bytes,
                               const std::vector<row_range>& ranges, std::int64_t total_rows);

}  // namespace tiletune
