#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/gemm/problem.hpp"

// A gemm result file (tiletune.gemm/1, tiletune.gemm-suite/1) as compare, check, report and the
// tuning database read it: each field of the type its schema gives, each figure what its times say.
namespace tiletune {

// One problem's outcome in a result file, as a comparison reads it.
struct result_entry {
  gemm_problem problem;
  std::string key;    // the problem, e.g. "4096x4096x4096 bf16 nt"
  std::string label;  // the suite's name for it, or the key
  bool has_result = false;        // a recommended variant exists
  bool incorrect = false;         // some variant failed verification
  std::string variant_id;
  std::optional<double> vs_reference;  // reference time / variant time (measured only)
  std::optional<double> time_us;       // measured median, or predicted
  double noise = 0;                    // relative spread of the measurement
  std::string partial;                 // the option that made the run partial (partial_run_option), or empty
  // How its timings emptied the L2 (gemm --l2-flush: write, read, none); a measured result that does not
  // say was timed by write, as every run before the option. Empty for a prediction.
  std::string l2_flush;
};

// The largest timing spread ((p80 - p20) / median) a result may give as its "noise": the recordings'
// 11,527 timings spread at most 0.35; past this a damaged or forged figure would call any change noise.
constexpr double max_timing_noise = 10;

struct result_file {
  std::string path;
  std::string schema;
  std::string mode;  // measured | predicted
  std::string device_name;
  std::string device_arch;
  // The GPU model: the preset it matches (h100-sxm), else its name. A plan for
  // a preset and a run on the real card carry different names, one model.
  std::string device_model;
  std::vector<result_entry> entries;
};
// Whether a result of this model may stand for the device (preset, or name when there is none).
bool same_device_model(const result_file& f, const std::string& preset, const std::string& name);

// The option that made a result partial, or empty: --only (its recommendation is the best of the
// variants it was given), --verify-only (nothing timed) or --kernel-debug (a debug build). Read
// from its "partial" field, or from an older file's command line (HEADER: a suite's top level).
// Partial runs stay out of the tuning database, and compare says which of its results are.
std::string partial_run_option(const nlohmann::json& result, const nlohmann::json& header);

// How a measured result's samples found the L2 (gemm --l2-flush): its "l2_flush", else "write" (every
// run before the option). Throws usage_error naming PATH where the field is not write, read or none.
// Partial runs' and other flushes' results stay out of the tuning database; compare sets a problem's
// timings against each other only under one flush.
std::string l2_flush_of(const nlohmann::json& result, const std::string& path);

// Reads a tiletune.gemm/1 or tiletune.gemm-suite/1 file. Throws usage_error
// with the file and the place of a malformed or truncated document, or the
// missing field.
result_file load_result_file(const std::filesystem::path& path);
result_file result_file_from_json(const nlohmann::json& j, const std::string& path);
std::string problem_key(const gemm_problem& p);
// A known preset in its own spelling ("H100-SXM" is h100-sxm, as --gpu reads it); another name as written.
std::string canonical_preset(const std::string& preset);

}  // namespace tiletune
