// What a timed run says of its L2 flush (core/measure/l2_flush_note): read and none always, the
// default write only where the flush can rank the problem's kernels (memory-bound, and moving at
// least a tenth of the L2 through DRAM): the decode shapes whose picks and ratios to cuBLASLt the
// H100 measured to change with the flush (profiles/measured/h100-2026-12-05).
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/measure/l2_flush_note.hpp"

namespace tiletune {
namespace {

gemm_problem flush_problem(std::int64_t m, std::int64_t n, std::int64_t k, dtype t) {
  gemm_problem p;
  p.m = m, p.n = n, p.k = k;
  p.type = t;
  p.layout = parse_layout("nt");
  return p;
}

TEST(l2_flush_note, the_write_flush_is_noted_where_it_can_rank_the_kernels) {
  const device_spec& h100 = find_preset("h100-sxm");
  // Decode: 33.8 MB at 3.35 TB/s (10 us) against 0.5 us of FLOPs; 128 rows: 10.3 us against 4.3.
  for (const std::int64_t m : {1, 16, 128}) {
    const gemm_problem p = flush_problem(m, 4096, 4096, dtype::bf16);
    EXPECT_TRUE(flush_sensitive(p, h100)) << p.describe();
    const std::string note = l2_flush_note(l2_flush_mode::write, p, h100);
    EXPECT_NE(note.find("memory-bound"), std::string::npos) << note;
    EXPECT_NE(note.find("--l2-flush read"), std::string::npos) << note;
  }
  // Compute-bound: 4096^3 bf16 (139 us of FLOPs against 30 of traffic), and 512 rows (17 against 12).
  for (const std::int64_t m : {512, 4096}) {
    const gemm_problem p = flush_problem(m, 4096, 4096, dtype::bf16);
    EXPECT_FALSE(flush_sensitive(p, h100)) << p.describe();
    EXPECT_EQ(l2_flush_note(l2_flush_mode::write, p, h100), "") << p.describe();
  }
  // Memory-bound but small against the L2 (64^3 f32: 49 KB): few lines to write back.
  const gemm_problem tiny = flush_problem(64, 64, 64, dtype::f32);
  EXPECT_FALSE(flush_sensitive(tiny, h100));
  // The bound is the dtype's peak: f32 decode is memory-bound too (67.6 MB in 20 us, 8 us of FLOPs).
  EXPECT_TRUE(flush_sensitive(flush_problem(16, 4096, 4096, dtype::f32), h100));
}

TEST(l2_flush_note, read_and_none_always_say_what_they_did) {
  const device_spec& h100 = find_preset("h100-sxm");
  const gemm_problem big = flush_problem(4096, 4096, 4096, dtype::bf16);
  EXPECT_NE(l2_flush_note(l2_flush_mode::read, big, h100).find("timed with --l2-flush read"), std::string::npos);
  EXPECT_NE(l2_flush_note(l2_flush_mode::none, big, h100).find("timed with --l2-flush none"), std::string::npos);
}

}  // namespace
}  // namespace tiletune
