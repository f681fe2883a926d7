#include "core/results/result_file.hpp"

#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/plan_mode.hpp"
#include "core/results/json_file.hpp"
#include "core/results/result_figures.hpp"
#include "core/results/result_file_types.hpp"

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

}  // namespace tiletune
