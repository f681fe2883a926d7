#pragma once
// The charts of `tiletune report`, by kind of result file: the rows each
// chart draws (computed from the file, nothing else) and the Vega specs that
// draw them. html_report.cpp dispatches here; html_report_test reads the rows.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/report/html_report.hpp"
#include "core/plan_mode.hpp"

namespace tiletune::report {

using json = nlohmann::json;

// --- reading result files -------------------------------------------------
// A number at KEY, or nullopt where it is absent or null; the string at KEY, or the fallback.
// A value of another type is a damaged file: usage_error naming KEY (report_sections adds the file).
std::optional<double> number_at(const json& j, const char* key);
std::string string_at(const json& j, const char* key, const std::string& fallback = "");
bool bool_at(const json& j, const char* key, bool fallback);
// The member KEY, which must be an object (or an array when ARRAY): else
// usage_error "PATH: <what> has no KEY".
const json& require(const json& j, const char* key, bool array, const std::string& path, const std::string& what);
// Entry i of the list `key`: an object, else a usage error naming the file, the list and the entry.
const json& entry_object(const json& list, std::size_t i, const char* key, const std::string& path);
// The string at key, one of `allowed` (fallback where absent), else a usage error naming them.
std::string one_of(const json& j, const char* key, const std::vector<std::string>& allowed, const std::string& fallback);
// A number at key that is at least 0 (fallback where absent).
double non_negative_at(const json& j, const char* key, double fallback);
// The checks made before a batch, compare or tuning database file is drawn (WHERE names the file,
// and the entry where one is meant), each a usage_error naming WHERE and KEY:
// a number at KEY of at least MIN (absent or null: none);
std::optional<double> at_least(const json& j, const char* key, double min, const std::string& where);
// KEY, where present and not null, an object;
void check_object(const json& j, const char* key, const std::string& where);
// KEY, where present, measured or predicted (ALLOW_EMPTY: or "", a compare file's "did not say").
void check_mode_field(const json& j, const char* key, const std::string& where, bool allow_empty);

// --- gemm (one problem's result: a tiletune.gemm/1 file or one entry of a suite)
// One cell per family, dtype and block M x N: the best figure among its
// variants (measured TFLOP/s in a measured run, the model's in a plan) or, when
// none has one, the status that stopped them (pruned, compile_error, ...).
json gemm_heatmap_rows(const json& result, plan_mode mode);
// Every variant with a figure, and cuBLAS when it was measured: arithmetic
// intensity (flops per DRAM byte) and TFLOP/s.
json gemm_roofline_rows(const json& result, plan_mode mode);
// The device's roof: bandwidth up to the ridge, then the dtype's peak.
json gemm_roof_rows(const json& device, const std::string& dtype, double x_min, double x_max);
// The search's stages: candidates, how many were timed, wall and kernel time.
json gemm_search_rows(const json& result);
// Registers, shared memory and occupancy of the best TOP usable variants.
json gemm_resource_rows(const json& result, int top);
std::vector<report_section> gemm_sections(const json& doc, const std::string& path, const report_options& o);

// --- suite ------------------------------------------------------------------
// One row per problem: its best variant's TFLOP/s, cuBLAS's, and the ratio.
json suite_rows(const json& suite, const std::string& path);
std::vector<report_section> suite_sections(const json& doc, const std::string& path, const report_options& o);

// --- batch ------------------------------------------------------------------
// The stacked terms of each candidate's peak memory (GiB), for one policy.
json batch_memory_rows(const json& batch, bool checkpointing, const std::string& path);
// Tokens/s of every candidate, with fits and the recommendation marked.
json batch_throughput_rows(const json& batch, const std::string& path);
std::vector<report_section> batch_sections(const json& doc, const std::string& path, const report_options& o);

// --- compare / check ----------------------------------------------------------
json comparison_rows(const json& cmp, const std::string& path);
std::vector<report_section> comparison_sections(const json& doc, const std::string& path, const report_options& o);

// --- tuning database export (db list --json) ------------------------------
json tuning_db_rows(const json& list, const std::string& path);
std::vector<report_section> tuning_db_sections(const json& doc, const std::string& path, const report_options& o);

// --- Vega specs (report_vega_specs.cpp) -----------------------------------
// Every spec's first data set is "rows", holding ROWS as given.
// COLOUR_LO..COLOUR_HI: the colour scale's domain (shared by a file's panels).
json heatmap_spec(const json& rows, const std::string& colour_title, double colour_lo, double colour_hi);
json roofline_spec(const json& rows, const json& roof, const std::string& y_title);
struct bar_options {
  std::string category;  // band field (one bar per value), in the rows' order
  std::string value;     // bar length
  std::string value_title;
  std::string label;      // text field drawn after each bar ("" = none)
  std::string colour;     // ordinal field of the bar's colour ("" = one colour)
  json colour_domain = json::array(), colour_range = json::array();
  std::string behind;     // a field drawn as a pale bar behind (e.g. candidates behind timed)
  std::optional<double> goal;  // a dashed rule at this value
  std::string goal_label;
  bool log = false;
};
// The options most bars need; the rest are set on the result.
bar_options bars(std::string category, std::string value, std::string value_title, std::string label = "",
                 std::string colour = "");
json bar_spec(const json& rows, const bar_options& o);
// Points per category, coloured and shaped by SERIES (TFLOP/s by shape).
json dot_spec(const json& rows, const std::string& category, const std::string& value, const std::string& series,
              const std::string& value_title);
json memory_stack_spec(const json& rows, double budget_gib, const std::string& title);
json throughput_spec(const json& rows);
json comparison_spec(const json& rows, double tolerance);

// A chart whose spec draws ROWS (spec["data"][0]["values"] = rows).
report_chart make_chart(std::string id, std::string title, std::string caption, json rows, json spec);

}  // namespace tiletune::report
