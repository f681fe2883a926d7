// Vega 5 specs (https://vega.github.io/vega/docs/specification/) for the report's charts.
// Vega draws; this file only says what to draw: the data, scales, axes and marks.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/report/report_charts.hpp"

namespace tiletune::report {

namespace {

json base_spec(const json& rows, int width, int height) {
  json spec = {{"$schema", "https://vega.github.io/schema/vega/v5.json"},
               {"width", width},
               {"height", height},
               {"padding", 5},
               {"autosize", {{"type", "pad"}}}};
  // row_number keeps the rows' order for band scales (a domain sorted by it).
  spec["data"] = json::array(
      {{{"name", "rows"}, {"values", rows}, {"transform", json::array({{{"type", "window"}, {"ops", {"row_number"}}, {"as", {"row"}}}})}}});
  spec["scales"] = json::array();
  spec["axes"] = json::array();
  spec["legends"] = json::array();
  spec["marks"] = json::array();
  return spec;
}

json field(const std::string& scale, const std::string& f) { return {{"scale", scale}, {"field", f}}; }

double max_of(const json& rows, const std::string& f) {
  double m = 0;
  for (const auto& r : rows)
    if (r.contains(f) && r[f].is_number()) m = std::max(m, r[f].get<double>());
  return m;
}

json in_row_order(const std::string& f) {
  return {{"data", "rows"}, {"field", f}, {"sort", {{"field", "row"}, {"op", "min"}}}};
}

json tooltip_of(const json& rows) {
  return !rows.empty() && rows[0].contains("tip") ? json{{"field", "tip"}} : json{{"signal", "datum"}};
}

}  // namespace

json heatmap_spec(const json& rows, const std::string& colour_title, double colour_lo, double colour_hi) {
  std::set<double> ms, ns;
  std::vector<std::string> statuses;
  bool scored = false;
  for (const auto& r : rows) {
    ms.insert(r["block_m"].get<double>());
    ns.insert(r["block_n"].get<double>());
    scored |= !r["tflops"].is_null();
    const auto st = r["status"].get<std::string>();
    if (r["tflops"].is_null() && std::find(statuses.begin(), statuses.end(), st) == statuses.end()) statuses.push_back(st);
  }
  json spec = base_spec(rows, 72 * static_cast<int>(ns.size()), 30 * static_cast<int>(ms.size()));
  spec["data"].push_back({{"name", "scored"}, {"source", "rows"}, {"transform", {{{"type", "filter"}, {"expr", "datum.tflops !== null"}}}}});
  spec["data"].push_back({{"name", "unscored"}, {"source", "rows"}, {"transform", {{{"type", "filter"}, {"expr", "datum.tflops === null"}}}}});
  spec["scales"] = {
      {{"name", "x"}, {"type", "band"}, {"domain", {{"data", "rows"}, {"field", "block_n"}, {"sort", true}}}, {"range", "width"}, {"padding", 0.06}},
      {{"name", "y"}, {"type", "band"}, {"domain", {{"data", "rows"}, {"field", "block_m"}, {"sort", true}}}, {"range", "height"}, {"padding", 0.06}}};
  spec["axes"] = {{{"orient", "bottom"}, {"scale", "x"}, {"title", "block N"}}, {{"orient", "left"}, {"scale", "y"}, {"title", "block M"}}};
  auto cell = [](const std::string& data, json fill) {
    return json{{"type", "rect"},
                {"from", {{"data", data}}},
                {"encode", {{"enter", {{"x", field("x", "block_n")}, {"width", {{"scale", "x"}, {"band", 1}}},
                                       {"y", field("y", "block_m")}, {"height", {{"scale", "y"}, {"band", 1}}},
                                       {"fill", fill}, {"stroke", {{"value", "#ffffff"}}}, {"tooltip", {{"field", "tip"}}}}}}}};
  };
  std::string text_fill = "'black'";
  if (scored) {
    // One colour scale for every panel of the file, so equal colours are equal figures.
    spec["scales"].push_back({{"name", "colour"}, {"type", "linear"}, {"domain", {colour_lo, colour_hi}},
                              {"range", {{"scheme", "viridis"}}}, {"zero", false}});
    spec["legends"].push_back({{"fill", "colour"}, {"type", "gradient"}, {"title", colour_title}});
    spec["marks"].push_back(cell("scored", field("colour", "tflops")));
    text_fill = "datum.tflops !== null && datum.tflops < (domain('colour')[0] + domain('colour')[1]) / 2 ? 'white' : 'black'";
  }
  if (!statuses.empty()) {
    // Pale for what the search chose not to run, warm and darker for failures.
    const std::map<std::string, std::string> colours = {
        {"not timed", "#e8e8e8"},     {"pruned", "#f4f4f4"},  {"skipped", "#cfcfcf"},      {"resource_limit", "#fdd0a2"},
        {"compile_error", "#fc9272"}, {"timeout", "#fb6a4a"}, {"launch_error", "#de2d26"}, {"incorrect", "#a50f15"}};
    json range = json::array();
    for (const auto& st : statuses) range.push_back(colours.count(st) ? colours.at(st) : "#bdbdbd");
    spec["scales"].push_back({{"name", "status"}, {"type", "ordinal"}, {"domain", statuses}, {"range", range}});
    spec["legends"].push_back({{"fill", "status"}, {"title", "no figure: status"}});
    spec["marks"].push_back(cell("unscored", field("status", "status")));
    text_fill = "datum.status === 'incorrect' || datum.status === 'launch_error' ? 'white' : (" + text_fill + ")";
  }
  spec["marks"].push_back(
      {{"type", "text"},
       {"from", {{"data", "rows"}}},
       {"encode", {{"enter", {{"x", {{"scale", "x"}, {"field", "block_n"}, {"band", 0.5}}},
                              {"y", {{"scale", "y"}, {"field", "block_m"}, {"band", 0.5}}},
                              {"align", {{"value", "center"}}}, {"baseline", {{"value", "middle"}}},
                              {"fontSize", {{"value", 10}}}, {"text", {{"field", "label"}}},
                              {"fill", {{"signal", text_fill}}}, {"tooltip", {{"field", "tip"}}}}}}}});
  return spec;
}

json roofline_spec(const json& rows, const json& roof, const std::string& y_title) {
  json spec = base_spec(rows, 520, 320);
  spec["data"].push_back({{"name", "roof"}, {"values", roof}});
  double x_lo = 1e300, x_hi = 0, y_lo = 1e300, y_hi = 0;
  for (const json* set : {&rows, &roof})
    for (const auto& r : *set) {
      const double x = r["intensity"].get<double>(), y = r["tflops"].get<double>();
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      if (y > 0) y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  if (!(y_hi > 0)) y_lo = 0.1, y_hi = 1;
  spec["scales"] = {
      {{"name", "x"}, {"type", "log"}, {"domain", {x_lo, x_hi}}, {"range", "width"}, {"nice", false}},
      {{"name", "y"}, {"type", "log"}, {"domain", {y_lo / 2, y_hi * 1.5}}, {"range", "height"}, {"nice", false}},
      {{"name", "colour"}, {"type", "ordinal"}, {"domain", {{"data", "rows"}, {"field", "series"}}}, {"range", "category"}}};
  spec["axes"] = {{{"orient", "bottom"}, {"scale", "x"}, {"title", "arithmetic intensity (FLOP per DRAM byte)"}, {"grid", true}},
                  {{"orient", "left"}, {"scale", "y"}, {"title", y_title}, {"grid", true}}};
  spec["legends"] = {{{"fill", "colour"}, {"title", "variants by family, and cuBLASLt"}}};
  spec["marks"] = {
      {{"type", "line"},
       {"from", {{"data", "roof"}}},
       {"encode", {{"enter", {{"x", field("x", "intensity")}, {"y", field("y", "tflops")}, {"stroke", {{"value", "#444444"}}}, {"strokeWidth", {{"value", 2}}}}}}}},
      {{"type", "symbol"},
       {"from", {{"data", "rows"}}},
       {"encode", {{"enter", {{"x", field("x", "intensity")}, {"y", field("y", "tflops")}, {"fill", field("colour", "series")},
                              {"shape", {{"signal", "datum.series === 'cuBLASLt' ? 'diamond' : 'circle'"}}},
                              {"size", {{"signal", "datum.series === 'cuBLASLt' ? 160 : 40"}}},
                              {"stroke", {{"signal", "datum.series === 'cuBLASLt' ? 'black' : null"}}},
                              {"opacity", {{"value", 0.75}}}, {"tooltip", {{"field", "tip"}}}}}}}},
      {{"type", "text"},
       {"from", {{"data", "roof"}}},
       {"encode", {{"enter", {{"x", field("x", "intensity")}, {"y", field("y", "tflops")}, {"dy", {{"value", -6}}},
                              {"align", {{"value", "right"}}}, {"fontSize", {{"value", 10}}}, {"fill", {{"value", "#444444"}}},
                              {"text", {{"signal", "datum.intensity >= domain('x')[1] ? format(datum.tflops, '.1f') + ' TFLOP/s' : ''"}}}}}}}}};
  return spec;
}

bar_options bars(std::string category, std::string value, std::string value_title, std::string label,
                 std::string colour) {
  bar_options o;
  o.category = std::move(category);
  o.value = std::move(value);
  o.value_title = std::move(value_title);
  o.label = std::move(label);
  o.colour = std::move(colour);
  return o;
}

json bar_spec(const json& rows, const bar_options& o) {
  const int n = static_cast<int>(rows.size());
  json spec = base_spec(rows, 420, std::max(40, 22 * n));
  double hi = std::max(max_of(rows, o.value), o.behind.empty() ? 0.0 : max_of(rows, o.behind));
  if (o.goal) hi = std::max(hi, *o.goal);
  if (!(hi > 0)) hi = 1;
  spec["scales"] = {{{"name", "y"}, {"type", "band"}, {"domain", in_row_order(o.category)}, {"range", "height"}, {"padding", 0.15}},
                    {{"name", "x"}, {"type", "linear"}, {"domain", {0, hi * 1.05}}, {"range", "width"}, {"nice", true}}};
  spec["axes"] = {{{"orient", "bottom"}, {"scale", "x"}, {"title", o.value_title}, {"grid", true}},
                  {{"orient", "left"}, {"scale", "y"}, {"labelLimit", 260}}};
  json fill = {{"value", "#0072b2"}};
  if (!o.colour.empty()) {
    json scale = {{"name", "colour"}, {"type", "ordinal"}, {"range", o.colour_range.empty() ? json("category") : o.colour_range}};
    scale["domain"] = o.colour_domain.empty() ? json{{"data", "rows"}, {"field", o.colour}} : o.colour_domain;
    spec["scales"].push_back(scale);
    spec["legends"].push_back({{"fill", "colour"}, {"title", o.colour}, {"orient", "bottom"}, {"direction", "horizontal"}});
    fill = field("colour", o.colour);
  }
  auto bar = [&](const std::string& f, json colour) {
    return json{{"type", "rect"},
                {"from", {{"data", "rows"}}},
                {"encode", {{"enter", {{"y", field("y", o.category)}, {"height", {{"scale", "y"}, {"band", 1}}},
                                       {"x", {{"scale", "x"}, {"value", 0}}}, {"x2", field("x", f)}, {"fill", colour},
                                       {"tooltip", tooltip_of(rows)}}}}}};
  };
  if (!o.behind.empty()) spec["marks"].push_back(bar(o.behind, {{"value", "#e3e3e3"}}));
  spec["marks"].push_back(bar(o.value, fill));
  if (!o.label.empty())
    spec["marks"].push_back(
        {{"type", "text"},
         {"from", {{"data", "rows"}}},
         {"encode", {{"enter", {{"y", {{"scale", "y"}, {"field", o.category}, {"band", 0.5}}},
                                {"x", field("x", o.behind.empty() ? o.value : o.behind)}, {"dx", {{"value", 4}}},
                                {"baseline", {{"value", "middle"}}}, {"fontSize", {{"value", 10}}}, {"text", {{"field", o.label}}}}}}}});
  if (o.goal) {
    spec["marks"].push_back({{"type", "rule"},
                             {"encode", {{"enter", {{"x", {{"scale", "x"}, {"value", *o.goal}}}, {"y", {{"value", 0}}},
                                                    {"y2", {{"signal", "height"}}}, {"stroke", {{"value", "#d55e00"}}},
                                                    {"strokeDash", {{"value", {6, 4}}}}, {"strokeWidth", {{"value", 2}}}}}}}});
    spec["marks"].push_back({{"type", "text"},
                             {"encode", {{"enter", {{"x", {{"scale", "x"}, {"value", *o.goal}}}, {"y", {{"value", -4}}},
                                                    {"align", {{"value", "center"}}}, {"fontSize", {{"value", 10}}},
                                                    {"fill", {{"value", "#d55e00"}}}, {"text", {{"value", o.goal_label}}}}}}}});
  }
  return spec;
}

json dot_spec(const json& rows, const std::string& category, const std::string& value, const std::string& series,
              const std::string& value_title) {
  std::set<std::string> cats;
  for (const auto& r : rows) cats.insert(r[category].get<std::string>());
  json spec = base_spec(rows, 420, std::max(40, 22 * static_cast<int>(cats.size())));
  spec["scales"] = {{{"name", "y"}, {"type", "point"}, {"domain", in_row_order(category)}, {"range", "height"}, {"padding", 0.5}},
                    {{"name", "x"}, {"type", "linear"}, {"domain", {0, std::max(1.0, max_of(rows, value) * 1.05)}}, {"range", "width"}, {"nice", true}},
                    {{"name", "colour"}, {"type", "ordinal"}, {"domain", {{"data", "rows"}, {"field", series}}}, {"range", {"#0072b2", "#000000", "#e69f00"}}},
                    {{"name", "shape"}, {"type", "ordinal"}, {"domain", {{"data", "rows"}, {"field", series}}}, {"range", {"circle", "diamond", "square"}}}};
  spec["axes"] = {{{"orient", "bottom"}, {"scale", "x"}, {"title", value_title}, {"grid", true}},
                  {{"orient", "left"}, {"scale", "y"}, {"grid", true}, {"labelLimit", 260}}};
  spec["legends"] = {{{"fill", "colour"}, {"shape", "shape"}, {"title", series}}};
  spec["marks"] = {{{"type", "symbol"},
                    {"from", {{"data", "rows"}}},
                    {"encode", {{"enter", {{"y", field("y", category)}, {"x", field("x", value)}, {"fill", field("colour", series)},
                                           {"shape", field("shape", series)}, {"size", {{"value", 90}}}, {"opacity", {{"value", 0.85}}},
                                           {"tooltip", tooltip_of(rows)}}}}}}};
  return spec;
}

json memory_stack_spec(const json& rows, double budget_gib, const std::string& title) {
  std::set<double> mbs;
  double top = budget_gib;
  std::map<double, double> stacked;
  for (const auto& r : rows) {
    mbs.insert(r["micro_batch"].get<double>());
    stacked[r["micro_batch"].get<double>()] += r["gib"].get<double>();
    top = std::max(top, r["peak_gib"].get<double>());
  }
  for (const auto& [_, g] : stacked) top = std::max(top, g);
  json spec = base_spec(rows, std::max(160, 46 * static_cast<int>(mbs.size())), 300);
  spec["data"][0]["transform"].push_back({{"type", "stack"}, {"groupby", {"micro_batch"}}, {"sort", {{"field", "order"}}}, {"field", "gib"}});
  spec["data"].push_back({{"name", "peaks"}, {"source", "rows"},
                          {"transform", {{{"type", "aggregate"}, {"groupby", {"micro_batch", "fits", "recommended"}},
                                          {"fields", {"peak_gib"}}, {"ops", {"max"}}, {"as", {"peak_gib"}}}}}});
  spec["data"].push_back({{"name", "chosen"}, {"source", "peaks"}, {"transform", {{{"type", "filter"}, {"expr", "datum.recommended"}}}}});
  spec["title"] = {{"text", title}, {"fontSize", 12}};
  spec["scales"] = {
      {{"name", "x"}, {"type", "band"}, {"domain", {{"data", "rows"}, {"field", "micro_batch"}, {"sort", true}}}, {"range", "width"}, {"padding", 0.2}},
      {{"name", "y"}, {"type", "linear"}, {"domain", {0, top * 1.12}}, {"range", "height"}, {"nice", true}},
      {{"name", "colour"}, {"type", "ordinal"},
       {"domain", {"weights", "gradients", "optimizer", "activations", "logits", "overhead"}},
       {"range", {"#0072b2", "#56b4e9", "#009e73", "#e69f00", "#cc79a7", "#999999"}}}};
  spec["axes"] = {{{"orient", "bottom"}, {"scale", "x"}, {"title", "micro-batch"}},
                  {{"orient", "left"}, {"scale", "y"}, {"title", "GiB"}, {"grid", true}}};
  spec["legends"] = {{{"fill", "colour"}, {"title", "term"}}};
  const json x_band = {{"x", field("x", "micro_batch")}, {"width", {{"scale", "x"}, {"band", 1}}}};
  json bars_enter = x_band;
  bars_enter.update({{"y", field("y", "y1")}, {"y2", field("y", "y0")}, {"fill", field("colour", "term")},
                     {"opacity", {{"signal", "datum.fits ? 1 : 0.35"}}}, {"tooltip", {{"field", "tip"}}}});
  spec["marks"] = {
      {{"type", "rect"}, {"from", {{"data", "rows"}}}, {"encode", {{"enter", bars_enter}}}},
      {{"type", "rule"},
       {"from", {{"data", "peaks"}}},
       {"encode", {{"enter", {{"x", field("x", "micro_batch")}, {"x2", {{"scale", "x"}, {"field", "micro_batch"}, {"band", 1}}},
                              {"y", field("y", "peak_gib")}, {"stroke", {{"value", "#000000"}}}, {"strokeWidth", {{"value", 2}}}}}}}},
      {{"type", "rule"},
       {"encode", {{"enter", {{"x", {{"value", 0}}}, {"x2", {{"signal", "width"}}}, {"y", {{"scale", "y"}, {"value", budget_gib}}},
                              {"stroke", {{"value", "#d55e00"}}}, {"strokeDash", {{"value", {6, 4}}}}, {"strokeWidth", {{"value", 2}}}}}}}},
      {{"type", "text"},
       {"encode", {{"enter", {{"x", {{"signal", "width"}}}, {"y", {{"scale", "y"}, {"value", budget_gib}}}, {"dy", {{"value", -4}}},
                              {"align", {{"value", "right"}}}, {"fontSize", {{"value", 10}}}, {"fill", {{"value", "#d55e00"}}},
                              {"text", {{"value", "budget"}}}}}}}},
      {{"type", "symbol"},
       {"from", {{"data", "chosen"}}},
       {"encode", {{"enter", {{"x", {{"scale", "x"}, {"field", "micro_batch"}, {"band", 0.5}}}, {"y", field("y", "peak_gib")},
                              {"dy", {{"value", -10}}}, {"shape", {{"value", "triangle-down"}}}, {"size", {{"value", 120}}},
                              {"fill", {{"value", "#d55e00"}}}}}}}},
      {{"type", "text"},
       {"from", {{"data", "chosen"}}},
       {"encode", {{"enter", {{"x", {{"scale", "x"}, {"field", "micro_batch"}, {"band", 0.5}}}, {"y", field("y", "peak_gib")},
                              {"dy", {{"value", -20}}}, {"align", {{"value", "center"}}}, {"fontSize", {{"value", 10}}},
                              {"text", {{"value", "recommended"}}}}}}}}};
  return spec;
}

json throughput_spec(const json& rows) {
  json spec = base_spec(rows, 480, 280);
  for (const char* p : {"without checkpointing", "with checkpointing"})
    spec["data"].push_back({{"name", p}, {"source", "rows"},
                            {"transform", {{{"type", "filter"}, {"expr", std::string("datum.policy === '") + p + "'"}},
                                           {{"type", "collect"}, {"sort", {{"field", "micro_batch"}}}}}}});
  spec["data"].push_back({{"name", "chosen"}, {"source", "rows"}, {"transform", {{{"type", "filter"}, {"expr", "datum.recommended"}}}}});
  spec["scales"] = {
      {{"name", "x"}, {"type", "log"}, {"base", 2}, {"domain", {{"data", "rows"}, {"field", "micro_batch"}}}, {"range", "width"}, {"nice", false}, {"padding", 12}},
      {{"name", "y"}, {"type", "linear"}, {"domain", {{"data", "rows"}, {"field", "tokens_per_s"}}}, {"range", "height"}, {"zero", true}, {"nice", true}},
      {{"name", "colour"}, {"type", "ordinal"}, {"domain", {"without checkpointing", "with checkpointing"}}, {"range", {"#0072b2", "#e69f00"}}}};
  spec["axes"] = {{{"orient", "bottom"}, {"scale", "x"}, {"title", "micro-batch"}, {"grid", true}},
                  {{"orient", "left"}, {"scale", "y"}, {"title", "tokens/s"}, {"grid", true}, {"format", "~s"}}};
  spec["legends"] = {{{"stroke", "colour"}, {"title", "policy"}}};
  for (const char* p : {"without checkpointing", "with checkpointing"})
    spec["marks"].push_back({{"type", "line"},
                             {"from", {{"data", p}}},
                             {"encode", {{"enter", {{"x", field("x", "micro_batch")}, {"y", field("y", "tokens_per_s")},
                                                    {"stroke", field("colour", "policy")}, {"strokeWidth", {{"value", 2}}}}}}}});
  spec["marks"].push_back({{"type", "symbol"},
                           {"from", {{"data", "rows"}}},
                           {"encode", {{"enter", {{"x", field("x", "micro_batch")}, {"y", field("y", "tokens_per_s")},
                                                  {"stroke", field("colour", "policy")}, {"strokeWidth", {{"value", 2}}},
                                                  {"fill", {{"signal", "datum.fits ? scale('colour', datum.policy) : 'white'"}}},
                                                  {"size", {{"value", 50}}}, {"tooltip", {{"field", "tip"}}}}}}}});
  spec["marks"].push_back({{"type", "symbol"},
                           {"from", {{"data", "chosen"}}},
                           {"encode", {{"enter", {{"x", field("x", "micro_batch")}, {"y", field("y", "tokens_per_s")},
                                                  {"shape", {{"value", "diamond"}}}, {"size", {{"value", 260}}},
                                                  {"fill", {{"value", "transparent"}}}, {"stroke", {{"value", "#d55e00"}}},
                                                  {"strokeWidth", {{"value", 2}}}}}}}});
  spec["marks"].push_back({{"type", "text"},
                           {"from", {{"data", "chosen"}}},
                           {"encode", {{"enter", {{"x", field("x", "micro_batch")}, {"y", field("y", "tokens_per_s")},
                                                  {"dy", {{"value", -14}}}, {"align", {{"value", "center"}}},
                                                  {"fontSize", {{"value", 10}}}, {"fill", {{"value", "#d55e00"}}},
                                                  {"text", {{"value", "recommended"}}}}}}}});
  return spec;
}

json comparison_spec(const json& rows, double tolerance) {
  double lo = -100 * tolerance, hi = 100 * tolerance;
  for (const auto& r : rows) {
    const double change = r["change_pct"].get<double>(), noise = r["noise_pct"].get<double>();
    lo = std::min({lo, change, -noise}), hi = std::max({hi, change, noise});
  }
  const double pad = 0.08 * (hi - lo) + 1;
  json spec = base_spec(rows, 420, std::max(40, 24 * static_cast<int>(rows.size())));
  spec["scales"] = {
      {{"name", "y"}, {"type", "band"}, {"domain", in_row_order("problem")}, {"range", "height"}, {"padding", 0.2}},
      {{"name", "x"}, {"type", "linear"}, {"domain", {lo - pad, hi + pad}}, {"range", "width"}, {"nice", true}},
      {{"name", "colour"}, {"type", "ordinal"},
       {"domain", {"SAME", "FASTER", "SLOWER", "NOISY", "INCORRECT", "MISSING", "ANSWERED"}},
       {"range", {"#9e9e9e", "#009e73", "#d55e00", "#e69f00", "#cc79a7", "#000000", "#56b4e9"}}}};
  spec["axes"] = {{{"orient", "bottom"}, {"scale", "x"}, {"title", "change in speed, % (right: faster)"}, {"grid", true}},
                  {{"orient", "left"}, {"scale", "y"}, {"labelLimit", 260}}};
  spec["legends"] = {{{"fill", "colour"}, {"title", "verdict"}, {"orient", "bottom"}, {"direction", "horizontal"}}};
  const json y_band = {{"y", field("y", "problem")}, {"height", {{"scale", "y"}, {"band", 1}}}};
  json noise = y_band, bar = y_band;
  noise.update({{"x", {{"scale", "x"}, {"signal", "-datum.noise_pct"}}}, {"x2", field("x", "noise_pct")}, {"fill", {{"value", "#e3e3e3"}}}});
  bar.update({{"x", {{"scale", "x"}, {"value", 0}}}, {"x2", field("x", "change_pct")}, {"fill", field("colour", "verdict")},
              {"tooltip", {{"field", "tip"}}}});
  auto rule_at = [](double x) {
    return json{{"type", "rule"},
                {"encode", {{"enter", {{"x", {{"scale", "x"}, {"value", x}}}, {"y", {{"value", 0}}}, {"y2", {{"signal", "height"}}},
                                       {"stroke", {{"value", x == 0 ? "#000000" : "#d55e00"}}},
                                       {"strokeDash", {{"value", x == 0 ? json::array() : json{5, 4}}}}}}}}};
  };
  spec["marks"] = {{{"type", "rect"}, {"from", {{"data", "rows"}}}, {"encode", {{"enter", noise}}}},
                   {{"type", "rect"}, {"from", {{"data", "rows"}}}, {"encode", {{"enter", bar}}}},
                   rule_at(0), rule_at(-100 * tolerance), rule_at(100 * tolerance),
                   {{"type", "text"},
                    {"from", {{"data", "rows"}}},
                    {"encode", {{"enter", {{"x", {{"signal", "width"}}}, {"dx", {{"value", 6}}},
                                           {"y", {{"scale", "y"}, {"field", "problem"}, {"band", 0.5}}},
                                           {"baseline", {{"value", "middle"}}}, {"fontSize", {{"value", 10}}},
                                           {"fill", field("colour", "verdict")}, {"text", {{"field", "label"}}}}}}}}};
  return spec;
}

report_chart make_chart(std::string id, std::string title, std::string caption, json rows, json spec) {
  spec["data"][0]["values"] = rows;
  return {std::move(id), std::move(title), std::move(caption), std::move(rows), std::move(spec)};
}

}  // namespace tiletune::report
