#include "cli/gemm_tuning.hpp"

#include <algorithm>
#include <cmath>
#include <vector>


#include <fmt/format.h>

#include "cli/output.hpp"
#include "core/results/json_file.hpp"
#include "core/errors.hpp"
#include "core/version.hpp"
#include "core/plan_mode.hpp"

namespace tiletune::cli {

void check_db_path(const std::filesystem::path& path, const std::string& named) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw usage_error(fmt::format("--db {} is a directory; give the name of a regular file", path.string()));
  // A folder the user named must exist, as for --out: a mistyped one would read nothing, silently.
  // (The default database's folder is made beside the compile cache.)
  const std::filesystem::path given(named);
  if (!named.empty() && given.has_parent_path() && !std::filesystem::is_directory(given.parent_path(), ec))
    throw usage_error(fmt::format("--db {}: the folder {} does not exist", named, given.parent_path().string()));
}

std::string db_named(const std::filesystem::path& path, const std::string& named) {
  return named.empty() ? fmt::format("the default tuning database {} (no --db given)", path.string())
                       : fmt::format("--db {}", path.string());
}

std::unique_ptr<tuning_db> open_tuning_db(const std::string& file, bool off, tuning_db::open_mode mode,
                                          tuning_db::page_check check) {
  if (off) return nullptr;
  const std::filesystem::path path = file.empty() ? default_tuning_db_path() : std::filesystem::path(file);
  check_db_path(path, file);
  return std::make_unique<tuning_db>(path, mode, check);
}

std::string device_model_of(const device_spec& d) { return d.preset.empty() ? d.name : d.preset; }

tuning_key live_tuning_key(const device_choice& d, const gemm_problem& p, const std::string& compiler_version,
                           const host_services& host) {
  tuning_key k;
  k.device_model = device_model_of(d.spec);
  const local_devices local = host.devices();
  if (!local.driver_version.empty()) k.driver = local.driver_version;
  if (!local.runtime_version.empty()) k.cuda = local.runtime_version;
  k.tool_version = tool_version;
  k.compiler = compiler_version;
  k.problem = p;
  return k;
}

std::optional<db_answer> look_up(const tuning_db& db, const device_choice& d, const gemm_problem& p, bool live,
                                 const std::string& compiler_version, const host_services& host, bool stored_plans) {
  if (live) {
    auto r = db.find(live_tuning_key(d, p, compiler_version, host));
    if (r && is_measured(*r)) return db_answer{std::move(*r), "exact"};
    return std::nullopt;
  }
  auto same = db.find_same_model(device_model_of(d.spec), p);  // newest first
  for (auto& r : same)
    if (is_measured(r)) return db_answer{std::move(r), "same_device_model"};
  if (stored_plans)
    for (auto& r : same)
      if (r.key.tool_version == tool_version && r.key.compiler == compiler_version)
        return db_answer{std::move(r), "stored_plan"};
  return std::nullopt;
}

nlohmann::json db_answer_json(const tuning_db& db, const db_answer& a) {
  const auto& r = a.record;
  return {{"file", db.file().string()},
          {"answered", true},
          {"match", a.match},
          {"measured_at", r.measured_at},
          {"device_name", r.device_name},
          {"device_model", r.key.device_model},
          {"driver", r.key.driver},
          {"cuda_runtime", r.key.cuda},
          {"tool_version", r.key.tool_version},
          {"compiler", r.key.compiler},
          {"strategy", r.strategy}};
}

nlohmann::json result_from_answer(const tuning_db& db, const db_answer& a, const nlohmann::json& tool_now) {
  nlohmann::json j = a.record.result;
  j["measured_with"] = j.value("tool", nlohmann::json::object());
  j["tool"] = tool_now;
  const bool measured = is_measured(a.record);
  j["mode"] = measured ? "measured" : "predicted";
  j["tuning_db"] = db_answer_json(db, a);
  auto notes = j.value("notes", nlohmann::json::array());
  if (!measured)
    notes.push_back(fmt::format("answered from the tuning database {}: a plan stored by --store-plans on {}, "
                                "predicted by the model; nothing was compiled (--retune plans afresh)",
                                db.file().string(), a.record.measured_at));
  else
    notes.push_back(fmt::format("answered from the tuning database {} ({} match): measured on {} on {}; nothing was "
                              "compiled or run (--retune measures afresh{})",
                              db.file().string(), a.match, a.record.device_name, a.record.measured_at,
                              a.match == "exact" ? "" : "; --no-db plans with the model"));
  j["notes"] = notes;
  return j;
}

namespace {
std::string number(const nlohmann::json& v, const char* format) {
  return v.is_number() ? fmt::format(fmt::runtime(format), v.get<double>()) : "-";
}
}  // namespace

std::string format_db_answer_table(const nlohmann::json& result, int top) {
  const auto p = gemm_problem_from_json(result.at("problem"));
  const auto& db = result.at("tuning_db");
  const bool measured = is_measured_result(result);
  // The record's strings through terminal_text: a database may hold a record imported from a file
  // with control characters in them.
  const auto text = [&](const char* key) { return terminal_text(db.value(key, "")); };
  std::string out = fmt::format("{} on {}, {}, from the tuning database {}\n", p.describe(), text("device_name"),
                                measured ? "MEASURED" : "PREDICTED (a stored plan)", text("file"));
  if (measured)
    out += fmt::format("measured {} (driver {}, CUDA {}, tiletune {}, {} search); --retune measures afresh\n",
                       text("measured_at"), text("driver"), text("cuda_runtime"), text("tool_version"),
                       text("strategy"));
  else
    out += fmt::format("planned {} by --store-plans (tiletune {}): the model's prediction, nothing ran; --retune "
                       "plans afresh\n",
                       text("measured_at"), text("tool_version"));
  const auto& ref = result.value("reference", nlohmann::json::object());
  if (ref.contains("median_us") && ref["median_us"].is_number())
    out += fmt::format("cuBLASLt: {:.1f} us, {:.1f} TFLOP/s\n", ref["median_us"].get<double>(),
                       ref.value("tflops", 0.0));
  // A measurement's rows are its timed variants; a stored plan's, the model's ranked predictions.
  const char* time_key = measured ? "median_us" : "predicted_us";
  text_table t({"rank", "variant", "status", measured ? "median us" : "predicted us", "TFLOP/s", "% peak",
                "vs cuBLAS"});
  int shown = 0;
  for (const auto& v : result.value("variants", nlohmann::json::array())) {
    if (!v.contains(time_key) || !v[time_key].is_number()) continue;
    if (shown++ >= top) break;
    t.add_row({v.contains("rank") && v["rank"].is_number() ? std::to_string(v["rank"].get<int>()) : "-",
               v.value("id", ""), v.value("status", ""), number(v[time_key], "{:.1f}"),
               number(v.value("tflops", nlohmann::json()), "{:.1f}"),
               number(v.value("percent_of_peak", nlohmann::json()), "{:.0f}"),
               number(v.value("vs_reference", nlohmann::json()), "{:.2f}")});
  }
  out += "\n" + t.render();
  const auto& rec = result.value("recommendation", nlohmann::json());
  if (rec.is_object()) {
    out += fmt::format("\nrecommended: {}{}\n", terminal_text(rec.value("id", "")),
                       rec.contains("tflops") && rec["tflops"].is_number()
                           ? fmt::format(", {:.1f} TFLOP/s {}", rec["tflops"].get<double>(),
                                         measured ? "measured" : "predicted")
                           : "");
    if (rec.contains("triton") && rec["triton"].is_object()) {
      std::string tri;
      for (const auto& [k, v] : rec["triton"].items())
        tri += fmt::format("{}{}={}", tri.empty() ? "" : " ", terminal_text(k), json_text(v, -1));
      out += fmt::format("  triton:  {}\n", tri);
    }
    if (rec.contains("cutlass") && rec["cutlass"].is_string())
      out += fmt::format("  cutlass: {}\n", terminal_text(rec["cutlass"].get<std::string>()));
  } else {
    out += "\nno variant ran correctly in that measurement\n";
  }
  // The stored result's notes, as a fresh plan prints its own: why rank 1 may read slower than rank 2
  // (re-timed beside cuBLASLt), what has not run on a GPU.
  for (const auto& n : result.value("notes", nlohmann::json::array()))
    if (n.is_string()) out += "note: " + terminal_text(n.get<std::string>()) + "\n";
  return out;
}

std::string format_suite_results(const std::string& suite_name, const nlohmann::json& device,
                                 const nlohmann::json& results) {
  text_table t({"problem", "shape", "recommended", "TFLOP/s", "% peak", "vs cuBLAS", "ok variants", "from"});
  for (const auto& r : results) {
    const auto p = gemm_problem_from_json(r.at("problem"));
    const auto& rec = r.value("recommendation", nlohmann::json());
    const bool from_db = r.contains("tuning_db") && r["tuning_db"].value("answered", false);
    const std::string from = from_db ? "database" : r.value("mode", "predicted");
    const std::string ok =
        r.contains("summary") ? std::to_string(r["summary"].value("ok", 0)) : std::string("-");
    if (rec.is_object()) {
      t.add_row({r.value("name", ""), p.describe(), rec.value("id", ""), number(rec["tflops"], "{:.1f}"),
                 number(rec["percent_of_peak"], "{:.0f}"), number(rec.value("vs_reference", nlohmann::json()), "{:.2f}"),
                 ok, from});
    } else {
      t.add_row({r.value("name", ""), p.describe(), "none", "-", "-", "-", ok, from});
    }
  }
  return fmt::format("suite {} on {} ({})\n\n", terminal_text(suite_name), terminal_text(device.value("name", "")),
                     terminal_text(device.value("arch", ""))) +
         t.render();
}

nlohmann::json model_step_json(const std::vector<nlohmann::json>& results, const std::vector<std::int64_t>& counts,
                               const gemm_suite& suite) {
  nlohmann::json rows = nlohmann::json::array();
  double total_ms = 0;
  int not_run = 0;  // cut by --budget-s or an interruption: outside the total, which says so
  int without = 0;  // GEMMs no variant runs: outside the total, which says so
  for (std::size_t i = 0; i < counts.size() && i < suite.problems.size(); ++i) {
    const bool ran = i < results.size() && results[i].is_object();
    not_run += !ran;
    const auto& rec = ran ? results[i].value("recommendation", nlohmann::json()) : nlohmann::json();
    nlohmann::json row = {{"name", suite.problems[i].name},
                          {"shape", suite.problems[i].problem.describe()},
                          {"count", counts[i]},
                          {"us", nullptr},
                          {"ms_per_step", nullptr},
                          {"basis", nullptr}};
    if (rec.is_object()) {
      const bool measured = rec.value("median_us", nlohmann::json()).is_number();
      const double us = measured ? rec["median_us"].get<double>() : rec.value("predicted_us", 0.0);
      row["us"] = us;
      row["ms_per_step"] = us * static_cast<double>(counts[i]) / 1e3;
      row["basis"] = measured ? "measured" : "predicted";
      total_ms += row["ms_per_step"].get<double>();
    } else if (ran) {
      ++without;
    }
    rows.push_back(std::move(row));
  }
  for (auto& r : rows)
    r["share"] = r["ms_per_step"].is_number() && total_ms > 0 ? nlohmann::json(r["ms_per_step"].get<double>() / total_ms)
                                                               : nlohmann::json(nullptr);
  return {{"gemms", rows}, {"gemm_ms_per_step", total_ms}, {"gemms_without_variant", without}, {"gemms_not_run", not_run}};
}

namespace {

// The share column in tenths of a percent, rounded so that it adds up to 100.0% (the largest remainders
// rounded up): rounded one by one to whole percents, DeepSeek-V3's decode step had added up to 98%, its
// MLA projections at 0%. A share too small for a tenth says so.
std::vector<std::string> share_column(const nlohmann::json& gemms) {
  std::vector<std::int64_t> tenths(gemms.size(), 0);
  std::vector<std::pair<double, std::size_t>> remainders;
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    if (!gemms[i]["share"].is_number()) continue;
    const double exact = 1000 * gemms[i]["share"].get<double>();
    tenths[i] = static_cast<std::int64_t>(std::floor(exact));
    sum += tenths[i];
    remainders.emplace_back(exact - static_cast<double>(tenths[i]), i);
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const auto short_of = static_cast<std::size_t>(std::clamp<std::int64_t>(1000 - sum, 0, std::int64_t(remainders.size())));
  for (std::size_t k = 0; k < short_of; ++k) ++tenths[remainders[k].second];  // the shares given make the whole
  std::vector<std::string> column;
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    if (!gemms[i]["share"].is_number()) column.push_back("-");
    else if (tenths[i] == 0 && gemms[i]["share"].get<double>() > 0) column.push_back("<0.1%");
    else column.push_back(fmt::format("{}.{}%", tenths[i] / 10, tenths[i] % 10));
  }
  return column;
}

}  // namespace

std::string format_model_step(const nlohmann::json& step) {
  text_table t({"GEMM", "shape", "per step", "us each", "ms per step", "share"});
  const std::vector<std::string> shares = share_column(step["gemms"]);
  for (std::size_t i = 0; i < step["gemms"].size(); ++i) {
    const auto& r = step["gemms"][i];
    t.add_row({r["name"].get<std::string>(), r["shape"].get<std::string>(), std::to_string(r["count"].get<std::int64_t>()),
               number(r["us"], "{:.1f}"), number(r["ms_per_step"], "{:.2f}"), shares[i]});
  }
  const int without = step.value("gemms_without_variant", 0), not_run = step.value("gemms_not_run", 0);
  std::string left_out =
      without > 0 ? fmt::format(", leaving out the {} of {} that no variant runs on this GPU (none above: the JSON says why)",
                                without, step["gemms"].size())
                  : std::string();
  if (not_run > 0)
    left_out += fmt::format(", leaving out the {} of {} not run (the suite was cut: its shares are of the GEMMs run)",
                            not_run, step["gemms"].size());
  return fmt::format("\nthe step's GEMMs: {:.2f} ms in all{}\n\n", step["gemm_ms_per_step"].get<double>(), left_out) +
         t.render();
}

std::string format_seconds(double s) {
  if (s < 90) return fmt::format("{:.1f} s", s);
  return fmt::format("{} min {:02} s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
}

}  // namespace tiletune::cli
