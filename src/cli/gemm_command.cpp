#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/gpu_run.hpp"
#include "cli/output.hpp"
#include "core/errors.hpp"
#include "core/gemm_suite.hpp"
#include "core/gemm_tuner.hpp"
#include "core/kernel_export.hpp"

namespace tiletune::cli {

namespace {

struct gemm_options {
  struct {
    std::int64_t m = 0, n = 0, k = 0, batch = 1;
    std::string dtype = "f32", layout = "nn";
    double alpha = 1.0, beta = 0.0;
  } problem;
  struct {
    std::optional<std::string> gpu;
    std::optional<int> index;
  } device;
  struct {
    std::uint64_t seed = 1;
    double variant_timeout_s = 60;
    double target_spread = 0.01;
    double time_cap_ms = 2000;
  } measure;
  struct {
    int jobs = 0;
    std::string cache_dir;
    bool no_cache = false;
  } compile;
  std::string suite;
  std::vector<std::string> only;
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
    const auto tri = triton_config(v.config, plan.problem.type);
    out += fmt::format("\nrecommended: {}\n  triton:  BLOCK_M={} BLOCK_N={} BLOCK_K={} num_warps={} num_stages={}\n"
                       "  cutlass: {}\n",
                       v.config.id(), tri["BLOCK_M"].get<int>(), tri["BLOCK_N"].get<int>(), tri["BLOCK_K"].get<int>(),
                       tri["num_warps"].get<int>(), tri["num_stages"].get<int>(),
                       cutlass_shape(v.config, plan.problem.type));
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
  std::size_t counts[7] = {};
  for (const auto& v : plan.variants) ++counts[static_cast<int>(v.status)];
  std::string tally;
  for (int i = 0; i < 7; ++i)
    if (counts[i]) tally += fmt::format("{}{} {}", tally.empty() ? "" : ", ", counts[i], to_string(static_cast<variant_status>(i)));
  std::string out = fmt::format("{} on {} ({}), PREDICTED by the analytical model, not measured\n",
                                plan.problem.describe(), plan.device.name, plan.device.arch());
  out += fmt::format("{} variants: {}; compiled {} ({} from cache) in {:.1f} s\n\n", plan.variants.size(), tally,
                     plan.compiled, plan.cache_hits, plan.compile_wall_ms / 1000);
  out += t.render();
  if (plan.recommended) {
    const auto& v = plan.variants[*plan.recommended];
    const auto tri = triton_config(v.config, plan.problem.type);
    out += fmt::format("\nrecommended: {} (predicted {:.1f} TFLOP/s)\n  triton:  BLOCK_M={} BLOCK_N={} "
                       "BLOCK_K={} num_warps={} num_stages={}\n  cutlass: {}\n",
                       v.config.id(), v.predicted.tflops, tri["BLOCK_M"].get<int>(), tri["BLOCK_N"].get<int>(),
                       tri["BLOCK_K"].get<int>(), tri["num_warps"].get<int>(), tri["num_stages"].get<int>(),
                       cutlass_shape(v.config, plan.problem.type));
  } else {
    out += "\nno variant can run this problem on this GPU; the JSON says why for each\n";
  }
  return out;
}

gemm_problem problem_from_flags(const gemm_options& o) {
  if (o.problem.m == 0 && o.problem.n == 0 && o.problem.k == 0)
    throw usage_error("give the problem with --m, --n and --k, or a list of problems with --suite FILE");
  gemm_problem p;
  p.m = o.problem.m;
  p.n = o.problem.n;
  p.k = o.problem.k;
  p.batch = o.problem.batch;
  p.type = parse_dtype(o.problem.dtype);
  p.layout = parse_layout(o.problem.layout);
  p.alpha = o.problem.alpha;
  p.beta = o.problem.beta;
  validate(p);
  return p;
}

std::string format_suite_table(const gemm_suite& suite, const std::vector<gemm_plan>& plans) {
  const bool measured = !plans.empty() && plans[0].mode == "measured";
  text_table t({"problem", "shape", "recommended", measured ? "TFLOP/s" : "pred TFLOP/s", "% peak", "vs cuBLAS",
                "ok variants"});
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const auto& plan = plans[i];
    const double peak = plan.device.peak_tflops(plan.problem.type);
    std::size_t ok = 0;
    for (const auto& v : plan.variants) ok += v.status == variant_status::ok;
    if (plan.recommended) {
      const auto& v = plan.variants[*plan.recommended];
      const bool measured = v.measured && v.measured->timing.median_us > 0;
      const double tflops = measured ? plan.problem.flops() / (v.measured->timing.median_us * 1e6) : v.predicted.tflops;
      const bool ref = measured && plan.reference && plan.reference->timing.median_us > 0;
      t.add_row({suite.problems[i].name, plan.problem.describe(), v.config.id(), fmt::format("{:.1f}", tflops),
                 peak > 0 ? fmt::format("{:.0f}", 100 * tflops / peak) : "-",
                 ref ? fmt::format("{:.2f}", plan.reference->timing.median_us / v.measured->timing.median_us) : "-",
                 std::to_string(ok)});
    } else {
      t.add_row({suite.problems[i].name, plan.problem.describe(), "none", "-", "-", "-", "0"});
    }
  }
  return fmt::format("suite {} on {} ({}), {}\n\n", suite.name,
                     plans.empty() ? "" : plans[0].device.name, plans.empty() ? "" : plans[0].device.arch(),
                     measured ? "MEASURED" : "PREDICTED by the analytical model, not measured") +
         t.render();
}

// Writes the recommended variant (or each --only variant) of every plan under
// --export DIR (a subfolder per problem for a suite). Returns the exit code:
// 0, 1 when a wanted variant failed on the GPU, 2 when one cannot run at all.
int export_kernels(const gemm_options& o, const gemm_suite& suite, const std::vector<gemm_plan>& plans,
                   const run_info& run) {
  std::vector<export_file> files;
  std::vector<std::string> written;
  std::set<std::string> folders;
  bool failed_on_gpu = false, cannot_run = false;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const gemm_plan& plan = plans[i];
    std::string folder;
    if (!o.suite.empty()) {
      folder = export_folder_name(suite.problems[i].name);
      if (!folders.insert(folder).second) folders.insert(folder += fmt::format("-{}", i + 1));
      folder += "/";
    }
    const auto chosen = variants_to_export(plan, o.only);
    if (chosen.empty()) {
      for (const auto& v : plan.variants)
        failed_on_gpu |= v.status == variant_status::incorrect || v.status == variant_status::launch_error ||
                         v.status == variant_status::timeout;
      cannot_run = true;
      fmt::print(stderr, "tiletune: --export: nothing to export for {}: no variant is ok\n", plan.problem.describe());
    }
    for (const variant_result* v : chosen) {
      if (v->status != variant_status::ok) {
        const bool on_gpu = v->status == variant_status::incorrect || v->status == variant_status::launch_error ||
                            v->status == variant_status::timeout;
        (on_gpu ? failed_on_gpu : cannot_run) = true;
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
  gemm_suite suite;
  if (!o.suite.empty()) {
    if (o.problem.m || o.problem.n || o.problem.k)
      throw usage_error("--suite and --m/--n/--k exclude each other: a suite lists its own problems");
    suite = load_suite(o.suite);
  } else {
    suite.problems.push_back({"", problem_from_flags(o)});
  }
  if (o.report.top < 1) throw usage_error(fmt::format("--top {} is invalid: it must be at least 1", o.report.top));
  if (o.compile.jobs < 0) throw usage_error(fmt::format("--jobs {} is invalid: it must be at least 1", o.compile.jobs));
  if (!o.report.out.empty()) check_output_path(o.report.out);
  if (!o.export_dir.empty()) check_export_dir(o.export_dir);

  const device_choice device = choose_device(o.device.gpu, o.device.index);
  for (const auto& sp : suite.problems) check_fits_memory(sp.problem, device.spec);
  const bool measure = device.live && !o.report.dry_run;
  if (o.report.verify_only && !device.live)
    throw usage_error("--verify-only runs variants on a local GPU; with --gpu NAME nothing runs");
  if (!(o.measure.target_spread > 0 && o.measure.target_spread < 1))
    throw usage_error(fmt::format("--target-spread {} is invalid: a fraction such as 0.01", o.measure.target_spread));
  if (!(o.measure.variant_timeout_s > 0))
    throw usage_error(fmt::format("--variant-timeout {} is invalid: seconds, above 0", o.measure.variant_timeout_s));

  compiler_stack compilers(o.compile.cache_dir, o.compile.no_cache);
  kernel_compiler* compiler = &compilers.get();

  measure_settings settings;
  settings.seed = o.measure.seed;
  settings.variant_timeout_s = o.measure.variant_timeout_s;
  settings.target_spread = o.measure.target_spread;
  settings.time_cap_ms = o.measure.time_cap_ms;
  settings.verify_only = o.report.verify_only;
  progress_line progress(!o.report.quiet);
  plan_options options;
  options.only = o.only;
  options.jobs = o.compile.jobs > 0 ? o.compile.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::vector<gemm_plan> plans;
  for (std::size_t i = 0; i < suite.problems.size(); ++i) {
    const std::string prefix =
        suite.problems.size() > 1 ? fmt::format("problem {}/{} ({}): ", i + 1, suite.problems.size(), suite.problems[i].name) : "";
    options.progress = [&](std::size_t done, std::size_t total, std::size_t cached_hits) {
      progress.update(fmt::format("{}compiling variants for {}: {}/{} ({} from cache)", prefix, device.spec.arch(),
                                  done, total, cached_hits));
    };
    plans.push_back(plan_gemm(suite.problems[i].problem, device.spec, *compiler, options));
    if (measure) measure_on_gpu(plans.back(), device, settings, prefix, progress);
  }
  progress.finish();

  const run_info run{ctx.command_line, utc_now_iso()};
  nlohmann::json j;
  if (o.suite.empty()) {
    j = to_json(plans[0], run);
  } else {
    j = result_header("tiletune.gemm-suite/1", device.spec, plans[0].mode, plans[0].compiler_version, run);
    j["suite"] = {{"name", suite.name}, {"file", o.suite}};
    j["results"] = nlohmann::json::array();
    for (std::size_t i = 0; i < plans.size(); ++i) {
      auto r = result_body(plans[i], static_cast<std::size_t>(o.report.top));
      r["name"] = suite.problems[i].name;
      j["results"].push_back(std::move(r));
    }
  }
  if (!o.report.out.empty()) write_file_atomically(o.report.out, j.dump(2) + "\n");
  if (o.report.json) {
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
  } else if (!o.report.quiet) {
    std::fputs((o.suite.empty() ? format_table(plans[0], o.report.top) : format_suite_table(suite, plans)).c_str(),
               stdout);
    if (!o.report.out.empty()) fmt::print("wrote {}\n", o.report.out);
  }
  for (const auto& plan : plans)
    if (!plan.recommended)
      fmt::print(stderr, "tiletune: no variant of {} can run on {}\n", plan.problem.describe(), device.spec.name);
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
  cmd->add_option("--gpu", o->device.gpu, "Plan for a GPU preset without touching a GPU (see `tiletune devices`)");
  cmd->add_option("--device", o->device.index, "Use local GPU I (default: 0)");
  cmd->add_flag("--dry-run", o->report.dry_run, "Compile, prune and rank with the model; launch nothing");
  cmd->add_option("--only", o->only, "Keep only these variant ids (e.g. mma_128x128x32_w2x2_s3)")->delimiter(',');
  cmd->add_flag("--verify-only", o->report.verify_only,
                "On a GPU: check every variant against cuBLASLt without timing; the model ranks them");
  cmd->add_option("--seed", o->measure.seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_option("--variant-timeout", o->measure.variant_timeout_s,
                  "Seconds before a variant's run is stopped and marked timeout")->capture_default_str();
  cmd->add_option("--target-spread", o->measure.target_spread,
                  "Sample until (p80 - p20) / median is under this")->capture_default_str();
  cmd->add_option("--time-cap-ms", o->measure.time_cap_ms, "Most kernel time spent sampling one variant")
      ->capture_default_str();
  cmd->add_option("--top", o->report.top, "Rows of the table")->capture_default_str();
  cmd->add_option("--out", o->report.out, "Write the JSON result to FILE (atomically)");
  cmd->add_flag("--json", o->report.json, "Print the JSON on stdout instead of the table");
  cmd->add_flag("--quiet,-q", o->report.quiet, "No table and no progress line");
  cmd->add_option("--jobs,-j", o->compile.jobs, "Parallel NVRTC compiles (default: all cores)");
  cmd->add_option("--cache-dir", o->compile.cache_dir,
                  "Compiled-kernel cache (default: $XDG_CACHE_HOME/tiletune or ~/.cache/tiletune)");
  cmd->add_flag("--no-cache", o->compile.no_cache, "Compile every variant afresh and store nothing");
  cmd->add_option("--export", o->export_dir,
                  "Write the recommended variant (or each --only variant) into folder DIR as ID.cu, ID.cubin and "
                  "ID.json (how to launch it); see below")
      ->type_name("DIR");
  cmd->footer(R"(
Examples:
  tiletune gemm --suite profiles/suites/llm.json --gpu h100-sxm --dry-run --out llm-plan.json
  tiletune gemm --m 4096 --n 4096 --k 4096 --dtype bf16 --layout nt --gpu h100-sxm --dry-run --out plan.json
  tiletune gemm --m 1000 --n 3000 --k 777 --dtype f32 --layout tn --gpu a100-sxm-80gb

Every variant of the search space for the dtype (simt for f32, mma.sync for
tf32/f16/bf16) is compiled with NVRTC for the GPU's architecture. Variants that
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

Exit codes: 0 done; 1 --export found no ok variant to write after a GPU run;
2 bad input (the message names it); 3 no GPU and no --gpu, or a CUDA library
is missing; 70 internal error.)");
  cmd->callback([o, &ctx] { run_gemm(*o, ctx); });
}

}  // namespace tiletune::cli
