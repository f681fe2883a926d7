#pragma once
#include <cstdint>
#include <string>

#include "core/gemm/gemm_suite.hpp"

namespace tiletune {

// One of N parts of a suite, for tuning a suite on many machines at once
// (gemm --suite S --shard I/N). Shards are numbered from 0, as Slurm numbers
// the tasks of `sbatch --array=0-(N-1)` (SLURM_ARRAY_TASK_ID).
struct suite_shard {
  int index = 0;
  int count = 1;
};

// "I/N" with 0 <= I < N and N >= 1; anything else is a usage_error naming it.
suite_shard parse_shard(const std::string& text);

// Which shard a problem belongs to: FNV-1a (64-bit) of its tuning-database key
// (tuning_problem_key: "4096x4096x4096 b1 bf16 nt a1 b0"), modulo N. It depends
// on the problem alone, not on its name or position: adding, removing or
// reordering problems never moves another problem to another shard, and the
// same shape in two suites lands in the same shard.
int shard_of(const gemm_problem& p, int count);
std::uint64_t fnv1a64(const std::string& text);

// The problems of `suite` in shard `s`, in the suite's order.
gemm_suite select_shard(const gemm_suite& suite, const suite_shard& s);

}  // namespace tiletune
