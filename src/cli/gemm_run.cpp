// Running the gemm command: checking the options, then each problem tuned,
// measured or answered from the tuning database, and the result written.
#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/gemm_devices.hpp"
#include "cli/gemm_options.hpp"
#include "cli/gemm_tuning.hpp"
#include "cli/gpu_run.hpp"
#include "cli/output.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/calibration/shipped_calibration.hpp"
#include "core/errors.hpp"
#include "core/report/kernel_export.hpp"
#include "core/tune/fleet/suite_shard.hpp"

namespace tiletune::cli {

namespace {

gemm_problem problem_from_flags(const gemm_options& o) {
  if (!o.problem.m && !o.problem.n && !o.problem.k)
    throw usage_error("give the problem with --m, --n and --k, or a list of problems with --suite FILE");
  for (const auto& [flag, value] : {std::pair{"--m", o.problem.m}, {"--n", o.problem.n}, {"--k", o.problem.k}})
    if (!value) throw usage_error(fmt::format("{} is missing: give all of --m, --n and --k", flag));
  gemm_problem p;
  p.m = *o.problem.m;
  p.n = *o.problem.n;
  p.k = *o.problem.k;
  p.batch = o.problem.batch;
  p.type = parse_dtype(o.problem.dtype);
  p.layout = parse_layout(o.problem.layout);
  p.alpha = o.problem.alpha;
  p.beta = o.problem.beta;
  validate(p);
  return p;
}

}  // namespace

void run_gemm(const gemm_options& o, run_context& ctx) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  gemm_suite suite;
  std::optional<suite_shard> shard;
  if (!o.shard.empty()) {
    if (o.suite.empty()) throw usage_error(fmt::format("--shard {} splits a suite: give --suite FILE", o.shard));
    shard = parse_shard(o.shard);
  }
  std::size_t suite_total = 0;
  if (!o.suite.empty()) {
    suite = load_suite(o.suite);
    suite_total = suite.problems.size();
    if (shard) suite = select_shard(suite, *shard);
  } else {
    suite.problems.push_back({"", problem_from_flags(o)});
  }
  if (o.report.top < 1) throw usage_error(fmt::format("--top {} is invalid: it must be at least 1", o.report.top));
  if (o.compile.jobs < 0) throw usage_error(fmt::format("--jobs {} is invalid: it must be at least 1", o.compile.jobs));
  if (!(o.tuning.budget_s >= 0))
    throw usage_error(fmt::format("--budget-s {} is invalid: seconds, 0 (no budget) or more", o.tuning.budget_s));
  if (o.tuning.no_db && !o.tuning.db.empty())
    throw usage_error(fmt::format("--db {} and --no-db exclude each other", o.tuning.db));
  if (o.tuning.no_db && o.tuning.store_plans) throw usage_error("--store-plans and --no-db exclude each other");
  make_search_strategy(o.tuning.strategy);  // an unknown name fails before any work
  if (!o.report.out.empty()) {
    std::vector<named_input> inputs{{"--suite", o.suite}};
    if (!o.tuning.no_db) inputs.push_back({"--db", o.tuning.db.empty() ? default_tuning_db_path() : std::filesystem::path(o.tuning.db)});
    check_output_path(o.report.out, "--out", inputs);
  }
  if (!o.export_dir.empty()) check_export_dir(o.export_dir);

  std::vector<device_choice> dealt_to;  // --devices: the GPUs the suite is dealt to
  if (!o.device.devices.empty()) {
    const std::string flag = "--devices " + o.device.devices;
    if (o.device.gpu)
      throw usage_error(fmt::format("{} and --gpu {} exclude each other: --gpu plans offline for a preset, --devices "
                                    "measures on local GPUs",
                                    flag, *o.device.gpu));
    if (o.device.index) throw usage_error(flag + " and --device exclude each other: --devices names every GPU used");
    if (o.suite.empty()) throw usage_error(flag + " deals a suite's problems to GPUs: give --suite FILE");
    if (o.report.dry_run) throw usage_error(flag + " measures on GPUs and --dry-run launches nothing: drop one");
    dealt_to = choose_devices(o.device.devices, ctx.host);
  }
  const device_choice device =
      dealt_to.empty() ? choose_device(o.device.gpu, o.device.index, ctx.host) : dealt_to.front();
  for (const auto& sp : suite.problems) check_fits_memory(sp.problem, device.spec);
  const bool measure = device.live && !o.report.dry_run;
  if (o.report.verify_only && !device.live)
    throw usage_error("--verify-only runs variants on a local GPU; with --gpu NAME nothing runs");
  if (!(o.measure.target_spread > 0 && o.measure.target_spread < 1))
    throw usage_error(fmt::format("--target-spread {} is invalid: a fraction such as 0.01", o.measure.target_spread));
  if (!(o.measure.time_cap_ms > 0))
    throw usage_error(fmt::format("--time-cap-ms {} is invalid: milliseconds, above 0", o.measure.time_cap_ms));
  if (o.measure.variant_timeout_s && !(*o.measure.variant_timeout_s > 0))
    throw usage_error(fmt::format("--variant-timeout {} is invalid: seconds, above 0", *o.measure.variant_timeout_s));

  compiler_stack compilers(o.compile.cache_dir, o.compile.no_cache);
  kernel_compiler* compiler = &compilers.get();
  (void)kernel_debug_options(o.compile.kernel_debug);  // a bad level is bad input before anything compiles
  // Partial runs (--only, --verify-only) and debug builds neither answer from the database nor go into it.
  const bool db_usable = o.only.empty() && !o.report.verify_only && o.compile.kernel_debug.empty();
  const auto db = db_usable ? open_tuning_db(o.tuning.db, o.tuning.no_db) : nullptr;

  measure_settings settings;
  settings.seed = o.measure.seed;
  settings.variant_timeout_s = o.measure.variant_timeout_s;
  settings.keep_going = o.measure.keep_going;
  settings.target_spread = o.measure.target_spread;
  settings.time_cap_ms = o.measure.time_cap_ms;
  settings.verify_only = o.report.verify_only;
  settings.search = o.tuning.strategy;
  progress_line progress(!o.report.quiet);
  plan_options options;
  options.only = o.only;
  options.kernel_debug = o.compile.kernel_debug;
  options.jobs = o.compile.jobs > 0 ? o.compile.jobs : std::max(1u, std::thread::hardware_concurrency());

  // The model calibrated on this GPU model's measured results, where the database has some.
  std::optional<model_calibration> calibration;
  if (db) {
    std::vector<nlohmann::json> measured;
    for (const auto& r : db->list(device_model_of(device.spec)))
      if (is_measured(r)) measured.push_back(r.result);  // stored plans (--store-plans) calibrate nothing
    try {
      if (!measured.empty()) {
        calibration = fit_calibration(measured);
        calibration->source = db->file().string();
      }
    } catch (const std::exception& e) {
      progress.note(fmt::format("the model stays uncalibrated: a record in {} is unreadable ({})",
                                db->file().string(), e.what()));
    }
  }
  // Else the calibration shipped for this GPU model, fitted to the measurements in profiles/.
  if (!calibration) calibration = shipped_calibration(device.spec.preset);
  // An offline plan launches nothing: one program per tile and its rasterization copies, and only the
  // variants the model says can still reach the table's --top rows. Every one where a GPU runs them,
  // where --export needs their cubins, and for --only and --compile-all.
  if (!measure && o.export_dir.empty() && o.only.empty() && !o.compile.compile_all) {
    options.selection = {.share_raster_copies = true, .keep = o.report.top, .ranking_time = {}};
    // The bound follows the model the plan is finally ranked by.
    if (calibration)
      options.selection.ranking_time = [&, d = device.spec](const gemm_problem& p, const tile_config& c,
                                                             const occupancy_estimate& occ) {
        const auto r = calibrated_prediction(*calibration, d, p, c, occ);
        return r ? r->time_us : predict(d, p, c, occ).time_us;
      };
  }
  const run_info run{ctx.command_line, utc_now_iso()};
  nlohmann::json tool_now = result_header("tiletune.gemm/1", device.spec, "predicted", compiler->version(), run)["tool"];
  if (device.live && !suite.problems.empty()) {
    const tuning_key k = live_tuning_key(device, suite.problems[0].problem, compiler->version(), ctx.host);
    tool_now["driver"] = k.driver;
    tool_now["cuda_runtime"] = k.cuda;
  }
  auto seconds_since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };

  std::vector<nlohmann::json> results;   // one tiletune.gemm/1 result per problem
  std::vector<std::optional<gemm_plan>> plans;  // where tuned in this run (for the table)
  std::vector<std::string> not_run;
  const std::size_t count = suite.problems.size();
  if (shard)
    progress.note(fmt::format("shard {}/{}: {} of the suite's {} problems{}", shard->index, shard->count, count,
                              suite_total, count ? "" : " (none hash to this shard: nothing to do)"));
  devices_outcome dealt;
  if (!dealt_to.empty()) {
    devices_job job{&suite, dealt_to, compiler, options, settings, db.get(), db && !o.tuning.retune && o.export_dir.empty(),
                    tool_now, run, o.tuning.budget_s, started, &ctx.host};
    dealt = run_on_devices(job, progress);
    results = std::move(dealt.results);
    plans = std::move(dealt.plans);
    not_run = std::move(dealt.not_run);
  }
  for (std::size_t i = 0; i < count && dealt_to.empty(); ++i) {
    const auto& sp = suite.problems[i];
    const double elapsed = seconds_since(started);
    if (o.tuning.budget_s > 0 && i > 0 && elapsed >= o.tuning.budget_s) {
      for (std::size_t r = i; r < count; ++r) not_run.push_back(suite.problems[r].name);
      progress.note(fmt::format("--budget-s {:g} spent after {} of {} problems ({}); {}", o.tuning.budget_s, i, count,
                                format_seconds(elapsed),
                                !measure && db && o.tuning.store_plans
                                    ? "the plans are in the tuning database (--store-plans): the same command resumes"
                                : !measure ? "offline plans are not stored: a rerun plans every problem again"
                                : db     ? "the measured ones are in the tuning database: the same command resumes"
                                         : "without the tuning database a rerun starts over"));
      break;
    }
    const std::string label = count > 1 || shard ? fmt::format("[{}/{}] {} ({})", i + 1, count, sp.name, sp.problem.describe())
                                        : sp.problem.describe();
    const auto problem_started = clock::now();
    std::optional<db_answer> answer;
    // The database holds results, not kernels: --export compiles (and on a GPU tunes) afresh.
    if (db && !o.tuning.retune && o.export_dir.empty())
      answer = look_up(*db, device, sp.problem, measure, compiler->version(), ctx.host, o.tuning.store_plans);
    if (answer) {
      results.push_back(result_from_answer(*db, *answer, tool_now));
      plans.emplace_back();
    } else {
      progress.note(fmt::format("{}: compiling", label));
      // On a terminal a bar; in a log (stderr piped) a line every 10 s, so a long compile shows life.
      options.progress = [&, compile_started = clock::now(), last_line = clock::now()](
                             std::size_t done, std::size_t total, std::size_t cached_hits) mutable {
        const double took = seconds_since(compile_started);
        const std::string text = fmt::format(
            "{}: compiling variants for {}: {}/{} ({} from cache){}", label, device.spec.arch(), done, total,
            cached_hits,
            done > 0 && done < total
                ? ", about " + format_seconds(took / static_cast<double>(done) * static_cast<double>(total - done)) +
                      " left"
                : "");
        progress.update(text);
        if (!stderr_is_terminal() && done < total && seconds_since(last_line) >= 10) {
          progress.note(text);
          last_line = clock::now();
        }
      };
      gemm_plan plan = plan_gemm(sp.problem, device.spec, *compiler, options);
      // Offline only: the search's model cut on a GPU is tuned to the uncalibrated model's spread
      // (the calibrated one compresses the predictions, and the cut would then drop nothing).
      // Which model the plan's predictions come from.
      nlohmann::json model = {{"kind", "physical"}};
      if (!measure && calibration) {
        if (apply_calibration(plan, *calibration)) {
          plan.notes.push_back(fmt::format("ranked by the model calibrated on {} measured result(s) of {} in {}",
                                           calibration->results, calibration->device_model, calibration->source));
          model = {{"kind", "calibrated"}, {"calibration", calibration->source}};
        } else if (options.selection.ranking_time) {
          plan.notes.push_back(fmt::format("the model calibrated on {} measured result(s) of {} in {} chose which "
                                           "variants to compile; none compiled has a calibrated figure",
                                           calibration->results, calibration->device_model, calibration->source));
        }
      }
      if (measure) {
        progress.note(fmt::format("{}: compiled {} variants ({} from cache) in {}; measuring ({} search)", label,
                                  plan.compiled, plan.cache_hits, format_seconds(plan.compile_wall_ms / 1000),
                                  settings.verify_only ? "no" : settings.search));
        measure_on_gpu(plan, device, settings, ctx.host.worker_argv(), count > 1 ? label + ": " : "", progress);
      }
      nlohmann::json r = to_json(plan, run);
      r["tool"] = tool_now;
      r["model"] = model;
      if (db && (plan.mode == "measured" || o.tuning.store_plans)) {
        db->store(record_from_result(r, nlohmann::json(), /*allow_predicted=*/true));
        r["tuning_db"] = {{"file", db->file().string()}, {"answered", false}, {"stored", true}};
      }
      results.push_back(std::move(r));
      plans.push_back(std::move(plan));
    }
    const double took = seconds_since(problem_started), so_far = seconds_since(started);
    const std::size_t left = count - i - 1;
    if (count > 1 || measure)
      progress.note(fmt::format("{}: {} in {}{}", label, answer ? "answered from the tuning database" : "done",
                                format_seconds(took),
                                left ? fmt::format("; elapsed {}, about {} left", format_seconds(so_far),
                                                   format_seconds(so_far / static_cast<double>(i + 1) * left))
                                     : ""));
  }
  progress.finish();

  bool all_measured = true;
  for (const auto& r : results) all_measured = all_measured && (r.is_null() || r.value("mode", "") == "measured");
  nlohmann::json j;
  if (o.suite.empty()) {
    j = results[0];
  } else {
    j = result_header("tiletune.gemm-suite/1", device.spec, all_measured ? "measured" : "predicted",
                      compiler->version(), run);
    j["tool"] = tool_now;
    j["suite"] = {{"name", suite.name}, {"file", o.suite}};
    if (shard)
      j["shard"] = {{"index", shard->index}, {"count", shard->count}, {"problems", count}, {"of", suite_total},
                    {"split", "FNV-1a 64 of the problem's tuning-database key, modulo count"}};
    j["results"] = nlohmann::json::array();
    for (std::size_t i = 0; i < results.size(); ++i) {
      if (results[i].is_null()) continue;  // --devices: no device answered it (under "failed") or not started
      nlohmann::json r = plans[i] ? result_body(*plans[i], static_cast<std::size_t>(o.report.top)) : results[i];
      if (plans[i] && results[i].contains("model")) r["model"] = results[i]["model"];
      for (const char* k : {"schema", "tool", "device"}) r.erase(k);
      // A suite keeps the best --top variants of each problem, and says so.
      const std::size_t total = r["variants"].size();
      if (total > static_cast<std::size_t>(o.report.top)) {
        r["variants"].erase(r["variants"].begin() + o.report.top, r["variants"].end());
        r["variants_listed"] = {{"listed", r["variants"].size()}, {"of", total}, {"by", "--top"}};
      }
      r["mode"] = results[i].value("mode", "predicted");
      if (results[i].contains("tuning_db")) r["tuning_db"] = results[i]["tuning_db"];
      for (const char* k : {"search", "ran_on"})
        if (results[i].contains(k)) r[k] = results[i][k];
      r["name"] = suite.problems[i].name;
      j["results"].push_back(std::move(r));
    }
    j["complete"] = not_run.empty() && dealt.failed.empty();
    j["not_run"] = not_run;
    if (!dealt_to.empty()) {
      j["devices"] = dealt.devices;
      j["failed"] = dealt.failed;
    }
    j["wall_s"] = seconds_since(started);
  }
  if (!o.report.out.empty()) write_file_atomically(o.report.out, j.dump(2) + "\n");
  if (o.report.json) {
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
  } else if (!o.report.quiet) {
    std::string table;
    if (!o.suite.empty())
      table = format_suite_results(suite.name, j["device"], j["results"]);
    else if (plans[0])
      table = format_table(*plans[0], o.report.top);
    else
      table = format_db_answer_table(results[0], o.report.top);
    std::fputs(table.c_str(), stdout);
    if (!not_run.empty()) fmt::print("not run (budget spent): {}\n", fmt::join(not_run, ", "));
    for (const auto& f : dealt.failed)
      fmt::print("FAILED {}: {}\n", f["name"].get<std::string>(), f["why"].get<std::string>());
    for (const auto& d : dealt.devices)
      if (d["retired"].get<bool>()) fmt::print("device {} retired: {}\n", d["index"].get<int>(), d["why"].get<std::string>());
    if (!o.report.out.empty()) fmt::print("wrote {}\n", o.report.out);
  }
  for (const auto& r : results)
    if (!r.is_null() && r.value("recommendation", nlohmann::json()).is_null())
      fmt::print(stderr, "tiletune: no variant of {} can run on {}\n",
                 gemm_problem_from_json(r.at("problem")).describe(), device.spec.name);
  ctx.exit_code = exit_ok;
  if (!dealt.failed.empty()) {
    fmt::print(stderr, "tiletune: {} problem(s) got no answer: every device dealt them faulted (see \"failed\" and "
                       "\"devices\" in the JSON)\n", dealt.failed.size());
    ctx.exit_code = exit_environment;
  }
  if (!o.export_dir.empty())
    if (const int e = export_kernels(o, suite, plans, run); e != exit_ok) ctx.exit_code = e;
}

}  // namespace tiletune::cli
