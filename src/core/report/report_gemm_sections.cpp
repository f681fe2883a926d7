// The report section of one GEMM problem: its facts and charts (tile heatmap,
// roofline, search stages, resources).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/report/report_charts.hpp"
#include "core/results/result_file.hpp"
#include "core/plan_mode.hpp"

namespace tiletune::report {

namespace {

std::string problem_title(const json& p) {
  std::string t = fmt::format("{}x{}x{}", number_at(p, "m").value_or(0), number_at(p, "n").value_or(0),
                              number_at(p, "k").value_or(0));
  if (number_at(p, "batch").value_or(1) > 1) t += fmt::format(" batch {}", number_at(p, "batch").value_or(1));
  return t + fmt::format(" {} {}", string_at(p, "dtype", "?"), string_at(p, "layout", "?"));
}

report_section gemm_section_facts(const json& doc, const std::string& path, plan_mode mode) {
  const json device = doc.value("device", json::object());
  const json& problem = doc["problem"];
  report_section s;
  s.source = path;
  s.kind = result_kind::gemm;
  s.predicted = mode != plan_mode::measured;
  s.title = fmt::format("GEMM {} on {}", problem_title(problem), string_at(device, "name", "an unnamed GPU"));
  const json tool = doc.value("tool", json::object());
  // How each sample found the L2 (gemm --l2-flush; a result without the field was flushed by writes).
  const std::string flush = mode == plan_mode::measured ? l2_flush_of(doc, path) : "write";
  const std::string l2 = flush == "read"   ? "the L2 emptied by reading a buffer twice its size"
                         : flush == "none" ? "the L2 left as the last sample left it"
                                           : "the L2 emptied by writing a buffer twice its size";
  s.basis = mode == plan_mode::measured
                ? fmt::format("Measured: every TFLOP/s on this page was timed on {} ({}, timer {}, {} before each "
                              "sample); cuBLASLt was timed in the same run, the same way. Variants the search did not "
                              "time carry no figure.",
                              string_at(device, "name", "the GPU"), string_at(tool, "date", "date unknown"),
                              string_at(doc.value("reference", json::object()), "timer", "not recorded"), l2)
                : fmt::format("Predicted: nothing was run. The TFLOP/s on this page are tiletune's analytical model for "
                              "{}, not measurements, and there is no cuBLAS figure.",
                              string_at(device, "name", "the GPU"));
  const json rec = doc.value("recommendation", json());
  if (rec.is_object())
    s.facts.push_back(fmt::format("Recommended: {} at {:.1f} TFLOP/s{}.", string_at(rec, "id"),
                                  number_at(rec, "tflops").value_or(0),
                                  number_at(rec, "vs_reference")
                                      ? fmt::format(", {:.2f}x cuBLASLt", *number_at(rec, "vs_reference"))
                                      : ""));
  else
    s.facts.push_back("No variant is usable: there is no recommendation.");
  if (doc.contains("summary") && doc["summary"].is_object()) {
    std::string counts;
    for (const auto& [k, v] : doc["summary"].items())
      if (v.is_number() && v.get<double>() > 0) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", v.get<double>(), k);
    if (!counts.empty()) s.facts.push_back("Variants: " + counts + ".");
  }
  return s;
}

std::string colour_title_of(plan_mode mode) {
  return mode == plan_mode::measured ? "TFLOP/s (measured)" : "TFLOP/s (predicted)";
}

void add_heatmaps(report_section& s, const json& doc, plan_mode mode) {
  const std::string colour_title = colour_title_of(mode);
  const json cells = gemm_heatmap_rows(doc, mode);
  std::map<std::string, json> panels;
  double heat_lo = 1e300, heat_hi = 0;
  for (const auto& c : cells) {
    panels[c["panel"].get<std::string>()].push_back(c);
    if (c["tflops"].is_number()) heat_lo = std::min(heat_lo, c["tflops"].get<double>()), heat_hi = std::max(heat_hi, c["tflops"].get<double>());
  }
  if (heat_hi <= heat_lo) heat_lo = std::min(heat_lo, heat_hi) * 0.9, heat_hi = heat_hi > 0 ? heat_hi : 1;
  for (const auto& [panel, rows] : panels)
    s.charts.push_back(make_chart(
        "heatmap-" + panel, fmt::format("Tiles of {}: block M x block N", panel),
        fmt::format("Each cell is the best {} of the variants with that block tile (other block K, stages, split-K "
                    "and rasterization fold into it); a cell with none shows the status that stopped them.",
                    colour_title),
        rows, heatmap_spec(rows, colour_title, heat_lo, heat_hi)));
}

void add_roofline(report_section& s, const json& doc, plan_mode mode) {
  const json device = doc.value("device", json::object());
  const std::string dtype = string_at(doc["problem"], "dtype", "?");
  const std::string colour_title = colour_title_of(mode);
  const json points = gemm_roofline_rows(doc, mode);
  if (points.empty()) {
    s.notices.push_back("Roofline: no variant has a figure (none was timed or usable).");
  } else {
    double lo = 1e300, hi = 0;
    for (const auto& p : points) lo = std::min(lo, p["intensity"].get<double>()), hi = std::max(hi, p["intensity"].get<double>());
    const auto peak = number_at(device.value("peak_tflops", json::object()), dtype.c_str());
    const auto bw = number_at(device, "memory_bandwidth_gbs");
    if (peak && bw && *bw > 0) lo = std::min(lo, *peak * 1000 / *bw), hi = std::max(hi, *peak * 1000 / *bw);
    const json roof = gemm_roof_rows(device, dtype, lo / 4, hi * 4);
    s.charts.push_back(make_chart(
        "roofline", fmt::format("Roofline of {} ({})", string_at(device, "name", "the GPU"), dtype),
        fmt::format("The roof is the device's {} peak{} and its memory bandwidth{}; x is the problem's flops per byte "
                    "of A, B and C moved once (a variant's split-K workspace adds bytes), y its {}.",
                    dtype, peak ? fmt::format(" ({:.1f} TFLOP/s)", *peak) : "",
                    bw ? fmt::format(" ({:.0f} GB/s)", *bw) : "", colour_title),
        points, roofline_spec(points, roof, colour_title)));
  }
}

void add_search_chart(report_section& s, const json& doc, plan_mode mode) {
  const json stages = gemm_search_rows(doc);
  if (stages.empty()) {
    s.notices.push_back(mode == plan_mode::measured ? "Search stages: this file records no search (an older result, or every variant was timed)."
                                           : "Search stages: a predicted plan times nothing; the model ranked every variant.");
  } else {
    const json search = doc["search"];
    bar_options b = bars("stage", "timed", "variants timed (pale: candidates)", "label");
    b.behind = "candidates";
    s.charts.push_back(make_chart("search", fmt::format("Search ({}): which variants were timed, for how long",
                                                        string_at(search, "strategy", "?")),
                                  fmt::format("Stop: {}. {} variant(s) timed, {} verified; {:.0f} ms of kernel time in "
                                              "{:.0f} ms.",
                                              string_at(search, "stop_reason", "-"),
                                              number_at(search, "variants_timed").value_or(0),
                                              number_at(search, "variants_verified").value_or(0),
                                              number_at(search, "kernel_ms").value_or(0),
                                              number_at(search, "wall_ms").value_or(0)),
                                  stages, bar_spec(stages, b)));
  }
}

void add_resource_charts(report_section& s, const json& doc, const report_options& o) {
  const json res = gemm_resource_rows(doc, o.top_resources);
  if (res.empty()) {
    s.notices.push_back("Resources: no usable variant.");
  } else {
    const std::string cap = "The best usable variants, by the run's rank; registers per thread and shared memory per "
                            "block as read from the compiled kernel, occupancy as computed from them.";
    s.charts.push_back(make_chart("resources-registers", "Registers per thread (top variants)", cap, res,
                                  bar_spec(res, bars("id", "registers", "registers per thread", "label_registers", "family"))));
    s.charts.push_back(make_chart("resources-smem", "Shared memory per block (top variants)", cap, res,
                                  bar_spec(res, bars("id", "smem_kib", "KiB", "label_smem", "family"))));
    s.charts.push_back(make_chart("resources-occupancy", "Occupancy: resident warps per SM (top variants)", cap, res,
                                  bar_spec(res, bars("id", "warps_per_sm", "resident warps per SM", "label_warps", "family"))));
  }
}

}  // namespace

std::vector<report_section> gemm_sections(const json& doc, const std::string& path, const report_options& o) {
  require(doc, "problem", false, path, "the gemm result");
  require(doc, "variants", true, path, "the gemm result");
  const plan_mode mode = mode_of(doc).value_or(plan_mode::predicted);
  report_section s = gemm_section_facts(doc, path, mode);
  add_heatmaps(s, doc, mode);
  add_roofline(s, doc, mode);
  add_search_chart(s, doc, mode);
  add_resource_charts(s, doc, o);
  return {s};
}

}  // namespace tiletune::report
