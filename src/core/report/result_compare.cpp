#include "core/report/result_compare.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <map>
#include <sstream>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/gemm/tile_config.hpp"
#include "core/iso_date.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/report/json_file.hpp"
#include "core/report/result_figures.hpp"
#include "core/utf8.hpp"
#include "core/plan_mode.hpp"

namespace tiletune {

// The problem's description (alpha and beta in it where not 1 and 0), but a grouped problem of given rows by
// its rows: describe() says only "rows given", and 120+8 rows are another problem than 64+64.
std::string problem_key(const gemm_problem& p) {
  std::string key = p.describe();
  const std::size_t given = key.find("rows given");
  if (!p.groups || p.groups->routing != "given" || given == std::string::npos) return key;
  // A few rows are read as they are; many (up to 4096 groups) as their hash, the tuning database's class.
  const std::string rows =
      p.groups->count() <= 16 ? fmt::format("rows {}", fmt::join(p.groups->rows, ",")) : p.groups->distribution();
  return key.replace(given, std::string("rows given").size(), rows);
}

std::string canonical_preset(const std::string& preset) {
  try {
    return find_preset(preset).preset;  // case-insensitive, as --gpu
  } catch (const usage_error&) {  // a preset of another version of the tool, or a name of the user's
    return preset;
  }
}

namespace {

// validate() and the group layout's parser name gemm's flags ("--m 0 is invalid"): in a file they are fields.
std::string fields_not_flags(std::string why) {
  if (why.rfind("--", 0) == 0) why = "\"" + why.substr(2, why.find(' ') - 2) + "\"" + why.substr(why.find(' '));
  return why;
}

gemm_problem problem_in_result(const nlohmann::json& r, const std::string& where) {
  if (!r.contains("problem")) throw usage_error(fmt::format("{}: a result has no \"problem\"", where));
  gemm_problem p;
  try {
    p = gemm_problem_from_json(r.at("problem"));
    validate(p);
  } catch (const nlohmann::json::exception& ex) {
    throw usage_error(fmt::format("{}: a result's \"problem\" is incomplete: {}", where, json_error_text(ex)));
  } catch (const usage_error& ex) {  // an unknown dtype or layout, or a size the tool refuses, named by the file
    throw usage_error(
        fmt::format("{}: a result's problem {}: {}", where, r.at("problem").dump(), fields_not_flags(ex.what())));
  }
  return p;
}

// The recommendation's figures: what a verdict is judged by, each what its times say.
void read_recommendation(const nlohmann::json& r, const gemm_problem& p, const device_limits& limits,
                         const std::string& at, result_entry& e) {
  const nlohmann::json& rec = r["recommendation"];
  e.has_result = true;
  // Its own check, where it carries one, counts as a variant's (a foreign or hand-made file's may).
  e.incorrect |= is_incorrect_variant(rec);
  e.variant_id = rec.value("id", "");
  e.vs_reference = result_figure_at(rec, "vs_reference", at);
  e.time_us = result_figure_at(rec, "median_us", at);
  if (!e.time_us) e.time_us = result_figure_at(rec, "predicted_us", at);
  if (rec.contains("noise") && !rec["noise"].is_null()) {
    // A timing's spread over its median, at most max_timing_noise.
    if (!rec["noise"].is_number() || !(rec["noise"].get<double>() >= 0) ||
        !(rec["noise"].get<double>() <= max_timing_noise))
      throw usage_error(fmt::format("{}: \"noise\" is {}, not a timing's spread (a fraction from 0 to {})", at,
                                    rec["noise"].dump().substr(0, 40), max_timing_noise));
    e.noise = rec["noise"].get<double>();
  }
  // The ratio must be what the two times say: a file edited by hand or
  // damaged would otherwise decide the verdict.
  std::optional<double> ref_us;  // assigned in an if: GCC 12 warns of the ternary's optional
  if (r.contains("reference")) ref_us = result_figure_at(r["reference"], "median_us", at + " reference");
  const auto measured_us = result_figure_at(rec, "median_us", at);
  if (e.vs_reference && ref_us && measured_us && std::abs(*e.vs_reference / (*ref_us / *measured_us) - 1) > 0.01)
    throw usage_error(fmt::format("{}: \"vs_reference\" {} disagrees with reference.median_us / median_us = {:.4g}",
                                  at, *e.vs_reference, *ref_us / *measured_us));
  check_timed_figures(p, rec, limits, at);
}

result_entry entry_from_json(const nlohmann::json& r, const std::string& where, const device_limits& limits) {
  result_entry e;
  const gemm_problem p = problem_in_result(r, where);
  e.problem = p;
  e.key = problem_key(p);
  e.label = r.contains("name") && r["name"].is_string() ? r["name"].get<std::string>() : e.key;
  // The problem's derived figures, where the file gives them, are its own: the report draws them (the
  // roofline's intensity, its TFLOP/s), so a damaged or forged one is named, not drawn.
  const nlohmann::json& problem = r["problem"];
  for (const auto& [key, own] : {std::pair<const char*, double>{"flops", p.flops()},
                                 std::pair<const char*, double>{"operand_bytes", static_cast<double>(p.operand_bytes())}}) {
    if (!problem.contains(key) || problem[key].is_null()) continue;
    if (!problem[key].is_number() || !(std::abs(problem[key].get<double>() / own - 1) <= 1e-9))
      throw usage_error(fmt::format("{}: {}: \"problem\": \"{}\" is {}, not the problem's {:.0f}", where, e.label, key,
                                    problem[key].dump().substr(0, 40), own));
  }
  if (r.contains("variants") && r["variants"].is_array())
    for (const auto& v : r["variants"]) {
      e.incorrect |= is_incorrect_variant(v);
      check_timed_figures(p, v, limits, fmt::format("{}: {}: variant {}", where, e.label, v.value("id", "?")));
    }
  if (r.contains("summary") && r["summary"].is_object()) e.incorrect |= r["summary"].value("incorrect", 0) > 0;
  if (r.contains("recommendation") && r["recommendation"].is_object())
    read_recommendation(r, p, limits, fmt::format("{}: {}: recommendation", where, e.label), e);
  if (r.contains("reference"))  // cuBLASLt's time and TFLOP/s, drawn beside the variants
    check_timed_figures(p, r["reference"], limits, fmt::format("{}: {}: reference", where, e.label));
  return e;
}

// Each field a reader takes has the JSON type schemas/gemm.schema.json gives it: a damaged or
// hand-edited file is named with the field, never a library's type error.
void check_field(const nlohmann::json& j, const char* key, nlohmann::json::value_t type, bool nullable,
                 const std::string& where) {
  if (!j.is_object() || !j.contains(key)) return;
  const auto& v = j[key];
  if ((nullable && v.is_null()) || v.type() == type) return;
  if (type == nlohmann::json::value_t::number_float && v.is_number()) return;
  if (type == nlohmann::json::value_t::number_integer && v.is_number_integer()) return;
  const std::string dump = v.dump();
  throw usage_error(fmt::format("{}: \"{}\" is {}, not {}{}", where, key, dump.size() > 40 ? dump.substr(0, 40) + "..." : dump,
                                type == nlohmann::json::value_t::string           ? "a string"
                                : type == nlohmann::json::value_t::object         ? "an object"
                                : type == nlohmann::json::value_t::array          ? "a list"
                                : type == nlohmann::json::value_t::number_integer ? "a whole number"
                                : type == nlohmann::json::value_t::boolean        ? "true or false"
                                                                                  : "a number",
                                nullable ? " or null" : ""));
}

// "mode" is measured or predicted: what a report draws and a check compares by. Required where
// the schema requires it (a result file's top level), checked wherever it is given.
void check_mode(const nlohmann::json& j, const std::string& where, bool required) {
  if (!j.contains("mode")) {
    if (required) throw usage_error(fmt::format("{}: no \"mode\" (measured or predicted)", where));
    return;
  }
  if (j["mode"] != "measured" && j["mode"] != "predicted")
    throw usage_error(fmt::format("{}: \"mode\" is {}, not measured or predicted", where, j["mode"].dump()));
}

// The recommended tile, where one is given, is one tiletune reads back (db export prints it): an
// object of whole sizes, of a known family.
void check_recommended_tile(const nlohmann::json& rec, const std::string& where) {
  if (!rec.contains("tile")) return;
  const std::string at = where + ": \"recommendation\": \"tile\"";
  const nlohmann::json& tile = rec["tile"];
  if (!tile.is_object()) throw usage_error(fmt::format("{} is {}, not a tile object", at, tile.dump().substr(0, 80)));
  for (const char* k : {"block_m", "block_n", "block_k"})
    if (!tile.contains(k) || !tile[k].is_number_integer() || tile[k].get<std::int64_t>() <= 0)
      throw usage_error(fmt::format("{}: \"{}\" is {}, not a whole size", at, k, tile.contains(k) ? tile[k].dump() : "missing"));
  try {
    (void)recommended_tile_from_json(rec);
  } catch (const nlohmann::json::exception& e) {
    throw usage_error(fmt::format("{}: a field of the wrong type: {}", at, json_error_text(e)));
  } catch (const std::exception& e) {
    throw usage_error(fmt::format("{}: {}", at, e.what()));
  }
}

// The parts of a variant or recommendation that readers store and draw (db import keeps each timed
// variant's tile and resources for calibration): each value of the type schemas/common.schema.json
// gives it, named with its field where it is not (a hand-edited "registers": "many" stopped db
// import with a library's type error, half the files stored).
void check_figures(const nlohmann::json& v, const std::string& where) {
  using t = nlohmann::json::value_t;
  // Each figure with the range the schema gives it: a time, ratio, bound or clock is positive, the rest
  // at least 0.
  struct figure {
    const char* name;
    bool positive;
  };
  static constexpr figure figures[] = {
      {"median_us", true},      {"predicted_us", true},         {"tflops", false},          {"percent_of_peak", false},
      {"gbs", false},           {"percent_of_bandwidth", false}, {"vs_reference", true},     {"max_rel_error", false},
      {"rel_frobenius_error", false}, {"error_bound", true},     {"sm_clock_mhz", true},     {"noise", false}};
  for (const figure& f : figures) {
    check_field(v, f.name, t::number_float, true, where);
    if (!v.is_object() || !v.contains(f.name) || !v[f.name].is_number()) continue;
    const double x = v[f.name].get<double>();
    if (!std::isfinite(x) || x < 0 || (f.positive && x == 0))
      throw usage_error(fmt::format("{}: \"{}\" is {}, not {} number", where, f.name, v[f.name].dump(),
                                    f.positive ? "a positive" : "a non-negative"));
  }
  check_field(v, "family", t::string, false, where);
  check_field(v, "tile", t::object, false, where);
  check_field(v, "resources", t::object, false, where);
  // A tile's sizes are whole numbers; a family's own keys are whole numbers, switches (true or false,
  // e.g. stream_k) or named modes (strings, e.g. fp8's "scales": "block"), as schemas/common.schema.json
  // says; the family's reader checks those names. (Block-scaled fp8 results were refused here.)
  static constexpr const char* sizes[] = {"block_m", "block_n", "block_k", "stages", "split_k", "threads", "raster_group"};
  if (v.contains("tile") && v["tile"].is_object())
    for (const auto& [k, x] : v["tile"].items()) {
      const bool size = std::find(std::begin(sizes), std::end(sizes), k) != std::end(sizes);
      if (k == "family" || (!size && x.is_string())) {
        check_field(v["tile"], k.c_str(), t::string, false, where + ": \"tile\"");
      } else if (size || !x.is_boolean()) {
        check_field(v["tile"], k.c_str(), t::number_integer, false, where + ": \"tile\"");
      }
    }
  if (v.contains("resources") && v["resources"].is_object())
    for (const auto& [k, x] : v["resources"].items())
      check_field(v["resources"], k.c_str(), t::number_integer, true, where + ": \"resources\"");
}

// A grouped problem's fields, each named: the problem's reader gives a library's text without the field,
// and its layout error names gemm's --group-layout, which compare, report and db import do not have. A
// count the rows disagree with is refused (the rows decide the problem; the count would be read as noise).
void check_groups(const nlohmann::json& g, const std::string& where) {
  using t = nlohmann::json::value_t;
  const std::string in = where + ": \"groups\"";
  if (!g.contains("rows")) throw usage_error(fmt::format("{} has no \"rows\"", in));
  check_field(g, "rows", t::array, false, in);
  for (const auto& rows : g["rows"])
    if (!rows.is_number_integer())
      throw usage_error(fmt::format("{}: \"rows\" holds {}, not a whole number", in, rows.dump().substr(0, 40)));
  for (const char* k : {"count", "stride", "tokens", "top_k"}) check_field(g, k, t::number_integer, false, in);
  for (const char* k : {"layout", "routing"}) check_field(g, k, t::string, false, in);
  if (g.contains("layout")) {
    try {
      (void)parse_group_layout(g["layout"].get<std::string>());
    } catch (const usage_error&) {
      throw usage_error(
          fmt::format("{}: \"layout\" is {}, not contiguous or masked", in, g["layout"].dump().substr(0, 40)));
    }
  }
  if (g.contains("count") && g["count"].get<std::int64_t>() != static_cast<std::int64_t>(g["rows"].size()))
    throw usage_error(fmt::format("{}: \"count\" {} is not the {} groups \"rows\" gives", in, g["count"].dump(),
                                  g["rows"].size()));
}

void check_body_types(const nlohmann::json& r, const std::string& where) {
  using t = nlohmann::json::value_t;
  check_field(r, "mode", t::string, false, where);
  check_field(r, "problem", t::object, false, where);
  check_field(r, "variants", t::array, false, where);
  check_field(r, "recommendation", t::object, true, where);
  check_field(r, "reference", t::object, true, where);
  check_field(r, "summary", t::object, false, where);
  // The run's counts of variants by status: compare reads "incorrect" > 0 as a verdict.
  if (r.contains("summary") && r["summary"].is_object())
    for (const auto& [k, v] : r["summary"].items())
      if (v.is_number() && !(v.get<double>() >= 0))
        throw usage_error(fmt::format("{}: \"summary\": \"{}\" is {}, not a count", where, k, v.dump()));
  check_field(r, "search", t::object, false, where);
  if (r.contains("problem")) {
    const std::string in = where + ": \"problem\"";
    // What names the problem (schemas/common.schema.json, gemm_problem): a reader keys and compares by it.
    if (r["problem"].is_object())
      for (const char* k : {"m", "n", "k", "dtype", "layout"})
        if (!r["problem"].contains(k)) throw usage_error(fmt::format("{} has no \"{}\"", in, k));
    for (const char* k : {"m", "n", "k", "batch"}) check_field(r["problem"], k, t::number_integer, false, in);
    for (const char* k : {"dtype", "layout", "scaling", "out_dtype"}) check_field(r["problem"], k, t::string, false, in);
    for (const char* k : {"alpha", "beta"}) check_field(r["problem"], k, t::number_float, false, in);
    check_field(r["problem"], "groups", t::object, false, in);
    if (r["problem"].is_object() && r["problem"].contains("groups")) check_groups(r["problem"]["groups"], in);
  }
  std::set<std::string> ids;
  for (const auto& v : r.value("variants", nlohmann::json::array())) {
    if (!v.is_object()) throw usage_error(fmt::format("{}: \"variants\" holds {}, not a variant object", where, v.dump()));
    check_field(v, "id", t::string, false, where + ": a variant");
    check_field(v, "status", t::string, false, where + ": a variant");
    check_figures(v, where + (v.contains("id") && v["id"].is_string() ? ": variant " + v["id"].get<std::string>()
                                                                      : std::string(": a variant")));
    // Every variant names itself and its outcome (schemas/common.schema.json, gemm_variant).
    if (!v.contains("id") || !v.contains("status"))
      throw usage_error(fmt::format("{}: a variant without an \"{}\": {}", where, v.contains("id") ? "status" : "id",
                                    v.dump().substr(0, 80)));
    if (!status_of(v)) {
      std::string names;
      for (int i = 0; i < variant_status_count; ++i)
        names += std::string(i ? ", " : "") + std::string(to_string(static_cast<variant_status>(i)));
      throw usage_error(fmt::format("{}: variant {}: \"status\" {} is not one of {}", where,
                                    v["id"].get<std::string>(), v["status"].dump(), names));
    }
    ids.insert(v["id"].get<std::string>());
  }
  if (r.contains("recommendation") && r["recommendation"].is_object()) {
    check_field(r["recommendation"], "id", t::string, false, where + ": \"recommendation\"");
    const std::string id = r["recommendation"].value("id", "");
    if (!ids.empty() && !ids.count(id))
      throw usage_error(fmt::format("{}: the recommendation {} is none of its variants", where,
                                    id.empty() ? std::string("(no id)") : id));
    check_recommended_tile(r["recommendation"], where);  // (first: it says "a whole size", as the sizes must be)
    check_figures(r["recommendation"], where + ": \"recommendation\"");
  }
  if (r.contains("reference") && r["reference"].is_object()) check_figures(r["reference"], where + ": \"reference\"");
  // The run's counts and its search's figures; a suite result's record of the tuning database.
  if (r.contains("summary") && r["summary"].is_object())
    for (const auto& [k, x] : r["summary"].items())
      check_field(r["summary"], k.c_str(), t::number_integer, false, where + ": \"summary\"");
  if (r.contains("search") && r["search"].is_object()) {
    const std::string in = where + ": \"search\"";
    for (const auto& [k, x] : r["search"].items())
      check_field(r["search"], k.c_str(),
                  k == "strategy" || k == "stop_reason" ? t::string : k == "stages" ? t::array : t::number_float, false,
                  in);
  }
  check_field(r, "tuning_db", t::object, true, where);
  if (r.contains("tuning_db") && r["tuning_db"].is_object())
    for (const auto& [k, x] : r["tuning_db"].items())
      check_field(r["tuning_db"], k.c_str(), k == "answered" || k == "stored" ? t::boolean : t::string, false,
                  where + ": \"tuning_db\"");
  check_mode(r, where, false);
}

void check_result_types(const nlohmann::json& j, const std::string& path) {
  using t = nlohmann::json::value_t;
  check_field(j, "device", t::object, false, path);
  check_field(j, "tool", t::object, false, path);
  if (j.contains("device")) {
    for (const char* k : {"name", "arch", "preset"}) check_field(j["device"], k, t::string, true, path + ": \"device\"");
    // The figures the physics checks hold times to: a figure that is not a number would be skipped.
    for (const char* k : {"memory_bandwidth_gbs", "l2_bytes"})
      check_field(j["device"], k, t::number_float, true, path + ": \"device\"");
    check_field(j["device"], "peak_tflops", t::object, true, path + ": \"device\"");
    if (j["device"].is_object() && j["device"].contains("peak_tflops") && j["device"]["peak_tflops"].is_object())
      for (const auto& [type, v] : j["device"]["peak_tflops"].items())
        if (!v.is_null() && !v.is_number())
          throw usage_error(fmt::format("{}: \"device\": \"peak_tflops\": \"{}\" is {}, not a number", path, type,
                                        v.dump()));
  }
  if (j.contains("tool")) {
    for (const char* k : {"date", "kernels_as_of", "command_line", "driver", "cuda_runtime", "nvrtc", "version"})
      check_field(j["tool"], k, t::string, false, path + ": \"tool\"");
    // A record's date orders it against others of its key (the newer stays) and --since selects by
    // it, both as strings: anything but a real ISO 8601 date would sort anywhere. kernels_as_of
    // (the kernels the result timed) is compared with each family's revision date the same way.
    for (const char* k : {"date", "kernels_as_of"})
      if (j["tool"].is_object() && j["tool"].contains(k) && j["tool"][k].is_string())
        if (const std::string why = iso_date(j["tool"][k].get<std::string>()); !why.empty())
          throw usage_error(fmt::format("{}: \"tool\": \"{}\" must be {}", path, k, why));
  }
  check_field(j, "results", t::array, false, path);
  if (j.value("schema", "") == "tiletune.gemm-suite/1") {
    check_field(j, "mode", t::string, false, path);
    for (const auto& r : j.value("results", nlohmann::json::array())) {
      if (!r.is_object()) throw usage_error(fmt::format("{}: \"results\" holds {}, not a result object", path, r.dump()));
      check_body_types(r, path + ": a suite result");
    }
  } else {
    check_body_types(j, path);
  }
  check_mode(j, path, true);  // after the types: a field of the wrong type is named first
}

// What result_file_from_json reads once the types are checked.
result_file result_file_from_checked_json(const nlohmann::json& j, const std::string& path) {
  result_file f;
  f.path = path;
  f.schema = j["schema"].get<std::string>();
  f.mode = j.value("mode", "");
  if (j.contains("device") && j["device"].is_object()) {
    // (A null name or arch is none: the schema allows it.)
    if (j["device"].contains("name") && j["device"]["name"].is_string()) f.device_name = j["device"]["name"].get<std::string>();
    if (j["device"].contains("arch") && j["device"]["arch"].is_string()) f.device_arch = j["device"]["arch"].get<std::string>();
    const auto& dev = j["device"];
    if (dev.contains("preset") && dev["preset"].is_string())  // null for a GPU without a preset
      f.device_model = canonical_preset(dev["preset"].get<std::string>());
  }
  if (f.device_model.empty()) f.device_model = f.device_name;
  // Every result names the GPU it is of: without one, two results could not be told apart by GPU.
  if (f.device_model.empty())
    throw usage_error(fmt::format("{}: the result names no GPU (its \"device\" needs a \"name\")", path));
  auto flush_of = [&](const nlohmann::json& r) { return f.mode == "measured" ? l2_flush_of(r, path) : ""; };
  if (f.schema == "tiletune.gemm/1") {
    f.entries.push_back(entry_from_json(j, path, limits_of(j.value("device", nlohmann::json()))));
    f.entries.back().partial = partial_run_option(j, nlohmann::json());
    f.entries.back().l2_flush = flush_of(j);
  } else {  // tiletune.gemm-suite/1 (result_file_from_json checked the schema)
    if (!j.contains("results") || !j["results"].is_array())
      throw usage_error(fmt::format("{}: a suite result needs a \"results\" array", path));
    const device_limits limits = limits_of(j.value("device", nlohmann::json()));
    for (const auto& r : j["results"]) {
      f.entries.push_back(entry_from_json(r, path, limits));
      f.entries.back().partial = partial_run_option(r, j);
      f.entries.back().l2_flush = flush_of(r);
    }
  }
  return f;
}

}  // namespace

std::string l2_flush_of(const nlohmann::json& result, const std::string& path) {
  if (!result.is_object() || !result.contains("l2_flush")) return "write";
  const nlohmann::json& v = result["l2_flush"];
  if (!v.is_string() || !l2_flush_mode_from_string(v.get<std::string>()))
    throw usage_error(fmt::format("{}: \"l2_flush\" is {}, not \"write\", \"read\" or \"none\"", path,
                                  v.dump().substr(0, 40)));
  return v.get<std::string>();
}

std::string partial_run_option(const nlohmann::json& result, const nlohmann::json& header) {
  if (result.contains("partial") && result["partial"].is_string()) return result["partial"].get<std::string>();
  const auto& h = header.is_object() && header.contains("tool") ? header : result;
  const auto& tool = h.value("tool", nlohmann::json::object());
  if (!tool.is_object() || !tool.contains("command_line") || !tool["command_line"].is_string()) return {};
  std::istringstream words(tool["command_line"].get<std::string>());
  for (std::string w; words >> w;)
    for (const char* option : {"--only", "--verify-only", "--kernel-debug"})
      if (w == option || w.rfind(std::string(option) + "=", 0) == 0) return option;
  return {};
}

result_file result_file_from_json(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("schema"))
    throw usage_error(fmt::format("{}: not a tiletune result (no \"schema\")", path));
  if (!j["schema"].is_string())
    throw usage_error(fmt::format("{}: not a tiletune result (\"schema\" is {}, not a name such as tiletune.gemm/1)",
                                  path, j["schema"].dump().substr(0, 40)));
  // The schema first: another kind of file (a suite's definition, a batch plan) is named as such,
  // not by the first field a gemm result needs and it lacks.
  if (const std::string schema = j["schema"].get<std::string>();
      schema != "tiletune.gemm/1" && schema != "tiletune.gemm-suite/1")
    throw usage_error(fmt::format("{}: schema \"{}\" is not a gemm result (tiletune.gemm/1 or tiletune.gemm-suite/1){}",
                                  path, schema,
                                  schema == "tiletune.suite/1"
                                      ? ": it is a suite's definition; `tiletune gemm --suite FILE --out R.json` writes its result"
                                      : ""));
  check_result_types(j, path);
  try {
    return result_file_from_checked_json(j, path);
  } catch (const nlohmann::json::exception& e) {  // a field the checks above do not name
    throw usage_error(fmt::format("{}: not a tiletune result: {}", path, json_error_text(e)));
  }
}


result_file load_result_file(const std::filesystem::path& path) {
  return result_file_from_json(read_json_file(path), path.string());
}

bool same_device_model(const result_file& f, const std::string& preset, const std::string& name) {
  return f.device_model == (preset.empty() ? name : preset);
}

std::string_view to_string(verdict v) {
  switch (v) {
    case verdict::same: return "SAME";
    case verdict::faster: return "FASTER";
    case verdict::slower: return "SLOWER";
    case verdict::noisy: return "NOISY";
    case verdict::incorrect: return "INCORRECT";
    case verdict::missing: return "MISSING";
    case verdict::answered: return "ANSWERED";
  }
  return "?";
}

verdict timing_verdict(double change, double tolerance, double noise) {
  if (std::abs(change) <= tolerance) return verdict::same;
  if (std::abs(change) <= std::max(tolerance, noise)) return verdict::noisy;
  return change < 0 ? verdict::slower : verdict::faster;
}

bool verdict_fits_change(std::string_view written, double change, double tolerance, double noise) {
  // A file's numbers round-trip exactly; the tiny slack only forgives a writer that rounds them.
  constexpr double eps = 1e-9;
  for (const verdict v : {verdict::same, verdict::noisy, verdict::faster, verdict::slower})
    if (written == to_string(v))
      return timing_verdict(change - eps, tolerance, noise) == v || timing_verdict(change, tolerance, noise) == v ||
             timing_verdict(change + eps, tolerance, noise) == v;
  return true;
}

bool comparison::failed() const {
  for (const auto& r : rows)
    if (r.result == verdict::slower || r.result == verdict::incorrect || r.result == verdict::missing) return true;
  return false;
}

namespace {

// Results of different GPUs or of a prediction against a measurement stop the run unless allowed.
void check_comparable(const result_file& base, const result_file& fresh, const compare_options& o, comparison& c) {
  if (base.device_model != fresh.device_model || base.device_arch != fresh.device_arch) {
    // What tells them apart: the GPU model (a preset, else the name) and the architecture, each said.
    auto on = [](const result_file& f) {
      return fmt::format("{} ({}{})", f.device_name.empty() ? f.device_model : f.device_name,
                         f.device_arch.empty() ? "no architecture given" : f.device_arch,
                         f.device_model != f.device_name ? ", GPU model " + f.device_model : ", no preset");
    };
    const std::string both =
        fmt::format("{} was recorded on {}, {} on {}", base.path, on(base), fresh.path, on(fresh));
    if (!o.allow_device_mismatch)
      throw environment_error(both + "; compare results of one GPU model, or pass --allow-device-mismatch");
    c.notes.push_back("device mismatch allowed: " + both);
  }
  if (base.mode != fresh.mode) {
    const std::string what = fmt::format("{} is {}, {} is {}", base.path, base.mode, fresh.path, fresh.mode);
    if (!o.allow_mode_mismatch)
      throw usage_error(what + ": a prediction against a measurement says nothing about a regression; " +
                        (o.mode_mismatch_flag ? std::string("compare two measured (or two predicted) results, or pass "
                                                            "--allow-mode-mismatch")
                                              : std::string("check re-measures, so give it a measured baseline")));
    c.notes.push_back("mode mismatch allowed: " + what);
  }
}

// Two timings of one problem whose L2 flushes differ time different things (a flush by writes leaves
// dirty lines that the kernel's loads write back): refused, naming the problem and both flushes.
void check_same_flush(const result_entry& b, const result_entry& n, const result_file& base,
                      const result_file& fresh) {
  if (b.l2_flush.empty() || n.l2_flush.empty() || b.l2_flush == n.l2_flush) return;
  throw usage_error(fmt::format(
      "{}: {} timed it with --l2-flush {}, {} with --l2-flush {}: timings that empty the L2 differently are not "
      "comparable; time both the same way",
      b.label, base.path, b.l2_flush, fresh.path, n.l2_flush));
}

// The verdict on one problem both files hold.
comparison_row judge(const result_entry& b, const result_entry& n, const compare_options& o, comparison_row row) {
  if (n.incorrect) {  // a kernel that computes a wrong answer fails the gate, whichever variant is fastest
    row.result = verdict::incorrect;
    row.detail = n.has_result ? "a variant failed verification" : "no variant passed verification";
    return row;
  }
  if (!n.has_result && !b.has_result) {  // no variant ran it in either: nothing changed (a file against itself)
    row.result = verdict::same;
    row.detail = "neither file has a result for it (no variant ran)";
    return row;
  }
  if (!n.has_result) {
    row.result = verdict::missing;
    row.detail = "no variant produced a result";
    return row;
  }
  if (!b.has_result) {  // MISSING is a problem NEW lacks; this one NEW answers for the first time
    row.result = verdict::answered;
    row.detail = "the baseline has no result for it (no variant ran there); NEW has one: nothing to compare";
    return row;
  }
  const bool by_ratio = !o.absolute && b.vs_reference && n.vs_reference;
  if (by_ratio) {
    row.basis = "ratio to cuBLAS";
    row.base_value = b.vs_reference;
    row.new_value = n.vs_reference;
    row.change = *n.vs_reference / *b.vs_reference - 1;
  } else if (b.time_us && n.time_us && *b.time_us > 0 && *n.time_us > 0) {
    row.basis = "time";
    row.base_value = b.time_us;
    row.new_value = n.time_us;
    row.change = *b.time_us / *n.time_us - 1;
  } else {
    row.result = verdict::missing;
    row.detail = "the files carry no comparable figure";
    return row;
  }
  row.noise = std::hypot(b.noise, n.noise);
  row.result = timing_verdict(row.change, o.tolerance, row.noise);
  if (row.result == verdict::noisy)
    row.detail = fmt::format("{:+.1f}% is within the measured noise of {:.1f}%", 100 * row.change, 100 * row.noise);
  if (b.variant_id != n.variant_id) {
    if (!row.detail.empty()) row.detail += "; ";
    row.detail += fmt::format("recommended variant changed: {} -> {}", b.variant_id, n.variant_id);
  }
  return row;
}

// For each base entry, the new file's entry that stands for it: the same problem under the same suite
// name first, then the unmatched ones of the same problem in order (a suite may hold one shape twice).
// An entry left over on either side where the other file holds its problem fewer times is judged
// against that problem's first entry there (compare_results): never MISSING nor "new" while its
// problem was measured on both sides (a suite's slowed q_proj hid behind a lone 4096^3 result).
std::vector<std::optional<std::size_t>> counterparts(const std::vector<result_entry>& base,
                                                     const std::vector<result_entry>& fresh, std::vector<bool>& used) {
  std::vector<std::optional<std::size_t>> match(base.size());
  for (std::size_t b = 0; b < base.size(); ++b)
    for (std::size_t i = 0; i < fresh.size() && !match[b]; ++i)
      if (!used[i] && fresh[i].key == base[b].key && fresh[i].label == base[b].label) used[i] = true, match[b] = i;
  for (std::size_t b = 0; b < base.size(); ++b)
    for (std::size_t i = 0; i < fresh.size() && !match[b]; ++i)
      if (!used[i] && fresh[i].key == base[b].key) used[i] = true, match[b] = i;
  return match;
}

// The first entry of a problem in a file, if it holds one.
std::optional<std::size_t> first_of(const std::vector<result_entry>& entries, const std::string& key) {
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].key == key) return i;
  return std::nullopt;
}

// The verdict on a problem only NEW holds, one of whose variants failed verification.
comparison_row incorrect_new_problem(const result_entry& n, const std::string& base_path) {
  comparison_row row;
  row.key = n.key;
  row.label = n.label;
  row.result = verdict::incorrect;
  row.detail = fmt::format("not in {} (a new problem), and {}", base_path,
                           n.has_result ? "a variant failed verification" : "no variant passed verification");
  return row;
}

// Says which entry of the other file a leftover entry was judged against.
void also_judged_against(comparison_row& row, const std::string& label, const std::string& path) {
  const std::string said = fmt::format("judged against {} of {}, which holds this problem fewer times", label, path);
  row.detail = row.detail.empty() ? said : said + "; " + row.detail;
}

}  // namespace

comparison compare_results(const result_file& base, const result_file& fresh, const compare_options& o) {
  if (!(o.tolerance >= 0 && o.tolerance < 1))
    throw usage_error(fmt::format("--tolerance {} is invalid: a fraction from 0 up to (not including) 1 (0.05 = 5%)", o.tolerance));
  comparison c;
  c.base_path = base.path;
  c.new_path = fresh.path;
  c.base_mode = base.mode;
  c.new_mode = fresh.mode;
  c.options = o;
  check_comparable(base, fresh, o, c);

  std::vector<bool> used(fresh.entries.size(), false);
  const auto matches = counterparts(base.entries, fresh.entries, used);
  std::size_t shared = 0;
  bool ratios = false;  // a problem both files time against cuBLAS: --absolute changes its basis
  for (std::size_t bi = 0; bi < base.entries.size(); ++bi) {
    const result_entry& b = base.entries[bi];
    const std::optional<std::size_t>& match = matches[bi];
    comparison_row row;
    row.key = b.key;
    row.label = b.label;
    const std::optional<std::size_t> stand_in = match ? match : first_of(fresh.entries, b.key);
    if (!stand_in) {
      row.result = verdict::missing;
      row.detail = fmt::format("in {} but not in {}", base.path, fresh.path);
      c.rows.push_back(row);
      continue;
    }
    ++shared;
    const result_entry& n = fresh.entries[*stand_in];
    check_same_flush(b, n, base, fresh);
    ratios |= b.vs_reference && n.vs_reference;
    c.rows.push_back(judge(b, n, o, row));
    if (!match) also_judged_against(c.rows.back(), n.label, fresh.path);
  }
  for (std::size_t i = 0; i < fresh.entries.size(); ++i) {
    if (used[i]) continue;
    const result_entry& n = fresh.entries[i];
    const std::optional<std::size_t> b = first_of(base.entries, n.key);
    if (!b) {
      c.only_in_new.push_back(n.label == n.key ? n.key : fmt::format("{} ({})", n.label, n.key));
      // Nothing to judge its speed against, but a kernel that computes a wrong answer fails the gate all
      // the same (it went through as a new problem).
      if (n.incorrect) c.rows.push_back(incorrect_new_problem(n, base.path));
      continue;
    }
    check_same_flush(base.entries[*b], n, base, fresh);
    comparison_row row;
    row.key = n.key;
    row.label = n.label;
    ratios |= base.entries[*b].vs_reference && n.vs_reference;
    c.rows.push_back(judge(base.entries[*b], n, o, row));
    also_judged_against(c.rows.back(), base.entries[*b].label, base.path);
  }
  if (shared == 0)
    throw usage_error(fmt::format("{} and {} share no problem: nothing to compare", base.path, fresh.path));
  if (!c.only_in_new.empty())
    c.notes.push_back(fmt::format("{} problem(s) in {} are not in {}", c.only_in_new.size(), fresh.path, base.path));
  if (o.absolute && !ratios)
    c.notes.push_back("--absolute has no effect here: no problem has a ratio to cuBLAS in both files (a predicted "
                      "result has none), so each is judged on time as it is");
  // A partial run's recommendation answers another question (the best of the variants it was given,
  // or nothing timed): judged as it is, and said (db import leaves such runs out).
  for (const result_file* f : {&base, &fresh}) {
    std::set<std::string> options;
    std::size_t partial = 0;
    for (const result_entry& e : f->entries)
      if (!e.partial.empty()) ++partial, options.insert(e.partial);
    if (partial)
      c.notes.push_back(fmt::format(
          "{} {}: {} of its {} result(s) {} a partial run ({}): a recommendation there is the best of the variants that "
          "run was given, not a tuning of the problem",
          f == &base ? "BASE" : "NEW", f->path, partial, f->entries.size(), partial == 1 ? "is" : "are",
          fmt::join(options, ", ")));
  }
  return c;
}

nlohmann::json to_json(const comparison& c) {
  nlohmann::json j;
  j["schema"] = "tiletune.compare/1";
  j["base"] = c.base_path;
  j["new"] = c.new_path;
  j["base_mode"] = c.base_mode;
  j["new_mode"] = c.new_mode;
  j["tolerance"] = c.options.tolerance;
  j["absolute"] = c.options.absolute;
  j["rows"] = nlohmann::json::array();
  std::map<std::string, int> counts;
  for (const auto& r : c.rows) {
    ++counts[std::string(to_string(r.result))];
    j["rows"].push_back({{"problem", r.key},
                         {"name", r.label},
                         {"verdict", to_string(r.result)},
                         {"basis", r.basis},
                         {"base", r.base_value ? nlohmann::json(*r.base_value) : nlohmann::json(nullptr)},
                         {"new", r.new_value ? nlohmann::json(*r.new_value) : nlohmann::json(nullptr)},
                         {"change", r.change},
                         {"noise", r.noise},
                         {"detail", r.detail}});
  }
  j["counts"] = counts;
  j["only_in_new"] = c.only_in_new;
  j["notes"] = c.notes;
  j["failed"] = c.failed();
  return j;
}

namespace {
// XML 1.0's Char range, escaped: a byte that is not UTF-8 (a Latin-1 file name) is U+FFFD, as json_text
// gives it, and the control characters but line breaks and tabs, and U+FFFE and U+FFFF, are left out.
// (Invalid bytes had gone into the report as they were: no XML reader takes it.)
std::string xml_escape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::optional<utf8_char> ch = utf8_at(s, i);
    if (!ch) {
      out += "\xef\xbf\xbd";
      ++i;
      continue;
    }
    switch (ch->code) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if ((ch->code >= 0x20 || ch->code == '\n' || ch->code == '\t') && ch->code != 0xfffe && ch->code != 0xffff)
          out.append(s.substr(i, ch->length));
    }
    i += ch->length;
  }
  return out;
}
}  // namespace

std::string to_junit_xml(const comparison& c) {
  int failures = 0;
  for (const auto& r : c.rows)
    failures += r.result == verdict::slower || r.result == verdict::incorrect || r.result == verdict::missing;
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites tests=\"{}\" failures=\"{}\">\n", c.rows.size(), failures);
  x += fmt::format("  <testsuite name=\"tiletune\" tests=\"{}\" failures=\"{}\">\n", c.rows.size(), failures);
  for (const auto& r : c.rows) {
    const std::string summary =
        fmt::format("{}: {:+.1f}% by {} (tolerance {:.1f}%, noise {:.1f}%){}", to_string(r.result), 100 * r.change,
                    r.basis.empty() ? "-" : r.basis, 100 * c.options.tolerance, 100 * r.noise,
                    r.detail.empty() ? "" : "; " + r.detail);
    x += fmt::format("    <testcase classname=\"tiletune.gemm\" name=\"{}\">\n", xml_escape(r.label));
    if (r.result == verdict::slower || r.result == verdict::incorrect || r.result == verdict::missing)
      x += fmt::format("      <failure message=\"{}\" type=\"{}\"/>\n", xml_escape(summary), to_string(r.result));
    x += fmt::format("      <system-out>{}</system-out>\n", xml_escape(summary));
    x += "    </testcase>\n";
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace tiletune
