#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/results/result_file.hpp"

namespace tiletune {

// answered: the baseline had no result for the problem (no variant ran there) and NEW has one: nothing
// to compare, and no regression.
enum class verdict { same, faster, slower, noisy, incorrect, missing, answered };
std::string_view to_string(verdict v);  // "SAME", ...
// The verdict a change in speed (+0.10: 10% faster) earns: SAME within the tolerance, NOISY beyond it but
// within the noise, else FASTER or SLOWER by its sign.
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
