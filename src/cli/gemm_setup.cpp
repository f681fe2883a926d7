// The gemm command's setup: the problems its flags name, the checks of its
// flags, the GPUs it deals to, and what the planner and the measurement are given.
#include "cli/gemm_setup.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <thread>

#include "core/errors.hpp"
#include "core/export/kernel_export.hpp"
#include "core/tune/calibration/calibration_cache.hpp"
#include "core/tune/calibration/shipped_calibration.hpp"
#include "core/tune/calibration/kernel_revisions.hpp"
#include "core/tune/fleet/suite_shard.hpp"
#include "core/train/model_gemms.hpp"
#include "cli/gemm_devices.hpp"
#include "cli/gemm_tuning.hpp"

namespace tiletune::cli {

namespace {

// --groups G --n --k with --m-per-group, or --tokens and --top-k (and --routing).
// alpha, beta, and where the flags name them, the scaling mode and C's type.
void set_scalars_and_types(const gemm_options& o, gemm_problem& p) {
  p.alpha = o.problem.alpha;
  p.beta = o.problem.beta;
  if (o.problem.scaling) p.scaling = parse_scaling_mode(*o.problem.scaling);
  if (o.problem.out) p.out = normal_output(p.type, parse_output_type(*o.problem.out));
}

gemm_problem grouped_problem_from_flags(const gemm_options& o) {
  const int count = *o.groups.count;
  if (count < 1) throw usage_error(fmt::format("--groups {} is invalid: at least 1", count));
  for (const auto& [flag, value] : {std::pair{"--n", o.problem.n}, {"--k", o.problem.k}})
    if (!value) throw usage_error(fmt::format("{} is missing: a grouped GEMM needs --n and --k", flag));
  const group_layout l = parse_group_layout(o.groups.layout);
  gemm_groups g;
  if (!o.groups.m_per_group.empty()) {
    if (o.groups.top_k || o.groups.routing)
      throw usage_error("--top-k and --routing route --tokens: with --m-per-group the rows are given");
    std::vector<std::int64_t> rows = parse_group_rows(o.groups.m_per_group);
    if (static_cast<int>(rows.size()) != count)
      throw usage_error(fmt::format("--m-per-group {} gives the rows of {} group{}, --groups says {}: one count per group",
                                    o.groups.m_per_group, rows.size(), rows.size() == 1 ? "" : "s", count));
    g = groups_of_rows(std::move(rows), l);
  } else {
    if (o.model.tokens_given() && o.model.tokens < 1)
      throw usage_error(fmt::format("--tokens {} is invalid: at least 1", o.model.tokens));
    if (o.groups.top_k && !o.model.tokens_given())
      throw usage_error(fmt::format("--groups {} --top-k {} routes --tokens T to the groups: give --tokens, 1 or more",
                                    count, *o.groups.top_k));
    if (o.model.tokens_given() && !o.groups.top_k)  // the tokens given: only the experts each takes is missing
      throw usage_error(fmt::format("--groups {} --tokens {} routes each token to --top-k K of the groups: give --top-k",
                                    count, o.model.tokens));
    if (!o.model.tokens_given() || !o.groups.top_k)
      throw usage_error(fmt::format(
          "--groups {} needs each group's rows: --m-per-group R,R,..., or --tokens T --top-k K", count));
    g = groups_of_routing(o.model.tokens, *o.groups.top_k, count, parse_routing(o.groups.routing.value_or("uniform")),
                          l);
  }
  gemm_problem p = grouped_problem(std::move(g), *o.problem.n, *o.problem.k, parse_dtype(o.problem.dtype),
                                   parse_layout(o.problem.layout));
  set_scalars_and_types(o, p);
  // A grouped problem's m is what its groups hold: too many rows are the flags' that gave them.
  if (p.m > std::numeric_limits<std::int32_t>::max())
    throw usage_error(fmt::format("{}: the groups hold {} rows in all, at most {}",
                                  o.groups.m_per_group.empty() ? fmt::format("--tokens {} --top-k {}", o.model.tokens,
                                                                             *o.groups.top_k)
                                                               : "--m-per-group " + o.groups.m_per_group,
                                  p.m, std::numeric_limits<std::int32_t>::max()));
  validate(p);
  return p;
}

gemm_problem problem_from_flags(const gemm_options& o) {
  if (o.groups.count) return grouped_problem_from_flags(o);
  if (!o.problem.m && !o.problem.n && !o.problem.k)
    throw usage_error(
        "give the problem with --m, --n and --k, or a list of problems with --suite FILE");
  for (const auto& [flag, value] :
       {std::pair{"--m", o.problem.m}, {"--n", o.problem.n}, {"--k", o.problem.k}})
    if (!value) throw usage_error(fmt::format("{} is missing: give all of --m, --n and --k", flag));
  gemm_problem p;
  p.m = *o.problem.m;
  p.n = *o.problem.n;
  p.k = *o.problem.k;
  p.batch = o.problem.batch;
  p.type = parse_dtype(o.problem.dtype);
  p.layout = parse_layout(o.problem.layout);
  p.scaling = default_scaling(p.type);
  set_scalars_and_types(o, p);
  validate(p);
  return p;
}

}  // namespace

gemm_work work_of(const gemm_options& o) {
  gemm_work w;
  if (o.model.tokens_given() && o.model.name.empty() && !o.groups.count)
    throw usage_error(fmt::format("--tokens {} needs --model (a model's step) or --groups (tokens routed to experts)",
                                  o.model.tokens));
  if (o.groups.routing && o.model.name.empty() && !o.groups.count)
    throw usage_error(fmt::format("--routing {} routes tokens to experts: give --groups, or --model for a "
                                  "mixture-of-experts model's experts",
                                  *o.groups.routing));
  // --budget-s stops a suite between its problems: one problem has no between. Said, not refused
  // (a script may pass the same flags to every run).
  if (o.tuning.budget_s > 0 && !o.is_suite())
    tell("tiletune: --budget-s {} has no effect on one problem: it stops a suite between its problems\n",
         o.tuning.budget_s);
  if (!o.shard.empty()) {
    if (!o.is_suite())
      throw usage_error(fmt::format("--shard {} splits a suite: give --suite FILE or --model", o.shard));
    w.shard = parse_shard(o.shard);
  }
  if (!o.model.name.empty()) {
    // A step's GEMMs take --tokens rows (a batch's tokens): past 32 bits no kernel indexes them.
    if (o.model.tokens > std::numeric_limits<std::int32_t>::max())
      throw usage_error(fmt::format("--tokens {} is too large: at most {} (the rows of a step's GEMMs)",
                                    o.model.tokens, std::numeric_limits<std::int32_t>::max()));
    const std::optional<expert_routing> routing =
        o.groups.routing ? std::optional(parse_routing(*o.groups.routing)) : std::nullopt;
    model_gemm_suite m = model_gemms(load_model(o.model.name), o.model.tokens, parse_model_phase(o.model.phase),
                                     parse_dtype(o.problem.dtype), o.model.tensor_parallel, routing,
                                     parse_fp8_recipe(o.model.fp8),
                                     o.model.sequences);
    w.suite = std::move(m.suite);
    w.counts = std::move(m.counts);
    w.notes = std::move(m.notes);
  } else if (!o.suite.empty()) {
    w.suite = load_suite(o.suite);
  } else {
    w.suite.problems.push_back({"", problem_from_flags(o)});
    return w;
  }
  w.suite_total = w.suite.problems.size();
  if (w.shard) w.suite = select_shard(w.suite, *w.shard);
  return w;
}

std::filesystem::path database_of(const gemm_options& o) {
  if (o.tuning.no_db) return {};
  return o.tuning.db.empty() ? default_tuning_db_path() : std::filesystem::path(o.tuning.db);
}

std::vector<named_input> gemm_inputs(const gemm_options& o) {
  std::vector<named_input> inputs = model_config_inputs(o.model.name);
  inputs.push_back({"--suite", o.suite});
  inputs.push_back({"--db", database_of(o)});
  // Under --no-db the default database is not read, but it is no output's to replace either.
  if (o.tuning.no_db) inputs.push_back({"the default tuning database", default_tuning_db_path(), false});
  return inputs;
}

void check_run_flags(const gemm_options& o) {
  if (o.report.top < 1)
    throw usage_error(fmt::format("--top {} is invalid: it must be at least 1", o.report.top));
  if (o.compile.jobs < 0)
    throw usage_error(fmt::format("--jobs {} is invalid: 0 (all cores) or more", o.compile.jobs));
  if (!(o.tuning.budget_s >= 0 && o.tuning.budget_s <= 604800))
    throw usage_error(fmt::format("--budget-s {} is invalid: seconds, 0 (no budget) up to 604800 (a week)",
                                  o.tuning.budget_s));
  if (o.tuning.no_db && !o.tuning.db.empty())
    throw usage_error(fmt::format("--db {} and --no-db exclude each other", o.tuning.db));
  if (o.tuning.no_db && o.tuning.store_plans)
    throw usage_error("--store-plans and --no-db exclude each other");
  if (o.tuning.no_db && o.tuning.db_full) throw usage_error("--db-full and --no-db exclude each other");
  make_search_strategy(o.tuning.strategy);  // an unknown name fails before any work
  if (!o.report.out.empty()) check_output_path(o.report.out, "--out", gemm_inputs(o));
  if (o.tuning.store_plans) refuse_read_only(database_of(o), "--db");
  if (!o.export_dir.empty()) check_export_dir(o.export_dir);
  if (!(o.measure.target_spread > 0 && o.measure.target_spread < 1))
    throw usage_error(fmt::format("--target-spread {} is invalid: a fraction such as 0.01",
                                  o.measure.target_spread));
  if (!(o.measure.time_cap_ms > 0 && o.measure.time_cap_ms <= 3600000))
    throw usage_error(fmt::format("--time-cap-ms {} is invalid: milliseconds, above 0 up to 3600000 (an hour)",
                                  o.measure.time_cap_ms));
  check_variant_timeout(o.measure.variant_timeout_s);
}

std::vector<device_choice> devices_to_deal_to(const gemm_options& o, const run_context& ctx) {
  if (o.device.devices.empty()) return {};
  const std::string flag = "--devices " + o.device.devices;
  if (o.device.gpu)
    throw usage_error(fmt::format(
        "{} and --gpu {} exclude each other: --gpu plans offline for a preset, --devices "
        "measures on local GPUs",
        flag, *o.device.gpu));
  if (o.device.index)
    throw usage_error(flag + " and --device exclude each other: --devices names every GPU used");
  if (!o.is_suite())
    throw usage_error(flag + " deals a suite's problems to GPUs: give --suite FILE or --model");
  if (o.report.dry_run)
    throw usage_error(flag + " measures on GPUs and --dry-run launches nothing: drop one");
  return choose_devices(o.device.devices, ctx.host);
}

measure_settings settings_of(const gemm_options& o) {
  measure_settings settings;
  settings.seed = o.measure.seed;
  settings.variant_timeout_s = o.measure.variant_timeout_s;
  settings.keep_going = o.measure.keep_going;
  settings.target_spread = o.measure.target_spread;
  settings.time_cap_ms = o.measure.time_cap_ms;
  const std::optional<l2_flush_mode> flush = l2_flush_mode_from_string(o.measure.l2_flush);
  if (!flush) throw usage_error(fmt::format("--l2-flush {} is unknown: use write, read or none", o.measure.l2_flush));
  settings.l2_flush = *flush;
  settings.verify_only = o.report.verify_only;
  settings.search = o.tuning.strategy;
  return settings;
}

std::optional<model_calibration> calibration_for(const tuning_db* db, const device_choice& device,
                                                 progress_line& progress, const std::filesystem::path& cache_dir) {
  std::optional<model_calibration> calibration;
  if (db) {
    try {
      // Measured records only: stored plans (--store-plans) calibrate nothing. A fit of the same
      // records is read from the cache rather than fitted again.
      const std::string model = device_model_of(device.spec);
      const std::string key = calibration_cache_key(db->file(), db->calibration_fingerprint(model), model);
      if (!cache_dir.empty()) calibration = cached_calibration(cache_dir, key);
      if (!calibration) {
        std::vector<nlohmann::json> measured = db->calibration_inputs(model);
        // Timings of kernels this build has revised since time other kernels (kernel_revisions.hpp).
        const superseded_timings old = mark_superseded(measured);
        if (old.variants > 0)
          progress.note(fmt::format("the calibration leaves out the timings of {} variants in {}, of kernels this "
                                    "build has revised since they were measured{}",
                                    old.describe(), db->file().string(),
                                    old.results == measured.size() ? ": none is left, the built-in calibration stands"
                                                                   : ""));
        if (!measured.empty() && old.results < measured.size()) {
          calibration = fit_calibration(measured);
          if (!cache_dir.empty()) keep_calibration(cache_dir, key, *calibration);
        }
      }
      if (calibration) calibration->source = db->file().string();
    } catch (const std::exception& e) {
      progress.note(fmt::format("the model stays uncalibrated: a record in {} is unreadable ({})",
                                db->file().string(), e.what()));
    }
  }
  std::optional<model_calibration> built_in = shipped_calibration_for(device.spec);
  if (!calibration) return built_in;
  // What the database's timings do not measure (a family or dtype never tuned here, or only with kernels
  // revised since) is predicted with the built-in figures, not the assumed ones.
  if (built_in)
    if (const auto taken = take_missing_figures(*calibration, *built_in); !taken.empty())
      calibration->source +=
          fmt::format("; {} from the built-in calibration ({})", describe_figures(taken), built_in->source);
  return calibration;
}

plan_options plan_options_of(const gemm_options& o, bool measure,
                             const std::optional<model_calibration>& calibration,
                             const device_spec& spec) {
  plan_options options;
  options.only = o.only;
  options.kernel_debug = o.compile.kernel_debug;
  options.jobs =
      o.compile.jobs > 0 ? o.compile.jobs : std::max(1u, std::thread::hardware_concurrency());

  // An offline plan launches nothing: one program per tile and its rasterization copies, and only
  // the variants the model says can still reach the table's --top rows (a suite's table, --model's
  // too, shows each problem's recommendation: only what can still reach the best). Every one where
  // a GPU runs them, and for --only and --compile-all. --export compiles the recommended variant's
  // own cubin afterwards (compile_recommended_cubin).
  if (!measure && o.only.empty() && !o.compile.compile_all) {
    options.selection = {.share_raster_copies = true, .keep = o.is_suite() ? 1 : o.report.top, .ranking_time = {}};
    // The bound follows the model the plan is finally ranked by.
    if (calibration)
      options.selection.ranking_time = [cal = *calibration, d = spec](
                                           const gemm_problem& p, const tile_config& c,
                                           const occupancy_estimate& occ) {
        const auto r = calibrated_prediction(cal, d, p, c, occ);
        return r ? r->time_us : predict(d, p, c, occ).time_us;
      };
  }
  return options;
}

}  // namespace tiletune::cli
