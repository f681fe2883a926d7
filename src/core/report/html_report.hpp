#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/report/vega_library.hpp"

namespace tiletune {

// `tiletune report`: one self-contained HTML page of charts from tiletune's
// result files. Each chart is a Vega 5 spec (JSON) whose first data set,
// "rows", holds exactly the rows the chart draws; html_report_test reads them.

// The kinds of result file a report reads, by their "schema".
enum class result_kind {
  gemm,        // tiletune.gemm/1
  suite,       // tiletune.gemm-suite/1
  batch,       // tiletune.batch/1
  comparison,  // tiletune.compare/1 (compare --out, check --out)
  tuning_db,   // tiletune.tuning-db-list/1 (db list --json), tiletune.tuning-export/1 (db export --format json)
};
std::string_view to_string(result_kind k);

// The kind of a parsed document. Throws usage_error naming PATH and the schema
// when it is not a result a report can draw (exit 2).
result_kind classify_result(const nlohmann::json& doc, const std::string& path);

struct report_options {
  double goal_vs_reference = 1.0;  // the suite's goal line: this fraction of cuBLAS's speed
  int top_resources = 10;          // gemm: variants shown in the resource charts
};

struct report_chart {
  std::string id;       // stable name, e.g. "heatmap-<family>"
  std::string title;
  std::string caption;  // what the chart shows, in words
  nlohmann::json rows;  // the data given to the chart (also spec["data"][0]["values"])
  nlohmann::json spec;  // the Vega spec
};

struct report_section {
  std::string source;  // the file it comes from
  result_kind kind = result_kind::gemm;
  std::string title;
  bool predicted = false;  // the figures come from the model, not a GPU
  std::string basis;       // measured or predicted, and how, in words on the page
  std::vector<std::string> facts;  // short paragraphs
  std::vector<report_chart> charts;
  std::vector<std::string> notices;  // why a chart is absent (nothing timed, nothing fits)
};

// The sections of one result file. Throws usage_error naming PATH when the
// document is of an unknown schema or lacks what its schema promises.
std::vector<report_section> report_sections(const nlohmann::json& doc, const std::string& path,
                                            const report_options& options = {});

// Reads, checks and draws one file (read_json_file's errors, then the above).
std::vector<report_section> report_sections_from_file(const std::filesystem::path& path,
                                                      const report_options& options = {});

// The page: the sections, the inlined Vega library, and the script that draws
// each chart with Vega's SVG renderer. Errors in the page (script errors,
// console.error/warn, a chart that fails) are written into the element
// #tiletune-errors; when every chart is drawn, #tiletune-status gets
// data-state="done" (the browser test reads both from the DOM).
std::string render_report_page(const std::vector<report_section>& sections, const vega_library& vega,
                               const std::string& command_line);

// Text for HTML element content and attribute values.
std::string html_escape(std::string_view s);

}  // namespace tiletune
