#include "core/measure/l2_flush_note.hpp"

#include <fmt/format.h>

namespace tiletune {

bool flush_sensitive(const gemm_problem& p, const device_spec& d) {
  return d.l2_bytes > 0 && memory_bound(p, d) &&
         static_cast<double>(p.least_traffic_bytes()) >= 0.1 * static_cast<double>(d.l2_bytes);
}

std::string l2_flush_note(l2_flush_mode mode, const gemm_problem& p, const device_spec& d) {
  switch (mode) {
    case l2_flush_mode::read:
      return "timed with --l2-flush read: before each sample, cuBLASLt's too, a buffer of twice the L2 was read "
             "(clean lines), not written";
    case l2_flush_mode::none:
      return "timed with --l2-flush none: before each sample, cuBLASLt's too, the L2 was not emptied (operands "
             "that fit stay in it)";
    case l2_flush_mode::write:
      break;
  }
  if (!flush_sensitive(p, d)) return "";
  return fmt::format(
      "memory-bound ({:.1f} MB at least through DRAM): timed with the L2 flushed by writes (the default), whose "
      "dirty lines each of a kernel's misses writes back; evict-first variants (_efb) avoid that, cuBLASLt does "
      "not. Where the GEMM runs after kernels that mostly read (a decode step) time it with --l2-flush read: the "
      "pick and its ratio to cuBLASLt can change (H100, 16x4096x4096 bf16: 1.09x cuBLASLt by writes, 0.95x by "
      "reads)",
      static_cast<double>(p.least_traffic_bytes()) / 1e6);
}

}  // namespace tiletune
