#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/gpu_run.hpp"
#include "cli/option_checks.hpp"
#include "cli/output.hpp"
#include "core/errors.hpp"
#include "core/results/json_file.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "core/results/result_compare.hpp"
#include "cuda/device_query.hpp"

namespace tiletune::cli {

namespace {

struct report_options {
  std::string out;
  std::string junit;
  bool json = false;
};

std::string format_comparison(const comparison& c) {
  text_table t({"verdict", "problem", "basis", "base", "new", "change %", "noise %", "detail"});
  for (const auto& r : c.rows) {
    t.add_row({std::string(to_string(r.result)), r.label, r.basis.empty() ? "-" : r.basis,
               r.base_value ? fmt::format("{:.4g}", *r.base_value) : "-",
               r.new_value ? fmt::format("{:.4g}", *r.new_value) : "-",
               r.basis.empty() ? "-" : fmt::format("{:+.1f}", 100 * r.change), fmt::format("{:.1f}", 100 * r.noise),
               r.detail.empty() ? "-" : r.detail});
  }
  std::string out = fmt::format("{} -> {} (tolerance {:.1f}%{})\n\n", c.base_path, c.new_path,
                                100 * c.options.tolerance, c.options.absolute ? ", raw time" : "");
  out += t.render();
  for (const auto& k : c.only_in_new) out += fmt::format("new problem (not in the baseline): {}\n", k);
  for (const auto& n : c.notes) out += "note: " + n + "\n";
  out += c.failed() ? "\nFAILED: a problem is slower, incorrect or missing\n" : "\nOK\n";
  return out;
}

void emit(const comparison& c, const report_options& r) {
  if (!r.out.empty()) write_file_atomically(r.out, json_text(to_json(c)) + "\n");
  if (!r.junit.empty()) write_file_atomically(r.junit, to_junit_xml(c));
  if (r.json)
    std::fputs((json_text(to_json(c)) + "\n").c_str(), stdout);
  else
    std::fputs(format_comparison(c).c_str(), stdout);
}

void add_report_flags(CLI::App* cmd, report_options& r) {
  cmd->add_option("--out", r.out, "Write the verdicts as JSON to FILE")->check(refuse_empty_path);
  cmd->add_option("--junit", r.junit, "Write a JUnit XML report (one test case per problem) to FILE")
      ->check(refuse_empty_path);
  cmd->add_flag("--json", r.json, "Print the JSON on stdout instead of the table");
}

void check_report_paths(const report_options& r, const std::vector<named_input>& inputs) {
  if (!r.out.empty()) check_output_path(r.out, "--out", inputs);
  if (!r.junit.empty()) {
    std::vector<named_input> with_out = inputs;
    with_out.push_back({"--out", r.out});  // both reports to one file: one would be lost
    check_output_path(r.junit, "--junit", with_out);
  }
}

}  // namespace

void add_compare_command(CLI::App& app, run_context& ctx) {
  struct options {
    std::string base, fresh;
    compare_options compare;
    report_options report;
  };
  auto o = std::make_shared<options>();
  auto* cmd = app.add_subcommand("compare", "Compare two gemm result files offline: SAME, FASTER, SLOWER, NOISY, "
                                            "INCORRECT, MISSING or ANSWERED per problem");
  cmd->add_option("BASE", o->base, "The baseline result (tiletune gemm --out, or a suite result)")->required();
  cmd->add_option("NEW", o->fresh, "The result to judge")->required();
  cmd->add_option("--tolerance", o->compare.tolerance, "Slowdown allowed, as a fraction (0.05 = 5%)")
      ->capture_default_str()
      ->check(fraction_below_one);
  cmd->add_flag("--absolute", o->compare.absolute, "Judge raw time, not the ratio to cuBLAS from the same run");
  cmd->add_flag("--allow-device-mismatch", o->compare.allow_device_mismatch,
                "Compare results recorded on different GPU models");
  cmd->add_flag("--allow-mode-mismatch", o->compare.allow_mode_mismatch,
                "Compare a measured result with a predicted one (not a regression test)");
  add_report_flags(cmd, o->report);
  cmd->footer(R"(
Examples:
  tiletune compare profiles/baselines/h100-sxm.json new.json
  tiletune compare base.json new.json --tolerance 0.03 --junit compare.xml

A problem is SLOWER when its speed dropped by more than the tolerance and by
more than the measured noise of both runs; NOISY when the change is beyond the
tolerance but within the noise; ANSWERED when the baseline has no result for
it (no variant ran there) and NEW has one; INCORRECT when a variant of NEW
failed verification, in a problem the baseline lacks too. By default the speed is the ratio
to cuBLAS measured in the same run (robust to clocks and thermal state);
results without one (predicted plans) are compared on time.

Exit codes: 0 no regression; 1 a problem is SLOWER, INCORRECT or MISSING from
NEW; 2 a file is unreadable, malformed or truncated (the message gives the
place), the files share no problem, or one is a prediction and the other a
measurement (unless --allow-mode-mismatch), or a problem's two timings
emptied the L2 differently (gemm --l2-flush); 3 the files come from different
GPUs.)");
  cmd->callback([o, &ctx] {
    check_report_paths(o->report, {{"BASE", o->base}, {"NEW", o->fresh}});
    const result_file base = load_result_file(o->base);
    const result_file fresh = load_result_file(o->fresh);
    const comparison c = compare_results(base, fresh, o->compare);
    emit(c, o->report);
    ctx.exit_code = c.failed() ? exit_check_failed : exit_ok;
  });
}

namespace {

// What check's flags set.
struct check_options {
  std::string baseline;
  compare_options compare;
  report_options report;
  std::optional<int> device;
  measure_settings measure;
  std::string cache_dir;
};

// The local GPU to re-measure on: there must be one, of the baseline's model unless mismatches are allowed.
device_choice check_device(const check_options& o, const result_file& base, run_context& ctx) {
  const local_devices local = ctx.host.devices();
  if (local.devices.empty())
    throw environment_error(fmt::format("check re-measures on a local GPU and there is none: {}. To compare two "
                                        "result files offline, use `tiletune compare BASE NEW`.",
                                        local.why_none));
  const device_choice device = choose_device(std::nullopt, o.device, ctx.host);
  if (!o.compare.allow_device_mismatch &&
      (!same_device_model(base, device.spec.preset, device.spec.name) || device.spec.arch() != base.device_arch))
    throw environment_error(fmt::format("{} was recorded on {} ({}), this GPU is {} ({}); pass "
                                        "--allow-device-mismatch to check anyway",
                                        o.baseline, base.device_name, base.device_arch, device.spec.name,
                                        device.spec.arch()));
  return device;
}

// Each baseline problem's recommended variant, compiled and measured afresh, as a suite result.
nlohmann::json remeasure(const check_options& o, const result_file& base, const device_choice& device,
                         run_context& ctx) {
  compiler_stack compilers(o.cache_dir, false, /*no_cache_offered=*/false);
  check_compiler_supports(compilers.get(), device.spec.compute_capability, device.spec.name);
  progress_line progress(true);
  const run_info run{ctx.command_line, utc_now_iso()};
  nlohmann::json fresh;
  std::size_t i = 0;
  for (const auto& entry : base.entries) {
    ++i;
    if (!entry.has_result) continue;  // nothing to re-measure; compare reports it
    plan_options options;
    options.jobs = 1;
    options.only = {entry.variant_id};
    gemm_plan plan = plan_gemm(entry.problem, device.spec, compilers.get(), options);
    measure_settings settings = o.measure;  // timed as the baseline timed it: its L2 flush
    settings.l2_flush = l2_flush_mode_from_string(entry.l2_flush).value_or(l2_flush_mode::write);
    measure_on_gpu(plan, device, settings, ctx.host.worker_argv(),
                   fmt::format("problem {}/{} ({}): ", i, base.entries.size(), entry.label), progress);
    if (fresh.is_null())
      fresh = result_header("tiletune.gemm-suite/1", device.spec, plan.mode, plan.compiler_version, run);
    auto body = result_body(plan, 1);
    body["name"] = entry.label;
    fresh["results"].push_back(std::move(body));
  }
  progress.finish();
  return fresh;
}

void run_check(const check_options& o, run_context& ctx) {
  check_report_paths(o.report, {{"--baseline", o.baseline}});
  check_variant_timeout(o.measure.variant_timeout_s);
  const result_file base = load_result_file(o.baseline);
  // What the comparison would refuse, refused before any GPU time is spent on re-measuring.
  if (base.mode != "measured")
    throw usage_error(fmt::format("{} is {}: check re-measures, so give it a measured baseline (compare two "
                                  "predicted results with tiletune compare)",
                                  o.baseline, base.mode.empty() ? "of no mode" : base.mode));
  const device_choice device = check_device(o, base, ctx);
  const nlohmann::json fresh = remeasure(o, base, device, ctx);
  if (fresh.is_null()) throw usage_error(fmt::format("{}: no problem has a recommended variant", o.baseline));
  const comparison c = compare_results(base, result_file_from_json(fresh, "this run"), o.compare);
  emit(c, o.report);
  ctx.exit_code = c.failed() ? exit_check_failed : exit_ok;
}

}  // namespace

void add_check_command(CLI::App& app, run_context& ctx) {
  auto o = std::make_shared<check_options>();
  o->measure.search = "exhaustive";  // a regression gate times every variant it re-measures to the full budget
  o->compare.mode_mismatch_flag = false;  // check has no --allow-mode-mismatch
  auto* cmd = app.add_subcommand("check", "Re-measure a baseline's problems on the local GPU and fail on a regression");
  cmd->add_option("--baseline", o->baseline, "A result recorded on this GPU model (e.g. profiles/baselines/<gpu>.json)")->required();
  cmd->add_option("--tolerance", o->compare.tolerance, "Slowdown allowed, as a fraction (0.05 = 5%)")
      ->capture_default_str()
      ->check(fraction_below_one);
  cmd->add_flag("--absolute", o->compare.absolute, "Judge raw time, not the ratio to cuBLAS");
  cmd->add_flag("--allow-device-mismatch", o->compare.allow_device_mismatch, "Accept a baseline of another GPU model");
  cmd->add_option("--device", o->device, "Local GPU I (default: 0)")->check(whole_non_negative);
  cmd->add_option("--seed", o->measure.seed, "Seed of the random inputs (0 or more)")
      ->capture_default_str()
      ->check(whole_non_negative);  // else "-1" wraps to 2^64-1 unsaid
  cmd->add_option("--variant-timeout", o->measure.variant_timeout_s,
                  "Seconds before a run is stopped (default: 5 s plus 4x the model's estimate of that run)");
  cmd->add_flag("--keep-going", o->measure.keep_going,
                "Within a problem, run the other variants even after one hung or failed to launch (by default its "
                "family, or the variants with its mechanisms, are skipped)");
  cmd->add_option("--cache-dir", o->cache_dir, "Compiled-kernel cache");
  add_report_flags(cmd, o->report);
  cmd->footer(R"(
Example (a CI job on a GPU runner):
  tiletune check --baseline profiles/baselines/h100-sxm.json --junit check.xml

For each problem of the baseline, re-compiles its recommended variant,
verifies it against cuBLASLt and times both in the same run, then judges the
change as `tiletune compare` does (by the ratio to cuBLAS unless --absolute).
Each problem is timed with the L2 emptied as the baseline's timing emptied it
(gemm --l2-flush; write where the baseline does not say).

Exit codes: 0 no regression; 1 a problem is SLOWER, INCORRECT or MISSING; 2 a
bad baseline file; 3 no GPU, or a baseline from another GPU model.)");
  cmd->callback([o, &ctx] {
    run_check(*o, ctx);
  });
}

}  // namespace tiletune::cli
