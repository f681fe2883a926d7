// The rows of one GEMM problem's charts: tile heatmap, roofline, search stages, resources.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/gemm/dtype_table.hpp"
#include "core/report/report_charts.hpp"
#include "core/plan_mode.hpp"

namespace tiletune::report {

namespace {

// How bad a status is: a cell shows its worst one when no variant of it has a figure.
int severity(const std::string& status) {
  static const std::map<std::string, int> order = {{"pruned", 1},        {"skipped", 2},      {"resource_limit", 3},
                                                   {"compile_error", 4}, {"timeout", 5},      {"launch_error", 6},
                                                   {"incorrect", 7}};
  const auto it = order.find(status);
  return it == order.end() ? 2 : it->second;
}

double problem_flops(const json& problem) {
  if (auto f = number_at(problem, "flops")) return *f;
  const double batch = number_at(problem, "batch").value_or(1);
  return 2 * number_at(problem, "m").value_or(0) * number_at(problem, "n").value_or(0) *
         number_at(problem, "k").value_or(0) * batch;
}

double problem_bytes(const json& problem) {
  if (auto b = number_at(problem, "operand_bytes")) return *b;
  const std::string dt = string_at(problem, "dtype");
  double a = 4, b = 4, c = 4;  // a dtype this build does not know counts as 4-byte elements
  for (const dtype_row& r : dtype_table()) {
    if (r.name == dt) a = element_bytes(r.a), b = element_bytes(r.b), c = element_bytes(r.c);
  }
  const double m = number_at(problem, "m").value_or(0), n = number_at(problem, "n").value_or(0),
               k = number_at(problem, "k").value_or(0);
  return (a * m * k + b * k * n + c * m * n) * number_at(problem, "batch").value_or(1);
}

// The figure a variant is drawn with: measured TFLOP/s in a measured run (only
// variants that were timed have one), the model's in a predicted plan.
std::optional<double> variant_tflops(const json& v, plan_mode mode, double flops) {
  if (!is_ok_variant(v)) return std::nullopt;
  if (mode == plan_mode::measured) {
    if (!number_at(v, "median_us")) return std::nullopt;
    return number_at(v, "tflops");
  }
  if (auto t = number_at(v, "tflops")) return t;
  if (auto us = number_at(v, "predicted_us"); us && *us > 0) return flops / (*us * 1e6);
  return std::nullopt;
}

std::string figure_label(double tflops) {
  return tflops < 10 ? fmt::format("{:.1f}", tflops) : fmt::format("{:.0f}", tflops);
}

// One heatmap cell: the variants of a family with one block tile.
struct tile_cell {
  int variants = 0, ok = 0, pruned = 0, failed = 0;
  std::optional<double> best;
  std::string best_id, worst_status;
  std::map<std::string, int> constraints;  // of its pruned variants
};
using tile_key = std::tuple<std::string, int, int>;  // family, block M, block N

std::map<tile_key, tile_cell> tile_cells(const json& result, plan_mode mode, double flops) {
  std::map<tile_key, tile_cell> cells;
  for (const auto& v : result.at("variants")) {
    const json tile = v.value("tile", json::object());
    const auto bm = number_at(tile, "block_m"), bn = number_at(tile, "block_n");
    if (!bm || !bn) continue;
    tile_cell& c = cells[{string_at(v, "family", "?"), static_cast<int>(*bm), static_cast<int>(*bn)}];
    const auto st = status_of(v);
    const std::string status = string_at(v, "status", "?");
    ++c.variants;
    if (st == variant_status::ok) ++c.ok;
    else if (st == variant_status::pruned) ++c.pruned, ++c.constraints[string_at(v, "constraint", "pruned")];
    else ++c.failed;
    if (const auto t = variant_tflops(v, mode, flops); t && (!c.best || *t > *c.best)) {
      c.best = t;
      c.best_id = string_at(v, "id");
    }
    if (st != variant_status::ok && (c.worst_status.empty() || severity(status) > severity(c.worst_status)))
      c.worst_status = status;
  }
  return cells;
}

json heatmap_row(const tile_key& key, const tile_cell& c, const std::string& dtype, plan_mode mode) {
  const auto& [family, bm, bn] = key;
  std::string status = c.best ? "ok" : c.ok > 0 ? "not timed" : c.worst_status;
  // A pruned cell names the constraint that pruned most of it (warp_tile, model_bound, ...).
  std::string label = c.best ? figure_label(*c.best) : status;
  if (status == "pruned" && !c.constraints.empty())
    label = std::max_element(c.constraints.begin(), c.constraints.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; })->first;
  std::string tip = fmt::format("{} {}x{}: {} variant(s), {} ok, {} pruned, {} failed", family, bm, bn, c.variants,
                                c.ok, c.pruned, c.failed);
  if (c.best)
    tip += fmt::format("; best {} at {:.1f} TFLOP/s ({})", c.best_id, *c.best, to_string(mode));
  else
    tip += "; " + status;
  for (const auto& [constraint, n] : c.constraints) tip += fmt::format("; pruned by {}: {}", constraint, n);
  return {{"family", family},
          {"dtype", dtype},
          {"panel", family + " " + dtype},
          {"block_m", bm},
          {"block_n", bn},
          {"status", status},
          {"variants", c.variants},
          {"ok", c.ok},
          {"pruned", c.pruned},
          {"failed", c.failed},
          {"tflops", c.best ? json(*c.best) : json(nullptr)},
          {"best_id", c.best_id},
          {"label", label},
          {"tip", tip}};
}

}  // namespace

json gemm_heatmap_rows(const json& result, plan_mode mode) {
  const json& problem = result.at("problem");
  const double flops = problem_flops(problem);
  const std::string dtype = string_at(problem, "dtype", "?");
  json rows = json::array();
  for (const auto& [key, c] : tile_cells(result, mode, flops)) rows.push_back(heatmap_row(key, c, dtype, mode));
  return rows;
}

json gemm_roofline_rows(const json& result, plan_mode mode) {
  const json& problem = result.at("problem");
  const double flops = problem_flops(problem), bytes = problem_bytes(problem);
  json rows = json::array();
  for (const auto& v : result.at("variants")) {
    const auto t = variant_tflops(v, mode, flops);
    if (!t) continue;
    const double b = number_at(v, "memory_bytes").value_or(bytes);
    if (!(b > 0)) continue;
    rows.push_back({{"id", string_at(v, "id")},
                    {"series", string_at(v, "family", "?")},
                    {"intensity", flops / b},
                    {"tflops", *t},
                    {"basis", to_string(mode)},
                    {"tip", fmt::format("{}: {:.1f} TFLOP/s ({}), {:.0f} FLOP/byte", string_at(v, "id"), *t, to_string(mode),
                                        flops / b)}});
  }
  const json ref = result.value("reference", json());
  if (const auto t = ref.is_object() ? number_at(ref, "tflops") : std::nullopt; t && bytes > 0)
    rows.push_back({{"id", "cuBLASLt"},
                    {"series", "cuBLASLt"},
                    {"intensity", flops / bytes},
                    {"tflops", *t},
                    {"basis", "measured"},
                    {"tip", fmt::format("cuBLASLt: {:.1f} TFLOP/s (measured in the same run)", *t)}});
  return rows;
}

json gemm_roof_rows(const json& device, const std::string& dtype, double x_min, double x_max) {
  const auto peak = number_at(device.value("peak_tflops", json::object()), dtype.c_str());
  const auto bw_gbs = number_at(device, "memory_bandwidth_gbs");
  json rows = json::array();
  if (!peak || !bw_gbs || !(*peak > 0) || !(*bw_gbs > 0)) return rows;
  const double ridge = *peak * 1000 / *bw_gbs;  // FLOP/byte where bandwidth meets the peak
  auto roof = [&](double x) { return std::min(*peak, *bw_gbs * x / 1000); };
  rows.push_back({{"intensity", x_min}, {"tflops", roof(x_min)}});
  if (ridge > x_min && ridge < x_max) rows.push_back({{"intensity", ridge}, {"tflops", *peak}});
  rows.push_back({{"intensity", x_max}, {"tflops", roof(x_max)}});
  return rows;
}

json gemm_search_rows(const json& result) {
  json rows = json::array();
  const json search = result.value("search", json());
  if (!search.is_object() || !search.contains("stages") || !search["stages"].is_array()) return rows;
  int order = 0;
  for (const auto& s : search["stages"]) {
    const std::string name = string_at(s, "name", "?");
    const double timed = number_at(s, "timed").value_or(0), candidates = number_at(s, "candidates").value_or(0);
    const double wall = number_at(s, "wall_ms").value_or(0), kernel = number_at(s, "kernel_ms").value_or(0);
    int ended_here = 0;  // variants whose last stage was this one
    for (const auto& v : result.at("variants")) ended_here += string_at(v, "search_stage") == name;
    rows.push_back({{"order", order++},
                    {"stage", name},
                    {"candidates", candidates},
                    {"kept", number_at(s, "kept").value_or(0)},
                    {"timed", timed},
                    {"ended_here", ended_here},
                    {"wall_ms", wall},
                    {"kernel_ms", kernel},
                    {"label", timed > 0 ? fmt::format("{:.0f} of {:.0f} timed, {:.0f} ms ({:.0f} ms in kernels)", timed,
                                                      candidates, wall, kernel)
                                        : fmt::format("{:.0f} ranked by the model, none timed", candidates)}});
  }
  return rows;
}

json gemm_resource_rows(const json& result, int top) {
  std::vector<const json*> ok;
  for (const auto& v : result.at("variants"))
    if (is_ok_variant(v) && v.contains("resources")) ok.push_back(&v);
  std::stable_sort(ok.begin(), ok.end(), [](const json* a, const json* b) {
    return number_at(*a, "rank").value_or(1e9) < number_at(*b, "rank").value_or(1e9);
  });
  json rows = json::array();
  for (int i = 0; i < static_cast<int>(ok.size()) && i < top; ++i) {
    const json& v = *ok[i];
    const json res = v.value("resources", json::object());
    const json occ = v.value("occupancy", json::object());
    rows.push_back({{"order", i},
                    {"id", string_at(v, "id")},
                    {"family", string_at(v, "family", "?")},
                    {"registers", number_at(res, "registers").value_or(0)},
                    {"smem_kib", number_at(res, "smem_bytes").value_or(0) / 1024},
                    {"threads", number_at(res, "threads").value_or(0)},
                    {"warps_per_sm", occ.is_object() ? number_at(occ, "warps_per_sm").value_or(0) : 0},
                    {"blocks_per_sm", occ.is_object() ? number_at(occ, "blocks_per_sm").value_or(0) : 0},
                    {"limited_by", occ.is_object() ? string_at(occ, "limited_by", "-") : "-"}});
    rows.back()["label_registers"] = fmt::format("{:.0f}", rows.back()["registers"].get<double>());
    rows.back()["label_smem"] = fmt::format("{:.0f} KiB", rows.back()["smem_kib"].get<double>());
    rows.back()["label_warps"] = fmt::format("{:.0f} ({} block(s), limit: {})", rows.back()["warps_per_sm"].get<double>(),
                                             rows.back()["blocks_per_sm"].get<double>(),
                                             rows.back()["limited_by"].get<std::string>());
  }
  return rows;
}

}  // namespace tiletune::report
