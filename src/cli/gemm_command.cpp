#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/gemm_tuning.hpp"
#include "cli/gpu_run.hpp"
#include "cli/output.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/errors.hpp"
#include "core/gemm/gemm_suite.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "core/report/kernel_export.hpp"
#include "core/tune/search/search_strategy.hpp"

namespace tiletune::cli {

namespace {

struct gemm_options {
  struct {
    std::optional<std::int64_t> m, n, k;  // none: not given (a suite gives its own)
    std::int64_t batch = 1;
    // The users train LLMs: bf16, and nt is x @ W.T (a linear layer's forward).
    std::string dtype = "bf16", layout = "nt";
    double alpha = 1.0, beta = 0.0;
  } problem;
  struct {
    std::optional<std::string> gpu;
    std::optional<int> index;
  } device;
  struct {
    std::uint64_t seed = 1;
    std::optional<double> variant_timeout_s;  // none: from each run's predicted time
    bool keep_going = false;
    double target_spread = 0.01;
    double time_cap_ms = 2000;
  } measure;
  struct {
    int jobs = 0;
    std::string cache_dir;
    bool no_cache = false;
    bool compile_all = false;
    std::string kernel_debug;
  } compile;
  std::string suite;
  std::vector<std::string> only;
  struct {
    std::string strategy = std::string(default_search_strategy);
    bool retune = false;
    std::string db;
    bool no_db = false;
    double budget_s = 0;
  } tuning;
  struct {
    bool dry_run = false;
    bool verify_only = false;
    int top = 10;
    std::string out;
    bool json = false;
    bool quiet = false;
  } report;
  std::string export_dir;  // --export DIR: the chosen kernels as source, cubin and launch JSON
};

std::string format_measured_table(const gemm_plan& plan, int top) {
  const double peak = plan.device.peak_tflops(plan.problem.type);
  text_table t({"rank", "variant", "status", "median us", "TFLOP/s", "% peak", "vs cuBLAS", "regs", "smem KiB",
                "blocks/SM", "rel error"});
  int shown = 0;
  for (const auto& v : plan.variants) {
    if (!v.measured) continue;
    if (shown++ >= top) break;
    const auto& m = *v.measured;
    const bool timed = m.timing.samples > 0;
    const double tflops = timed ? plan.problem.flops() / (m.timing.median_us * 1e6) : 0;
    const bool ref = plan.reference && plan.reference->timing.median_us > 0 && timed;
    t.add_row({v.rank ? std::to_string(v.rank) : "-", v.config.id(), std::string(to_string(v.status)),
               timed ? fmt::format("{:.1f}", m.timing.median_us) : "-", timed ? fmt::format("{:.1f}", tflops) : "-",
               timed && peak > 0 ? fmt::format("{:.0f}", 100 * tflops / peak) : "-",
               ref ? fmt::format("{:.2f}", plan.reference->timing.median_us / m.timing.median_us) : "-",
               std::to_string(v.resources.registers), fmt::format("{:.1f}", v.smem_bytes / 1024.0),
               std::to_string(v.occupancy.blocks_per_sm),
               m.verified && std::isfinite(m.error.rel_frobenius) ? fmt::format("{:.1e}", m.error.rel_frobenius) : "-"});
  }
  std::string out = fmt::format("{} on {} ({}), MEASURED\n", plan.problem.describe(), plan.device.name,
                                plan.device.arch());
  if (plan.reference && plan.reference->timing.median_us > 0)
    out += fmt::format("cuBLASLt: {:.1f} us, {:.1f} TFLOP/s ({}; {})\n", plan.reference->timing.median_us,
                       plan.problem.flops() / (plan.reference->timing.median_us * 1e6), plan.reference->algorithm,
                       plan.reference->timer);
  out += "\n" + t.render();
  if (plan.recommended) {
    const auto& v = plan.variants[*plan.recommended];
    out += fmt::format("\nrecommended: {}\n  triton:  {}\n  cutlass: {}\n", v.config.id(),
                       triton_summary(v.config, plan.problem.type), cutlass_shape(v.config, plan.problem.type));
  } else {
    out += "\nno variant ran correctly; the JSON says why for each\n";
  }
  for (const auto& n : plan.notes) out += "note: " + n + "\n";
  return out;
}

std::string format_table(const gemm_plan& plan, int top) {
  if (plan.mode == "measured") return format_measured_table(plan, top);
  const double peak = plan.device.peak_tflops(plan.problem.type);
  text_table t({"rank", "variant", "status", "pred us", "TFLOP/s", "% peak", "regs", "smem KiB", "threads",
                "blocks/SM", "bound"});
  int shown = 0;
  for (const auto& v : plan.variants) {
    if (v.status != variant_status::ok) continue;
    if (shown++ >= top) break;
    t.add_row({std::to_string(v.rank), v.config.id(), "ok", fmt::format("{:.1f}", v.predicted.time_us),
               fmt::format("{:.1f}", v.predicted.tflops),
               peak > 0 ? fmt::format("{:.0f}", 100 * v.predicted.tflops / peak) : "-",
               std::to_string(v.resources.registers), fmt::format("{:.1f}", v.smem_bytes / 1024.0),
               std::to_string(v.config.threads()), std::to_string(v.occupancy.blocks_per_sm),
               v.predicted.bound});
  }
  constexpr int statuses = variant_status_count;
  std::size_t counts[statuses] = {};
  for (const auto& v : plan.variants) ++counts[static_cast<int>(v.status)];
  std::string tally;
  for (int i = 0; i < statuses; ++i)
    if (counts[i]) tally += fmt::format("{}{} {}", tally.empty() ? "" : ", ", counts[i], to_string(static_cast<variant_status>(i)));
  std::string out = fmt::format("{} on {} ({}), PREDICTED by the analytical model, not measured\n",
                                plan.problem.describe(), plan.device.name, plan.device.arch());
  out += fmt::format("{} variants: {}; compiled {} ({} from cache) in {:.1f} s\n\n", plan.variants.size(), tally,
                     plan.compiled, plan.cache_hits, plan.compile_wall_ms / 1000);
  out += t.render();
  if (plan.recommended) {
    const auto& v = plan.variants[*plan.recommended];
    out += fmt::format("\nrecommended: {} (predicted {:.1f} TFLOP/s)\n  triton:  {}\n  cutlass: {}\n",
                       v.config.id(), v.predicted.tflops, triton_summary(v.config, plan.problem.type),
                       cutlass_shape(v.config, plan.problem.type));
  } else {
    out += "\nno variant can run this problem on this GPU; the JSON says why for each\n";
  }
  for (const auto& n : plan.notes) out += "note: " + n + "\n";
  return out;
}

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

// A variant that ran and failed (exit 1), as opposed to one that cannot run at all (exit 2).
bool failed_on_the_gpu(variant_status s) {
  return s == variant_status::incorrect || s == variant_status::launch_error || s == variant_status::timeout ||
         s == variant_status::skipped;
}

// Writes the recommended variant (or each --only variant) of every plan under
// --export DIR (a subfolder per problem for a suite). Returns the exit code:
// 0, 1 when a wanted variant failed on the GPU, 2 when one cannot run at all.
int export_kernels(const gemm_options& o, const gemm_suite& suite, const std::vector<std::optional<gemm_plan>>& plans,
                   const run_info& run) {
  std::vector<export_file> files;
  std::vector<std::string> written;
  std::set<std::string> folders;
  bool failed_on_gpu = false, cannot_run = false;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (!plans[i]) continue;  // --export never answers from the database (it holds no kernels)
    const gemm_plan& plan = *plans[i];
    std::string folder;
    if (!o.suite.empty()) {
      folder = export_folder_name(suite.problems[i].name);
      if (!folders.insert(folder).second) folders.insert(folder += fmt::format("-{}", i + 1));
      folder += "/";
    }
    const auto chosen = variants_to_export(plan, o.only);
    if (chosen.empty()) {
      for (const auto& v : plan.variants) failed_on_gpu |= failed_on_the_gpu(v.status);
      cannot_run = true;
      fmt::print(stderr, "tiletune: --export: nothing to export for {}: no variant is ok\n", plan.problem.describe());
    }
    for (const variant_result* v : chosen) {
      if (v->status != variant_status::ok) {
        (failed_on_the_gpu(v->status) ? failed_on_gpu : cannot_run) = true;
        fmt::print(stderr, "tiletune: --export: {} is {} for {}{}; not exported\n", v->config.id(),
                   to_string(v->status), plan.problem.describe(), v->reason.empty() ? "" : ": " + v->reason);
        continue;
      }
      for (auto& f : export_variant(plan, *v, run)) {
        f.name = folder + f.name;
        written.push_back(f.name);
        files.push_back(std::move(f));
      }
    }
  }
  if (!files.empty()) write_export(o.export_dir, files);
  if (!o.report.quiet && !files.empty())
    fmt::print(o.report.json ? stderr : stdout, "exported {} kernel{} to {}: {}\n", files.size() / 3,
               files.size() == 3 ? "" : "s", o.export_dir, fmt::join(written, ", "));
  return failed_on_gpu ? exit_check_failed : cannot_run ? exit_usage : exit_ok;
}

void run_gemm(const gemm_options& o, run_context& ctx) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  gemm_suite suite;
  if (!o.suite.empty()) {
    suite = load_suite(o.suite);
  } else {
    suite.problems.push_back({"", problem_from_flags(o)});
  }
  if (o.report.top < 1) throw usage_error(fmt::format("--top {} is invalid: it must be at least 1", o.report.top));
  if (o.compile.jobs < 0) throw usage_error(fmt::format("--jobs {} is invalid: it must be at least 1", o.compile.jobs));
  if (!(o.tuning.budget_s >= 0))
    throw usage_error(fmt::format("--budget-s {} is invalid: seconds, 0 (no budget) or more", o.tuning.budget_s));
  if (o.tuning.no_db && !o.tuning.db.empty())
    throw usage_error(fmt::format("--db {} and --no-db exclude each other", o.tuning.db));
  make_search_strategy(o.tuning.strategy);  // an unknown name fails before any work
  if (!o.report.out.empty()) check_output_path(o.report.out);
  if (!o.export_dir.empty()) check_export_dir(o.export_dir);

  const device_choice device = choose_device(o.device.gpu, o.device.index);
  for (const auto& sp : suite.problems) check_fits_memory(sp.problem, device.spec);
  const bool measure = device.live && !o.report.dry_run;
  if (o.report.verify_only && !device.live)
    throw usage_error("--verify-only runs variants on a local GPU; with --gpu NAME nothing runs");
  if (!(o.measure.target_spread > 0 && o.measure.target_spread < 1))
    throw usage_error(fmt::format("--target-spread {} is invalid: a fraction such as 0.01", o.measure.target_spread));
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
  // An offline plan launches nothing: one program per tile and its rasterization copies, and only the
  // variants the model says can still reach the table's --top rows. Every one where a GPU runs them,
  // where --export needs their cubins, and for --only and --compile-all.

  // The model calibrated on this GPU model's measured results, where the database has some.
  std::optional<model_calibration> calibration;
  if (db) {
    std::vector<nlohmann::json> measured;
    for (const auto& r : db->list(device_model_of(device.spec))) measured.push_back(r.result);
    try {
      if (!measured.empty()) calibration = fit_calibration(measured);
    } catch (const std::exception& e) {
      progress.note(fmt::format("the model stays uncalibrated: a record in {} is unreadable ({})",
                                db->file().string(), e.what()));
    }
  }
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
  if (device.live) {
    const tuning_key k = live_tuning_key(device, suite.problems[0].problem, compiler->version());
    tool_now["driver"] = k.driver;
    tool_now["cuda_runtime"] = k.cuda;
  }
  auto seconds_since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };

  std::vector<nlohmann::json> results;   // one tiletune.gemm/1 result per problem
  std::vector<std::optional<gemm_plan>> plans;  // where tuned in this run (for the table)
  std::vector<std::string> not_run;
  const std::size_t count = suite.problems.size();
  for (std::size_t i = 0; i < count; ++i) {
    const auto& sp = suite.problems[i];
    const double elapsed = seconds_since(started);
    if (o.tuning.budget_s > 0 && i > 0 && elapsed >= o.tuning.budget_s) {
      for (std::size_t r = i; r < count; ++r) not_run.push_back(suite.problems[r].name);
      progress.note(fmt::format("--budget-s {:g} spent after {} of {} problems ({}); {}", o.tuning.budget_s, i, count,
                                format_seconds(elapsed),
                                !measure ? "offline plans are not stored: a rerun plans every problem again"
                                : db     ? "the measured ones are in the tuning database: the same command resumes"
                                         : "without the tuning database a rerun starts over"));
      break;
    }
    const std::string label = count > 1 ? fmt::format("[{}/{}] {} ({})", i + 1, count, sp.name, sp.problem.describe())
                                        : sp.problem.describe();
    const auto problem_started = clock::now();
    std::optional<db_answer> answer;
    // The database holds results, not kernels: --export compiles (and on a GPU tunes) afresh.
    if (db && !o.tuning.retune && o.export_dir.empty())
      answer = look_up(*db, device, sp.problem, measure, compiler->version());
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
      if (!measure && calibration) {
        if (apply_calibration(plan, *calibration))
          plan.notes.push_back(fmt::format("ranked by the model calibrated on {} measured result(s) of {} in {}",
                                           calibration->results, calibration->device_model, db->file().string()));
        else if (options.selection.ranking_time)
          plan.notes.push_back(fmt::format("the model calibrated on {} measured result(s) of {} in {} chose which "
                                           "variants to compile; none compiled has a calibrated figure",
                                           calibration->results, calibration->device_model, db->file().string()));
      }
      if (measure) {
        progress.note(fmt::format("{}: compiled {} variants ({} from cache) in {}; measuring ({} search)", label,
                                  plan.compiled, plan.cache_hits, format_seconds(plan.compile_wall_ms / 1000),
                                  settings.verify_only ? "no" : settings.search));
        measure_on_gpu(plan, device, settings, count > 1 ? label + ": " : "", progress);
      }
      nlohmann::json r = to_json(plan, run);
      r["tool"] = tool_now;
      if (db && plan.mode == "measured") {
        db->store(record_from_result(r, nlohmann::json()));
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
  for (const auto& r : results) all_measured = all_measured && r.value("mode", "") == "measured";
  nlohmann::json j;
  if (o.suite.empty()) {
    j = results[0];
  } else {
    j = result_header("tiletune.gemm-suite/1", device.spec, all_measured ? "measured" : "predicted",
                      compiler->version(), run);
    j["tool"] = tool_now;
    j["suite"] = {{"name", suite.name}, {"file", o.suite}};
    j["results"] = nlohmann::json::array();
    for (std::size_t i = 0; i < results.size(); ++i) {
      nlohmann::json r = plans[i] ? result_body(*plans[i], static_cast<std::size_t>(o.report.top)) : results[i];
      for (const char* k : {"schema", "tool", "device"}) r.erase(k);
      // A suite keeps the best --top variants of each problem, and says so.
      const std::size_t total = r["variants"].size();
      if (total > static_cast<std::size_t>(o.report.top)) {
        r["variants"].erase(r["variants"].begin() + o.report.top, r["variants"].end());
        r["variants_listed"] = {{"listed", r["variants"].size()}, {"of", total}, {"by", "--top"}};
      }
      r["mode"] = results[i].value("mode", "predicted");
      if (results[i].contains("tuning_db")) r["tuning_db"] = results[i]["tuning_db"];
      if (results[i].contains("search")) r["search"] = results[i]["search"];
      r["name"] = suite.problems[i].name;
      j["results"].push_back(std::move(r));
    }
    j["complete"] = not_run.empty();
    j["not_run"] = not_run;
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
    if (!o.report.out.empty()) fmt::print("wrote {}\n", o.report.out);
  }
  for (const auto& r : results)
    if (r.value("recommendation", nlohmann::json()).is_null())
      fmt::print(stderr, "tiletune: no variant of {} can run on {}\n",
                 gemm_problem_from_json(r.at("problem")).describe(), device.spec.name);
  ctx.exit_code = exit_ok;
  if (!o.export_dir.empty()) ctx.exit_code = export_kernels(o, suite, plans, run);
}

}  // namespace

void add_gemm_command(CLI::App& app, run_context& ctx) {
  auto o = std::make_shared<gemm_options>();
  auto* cmd = app.add_subcommand("gemm", "Tune the tile shape of one GEMM: C = alpha * op(A) * op(B) + beta * C");
  cmd->add_option("--m", o->problem.m, "Rows of C and op(A)");
  cmd->add_option("--n", o->problem.n, "Columns of C and op(B)");
  cmd->add_option("--k", o->problem.k, "The reduction dimension");
  cmd->add_option("--suite", o->suite, "Tune every problem of a suite file (see profiles/suites/) into one result");
  cmd->add_option("--batch", o->problem.batch, "Independent GEMMs of the same shape")->capture_default_str();
  cmd->add_option("--dtype", o->problem.dtype, "f32 | tf32 | f16 | bf16 (fp32 accumulation)")->capture_default_str();
  cmd->add_option("--layout", o->problem.layout,
                  "A then B: n = stored as written (A MxK, B KxN, row-major), t = transposed; nt is x @ W.T")
      ->capture_default_str();
  cmd->add_option("--alpha", o->problem.alpha, "Scale of the product")->capture_default_str();
  cmd->add_option("--beta", o->problem.beta, "Scale of the old C (0: C is not read)")->capture_default_str();
  // A suite names each problem whole: a problem flag beside it would be ignored, so it is refused.
  for (const char* flag : {"--m", "--n", "--k", "--batch", "--dtype", "--layout", "--alpha", "--beta"})
    cmd->get_option("--suite")->excludes(cmd->get_option(flag));
  cmd->add_option("--gpu", o->device.gpu, "Plan for a GPU preset without touching a GPU (see `tiletune devices`)");
  cmd->add_option("--device", o->device.index, "Use local GPU I (default: 0)");
  cmd->add_flag("--dry-run", o->report.dry_run, "Compile, prune and rank with the model; launch nothing");
  cmd->add_option("--only", o->only, "Keep only these variant ids (e.g. mma_128x128x32_w2x2_s3)")->delimiter(',');
  cmd->add_flag("--verify-only", o->report.verify_only,
                "On a GPU: check every variant against cuBLASLt without timing; the model ranks them");
  cmd->add_option("--seed", o->measure.seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_option("--variant-timeout", o->measure.variant_timeout_s,
                  "Seconds before a variant's run is stopped and marked timeout (default: 5 s plus 4x the model's "
                  "estimate of that run)");
  cmd->add_flag("--keep-going", o->measure.keep_going,
                "Run every variant of a family even after one of them hung or failed to launch (by default the "
                "rest of that family is skipped for the problem, naming the first failure)");
  cmd->add_option("--target-spread", o->measure.target_spread,
                  "Sample until (p80 - p20) / median is under this")->capture_default_str();
  cmd->add_option("--time-cap-ms", o->measure.time_cap_ms, "Most kernel time spent sampling one variant")
      ->capture_default_str();
  cmd->add_option("--top", o->report.top, "Rows of the table")->capture_default_str();
  cmd->add_option("--out", o->report.out, "Write the JSON result to FILE (atomically)")->check(refuse_empty_path);
  cmd->add_flag("--json", o->report.json, "Print the JSON on stdout instead of the table");
  cmd->add_flag("--quiet,-q", o->report.quiet, "No table and no progress line");
  cmd->add_option("--jobs,-j", o->compile.jobs, "Parallel NVRTC compiles (default: all cores)");
  cmd->add_option("--cache-dir", o->compile.cache_dir,
                  "Compiled-kernel cache (default: $XDG_CACHE_HOME/tiletune or ~/.cache/tiletune)");
  cmd->add_option("--kernel-debug", o->compile.kernel_debug,
                  "Build the kernels for cuda-gdb and compute-sanitizer: lineinfo (source lines, the same code) or "
                  "full (-G, unoptimized); such runs stay out of the tuning database");
  cmd->add_flag("--no-cache", o->compile.no_cache, "Compile every variant afresh and store nothing");
  cmd->add_flag("--compile-all", o->compile.compile_all,
                "Offline plans: compile every variant, rasterization copies and those the model bounds out of the "
                "--top best included (by default they are reported as pruned, constraint model_bound)");
  cmd->add_option("--export", o->export_dir,
                  "Write the recommended variant (or each --only variant) into folder DIR as ID.cu, ID.cubin and "
                  "ID.json (how to launch it); see below")
      ->type_name("DIR")
      ->check(refuse_empty_path);
  cmd->add_option("--search", o->tuning.strategy,
                  "Which variants are timed, and how long: halving (the model drops the far-behind, a brief look "
                  "at the rest, longer looks at the best third, stop when the leader is clear of the noise), "
                  "exhaustive (every variant to the full budget), model (only the model's best 4)")
      ->capture_default_str();
  cmd->add_flag("--retune", o->tuning.retune, "Measure afresh (offline: plan with the model) even when the tuning database has this problem");
  cmd->add_option("--db", o->tuning.db,
                  "Tuning database (SQLite; default: tuning.sqlite3 beside the compile cache)");
  cmd->add_flag("--no-db", o->tuning.no_db, "Neither answer from nor store into the tuning database");
  cmd->add_option("--budget-s", o->tuning.budget_s,
                  "Suites: start no new problem after this many seconds (0: no budget); the tuning database "
                  "keeps what was measured, so the same command resumes")
      ->capture_default_str();
  cmd->footer(R"(
Examples:
  tiletune gemm --suite profiles/suites/llm.json --gpu h100-sxm --dry-run --out llm-plan.json
  tiletune gemm --m 4096 --n 4096 --k 4096 --dtype bf16 --layout nt --gpu h100-sxm --dry-run --out plan.json
  tiletune gemm --m 1000 --n 3000 --k 777 --dtype f32 --layout tn --gpu a100-sxm-80gb

Every variant of the search space for the dtype (simt for f32, mma.sync for
tf32/f16/bf16, and on H100/H200 also wgmma, compiled for sm_90a; split-K and
grouped-raster copies where the problem's shape calls for them) is compiled
with NVRTC for the GPU's architecture. Variants that
break a constraint are pruned with its name; compiled ones carry their
registers, shared memory, spills and occupancy; the rest are ranked by the
analytical model. With --gpu or --dry-run every figure is PREDICTED, and the
JSON says "mode": "predicted".

On a machine with a GPU (and no --dry-run) every variant is run in a worker
process, verified against cuBLASLt and timed with CUPTI beside cuBLASLt in the
same run ("mode": "measured"); a variant that faults or hangs gets
launch_error or timeout and the run goes on.

--export DIR writes the recommended variant, or each variant named by --only,
as three files in DIR (created if missing; existing files are replaced; each
file is written whole or not at all): ID.cu, the CUDA C++ source with its tile
constants fixed, which compiles alone with NVRTC or nvcc and says in its header
how to launch it; ID.cubin, the binary tiletune compiled from it (read its SASS
with scripts/show_sass.sh DIR/ID.cubin); ID.json (schema tiletune.kernel/1):
entry, arch, grid, block, cluster, dynamic shared memory, the parameters in
order with their values for this problem, registers and spills, and the
problem with its figures, measured or predicted. With --suite, each problem's
kernels go into a subfolder named after the problem (characters other than
letters, digits, '.', '_' and '-' become '-'). When a wanted variant is
not ok, nothing is written for it and the exit code is 1 if it failed on the
GPU (incorrect, launch_error, timeout), else 2 (pruned, compile_error,
resource_limit, or no variant ok at all).

--export compiles (and on a GPU measures) afresh instead of answering from
the tuning database, which keeps results, not kernels.

Every measured result goes into the tuning database (--db FILE, default
tuning.sqlite3 beside the compile cache), filed under the GPU model, driver,
CUDA runtime, tool and compiler versions and the problem. A repeat answers
from it at once and says so ("tuning_db" in the JSON); --retune measures
afresh, --no-db leaves it alone. An offline plan (--gpu NAME) answers from a
measured record of the same GPU model where there is one, and says so.
A suite stopped by --budget-s or an interruption resumes where it stopped.
Progress goes to stderr: a bar on a terminal, otherwise one line per step
and problem with the elapsed time and an estimate of the time left.

  tiletune db import profiles/measured/h100-2026-11-22/gemm/*.json
  tiletune gemm --m 4096 --n 4096 --k 4096 --dtype bf16 --layout nt --gpu h100-sxm

Exit codes: 0 done; 1 --export found no ok variant to write after a GPU run;
2 bad input (the message names it); 3 no GPU and no --gpu, a CUDA library is
missing, or the tuning database is damaged or not tiletune's (the message
names the file); 70 internal error.)");
  cmd->callback([o, &ctx] { run_gemm(*o, ctx); });
}

}  // namespace tiletune::cli
