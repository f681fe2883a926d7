#pragma once
// The gemm command's setup (gemm_setup.cpp), before gemm_run.cpp's steps: the
// problems its flags name, the checks of its flags, the GPUs it deals to, and
// what the planner and the measurement are given.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/gemm_options.hpp"
#include "cli/gpu_run.hpp"
#include "cli/output.hpp"
#include "core/gemm/gemm_suite.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/fleet/suite_shard.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"

namespace tiletune::cli {

// The problems to tune: the suite (or its shard), the model's GEMMs, or the one problem of the flags.
struct gemm_work {
  gemm_suite suite;
  std::optional<suite_shard> shard;
  std::size_t suite_total = 0;
  std::vector<std::int64_t> counts;  // --model: how often one step runs each problem (before a shard)
  std::vector<std::string> notes;    // --model: what the suite leaves out
};
gemm_work work_of(const gemm_options& o);

// The checks of the flags that need no device, before any work.
void check_run_flags(const gemm_options& o);
// The tuning database the run reads and writes (empty with --no-db), and every file the run reads
// (--suite, --db, --model's config): what --out and --export must not replace.
std::filesystem::path database_of(const gemm_options& o);
std::vector<named_input> gemm_inputs(const gemm_options& o);

// The GPUs of --devices (the suite is dealt to them), else none.
std::vector<device_choice> devices_to_deal_to(const gemm_options& o, const run_context& ctx);

// What a measurement on the GPU is given of the flags.
measure_settings settings_of(const gemm_options& o);

// The model calibrated on this GPU model's measured results, where the database has some;
// else the calibration shipped for this GPU model, fitted to the measurements in profiles/. A fit
// is kept in cache_dir/calibrations/ and read back while the records are the same (none kept
// where cache_dir is empty: --no-cache).
std::optional<model_calibration> calibration_for(const tuning_db* db, const device_choice& device,
                                                 progress_line& progress, const std::filesystem::path& cache_dir);

// What the planner is given: for an offline plan only the variants the model says can still
// reach the table (compile_selection), ranked by the model the plan is finally ranked by.
plan_options plan_options_of(const gemm_options& o, bool measure, const std::optional<model_calibration>& calibration,
                             const device_spec& spec);

}  // namespace tiletune::cli
