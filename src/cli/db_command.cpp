#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/db_fleet.hpp"
#include "cli/gemm_tuning.hpp"
#include "cli/option_checks.hpp"
#include "core/results/json_file.hpp"
#include "cli/output.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/calibration/kernel_revisions.hpp"
#include "core/tune/calibration/shipped_calibration.hpp"
#include "core/tune/search/replay_backend.hpp"
#include "core/errors.hpp"
#include "core/plan_mode.hpp"
#include "core/results/result_file.hpp"

namespace tiletune::cli {

namespace {

struct db_options {
  std::string file;
  std::vector<std::string> inputs;
  std::string gpu;
  bool json = false;
  std::string out;
  bool full = false;  // import: keep every variant's row
  bool as_recorded = false;  // calibrate: keep timings of kernels revised since
  std::string problem, since;
  std::size_t limit = 0;        // list: 0 is all
  std::size_t show_limit = 10;  // show: 0 is all, as for list
};

// Each result a file holds, with the header its fields default to (a suite's; none for a single result).
template <typename F>
void for_each_result(const nlohmann::json& j, F&& each) {
  if (!j.is_object()) return;
  // (A "schema" that is not a string is no suite's: result_file_from_json refuses it, naming the field.)
  if (!j.contains("schema") || j["schema"] != "tiletune.gemm-suite/1") {
    each(j, nlohmann::json());
    return;
  }
  if (j.contains("results") && j["results"].is_array())
    for (const auto& r : j["results"])
      if (r.is_object()) each(r, j);
}

// The problem a result names, for a message ("a result" where it has none readable).
std::string problem_words(const nlohmann::json& r) {
  try {
    return gemm_problem_from_json(r.at("problem")).describe();
  } catch (const std::exception&) {
    return "a result";
  }
}

// A measured result's recommendation gives the time its variant was measured at: without it the TFLOP/s
// (db list and export print them) would be checked against the model's predicted_us, and the message
// would name that figure, not the null one.
void check_recommended_time(const nlohmann::json& j, const std::string& path) {
  for_each_result(j, [&](const nlohmann::json& r, const nlohmann::json& header) {
    const auto& h = r.contains("mode") ? r : header.is_object() ? header : r;
    if (h.value("mode", nlohmann::json()) != "measured" || !r.contains("recommendation")) return;
    // (Import leaves out a partial run and a suite's result the database answered: neither is checked here.)
    if (!partial_run_option(r, header).empty()) return;
    // (An "answered" that is not a boolean is left to the type checks after this one, which name it.)
    if (r.contains("tuning_db") && r["tuning_db"].is_object() && r["tuning_db"].contains("answered") &&
        r["tuning_db"]["answered"].is_boolean() && r["tuning_db"]["answered"].get<bool>())
      return;
    const auto& rec = r["recommendation"];
    if (!rec.is_object() || (rec.contains("median_us") && !rec["median_us"].is_null())) return;
    throw usage_error(fmt::format("{}: {}: \"recommendation\": \"median_us\" is {}: a measured result's "
                                  "recommendation gives the time its variant was measured at",
                                  path, problem_words(r), rec.contains("median_us") ? "null" : "missing"));
  });
}

// A result file, read and checked as compare reads one (a folder, malformed JSON, another kind of
// file or figures that disagree are refused naming the file).
nlohmann::json read_result_file(const std::string& path) {
  nlohmann::json j = read_json_file(
      path, fmt::format("db import reads result files; `tiletune db merge {} --into DB` merges a tuning database "
                        "into another",
                        path));
  check_recommended_time(j, path);
  (void)result_file_from_json(j, path);  // the same checks as compare: figures that are numbers and agree
  // One GPU model however the file spells its preset ("H100-SXM" is h100-sxm), as compare reads it.
  if (j["device"].contains("preset") && j["device"]["preset"].is_string())
    j["device"]["preset"] = canonical_preset(j["device"]["preset"].get<std::string>());
  return j;
}

// gemm writes "recommendation": null where no variant ran ok (none is the answer), and one of them
// wherever any did: anything else would be stored as "no variant could run this problem".
void check_recommendation(const nlohmann::json& r) {
  const auto& variants = r.value("variants", nlohmann::json::array());
  std::size_t ok = 0;
  std::string first;
  for (const auto& v : variants)
    if (v.is_object() && is_ok_variant(v) && ok++ == 0) first = v.value("id", "");
  if (!r.contains("recommendation"))
    throw usage_error(fmt::format("{}: no \"recommendation\" field (a tiletune result gives one: null where no "
                                  "variant ran ok){}; nothing was imported",
                                  problem_words(r),
                                  ok ? fmt::format(", and {} variant(s) ran ok, e.g. {}", ok, first) : ""));
  if (r["recommendation"].is_null() && ok)
    throw usage_error(fmt::format("{}: \"recommendation\" is null (no variant could run), but {} variant(s) ran ok, "
                                  "e.g. {}: tiletune recommends one of them; nothing was imported",
                                  problem_words(r), ok, first));
}

// The words of --problem as the key spells them: a problem key is lower case ("bf16 nt"), and "BF16 NT"
// means the same problem, as a --gpu or --dtype in any case does.
std::string problem_words_lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The database file a db subcommand names: its --db, else the default. db list and db calibrate
// only read it and never create one.
std::filesystem::path file_to_read(const db_options& o) {
  return o.file.empty() ? default_tuning_db_path() : std::filesystem::path(o.file);
}

void run_import(const db_options& o, run_context& ctx) {
  if (o.inputs.empty()) throw usage_error("db import needs result files: tiletune db import FILE...");
  std::vector<tuning_record> records;
  std::size_t partial = 0, other_flush = 0;
  // A partial run (--only ...) is left out, as gemm leaves it out: its recommendation is not the
  // search's answer to the question its key asks. So is a timing that emptied the L2 otherwise than
  // by writes (gemm --l2-flush): the records beside it were timed that way.
  auto take = [&](const std::string& path, const nlohmann::json& r, const nlohmann::json& header) {
    if (const std::string why = partial_run_option(r, header); !why.empty()) {
      ++partial;
      tell("tiletune: {}: {} left out: a partial run ({}) answers no later run\n", path,
                 gemm_problem_from_json(r.at("problem")).describe(), why);
      return;
    }
    if (const std::string flush = l2_flush_of(r, path); flush != "write") {
      ++other_flush;
      tell("tiletune: {}: {} left out: timed with --l2-flush {}, the database's records with the L2 flushed by "
           "writes\n",
           path, gemm_problem_from_json(r.at("problem")).describe(), flush);
      return;
    }
    tuning_record record = record_from_result(r, header);  // (first: a plan is refused as one)
    check_recommendation(r);
    // A recommended variant that failed its check (an edited file: tiletune never recommends one)
    // would be exported as the answer.
    const std::string recommended = r["recommendation"].is_object() ? r["recommendation"].value("id", "") : "";
    for (const auto& v : r.value("variants", nlohmann::json::array()))
      if (v.is_object() && !recommended.empty() && v.value("id", "") == recommended && is_incorrect_variant(v))
        throw usage_error(fmt::format("{}: the recommended variant {} is incorrect (status {}, max_rel_error {}, "
                                      "error_bound {}): no tiletune run recommends it; nothing was imported",
                                      gemm_problem_from_json(r.at("problem")).describe(), recommended,
                                      v.value("status", nlohmann::json()).dump(),
                                      v.value("max_rel_error", nlohmann::json()).dump(),
                                      v.value("error_bound", nlohmann::json()).dump()));
    records.push_back(std::move(record));
  };
  // Read every file first: a bad one stops the import before anything is stored.
  for (const auto& path : o.inputs) {
    const auto j = read_result_file(path);
    const std::string schema = j.value("schema", "");
    try {
      if (schema == "tiletune.gemm/1") {
        take(path, j, nlohmann::json());
      } else if (schema == "tiletune.gemm-suite/1") {
        for (const auto& r : j.value("results", nlohmann::json::array()))
          if (!r.value("tuning_db", nlohmann::json::object()).value("answered", false)) take(path, r, j);
      } else {
        throw usage_error(fmt::format("schema \"{}\" is not tiletune.gemm/1 or tiletune.gemm-suite/1", schema));
      }
    } catch (const usage_error& e) {
      throw usage_error(fmt::format("{}: {}", path, e.what()));
    } catch (const nlohmann::json::exception& e) {
      throw usage_error(fmt::format("{}: not a tiletune result: {}", path, json_error_text(e)));
    }
  }
  refuse_read_only(file_to_read(o), "--db");
  const auto db = open_tuning_db(o.file, false);
  db->keep_full_results(o.full);
  // Results of one problem and setup in several of the files leave one record, the one the database
  // would keep of them (the better-verified, then the newer, whatever the files' order): say so, or the
  // count of imported results reads as records added, and the others as stored records kept.
  // One transaction: every file's records, or none of them.
  const tuning_db::store_outcome done = db->store_all_if_better(records);
  std::string also;
  if (done.better_verified)
    also += fmt::format("; {} kept the stored record, better verified{}", done.better_verified,
                        done.better_verified_older == done.better_verified ? " though older than the file's result"
                        : done.better_verified_older
                            ? fmt::format(" ({} of them older than the file's result)", done.better_verified_older)
                            : " and at least as new");
  if (done.newer) also += fmt::format("; {} kept the stored record, as well verified and newer", done.newer);
  if (done.as_new)
    also += fmt::format("; {} kept the stored record, as well verified, as new and holding as much", done.as_new);
  if (done.kept() && o.full) also += " (--full keeps the rows of the records it stores only: not of these)";
  if (done.repeated)
    also += fmt::format("; {} of the same problem and setup as another result here: the database keeps one record "
                        "each (the better-verified, then the newer), {} record(s) from these files",
                        done.repeated, records.size() - done.repeated);
  if (partial) also += fmt::format("; {} partial run(s) left out", partial);
  if (other_flush) also += fmt::format("; {} run(s) timed with another L2 flush left out", other_flush);
  fmt::print("imported {} measured result(s) from {} file(s) into {}{}\n", done.stored, o.inputs.size(),
             db->file().string(), also);
  ctx.exit_code = exit_ok;
}

void run_list(const db_options& o, run_context& ctx) {
  const auto path = file_to_read(o);
  check_db_path(path, o.file);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    gpu_filter(o.gpu, nullptr);  // an unknown --gpu is refused with or without a database
    // A --db given is a file meant (a mistyped one had listed 0 records, exit 0, as show and export
    // refuse it); the default database is there only once something was measured.
    if (!o.file.empty()) throw usage_error(fmt::format("--db {}: no such file (no tuning database there)", o.file));
    if (o.json)
      std::fputs((json_text(nlohmann::json{{"schema", "tiletune.tuning-db-list/1"}, {"file", path.string()},
                                           {"records", nlohmann::json::array()}}) +
                  "\n")
                     .c_str(),
                 stdout);
    else
      fmt::print("{}: no tuning database there yet (nothing measured): 0 record(s)\n", path.string());
    ctx.exit_code = exit_ok;
    return;
  }
  const auto db = open_tuning_db(path.string(), false, tuning_db::open_mode::read, tuning_db::page_check::as_read);
  const tuning_filter filter{gpu_filter(o.gpu, db.get()), problem_words_lower(o.problem), o.since, o.limit};
  // Rows are streamed: a table or JSON of the newest few reads only those.
  const std::size_t total = db->count(filter);
  if (o.json) {
    nlohmann::json out = {{"schema", "tiletune.tuning-db-list/1"}, {"file", db->file().string()},
                          {"records", nlohmann::json::array()}};
    db->for_each_row(filter, [&](const tuning_row& r) {
      out["records"].push_back({{"device_model", r.key.device_model},
                                {"device_name", r.device_name},
                                {"driver", r.key.driver},
                                {"cuda_runtime", r.key.cuda},
                                {"tool_version", r.key.tool_version},
                                {"compiler", r.key.compiler},
                                {"problem", r.key.problem.describe()},
                                {"strategy", r.strategy},
                                {"measured_at", r.measured_at},
                                {"recommended", r.recommended},
                                {"tflops", r.tflops},
                                {"mode", r.measured ? "measured" : "predicted"}});
    });
    out["matching"] = total;
    std::fputs((json_text(out) + "\n").c_str(), stdout);
  } else {
    text_table t({"gpu", "problem", "recommended", "TFLOP/s", "measured", "driver", "tool", "search"});
    std::size_t shown = 0;
    db->for_each_row(filter, [&](const tuning_row& r) {
      ++shown;
      t.add_row({r.key.device_model, r.key.problem.describe(), r.recommended.empty() ? "none" : r.recommended,
                 fmt::format("{:.1f}", r.tflops), r.measured_at, r.key.driver, r.key.tool_version, r.strategy});
    });
    fmt::print("{}: {} record(s){}\n\n{}", db->file().string(), total,
               shown < total ? fmt::format(", the newest {} shown (--limit)", shown) : "", t.render());
  }
  ctx.exit_code = exit_ok;
}

// The stored records of a problem: every variant row kept (gemm --db-full), else the compact
// record's rows, with how many the search had.
void run_show(const db_options& o, run_context& ctx) {
  if (o.problem.empty())
    throw usage_error("db show needs --problem TEXT (words of the problem key, as db list prints it: "
                      "\"4096x4096x4096 bf16 nt\")");
  const auto path = file_to_read(o);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw usage_error(fmt::format("{}: no tuning database there (nothing measured yet)", db_named(path, o.file)));
  const auto db = open_tuning_db(path.string(), false, tuning_db::open_mode::read, tuning_db::page_check::as_read);
  const auto records =
      db->records({gpu_filter(o.gpu, db.get()), problem_words_lower(o.problem), o.since, o.show_limit});
  if (o.json) {
    nlohmann::json out = {{"schema", "tiletune.tuning-db-show/1"}, {"file", db->file().string()},
                          {"records", nlohmann::json::array()}};
    for (const auto& r : records) out["records"].push_back(r.result);
    std::fputs((json_text(out) + "\n").c_str(), stdout);
    ctx.exit_code = exit_ok;
    return;
  }
  if (records.empty())
    fmt::print("{}: no record{} has a problem with the words \"{}\"{}\n", terminal_text(db->file().string()),
               o.gpu.empty() ? "" : " of the " + terminal_text(o.gpu), terminal_text(o.problem),
               o.since.empty() ? "" : " measured since " + terminal_text(o.since));
  for (const auto& r : records) {
    const auto& variants = r.result.value("variants", nlohmann::json::array());
    const auto listed = r.result.value("variants_listed", nlohmann::json::object());
    // Every string from the database through terminal_text: a record imported from a crafted file
    // could otherwise drive the terminal or forge a line.
    fmt::print("{} {} ({}), {} on {}, driver {}, tool {}: {} variant row(s){}\n", terminal_text(r.key.device_model),
               terminal_text(tuning_problem_key(r.key.problem)), terminal_text(r.device_name),
               is_measured(r) ? "measured" : "planned", terminal_text(r.measured_at), terminal_text(r.key.driver),
               terminal_text(r.key.tool_version), variants.size(),
               listed.contains("of") ? fmt::format(" of {} (stored without --db-full)", listed["of"].dump()) : "");
    text_table t({"id", "status", "median us", "predicted us", "TFLOP/s", "vs cuBLASLt"});
    auto number = [](const nlohmann::json& v, const char* k, const char* f) {
      return v.contains(k) && v[k].is_number() ? fmt::format(fmt::runtime(f), v[k].get<double>()) : std::string("-");
    };
    for (const auto& v : variants)
      t.add_row({v.value("id", "?"), v.value("status", "?"), number(v, "median_us", "{:.1f}"),
                 number(v, "predicted_us", "{:.1f}"), number(v, "tflops", "{:.1f}"), number(v, "vs_reference", "{:.3f}")});
    fmt::print("{}\n", t.render());
  }
  ctx.exit_code = exit_ok;
}

// Rewrites the file without its free pages (an upgraded or often rewritten database).
void run_vacuum(const db_options& o, run_context& ctx) {
  const auto path = file_to_read(o);
  check_db_path(path, o.file);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw usage_error(fmt::format("{}: no tuning database there", db_named(path, o.file)));
  refuse_read_only(path, "--db");
  const auto before = std::filesystem::file_size(path, ec);
  tuning_db db(path, tuning_db::open_mode::existing);  // an older schema is upgraded first
  db.vacuum();
  fmt::print("{}: {} record(s), {:.1f} MB before, {:.1f} MB after\n", path.string(), db.count({}), before / 1e6,
             std::filesystem::file_size(path, ec) / 1e6);
  ctx.exit_code = exit_ok;
}

void run_calibrate(const db_options& o, run_context& ctx) {
  if (o.gpu.empty()) throw usage_error("db calibrate needs --gpu MODEL (a preset such as h100-sxm)");
  if (!o.out.empty()) check_output_path(o.out, "--out", {{"--db", file_to_read(o)}});
  std::error_code ec;
  if (!std::filesystem::exists(file_to_read(o), ec))
    throw usage_error(
        fmt::format("{}: no tuning database there (nothing measured yet)", db_named(file_to_read(o), o.file)));
  const auto db = open_tuning_db(file_to_read(o).string(), false, tuning_db::open_mode::read);
  const std::string model = gpu_filter(o.gpu, db.get());  // the GPU model the records name
  std::vector<nlohmann::json> results = db->calibration_inputs(model);
  // Timings of kernels this build has revised since time other kernels (kernel_revisions.hpp).
  const superseded_timings old = o.as_recorded ? superseded_timings{} : mark_superseded(results);
  if (!results.empty() && old.results == results.size())
    throw usage_error(fmt::format(
        "--gpu {}: every timing of the {} measured result(s) in {} is of a kernel this build has revised since "
        "(the timings of {} variants); measure again, or give --as-recorded to fit the kernels they timed",
        o.gpu, results.size(), db->file().string(), old.describe()));
  if (results.empty()) {
    // Records of it that calibration cannot read: plans, or compact records (db show --json's) with
    // no measured variants' times.
    const std::size_t held = db->count({model, "", "", 0});
    throw usage_error(
        held ? fmt::format("--gpu {}: the tuning database {} holds {} record(s) of it but none with the measured "
                           "variants' times calibration fits to (plans, or records imported from `db show --json`, "
                           "which keeps only the recommended variants): import the measured gemm result files",
                           o.gpu, db->file().string(), held)
             : fmt::format("--gpu {}: the tuning database {} has no measured results of it", o.gpu,
                           db->file().string()));
  }
  // A figure none of these timings measures (a dtype only the held-out problem has, a family revised
  // since) predicts as a plan would predict it: from the other parts of the architecture. Not from this
  // part's own shipped calibration, fitted to these very problems: a held-out problem would leak back.
  const std::optional<model_calibration> other_parts =
      shipped_calibration_for(plan_from_recording(results.front()).device, model);
  progress_line progress(true);
  nlohmann::json report = calibration_report(
      results,
      [&](std::size_t done, std::size_t fits) {
        progress.update(
            fmt::format("tiletune: db calibrate: {} result(s): fit {} of {}", results.size(), done + 1, fits));
      },
      other_parts ? &*other_parts : nullptr);
  progress.finish();
  report["database"] = db->file().string();
  // What was left out, for the kernels' sake: the report's figures are of the rest.
  report["superseded"] = {{"as_recorded", o.as_recorded},
                          {"variants", old.variants},
                          {"results", old.results},
                          {"by_family", old.by_family}};
  report["date"] = utc_now_iso();
  if (!o.out.empty()) write_file_atomically(o.out, json_text(report) + "\n");
  if (o.json) {
    std::fputs((json_text(report) + "\n").c_str(), stdout);
  } else {
    if (old.variants > 0)
      fmt::print("left out the timings of {} variants, of kernels this build has revised since they were measured "
                 "(--as-recorded keeps them){}\n",
                 old.describe(), old.results ? fmt::format("; {} result(s) have no other, and rank nothing", old.results) : "");
    fmt::print("{} measured results of {}; fitted efficiencies:", results.size(), o.gpu);
    for (const auto& [k, v] : report["calibration"]["efficiency"].items()) fmt::print(" {} {:.3f}", k, v.get<double>());
    const sustained_clock clock = sustained_clock_from_json(report["calibration"]["sustained_clock"]);
    if (clock.fitted())
      fmt::print("\nsustained clock (docs/model.md): fitted to {} finalists' clocks, power share {:.3f}, burst {:.0f} us, "
                 "exponent {:.2f}; a kernel of 1 ms at 80% of the peak at the boost clock runs at {:.2f} of it, of 6 ms "
                 "at {:.2f}",
                 clock.samples, clock.power_share, clock.burst_us, clock.exponent, clock.fraction(1000, 0.8),
                 clock.fraction(6000, 0.8));
    else
      fmt::print("\nsustained clock: not fitted (fewer than {} measured kernels ran below {:.2f} of the boost clock): "
                 "predictions at the boost clock",
                 min_slowed_samples, slowed_clock_fraction);
    text_table t({"model", "Spearman", "top pick slowdown", "top pick measured rank"});
    for (const char* m : {"assumed_model", "calibrated", "calibrated_without_this_problem"}) {
      const auto& q = report["mean"][m];
      t.add_row({m, fmt::format("{:.3f}", q["spearman"].get<double>()),
                 fmt::format("{:.3f}", q["top_pick_slowdown"].get<double>()),
                 fmt::format("{:.1f}", q["top_pick_measured_rank"].get<double>())});
    }
    fmt::print("\n\nranking quality, mean over the problems:\n{}", t.render());
    text_table picks({"problem", "offline pick (held out)", "predicted us", "measured us", "error", "best measured",
                      "its us", "pick slowdown (one clock)"});
    for (const auto& p : report["problems"]) {
      const auto& q = p["calibrated_without_this_problem"];
      if (q["top_pick_slowdown"].get<double>() <= 0) continue;  // none of its variants measured ok
      const double measured = q["top_pick_measured_us"].get<double>();
      picks.add_row({p["problem"].get<std::string>(), q["top_pick"].get<std::string>(),
                     fmt::format("{:.1f}", q["top_pick_predicted_us"].get<double>()), fmt::format("{:.1f}", measured),
                     fmt::format("{:+.1f}%", 100 * q["top_pick_time_error"].get<double>()),
                     q["best_measured"].get<std::string>(),
                     fmt::format("{:.1f}", q.value("best_measured_us", measured / q["top_pick_slowdown"].get<double>())),
                     fmt::format("{:.3f}", q["top_pick_slowdown"].get<double>())});
    }
    const std::size_t problems = report["held_out"]["problems"], folds = report["held_out"]["folds"];
    const std::string held_out =
        folds == problems ? "each problem left out of the fit"
                          : fmt::format("each problem left out of the fit with its fold ({} problems dealt into {})",
                                        problems, folds);
    fmt::print("\n{}, the model's first choice among its measured variants:\n{}", held_out, picks.render());
    if (report.contains("other_parts")) {
      // What the fits took from other parts: those every fit lacks once, then each held-out problem's own.
      const auto in_every = report["other_parts"]["figures_taken_by_the_fit"].get<std::vector<std::string>>();
      std::vector<std::string> took;
      if (!in_every.empty()) took.push_back(fmt::format("{} in every fit", describe_figures(in_every)));
      for (const auto& p : report["problems"]) {
        const auto& q = p["calibrated_without_this_problem"];
        std::vector<std::string> own;
        for (const auto& key : q.value("figures_from_other_parts", std::vector<std::string>{}))
          if (std::find(in_every.begin(), in_every.end(), key) == in_every.end()) own.push_back(key);
        if (!own.empty())
          took.push_back(fmt::format("{} with {} held out", describe_figures(own), p["problem"].get<std::string>()));
      }
      if (!took.empty())
        fmt::print("figures no timing here measures, as a plan takes them from other parts of the architecture "
                   "({}): {}\n",
                   report["other_parts"]["source"].get<std::string>(), fmt::join(took, "; "));
    }
    const auto& pick = report["offline_pick"]["calibrated_without_this_problem"];
    fmt::print(
        "offline pick, {}: predicted time off by {:.1f}% (median; worst {:.1f}%), "
        "measured {:.1f}% slower than the best at one clock (median; worst {:.1f}%)\n",
        held_out, 100 * pick["median_time_error"].get<double>(), 100 * pick["worst_time_error"].get<double>(),
        100 * (pick["median_slowdown"].get<double>() - 1), 100 * (pick["worst_slowdown"].get<double>() - 1));
    if (!o.out.empty()) fmt::print("wrote {}\n", o.out);
  }
  ctx.exit_code = exit_ok;
}

}  // namespace

void add_db_command(CLI::App& app, run_context& ctx) {
  auto o = std::make_shared<db_options>();
  auto* cmd = app.add_subcommand("db", "The tuning database: measured results by GPU model, driver, CUDA and problem");
  cmd->require_subcommand(1);
  cmd->add_option("--db", o->file, "The database file (default: tuning.sqlite3 beside the compile cache)");
  auto* import = cmd->add_subcommand("import", "Store measured result files (tiletune gemm --out JSON, single or suite); for each "
                                "problem the better-verified, then newer, record stays; partial runs (--only) are "
                                "left out");
  import->add_option("files", o->inputs, "Result files")->required();
  import->add_option("--db", o->file, "The database file");
  import->add_flag("--full", o->full, "Keep every variant's row, not only the compact record (as gemm --db-full)");
  import->footer("\nExample:\n  tiletune db import --db tuning.sqlite profiles/measured/h100-2026-11-22/gemm/*.json");
  import->callback([o, &ctx] { run_import(*o, ctx); });
  auto* list = cmd->add_subcommand("list", "List the stored results, newest first");
  list->add_option("--gpu", o->gpu, "Only this GPU model (a preset name such as h100-sxm)");
  list->add_option("--db", o->file, "The database file");
  list->add_option("--problem", o->problem,
                   "Only problems with all of these words, in any case, as db list prints a problem (\"1024x1024x1024 "
                   "batch 8 bf16 nt alpha 0.5 beta 1\") or as its key reads (\"1024x1024x1024 b8 bf16 nt a0.5 b1\"): "
                   "e.g. \"bf16 nt\", each bf16 problem of layout nt");
  list->add_option("--since", o->since, "Only records measured at or after this date (ISO 8601, e.g. 2026-11-01)")
      ->check(iso_date);
  list->add_option("--limit", o->limit, "At most this many, the newest (0: all)")
      ->capture_default_str()
      ->check(whole_non_negative);
  list->add_flag("--json", o->json, "Print JSON instead of the table");
  list->footer("\nExamples:\n  tiletune db list --gpu h100-sxm --limit 50\n  tiletune db list --problem \"bf16 nt\" "
               "--since 2026-11-01 --json\n\nA --db that is not there is refused (exit 2); the default database is "
               "listed as empty until something is measured.");
  list->callback([o, &ctx] { run_list(*o, ctx); });
  auto* show = cmd->add_subcommand("show", "Print the stored records of a problem: their variant rows (every row "
                                           "where gemm --db-full kept them)");
  show->add_option("--problem", o->problem,
                   "The problem: its words as db list prints it, e.g. \"4096x4096x4096 bf16 nt\" or "
                   "\"1024x1024x1024 batch 8 bf16 nt\" (or as its key reads: b8 for batch 8); every record whose "
                   "problem has all of the words, in any case")
      ->required();
  show->add_option("--gpu", o->gpu, "Only this GPU model (a preset name such as h100-sxm)");
  show->add_option("--db", o->file, "The database file");
  show->add_option("--limit", o->show_limit, "At most this many records, the newest (0: all)")
      ->capture_default_str()
      ->check(whole_non_negative);
  show->add_flag("--json", o->json, "Print the stored results (tiletune.gemm/1) as JSON");
  show->footer("\nExample:\n  tiletune db show --problem \"4096x4096x4096 bf16 nt\" --gpu h100-sxm --limit 0");
  show->callback([o, &ctx] { run_show(*o, ctx); });
  auto* vacuum = cmd->add_subcommand("vacuum", "Rewrite the database without its free pages (after an upgrade of an "
                                               "older file, or many replaced records)");
  vacuum->add_option("--db", o->file, "The database file");
  vacuum->footer("\nExample:\n  tiletune db vacuum --db tuning.sqlite");
  vacuum->callback([o, &ctx] { run_vacuum(*o, ctx); });
  auto* cal = cmd->add_subcommand(
      "calibrate", "Fit the model's per-family efficiencies to a GPU model's measured results; report its ranking quality");
  cal->add_option("--gpu", o->gpu, "The GPU model (a preset such as h100-sxm)")->required();
  cal->add_option("--db", o->file, "The database file");
  cal->add_option("--out", o->out, "Write the report JSON to FILE (atomically)")->check(refuse_empty_path);
  cal->add_flag("--json", o->json, "Print the JSON instead of the summary");
  cal->add_flag("--as-recorded", o->as_recorded,
                "Keep the timings of kernels this build has revised since they were measured (each family "
                "dates its kernel's last change): the model against a recording as it was made, not a "
                "calibration for this build's kernels");
  cal->footer("\nExample:\n  tiletune db calibrate --gpu h100-sxm --db tuning.sqlite --out h100-sxm-calibration.json\n\n"
              "Each problem is left out of its own fit in turn (above 24 problems, in 24 folds): the report gives "
              "the held-out pick's predicted and measured time beside the best measured variant. The pick's slowdown "
              "is taken at one clock: a search's finalists against the fastest finalist, a variant it dropped by its "
              "margin behind that stage's leader (a longer stage runs the card hotter and slower). A figure none of "
              "the timings measures (a family or dtype that only the held-out problem has, or a family timed only "
              "with a kernel revised since) is taken, as a plan takes it, from the built-in calibrations of the "
              "GPU's architecture other than its own (fitted to these very problems), and the summary names it.");
  cal->callback([o, &ctx] { run_calibrate(*o, ctx); });
  // The group's --db shares o->file with import, list and calibrate; export reads it too.
  add_db_fleet_commands(*cmd, ctx, std::shared_ptr<const std::string>(o, &o->file));
  cmd->footer(R"(
Examples:
  tiletune db import profiles/measured/h100-2026-11-22/gemm/*.json
  tiletune db list --gpu h100-sxm --limit 50
  tiletune db show --problem "4096x4096x4096 bf16 nt" --gpu h100-sxm
  tiletune db calibrate --gpu h100-sxm --out profiles/calibration/h100-sxm.json
  tiletune db merge shard-0.sqlite shard-1.sqlite --into tuning.sqlite
  tiletune db export --format triton --out tiletune_configs.py

An offline plan (gemm --gpu NAME) is ranked by the calibrated model by itself
wherever the database holds measured results of that GPU model, and says so.

A record is compact (a few KB): the result, the recommended and next best
variants' rows, and each measured variant's time for calibration; gemm
--db-full (db import --full) keeps every row too. A file of an older schema is
upgraded in place, in one transaction, when a command that writes opens it (db
vacuum then returns its free pages); a command that only reads it (list, show,
export, calibrate, a merge input) reads an upgraded copy and leaves it as it
is. db import reads every file before it stores anything, and stores them all
in one transaction: a bad file leaves the database as it was.

A damaged file, or an SQLite file of another program, is refused with exit 3
naming it; a result file that is not a measured tiletune result, exit 2.)");
}

}  // namespace tiletune::cli
