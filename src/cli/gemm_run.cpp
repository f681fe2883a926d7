// Running the gemm command: checking the options, then each problem tuned,
// measured or answered from the tuning database, and the result written.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/gemm_devices.hpp"
#include "cli/gemm_options.hpp"
#include "cli/gemm_setup.hpp"
#include "cli/gemm_tuning.hpp"
#include "cli/gpu_run.hpp"
#include "cli/output.hpp"
#include "core/compile/compile_cache.hpp"
#include "core/errors.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/variant_ranking.hpp"
#include "core/plan_mode.hpp"
#include "core/results/json_file.hpp"

namespace tiletune::cli {

namespace {
using run_clock = std::chrono::steady_clock;
double seconds_since(run_clock::time_point t) {
  return std::chrono::duration<double>(run_clock::now() - t).count();
}

// One run of the gemm command: what it was given and what it decided, then the
// steps (tune, assemble, output), each a member function.
class gemm_run {
 public:
  gemm_run(const gemm_options& o, run_context& ctx) : o_(o), ctx_(ctx) {}

  void prepare() {
    work_ = work_of(o_);
    check_run_flags(o_);
    dealt_to_ = devices_to_deal_to(o_, ctx_);
    device_ = dealt_to_.empty() ? choose_device(o_.device.gpu, o_.device.index, ctx_.host)
                                : dealt_to_.front();
    for (const auto& sp : work_.suite.problems) check_fits_memory(sp.problem, device_.spec);
    // --model --fp8: the step batch --fp8 runs, which needs fp8 tensor cores (as batch says).
    if (!o_.model.name.empty() && o_.model.fp8 != "none" && device_.spec.peak_tflops_fp8 <= 0)
      throw usage_error(fmt::format("--fp8 {} needs fp8 tensor cores (sm_89 and later); the {} has none", o_.model.fp8,
                                    device_.spec.name));
    // A problem no variant can run would be planned empty: one problem is refused; a suite's (or a
    // model step's) is its outcome, the others planned, unless none of them can run. A dtype the GPU
    // has no math for is one such (it refused the whole suite, a GPU without any family's not).
    std::string none_runs;
    for (const auto& sp : work_.suite.problems) {
      std::string why = why_no_variant_runs(sp.problem, device_.spec);
      if (why.empty()) {
        none_runs.clear();
        break;
      }
      if (none_runs.empty()) none_runs = std::move(why);
    }
    if (!none_runs.empty())
      throw usage_error(o_.is_suite() && work_.suite.problems.size() > 1
                            ? fmt::format("no GEMM of this {} can run on the {}; the first, {}",
                                          o_.model.name.empty() ? "suite" : "model step", device_.spec.name,
                                          none_runs)
                            : none_runs);
    measure_ = device_.live && !o_.report.dry_run;
    if (o_.report.verify_only && !device_.live)
      throw usage_error("--verify-only runs variants on a local GPU; with --gpu NAME nothing runs");
    settings_ = settings_of(o_);  // (a bad --l2-flush is refused here, before anything compiles)
    const l2_flush_mode flush = settings_.l2_flush;
    // Another flush than the default is a way of timing: a run that times nothing would carry it unsaid.
    if (flush != l2_flush_mode::write && (!measure_ || o_.report.verify_only))
      throw usage_error(fmt::format("--l2-flush {} says how samples are timed, and this run times none ({})",
                                    o_.measure.l2_flush,
                                    o_.report.verify_only ? "--verify-only"
                                    : o_.report.dry_run   ? "--dry-run"
                                                          : "an offline plan for --gpu " + device_.spec.name));
    compilers_.emplace(o_.compile.cache_dir, o_.compile.no_cache);
    compiler_ = &compilers_->get();
    check_compiler_supports(*compiler_, device_.spec.compute_capability, device_.spec.name);
    (void)kernel_debug_options(
        o_.compile.kernel_debug);  // a bad level is bad input before anything compiles
    // Partial runs (--only, --verify-only) and debug builds neither answer from the database nor go
    // into it; nor do timings that empty the L2 otherwise than its records were timed (--l2-flush).
    const bool db_usable = o_.only.empty() && !o_.report.verify_only && o_.compile.kernel_debug.empty() &&
                           flush == l2_flush_mode::write;
    if (flush != l2_flush_mode::write && !o_.tuning.no_db)
      progress_.note(fmt::format("--l2-flush {}: the tuning database is neither read nor written (its records are "
                                 "timed with the L2 flushed by writes)",
                                 o_.measure.l2_flush));
    // An offline plan that stores nothing reads a database that exists, and creates none.
    const bool stores = measure_ || o_.tuning.store_plans;
    const std::filesystem::path db_file = database_of(o_);  // empty under --no-db
    if (!db_file.empty()) check_db_path(db_file, o_.tuning.db);
    const bool db_exists = !db_file.empty() && std::filesystem::exists(db_file);
    // A read-only database answers, and is left as it is (--store-plans refused it before); so does
    // one that this run only reads.
    db_read_only_ = db_exists && is_read_only(db_file);
    db_ = db_usable && (stores || db_exists)
              ? open_tuning_db(db_file.string(), db_file.empty(),
                               stores && !db_read_only_ ? tuning_db::open_mode::create : tuning_db::open_mode::read,
                               tuning_db::page_check::as_read)  // a repeat answers in milliseconds
              : nullptr;
    if (db_) db_->keep_full_results(o_.tuning.db_full);
    if (db_read_only_ && measure_)
      progress_.note(fmt::format("the tuning database {} is read-only: it answers, and this run's measurements are "
                                 "not stored in it",
                                 db_->file().string()));
    run_ = {ctx_.command_line, utc_now_iso()};
    tool_now_ = result_header("tiletune.gemm/1", device_.spec, plan_mode::predicted, compiler_->version(),
                              run_)["tool"];
    if (device_.live && !work_.suite.problems.empty()) {
      const tuning_key k = live_tuning_key(device_, work_.suite.problems[0].problem,
                                           compiler_->version(), ctx_.host);
      tool_now_["driver"] = k.driver;
      tool_now_["cuda_runtime"] = k.cuda;
    }
  }

  // Every problem: dealt to the GPUs of --devices, else one after the other here.
  void tune() {
    const std::size_t count = work_.suite.problems.size();
    if (work_.shard)
      progress_.note(fmt::format("shard {}/{}: {} of the suite's {} problems{}", work_.shard->index,
                                 work_.shard->count, count, work_.suite_total,
                                 count ? "" : " (none hash to this shard: nothing to do)"));
    if (!dealt_to_.empty()) {
      prepare_planning();
      devices_job job{&work_.suite,
                      dealt_to_,
                      compiler_,
                      options_,
                      settings_,
                      db_.get(),
                      db_ && !o_.tuning.retune && o_.export_dir.empty(),
                      tool_now_,
                      run_,
                      o_.tuning.budget_s,
                      started_,
                      &ctx_.host};
      dealt_ = run_on_devices(job, progress_);
      results_ = std::move(dealt_.results);
      plans_ = std::move(dealt_.plans);
      not_run_ = std::move(dealt_.not_run);
    }
    for (std::size_t i = 0; i < count && dealt_to_.empty(); ++i) {
      if (budget_spent(i)) break;
      tune_problem(i);
    }
    progress_.finish();
  }

  // The command's JSON: the problem's result, or the suite's.
  nlohmann::json assemble() const {
    if (!o_.is_suite()) return results_[0];
    // Measured where every result is; with none (a shard no problem hashes to), where this run measures.
    bool all_measured = true, any = false;
    for (const auto& r : results_) {
      all_measured = all_measured && (r.is_null() || is_measured_result(r));
      any = any || !r.is_null();
    }
    if (!any) all_measured = measure_;
    nlohmann::json j;
    const auto& suite = work_.suite;
    const auto& shard = work_.shard;
    const std::size_t count = suite.problems.size(), suite_total = work_.suite_total;
    j = result_header("tiletune.gemm-suite/1", device_.spec,
                      all_measured ? plan_mode::measured : plan_mode::predicted, compiler_->version(), run_);
    j["tool"] = tool_now_;
    j["suite"] = {{"name", suite.name}, {"file", o_.suite}};
    if (!o_.model.name.empty()) {
      j["suite"]["model"] = {{"name", o_.model.name},
                             {"tokens", o_.model.tokens},
                             {"phase", o_.model.phase},
                             {"tensor_parallel", o_.model.tensor_parallel}};
      if (o_.model.sequences) j["suite"]["model"]["sequences"] = *o_.model.sequences;
      // What else made the step's GEMMs what they are: the fp8 recipe and the experts' routing.
      if (o_.model.fp8 != "none") j["suite"]["model"]["fp8"] = o_.model.fp8;
      if (o_.groups.routing) j["suite"]["model"]["routing"] = *o_.groups.routing;
      if (!work_.shard) j["model_step"] = model_step_json(results_, work_.counts, suite);
    }
    if (shard)
      j["shard"] = {{"index", shard->index},
                    {"count", shard->count},
                    {"problems", count},
                    {"of", suite_total},
                    {"split", "FNV-1a 64 of the problem's tuning-database key, modulo count"}};
    j["results"] = nlohmann::json::array();
    for (std::size_t i = 0; i < results_.size(); ++i) {
      if (results_[i].is_null())
        continue;  // --devices: no device answered it (under "failed") or not started
      nlohmann::json r = plans_[i]
                             ? result_body(*plans_[i], static_cast<std::size_t>(o_.report.top))
                             : results_[i];
      if (plans_[i] && results_[i].contains("model")) r["model"] = results_[i]["model"];
      for (const char* k : {"schema", "tool", "device"}) r.erase(k);
      // A suite keeps the best --top variants of each problem and the recommended one, and says so.
      const std::size_t total = r["variants"].size();
      if (total > static_cast<std::size_t>(o_.report.top)) {
        const std::string recommended =
            r.contains("recommendation") && r["recommendation"].is_object() ? r["recommendation"].value("id", "") : "";
        nlohmann::json kept = nlohmann::json::array();
        for (auto& v : r["variants"])
          if (kept.size() < static_cast<std::size_t>(o_.report.top) || v.value("id", "") == recommended)
            kept.push_back(std::move(v));
        r["variants"] = std::move(kept);
        const auto of = r.contains("variants_listed") ? r["variants_listed"].value("of", total) : total;
        r["variants_listed"] = {{"listed", r["variants"].size()}, {"of", of}, {"by", "--top"}};
      }
      r["mode"] = results_[i].value("mode", "predicted");
      if (results_[i].contains("tuning_db")) r["tuning_db"] = results_[i]["tuning_db"];
      for (const char* k : {"search", "ran_on", "partial"})
        if (results_[i].contains(k)) r[k] = results_[i][k];
      r["name"] = suite.problems[i].name;
      j["results"].push_back(std::move(r));
    }
    j["complete"] = not_run_.empty() && dealt_.failed.empty();
    j["not_run"] = not_run_;
    if (!dealt_to_.empty()) {
      j["devices"] = dealt_.devices;
      j["failed"] = dealt_.failed;
    }
    j["wall_s"] = seconds_since(started_);
    return j;
  }

  // The JSON to --out and stdout (or the table), the warnings, and the exit code.
  void output(const nlohmann::json& j) {
    const auto& suite = work_.suite;
    // --export's files are rendered and checked first: one that would replace --out (or an input)
    // is refused before --out is written.
    std::optional<kernel_export> exported;
    if (!o_.export_dir.empty()) exported = prepare_export(o_, suite, plans_, run_);
    if (!o_.report.out.empty()) write_file_atomically(o_.report.out, json_text(j) + "\n");
    if (o_.report.json) {
      std::fputs((json_text(j) + "\n").c_str(), stdout);
    } else if (!o_.report.quiet) {
      std::string table;
      if (o_.is_suite()) {
        table = format_suite_results(suite.name, j["device"], j["results"]);
        if (j.contains("model_step")) table += format_model_step(j["model_step"]);
        for (const auto& n : work_.notes) table += "note: " + n + "\n";
      } else if (plans_[0])
        table = format_table(*plans_[0], o_.report.top);
      else
        table = format_db_answer_table(results_[0], o_.report.top);
      std::fputs(table.c_str(), stdout);
      if (!not_run_.empty()) fmt::print("not run (budget spent): {}\n", fmt::join(not_run_, ", "));
      for (const auto& f : dealt_.failed)
        fmt::print("FAILED {}: {}\n", f["name"].get<std::string>(), f["why"].get<std::string>());
      for (const auto& d : dealt_.devices)
        if (d["retired"].get<bool>())
          fmt::print("device {} retired: {}\n", d["index"].get<int>(), d["why"].get<std::string>());
      if (!o_.report.out.empty()) fmt::print("wrote {}\n", o_.report.out);
    }
    for (const auto& r : results_)
      if (!r.is_null() && r.value("recommendation", nlohmann::json()).is_null()) {
        const gemm_problem p = gemm_problem_from_json(r.at("problem"));
        // Why, where the problem rules every variant out (a suite's or model step's problem too).
        const std::string why = o_.only.empty() ? why_no_variant_runs(p, device_.spec) : "";
        if (!why.empty())
          tell("tiletune: {}\n", why);  // it names the problem and the GPU
        else
          tell("tiletune: {} of {} can run on {}\n", o_.only.empty() ? "no variant" : "none of the variants --only selects",
               p.describe(), device_.spec.name);
      }
    ctx_.exit_code = exit_ok;
    if (!dealt_.failed.empty()) {
      fmt::print(stderr,
                 "tiletune: {} problem(s) got no answer: every device dealt them faulted (see "
                 "\"failed\" and "
                 "\"devices\" in the JSON)\n",
                 dealt_.failed.size());
      ctx_.exit_code = exit_environment;
    }
    if (exported)
      if (const int e = write_kernel_export(o_, *exported); e != exit_ok) ctx_.exit_code = e;
    // A suite cut short by its budget is not a finished run: a script sees it in the code.
    if (!not_run_.empty() && ctx_.exit_code == exit_ok) ctx_.exit_code = exit_incomplete;
  }

 private:
  // --budget-s: whether it is spent before problem i (the rest then go to not_run).
  bool budget_spent(std::size_t i) {
    const auto& suite = work_.suite;
    const std::size_t count = suite.problems.size();
    const double elapsed = seconds_since(started_);
    if (o_.tuning.budget_s > 0 && i > 0 && elapsed >= o_.tuning.budget_s) {
      for (std::size_t r = i; r < count; ++r) not_run_.push_back(suite.problems[r].name);
      progress_.note(fmt::format(
          "--budget-s {:g} spent after {} of {} problems ({}); exit code 4; {}", o_.tuning.budget_s, i, count,
          format_seconds(elapsed),
          !measure_ && db_ && o_.tuning.store_plans
              ? "the plans are in the tuning database (--store-plans): the same command resumes"
          : !measure_ ? "offline plans are not stored: a rerun plans every problem again"
          : db_ && !db_read_only_ ? "the measured ones are in the tuning database: the same command resumes"
                      : "without the tuning database a rerun starts over"));
      return true;
    }
    return false;
  }

  void tune_problem(std::size_t i) {
    const auto& sp = work_.suite.problems[i];
    const std::size_t count = work_.suite.problems.size();
    const std::string label =
        count > 1 || work_.shard
            ? fmt::format("[{}/{}] {} ({})", i + 1, count, sp.name, sp.problem.describe())
            : sp.problem.describe();
    const auto problem_started = run_clock::now();
    std::optional<db_answer> answer;
    // The database holds results, not kernels: --export compiles (and on a GPU tunes) afresh.
    if (db_ && !o_.tuning.retune && o_.export_dir.empty())
      answer = look_up(*db_, device_, sp.problem, measure_, compiler_->version(), ctx_.host,
                       o_.tuning.store_plans);
    if (answer) {
      results_.push_back(result_from_answer(*db_, *answer, tool_now_));
      plans_.emplace_back();
    } else {
      plan_problem(sp.problem, label, count);
    }
    const double took = seconds_since(problem_started), so_far = seconds_since(started_);
    const std::size_t left = count - i - 1;
    if (count > 1 || measure_)
      progress_.note(
          fmt::format("{}: {} in {}{}", label,
                      answer ? "answered from the tuning database" : "done", format_seconds(took),
                      left ? fmt::format("; elapsed {}, about {} left", format_seconds(so_far),
                                         format_seconds(so_far / static_cast<double>(i + 1) * left))
                           : ""));
  }

  // The calibration and plan options, on the first problem the database does not answer:
  // a repeat answered from it reads no other record (the calibration reads every measured
  // record of the GPU model).
  void prepare_planning() {
    if (planning_ready_) return;
    const std::filesystem::path cache =
        o_.compile.no_cache ? std::filesystem::path()
        : o_.compile.cache_dir.empty() ? default_cache_dir()
                                       : std::filesystem::path(o_.compile.cache_dir);
    calibration_ = calibration_for(db_.get(), device_, progress_, cache);
    options_ = plan_options_of(o_, measure_, calibration_, device_.spec);
    planning_ready_ = true;
  }

  // A problem planned afresh: compiled and ranked, measured on a GPU, stored.
  void plan_problem(const gemm_problem& problem, const std::string& label, std::size_t count) {
    prepare_planning();
    progress_.note(fmt::format("{}: compiling", label));
    // On a terminal a bar; in a log (stderr piped) a line every 10 s, so a long compile shows life.
    options_.progress = [&, compile_started = run_clock::now(), last_line = run_clock::now()](
                            std::size_t done, std::size_t total, std::size_t cached_hits) mutable {
      const double took = seconds_since(compile_started);
      const std::string text = fmt::format(
          "{}: compiling variants for {}: {}/{} ({} from cache){}", label, device_.spec.arch(),
          done, total, cached_hits,
          done > 0 && done < total ? ", about " +
                                         format_seconds(took / static_cast<double>(done) *
                                                        static_cast<double>(total - done)) +
                                         " left"
                                   : "");
      progress_.update(text);
      if (!stderr_is_terminal() && done < total && seconds_since(last_line) >= 10) {
        progress_.note(text);
        last_line = run_clock::now();
      }
    };
    gemm_plan plan = plan_gemm(problem, device_.spec, *compiler_, options_);
    // An offline plan of --only selecting no variant that compiles and fits here: a bad value, as
    // --export's is (other variants run the problem), refused before anything is written. On a GPU
    // the run goes on and its JSON records each selected variant's outcome (gpu_validate.sh's smoke
    // steps read a resource_limit there as saying nothing of the mechanism).
    if (!measure_ && plan.selected && std::none_of(plan.variants.begin(), plan.variants.end(),
                                      [](const variant_result& v) { return v.status == variant_status::ok; })) {
      std::string reasons = common_reasons(plan.variants);
      while (!reasons.empty() && reasons.back() == '\n') reasons.pop_back();
      throw usage_error(fmt::format("--only {}: none of the variants it selects can run {} on {} (leave --only "
                                    "out to plan every variant):\n{}",
                                    fmt::join(o_.only, ","), problem.describe(), device_.spec.name,
                                    reasons));
    }
    // Offline only: the search's model cut on a GPU is tuned to the uncalibrated model's spread
    // (the calibrated one compresses the predictions, and the cut would then drop nothing).
    // Which model the plan's predictions come from.
    nlohmann::json model = {{"kind", "physical"}};
    if (!measure_ && calibration_) {
      if (apply_calibration(plan, *calibration_)) {
        plan.notes.push_back(
            fmt::format("ranked by the model calibrated on {} measured result(s) of {} in {}",
                        calibration_->results, calibration_->device_model, calibration_->source));
        model = {{"kind", "calibrated"}, {"calibration", calibration_->source}};
        note_sustained_clock(plan, *calibration_);
      } else if (options_.selection.ranking_time) {
        plan.notes.push_back(
            fmt::format("the model calibrated on {} measured result(s) of {} in {} chose which "
                        "variants to compile; none compiled has a calibrated figure",
                        calibration_->results, calibration_->device_model, calibration_->source));
      }
    }
    // --export writes the recommendation's cubin; an offline plan may have taken its figures
    // from its tile's program without building it.
    if (!o_.export_dir.empty() && !measure_) compile_recommended_cubin(plan, *compiler_, options_);
    if (measure_) {
      progress_.note(fmt::format(
          "{}: compiled {} variants ({} from cache) in {}; measuring ({} search)", label,
          plan.compiled, plan.cache_hits, format_seconds(plan.compile_wall_ms / 1000),
          settings_.verify_only ? "no" : settings_.search));
      measure_on_gpu(plan, device_, settings_, ctx_.host.worker_argv(),
                     count > 1 ? label + ": " : "", progress_);
    }
    note_untried_recommendation(plan);
    note_unaligned_rows(plan);
    note_tf32_no_faster_than_f32(plan);
    nlohmann::json r = to_json(plan, run_);
    r["tool"] = tool_now_;
    r["model"] = model;
    // What made the run partial (it then neither answers from the database nor goes into it).
    if (!o_.only.empty()) r["partial"] = "--only";
    else if (o_.report.verify_only) r["partial"] = "--verify-only";
    else if (!o_.compile.kernel_debug.empty()) r["partial"] = "--kernel-debug";
    if (db_ && !db_read_only_ && (plan.mode == plan_mode::measured || o_.tuning.store_plans)) {
      db_->store(record_from_result(r, nlohmann::json(), /*allow_predicted=*/true));
      r["tuning_db"] = {{"file", db_->file().string()}, {"answered", false}, {"stored", true}};
    }
    results_.push_back(std::move(r));
    plans_.push_back(std::move(plan));
  }

  const gemm_options& o_;
  run_context& ctx_;
  const run_clock::time_point started_ = run_clock::now();
  gemm_work work_;
  std::vector<device_choice> dealt_to_;  // --devices: the GPUs the suite is dealt to
  device_choice device_;
  bool measure_ = false;
  std::optional<compiler_stack> compilers_;
  kernel_compiler* compiler_ = nullptr;
  std::unique_ptr<tuning_db> db_;
  bool db_read_only_ = false;
  measure_settings settings_;
  progress_line progress_{!o_.report.quiet};
  std::optional<model_calibration> calibration_;
  plan_options options_;
  bool planning_ready_ = false;
  run_info run_;
  nlohmann::json tool_now_;
  std::vector<nlohmann::json> results_;          // one tiletune.gemm/1 result per problem
  std::vector<std::optional<gemm_plan>> plans_;  // where tuned in this run (for the table)
  std::vector<std::string> not_run_;
  devices_outcome dealt_;
};

}  // namespace

void run_gemm(const gemm_options& o, run_context& ctx) {
  gemm_run run(o, ctx);
  run.prepare();
  run.tune();
  run.output(run.assemble());
}

}  // namespace tiletune::cli
