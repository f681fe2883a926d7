#pragma once
// Which variants of a plan are compiled, and in what order: every one (the
// measured path, --compile-all), or, for an offline plan, one program per
// group of rasterization copies and only those the model says can still
// reach the best `keep` (issue 22: time to an answer).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/compile/kernel_compiler.hpp"
#include "core/device/device_spec.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"
#include "core/tune/perf_model.hpp"

namespace tiletune {

struct gemm_plan;
struct variant_result;

struct compile_selection {
  // Rasterization copies (the same tile in another block order) take the
  // resources of the first of them compiled: the order only renames blocks,
  // the program's registers and shared memory are the same. Their cubins
  // are not built, so only an offline plan that launches nothing may share.
  bool share_raster_copies = false;
  // > 0: compile in the order of each variant's optimistic time (the model's
  // time with the best occupancy its tile allows) and stop once no variant
  // left can be faster than the keep-th best compiled one; those left are
  // pruned with the constraint "model_bound". 0 compiles every variant.
  int keep = 0;
  // With keep > 0, the most programs compiled between two looks at the bar: the cores that compile
  // at once (0: this machine's). More threads than cores (-j 64 on 2 cores) finish a round no
  // sooner, and a round of them compiles programs the bar would have pruned (a 64x64x64 plan
  // compiled 152 programs in 48 s at -j 10000, 4 at -j 2); the plan is the same either way.
  int cores = 0;
  // The time the plan is finally ranked by (the calibrated model's, where the
  // plan is re-ranked with it afterwards); empty: the plain model's. The
  // bound holds for any time that grows as occupancy falls.
  std::function<double(const gemm_problem&, const tile_config&, const occupancy_estimate&)> ranking_time;
};

// The program a variant compiles to, as a key: its id with the raster order cleared.
std::string program_key(const tile_config& c);

// The fewest registers per thread any compiled, non-spilling kernel of c can use: its share
// of the block's BM x BN fp32 accumulators plus the operands of its innermost multiply
// (gemm_family::operand_registers).
int register_floor(const tile_config& c);

// The model's time for c on p with the most blocks per SM its threads, its
// shared memory and the registers its accumulators need at the least allow:
// no compile can make the variant faster than this, since the model's time
// only grows as occupancy falls.
double optimistic_time_us(const device_spec& d, const gemm_problem& p, const tile_config& c,
                          std::int64_t dynamic_smem_bytes, const compile_selection& how = {});

// Sets a compiled variant's resources, occupancy, status and prediction.
void assess_compiled(variant_result& v, compiled_kernel& k, const device_spec& d, const gemm_problem& p);

// Compiles the jobs (job j belongs to plan.variants[job_variant[j]]) on
// `threads` threads as `how` says and assesses each variant; counts go into
// plan.compiled and plan.cache_hits, a sentence per skipped group into plan.notes.
void compile_variants(gemm_plan& plan, std::vector<compile_job>& jobs, const std::vector<std::size_t>& job_variant,
                      kernel_compiler& compiler, int threads, const compile_progress& progress,
                      const compile_selection& how);

}  // namespace tiletune
