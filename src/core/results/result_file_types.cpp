#include "core/results/result_file_types.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"
#include "core/iso_date.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/plan_mode.hpp"
#include "core/results/json_file.hpp"

namespace tiletune {

namespace {

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

}  // namespace

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

}  // namespace tiletune
