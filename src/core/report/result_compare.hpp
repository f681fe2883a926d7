#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/gemm/problem.hpp"

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

// answered: the baseline had no result for the problem (no variant ran there) and NEW has one: nothing
// to compare, and no regression.
enum class verdict { same, faster, slower, noisy, incorrect, missing, answered };
std::string_view to_string(verdict v);  // "SAME", ...
// The verdict a change in speed (+0.10: 10% faster) earns: SAME within the tolerance, NOISY beyond it but
// within the noise, else FASTER or SLOWER by its sign.
// The largest timing spread ((p80 - p20) / median) a result may give as its "noise": the recordings'
// 11,527 timings spread at most 0.35; past this a damaged or forged figure would call any change noise.
constexpr double max_timing_noise = 10;
verdict timing_verdict(double change, double tolerance, double noise);
// Whether VERDICT, as a comparison file writes it, is the one its figures give, to a rounding of them. The
// verdicts that say a figure is missing or wrong (INCORRECT, MISSING, ANSWERED) fit any change.
bool verdict_fits_change(std::string_view verdict, double change, double tolerance, double noise);

struct compare_options {
  double tolerance = 0.05;
  bool absolute = false;  // judge raw time instead of the ratio to cuBLAS
  bool allow_device_mismatch = false;
  bool allow_mode_mismatch = false;  // a prediction against a measurement
  // Whether the command offers --allow-mode-mismatch (compare does, check does not: it
  // re-measures, so its baseline must be measured), so that a refusal names only its options.
  bool mode_mismatch_flag = true;
};

struct comparison_row {
  std::string key, label;
  verdict result = verdict::same;
  std::string basis;  // "ratio to cuBLAS" | "time"
  std::optional<double> base_value, new_value;
  double change = 0;  // relative speed change: +0.10 is 10% faster
  double noise = 0;
  std::string detail;
};

struct comparison {
  std::string base_path, new_path;
  std::string base_mode, new_mode;  // measured | predicted, as each file says
  compare_options options;
  std::vector<comparison_row> rows;
  std::vector<std::string> only_in_new;
  std::vector<std::string> notes;
  bool failed() const;  // any SLOWER, INCORRECT or MISSING
};

// Throws environment_error when the files come from different GPUs (unless
// allowed), usage_error when they share no problem.
comparison compare_results(const result_file& base, const result_file& fresh, const compare_options& o);

nlohmann::json to_json(const comparison& c);
std::string to_junit_xml(const comparison& c);

}  // namespace tiletune
