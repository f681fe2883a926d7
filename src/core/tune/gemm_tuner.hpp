#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/plan_mode.hpp"
#include "core/device/device_spec.hpp"
#include "core/compile/kernel_compiler.hpp"
#include "core/tune/compile_selection.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/tune/perf_model.hpp"
#include "core/gemm/problem.hpp"
#include "core/measure/variant_status.hpp"
#include "core/tune/search/search_strategy.hpp"
#include "core/gemm/tile_config.hpp"

namespace tiletune {


struct variant_result {
  tile_config config;
  variant_status status = variant_status::pruned;
  std::string constraint;  // the broken constraint, when pruned or resource_limit
  std::string reason;      // a sentence for the user, when not ok
  std::string compile_log;
  bool compiled = false;
  bool from_cache = false;
  double compile_ms = 0;
  kernel_resources resources;
  std::int64_t smem_bytes = 0;  // dynamic (the tile's buffers) plus static
  occupancy_estimate occupancy;
  prediction predicted;
  std::string cubin;  // kept for launching; not in the JSON
  std::string same_program_as;  // a rasterization copy that took this variant's compiled figures
  int rank = 0;       // 1 = best among ok; 0 when not ok
  std::optional<measure_response> measured;  // measured mode
  std::optional<tiletune::search_stage> search_stage;  // measured mode: the stage that last timed it (or not_timed)
  // The recommended variant, timed again beside cuBLASLt after the search (measured then holds that
  // pair's time): what the search measured, the time its rank among the finalists came from.
  std::optional<measure_response> in_search;
};

struct gemm_plan {
  gemm_problem problem;
  device_spec device;
  plan_mode mode = plan_mode::predicted;
  std::string compiler_version;
  std::vector<variant_result> variants;  // ok ones first, best first
  bool selected = false;                 // variants holds only those --only selected
  std::optional<std::size_t> recommended;
  double compile_wall_ms = 0;
  std::size_t compiled = 0;
  std::size_t cache_hits = 0;
  // Measured mode:
  std::optional<measure_response> reference;  // cuBLASLt, timed like the variants
  // cuBLASLt's first timing, before the search, when `reference` is the later
  // one timed beside the recommended variant (cuBLASLt, variant, variant, cuBLASLt).
  std::optional<double> reference_first_us;
  std::int64_t peak_device_bytes = 0;
  std::vector<std::string> notes;
  std::optional<search_report> search;  // measured mode: which strategy ran and what each stage cost
  std::optional<l2_flush_mode> l2_flush;  // measured mode, timed: how each sample found the L2 (gemm --l2-flush)
};

struct plan_options {
  int jobs = 1;
  compile_progress progress;
  std::vector<std::string> only;  // variant ids to keep; empty keeps all
  // Debug builds for cuda-gdb and compute-sanitizer: "lineinfo" (source lines
  // in the SASS, the same code) or "full" (-G: device debug, unoptimized).
  std::string kernel_debug;
  // Which variants compile (default: every one); see compile_selection.hpp.
  compile_selection selection;
};
// The NVRTC options of a --kernel-debug level; throws usage_error naming a bad one.
std::vector<std::string> kernel_debug_options(const std::string& level);

// The NVRTC job of one variant on one device.
compile_job make_compile_job(const tile_config& c, dtype t, layout l, const device_spec& d);

// Throws usage_error when A, B and C cannot fit the device's memory together.
void check_fits_memory(const gemm_problem& p, const device_spec& d);
// Why no variant of any family can run the problem on the device, whatever its tile: the device has
// no math for its operand type (fp8 before sm_89), or each constraint broken, with its count and first
// message (bf16 on the B200, whose tensor cores run tcgen05, which no family builds; a grouped GEMM
// before Hopper). Empty where some variant can.
std::string why_no_variant_runs(const gemm_problem& p, const device_spec& d);

// Enumerate, prune by constraints, compile (in parallel), prune by resources,
// predict and rank. No GPU is needed.
gemm_plan plan_gemm(const gemm_problem& p, const device_spec& d, kernel_compiler& compiler,
                    const plan_options& options);

// An offline plan's rasterization copies take the figures of their tile's compiled program and
// have no cubin of their own. Compiles the recommended variant's own program where it has none
// (what --export writes), with options.kernel_debug's flags. Should that compile fail, or its
// registers, shared memory or spills differ from the figures it took, the variant is marked a
// compile error and the next one recommended, until a recommendation has its cubin or none is ok.
void compile_recommended_cubin(gemm_plan& plan, kernel_compiler& compiler, const plan_options& options);

struct run_info {
  std::string command_line;
  std::string date_utc;  // ISO 8601
};

// The contract's JSON (schema tiletune.gemm/1).
nlohmann::json to_json(const gemm_plan& plan, const run_info& run);
// The parts of it that belong to one problem (problem, reference, variants up
// to max_variants, summary, recommendation), for suites.
nlohmann::json result_body(const gemm_plan& plan, std::size_t max_variants);
// schema, tool, device and mode.
nlohmann::json result_header(const std::string& schema, const device_spec& device, plan_mode mode,
                             const std::string& compiler_version, const run_info& run);

// The recommended tile in the words of other tools. Triton's blocks are what Triton compiles:
// powers of two, at least 16 (a 192-column tile is BLOCK_N=256, swap-AB's 8 rows BLOCK_M=16).
nlohmann::json triton_config(const tile_config& c, dtype t);
// Which of the tile's sizes triton_config rounded up, in words ("BLOCK_N 192 -> 256: ..."), and the
// stages it then gives (as many of the larger buffers as fit where the tile's did), or empty.
std::string triton_rounding(const tile_config& c);
// triton_config as one line of KEY=VALUE, every key present, then any rounding in parentheses.
std::string triton_summary(const tile_config& c, dtype t);
std::string cutlass_shape(const tile_config& c, dtype t);

}  // namespace tiletune
