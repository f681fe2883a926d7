// The charts of a suite, a comparison (compare/check) and a tuning database export.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/gemm/dtype_table.hpp"
#include "core/gemm/problem.hpp"
#include "core/report/report_charts.hpp"
#include "core/results/result_compare.hpp"
#include "core/results/result_figures.hpp"
#include "core/plan_mode.hpp"

namespace tiletune::report {

namespace {

const json verdict_domain = {"SAME", "FASTER", "SLOWER", "NOISY", "INCORRECT", "MISSING", "ANSWERED"};
// Colours that read in print and for the colour-blind (Okabe-Ito, with grey for SAME).
const json verdict_range = {"#9e9e9e", "#009e73", "#d55e00", "#e69f00", "#cc79a7", "#000000", "#56b4e9"};

// A comparison's row: figures in range and a verdict its change gives (one that contradicts it, SLOWER
// at +50%, had been drawn as a regression).
void check_compare_row(const json& r, double tolerance, const std::string& where) {
  for (const char* k : {"base", "new", "noise"}) at_least(r, k, 0, where);
  // Two timings' spreads, each at most max_timing_noise (compare refuses more), joined as compare joins them.
  const double most = std::hypot(max_timing_noise, max_timing_noise);
  if (const auto noise = number_at(r, "noise"); noise && *noise > most)
    throw usage_error(fmt::format("{}: \"noise\" is {}, more than two timings' spreads can join to (at most {:.4g})",
                                  where, *noise, most));
  const auto change = number_at(r, "change");
  const std::string verdict = string_at(r, "verdict");
  if (!change || verdict.empty()) return;
  const double noise = number_at(r, "noise").value_or(0);
  if (!verdict_fits_change(verdict, *change, tolerance, noise))
    throw usage_error(fmt::format("{}: \"verdict\" {} contradicts its \"change\" {:+.4g}% (tolerance {:.4g}%, noise "
                                  "{:.4g}%)",
                                  where, verdict, 100 * *change, 100 * tolerance, 100 * noise));
}

// The comparison's fields the chart reads, held to the schema before anything is drawn.
void check_comparison_fields(const json& doc, const std::string& path) {
  const double tolerance = at_least(doc, "tolerance", 0, path).value_or(0.05);
  for (const char* k : {"base_mode", "new_mode"}) check_mode_field(doc, k, path, true);
  check_object(doc, "counts", path);
  if (doc.contains("counts") && doc["counts"].is_object())
    for (const auto& [k, v] : doc["counts"].items()) at_least(doc["counts"], k.c_str(), 0, path + ": \"counts\"");
  const json& rows = require(doc, "rows", true, path, "the comparison");
  for (std::size_t i = 0; i < rows.size(); ++i)
    check_compare_row(entry_object(rows, i, "rows", path), tolerance, fmt::format("{}: row {}", path, i + 1));
}

}  // namespace

json suite_rows(const json& suite, const std::string& path) {
  const json& results = require(suite, "results", true, path, "the suite result");
  json rows = json::array();
  int order = 0;
  for (const auto& r : results) {
    if (!r.is_object()) throw usage_error(fmt::format("{}: an entry of \"results\" is not an object", path));
    const json rec = r.value("recommendation", json());
    const json ref = r.value("reference", json());
    const auto tflops = rec.is_object() ? number_at(rec, "tflops") : std::nullopt;
    std::optional<double> ratio;  // assigned in an if: GCC 12 warns of the ternary's optional
    if (rec.is_object()) ratio = number_at(rec, "vs_reference");
    const auto ref_tflops = ref.is_object() ? number_at(ref, "tflops") : std::nullopt;
    const json p = r.value("problem", json::object());
    const std::string shape = fmt::format("{}x{}x{} {} {}", number_at(p, "m").value_or(0), number_at(p, "n").value_or(0),
                                          number_at(p, "k").value_or(0), string_at(p, "dtype", "?"),
                                          string_at(p, "layout", "?"));
    rows.push_back({{"order", order++},
                    {"problem", string_at(r, "name", shape)},
                    {"shape", shape},
                    {"variant", rec.is_object() ? string_at(rec, "id") : ""},
                    {"tflops", tflops ? json(*tflops) : json(nullptr)},
                    {"reference_tflops", ref_tflops ? json(*ref_tflops) : json(nullptr)},
                    {"vs_reference", ratio ? json(*ratio) : json(nullptr)},
                    {"label", ratio ? fmt::format("{:.2f}x", *ratio) : "-"}});
  }
  return rows;
}

namespace {

report_section suite_section_facts(const json& doc, const std::string& path, const json& rows, plan_mode mode) {
  const json device = doc.value("device", json::object());
  report_section s;
  s.source = path;
  s.kind = result_kind::suite;
  s.predicted = mode != plan_mode::measured;
  s.title = fmt::format("Suite {} on {}", string_at(doc.value("suite", json::object()), "name", "(unnamed)"),
                        string_at(device, "name", "an unnamed GPU"));
  s.basis = mode == plan_mode::measured
                ? "Measured: each problem's recommended variant and cuBLASLt were timed back to back in the same run; the "
                  "ratio is the figure to compare across runs."
                : "Predicted: nothing was run. TFLOP/s are tiletune's analytical model, and there is no cuBLAS figure.";
  s.facts.push_back(fmt::format("{} problem(s){}.", rows.size(),
                                bool_at(doc, "complete", true) ? "" : "; the run was cut short"));
  if (doc.contains("not_run") && doc["not_run"].is_array() && !doc["not_run"].empty())
    s.facts.push_back(fmt::format("Not run: {}.", doc["not_run"].dump()));

  return s;
}

// The ratio to cuBLASLt against the goal, and each problem's TFLOP/s.
void add_suite_charts(report_section& s, const json& rows, plan_mode mode, const report_options& o) {
  json ratios = json::array(), dots = json::array();
  int below = 0;
  for (auto r : rows) {
    if (!r["vs_reference"].is_null()) {
      const bool meets = r["vs_reference"].get<double>() >= o.goal_vs_reference;
      below += !meets;
      r["goal"] = meets ? "meets the goal" : "below the goal";
      ratios.push_back(r);
    }
    if (!r["tflops"].is_null())
      dots.push_back({{"problem", r["problem"]}, {"series", mode == plan_mode::measured ? "best variant" : "best variant (predicted)"},
                      {"tflops", r["tflops"]}, {"tip", fmt::format("{}: {} {:.1f} TFLOP/s", r["problem"].get<std::string>(),
                                                                    r["variant"].get<std::string>(), r["tflops"].get<double>())}});
    if (!r["reference_tflops"].is_null())
      dots.push_back({{"problem", r["problem"]}, {"series", "cuBLASLt"}, {"tflops", r["reference_tflops"]},
                      {"tip", fmt::format("{}: cuBLASLt {:.1f} TFLOP/s", r["problem"].get<std::string>(),
                                          r["reference_tflops"].get<double>())}});
  }
  if (ratios.empty()) {
    s.notices.push_back("Best variant vs cuBLAS: no problem has a measured ratio (a predicted plan times no cuBLAS).");
  } else {
    s.facts.push_back(fmt::format("{} of {} measured problem(s) below the goal of {:.2f}x cuBLAS.", below, ratios.size(),
                                  o.goal_vs_reference));
    bar_options b = bars("problem", "vs_reference", "speed / cuBLASLt's (1 = as fast)", "label", "goal");
    b.colour_domain = {"meets the goal", "below the goal"};
    b.colour_range = {"#0072b2", "#d55e00"};
    b.goal = o.goal_vs_reference;
    b.goal_label = fmt::format("goal {:.2f}x", o.goal_vs_reference);
    s.charts.push_back(make_chart("suite-ratio", "Best variant vs cuBLASLt, per problem",
                                  fmt::format("Bars: the recommended variant's speed as a fraction of cuBLASLt's in the "
                                              "same run; the dashed line is the goal ({:.2f}x, --goal).",
                                              o.goal_vs_reference),
                                  ratios, bar_spec(ratios, b)));
  }
  if (dots.empty())
    s.notices.push_back("TFLOP/s by shape: no problem has a figure.");
  else
    s.charts.push_back(make_chart("suite-tflops", "TFLOP/s by shape",
                                  mode == plan_mode::measured ? "Measured TFLOP/s of each problem's recommended variant and of cuBLASLt."
                                                     : "Predicted TFLOP/s of each problem's recommended variant.",
                                  dots, dot_spec(dots, "problem", "tflops", "series", "TFLOP/s")));
}

}  // namespace

std::vector<report_section> suite_sections(const json& doc, const std::string& path, const report_options& o) {
  const json rows = suite_rows(doc, path);
  const plan_mode mode = mode_of(doc).value_or(plan_mode::predicted);
  report_section s = suite_section_facts(doc, path, rows, mode);
  add_suite_charts(s, rows, mode, o);
  return {s};
}

json comparison_rows(const json& cmp, const std::string& path) {
  const json& in = require(cmp, "rows", true, path, "the comparison");
  json rows = json::array();
  for (std::size_t i = 0; i < in.size(); ++i) {
    const json& r = entry_object(in, i, "rows", path);
    const std::string verdict = one_of(r, "verdict", verdict_domain.get<std::vector<std::string>>(), "?");
    const double change = number_at(r, "change").value_or(0) * 100, noise = non_negative_at(r, "noise", 0) * 100;
    const auto base = number_at(r, "base"), fresh = number_at(r, "new");
    const std::string basis = string_at(r, "basis", "-");
    rows.push_back({{"problem", string_at(r, "name", string_at(r, "problem", "?"))},
                    {"verdict", verdict},
                    {"basis", basis},
                    {"base", base ? json(*base) : json(nullptr)},
                    {"new", fresh ? json(*fresh) : json(nullptr)},
                    {"change_pct", change},
                    {"noise_pct", noise},
                    {"label", fmt::format("{} {:+.1f}%", verdict, change)},
                    {"tip", fmt::format("{}: {} by {}, base {}, new {}, noise {:.1f}%{}", verdict,
                                        fmt::format("{:+.1f}%", change), basis,
                                        base ? fmt::format("{:.4g}", *base) : "-", fresh ? fmt::format("{:.4g}", *fresh) : "-",
                                        noise, string_at(r, "detail").empty() ? "" : "; " + string_at(r, "detail"))}});
  }
  return rows;
}

std::vector<report_section> comparison_sections(const json& doc, const std::string& path, const report_options&) {
  check_comparison_fields(doc, path);
  const json rows = comparison_rows(doc, path);
  const double tolerance = number_at(doc, "tolerance").value_or(0.05);
  report_section s;
  s.source = path;
  s.kind = result_kind::comparison;
  s.title = fmt::format("Comparison: {} -> {}", string_at(doc, "base", "?"), string_at(doc, "new", "?"));
  // Older compare files carry no modes: their figures are taken as recorded, i.e. measured.
  const std::string base_mode = string_at(doc, "base_mode", "measured"), new_mode = string_at(doc, "new_mode", "measured");
  s.predicted = plan_mode_named(base_mode) == plan_mode::predicted || plan_mode_named(new_mode) == plan_mode::predicted;
  const std::string modes = base_mode == new_mode
                                ? fmt::format("Both files hold {} figures. ", base_mode)
                                : fmt::format("The baseline holds {} figures, the new file {} ones. ", base_mode, new_mode);
  s.basis = modes + (bool_at(doc, "absolute", false)
                         ? "Judged on raw time (--absolute): both runs' figures as recorded."
                         : "Judged on the ratio to cuBLAS measured in the same run where both files have one, else on "
                           "time (a predicted plan's time is the model's).");
  std::string counts;
  if (doc.contains("counts") && doc["counts"].is_object())
    for (const auto& [k, v] : doc["counts"].items()) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", v.dump(), k);
  s.facts.push_back(fmt::format("{}: {} (tolerance {:.1f}%).", bool_at(doc, "failed", false) ? "FAILED" : "OK",
                                counts.empty() ? "no problem" : counts, 100 * tolerance));
  if (doc.contains("notes") && doc["notes"].is_array())
    for (const auto& n : doc["notes"])
      if (n.is_string()) s.facts.push_back(n.get<std::string>());
  if (rows.empty())
    s.notices.push_back("No problem was compared.");
  else
    s.charts.push_back(make_chart("comparison", "Baseline vs new, per problem",
                                  fmt::format("Bars: the change in speed (right is faster), coloured by the verdict; the "
                                              "grey band is the measured noise of the two runs, the dashed lines the "
                                              "tolerance (+-{:.1f}%).",
                                              100 * tolerance),
                                  rows, comparison_spec(rows, tolerance)));
  return {s};
}

namespace {

// The element type a db list's problem text names ("4096x4096x4096 bf16 nt"), where one of its words is one.
std::optional<dtype> tuning_db_dtype_in(const std::string& problem) {
  std::istringstream words(problem);
  for (std::string w; words >> w;) {
    try {
      return parse_dtype(w);
    } catch (const usage_error&) {
    }
  }
  return std::nullopt;
}

// An export's problem object, as gemm reads it.
gemm_problem tuning_db_problem_of(const json& r, const std::string& where) {
  check_object(r, "problem", where);
  try {
    return gemm_problem_from_json(r.at("problem"));
  } catch (const std::exception& e) {  // a field missing or of another type, a dtype not known
    throw usage_error(fmt::format("{}: \"problem\" is not a GEMM problem: {}", where, e.what()));
  }
}

// A record's figures are held to its GPU model's preset, as a gemm result's are (result_figures.hpp): an
// export's times to the GPU's peak and memory and its TFLOP/s to the problem's FLOPs over the time; a db
// list's TFLOP/s, whose problem is text, to the peak of the type it names. 99999 TFLOP/s on an H100, or
// 4096^3 in 1 us, had been drawn as given. A GPU model without a preset (a GPU of the user's, a preset of
// another version of the tool) is not checked.
void check_tuning_db_figures(const json& r, bool exported, const std::string& where) {
  const double tflops = non_negative_at(r, "tflops", 0);
  const std::string model = string_at(r, "device_model");
  const device_limits limits = preset_limits(model);
  const std::string at = model.empty() ? where : fmt::format("{} ({})", where, model);
  if (exported && r.contains("problem") && !r["problem"].is_string()) {
    const gemm_problem p = tuning_db_problem_of(r, where);
    check_timed_figures(p, r, limits, at);
    return;
  }
  if (const auto type = tuning_db_dtype_in(string_at(r, "problem"))) check_tflops_within_peak(*type, tflops, limits, at);
}

}  // namespace

// db list --json ("records", the problem as text) and db export --format json
// ("configs", the problem as an object beside its database key): one bar each.
json tuning_db_rows(const json& list, const std::string& path) {
  const bool exported = list.contains("configs");
  const json& records = require(list, exported ? "configs" : "records", true, path, "the tuning database list");
  json rows = json::array();
  std::map<std::string, int> seen;  // a problem on one GPU model under several drivers or tools: one bar each
  for (std::size_t i = 0; i < records.size(); ++i) {
    const json& r = entry_object(records, i, exported ? "configs" : "records", path);
    const std::string problem = r.contains("problem") && r["problem"].is_string() ? string_at(r, "problem", "?")
                                                                                   : string_at(r, "key", "?");
    const std::string gpu = string_at(r, "device_model", "?");
    const std::string recommended = string_at(r, exported ? "id" : "recommended", "none");
    const std::string mode = one_of(r, "mode", {"measured", "predicted"}, "measured");
    const double tflops = non_negative_at(r, "tflops", 0);
    check_tuning_db_figures(r, exported, fmt::format("{}: {} {}", path, exported ? "config" : "record", i + 1));
    std::string record = problem + " (" + gpu + ")";
    if (const int n = ++seen[record]; n > 1) record += fmt::format(" #{}", n);
    rows.push_back({{"record", record},
                    {"problem", problem},
                    {"device_model", gpu},
                    {"recommended", recommended},
                    {"mode", mode},
                    {"tflops", tflops},
                    {"measured_at", string_at(r, "measured_at")},
                    {"label", fmt::format("{:.1f} ({}, {})", tflops, recommended, mode)}});
  }
  return rows;
}

std::vector<report_section> tuning_db_sections(const json& doc, const std::string& path, const report_options&) {
  const json rows = tuning_db_rows(doc, path);
  std::size_t predicted = 0;
  for (const auto& r : rows) predicted += mode_of(r) == plan_mode::predicted;
  report_section s;
  s.source = path;
  s.kind = result_kind::tuning_db;
  s.title = fmt::format("Tuning database {}", string_at(doc, doc.contains("configs") ? "database" : "file", "?"));
  s.predicted = predicted > 0 && predicted == rows.size();
  s.basis = predicted == 0 ? "Measured: every record is a measured result."
            : s.predicted  ? "Predicted: every record is an offline plan stored with --store-plans, not a measurement."
                           : fmt::format("Mixed: {} of {} records are offline plans stored with --store-plans "
                                         "(predicted); the rest are measured.",
                                         predicted, rows.size());
  s.facts.push_back(fmt::format("{} record(s).", rows.size()));
  if (rows.empty())
    s.notices.push_back("The database holds no record.");
  else
    s.charts.push_back(make_chart("tuning-db", "Recorded best TFLOP/s per problem and GPU",
                                  "Each bar is one record: the recommended variant's TFLOP/s, measured or predicted "
                                  "as its label says.",
                                  rows, bar_spec(rows, bars("record", "tflops", "TFLOP/s", "label", "device_model"))));
  return {s};
}

}  // namespace tiletune::report
