#include "core/gemm/group_slices.hpp"

namespace tiletune {

std::vector<group_slice> group_slices(const gemm_problem& p) {
  std::vector<group_slice> out;
  if (!p.groups) return out;
  const gemm_groups& g = *p.groups;
  const bool masked = g.layout == group_layout::masked;
  std::int64_t row = 0;
  for (int i = 0; i < g.count(); ++i) {
    const std::int64_t valid = g.valid(i);
    const std::int64_t first = masked ? i * g.stride : row;
    row += masked ? 0 : valid;
    if (valid == 0) continue;
    group_slice s;
    s.group = i;
    s.problem = p;
    s.problem.groups.reset();
    s.problem.m = valid;
    s.first_row = first;
    s.a_offset = first * p.k;
    s.b_offset = static_cast<std::int64_t>(i) * p.k * p.n;
    s.c_offset = first * p.n;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<row_range> written_row_ranges(const gemm_problem& p) {
  if (!p.groups || p.groups->layout == group_layout::contiguous) return {{0, p.m * p.batch}};
  std::vector<row_range> out;
  for (const group_slice& s : group_slices(p)) {
    if (!out.empty() && out.back().second == s.first_row)
      out.back().second += s.problem.m;  // a full group runs into the next one's rows
    else
      out.emplace_back(s.first_row, s.first_row + s.problem.m);
  }
  return out;
}

std::vector<unsigned char> gather_rows(const unsigned char* data, std::int64_t row_bytes,
                                       const std::vector<row_range>& ranges) {
  std::vector<unsigned char> out;
  for (const auto& [begin, end] : ranges)
    out.insert(out.end(), data + begin * row_bytes, data + end * row_bytes);
  return out;
}

std::int64_t first_touched_row(const unsigned char* result, const unsigned char* expected, std::int64_t row_bytes,
                               const std::vector<row_range>& ranges, std::int64_t total_rows) {
  std::int64_t row = 0;
  auto check_until = [&](std::int64_t end) -> std::int64_t {
    for (; row < end; ++row)
      for (std::int64_t i = row * row_bytes; i < (row + 1) * row_bytes; ++i)
        if (result[i] != (expected ? expected[i] : 0xff)) return row;
    return -1;
  };
  for (const auto& [begin, end] : ranges) {
    if (const std::int64_t r = check_until(begin); r >= 0) return r;
    row = end;
  }
  return check_until(total_rows);
}

}  // namespace tiletune
