#pragma once
// What a timed run's notes say about how its samples found the L2 (gemm --l2-flush).
#include <string>

#include "core/device/device_spec.hpp"
#include "core/gemm/problem.hpp"
#include "core/measure/measure_protocol.hpp"

namespace tiletune {

// Whether the L2's state before each sample can rank a problem's kernels: memory-bound (its
// least traffic takes longer at the DRAM bandwidth than its FLOPs at the dtype's peak) and that
// traffic at least a tenth of the L2 (a kernel that misses on fewer lines writes back few of the
// dirty ones a memset leaves).
bool flush_sensitive(const gemm_problem& p, const device_spec& d);

// The note for a run timed with `mode`, "" where none is due: read and none always say what they
// did; write (the default) only for a flush-sensitive problem, where it says what the write flush
// costs a kernel and how to time it as a decode step runs (H100, 2026-12-05: 16x4096x4096 bf16
// read 1.09x cuBLASLt flushed by writes, 0.95x by reads).
std::string l2_flush_note(l2_flush_mode mode, const gemm_problem& p, const device_spec& d);

}  // namespace tiletune
