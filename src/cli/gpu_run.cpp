#include "cli/output.hpp"
#include "cli/gpu_run.hpp"

#include <chrono>
#include <filesystem>

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "core/measure/l2_flush_note.hpp"
#include "core/errors.hpp"
#include "core/measure/gemm_measure.hpp"

namespace tiletune::cli {

compiler_stack::compiler_stack(const std::string& cache_dir, bool no_cache, bool no_cache_offered) {
  if (no_cache) return;
  const std::filesystem::path dir = cache_dir.empty() ? default_cache_dir() : std::filesystem::path(cache_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const bool usable = !ec && std::filesystem::is_directory(dir) && access(dir.c_str(), R_OK | W_OK | X_OK) == 0;
  if (!usable) {
    const std::string why = ec ? ec.message() : "not a writable folder";
    // A folder the user named must work; the default one only costs repeats their speed.
    if (!cache_dir.empty())
      throw usage_error(fmt::format("--cache-dir {}: cannot keep compiled kernels there ({}); give a writable "
                                    "folder{}",
                                    cache_dir, why, no_cache_offered ? ", or --no-cache" : ""));
    tell("tiletune: the compile cache {} cannot be written ({}); compiling without it\n", dir.string(),
               why);
    return;
  }
  cached_ = std::make_unique<cached_compiler>(nvrtc_, compile_cache(dir));
}

void measure_on_gpu(gemm_plan& plan, const device_choice& device, const measure_settings& o,
                    const std::vector<std::string>& worker_argv, const std::string& prefix, progress_line& progress) {
  worker_setup setup;
  setup.problem = plan.problem;
  setup.device = device.index;
  setup.seed = o.seed;
  setup.sampling.target_spread = o.target_spread;
  setup.sampling.time_cap_ms = o.time_cap_ms;
  setup.l2_flush = o.l2_flush;
  if (!o.verify_only) plan.l2_flush = o.l2_flush;  // a run that times nothing says nothing of it
  if (plan.l2_flush)
    if (std::string note = l2_flush_note(*plan.l2_flush, plan.problem, plan.device); !note.empty())
      plan.notes.push_back(std::move(note));
  if (o.verify_only) {
    setup.sampling.warmup = 0;
    setup.sampling.min_samples = 0;
    setup.sampling.max_samples = 0;
  }
  const scratch_dir scratch("tiletune-run");
  request_timeout timeout;
  timeout.fixed_s = o.variant_timeout_s;
  subprocess_backend backend(worker_argv, setup, scratch.path(), timeout);
  const auto strategy = make_search_strategy(o.search);
  measure_options options;
  options.verify_only = o.verify_only;
  options.strategy = strategy.get();
  options.full = setup.sampling;
  options.keep_going = o.keep_going;
  const auto started = std::chrono::steady_clock::now();
  measure_plan(
      plan, backend,
      [&](std::size_t done, std::size_t total, const std::string& id) {
        if (o.on_progress) o.on_progress();
        const int width = 30;
        const int filled = total ? static_cast<int>(width * done / total) : width;
        // The time left at the pace so far: an upper bound under a search that stops early.
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        const std::string left = done > 0 && done < total
                                     ? fmt::format(", at most ~{:.0f} s left", took / static_cast<double>(done) *
                                                                                  static_cast<double>(total - done))
                                     : "";
        progress.update(fmt::format("{}{} [{}{}] {}/{}{} {}", prefix, o.verify_only ? "verifying" : "measuring",
                                    std::string(filled, '#'), std::string(width - filled, '.'), done, total, left,
                                    id));
      },
      options);
  const auto ready = nlohmann::json::parse(backend.ready_line(), nullptr, false);
  if (ready.is_object() && ready.value("timer", "") != "cupti") {
    const std::string why = "CUPTI is unavailable (" + ready.value("timer_note", std::string("unknown")) +
                            "); kernels were timed with CUDA events";
    plan.notes.push_back(why);
    progress.finish();
    tell("tiletune: {}\n", why);
  }
  if (backend.restarts() > 0)
    plan.notes.push_back(fmt::format("the GPU worker was restarted {} time(s) after faults or timeouts",
                                     backend.restarts()));
}

void check_variant_timeout(const std::optional<double>& seconds) {
  // (A day at most: the worker's deadline is a count of milliseconds, which a value near 1e13 s
  // would overflow.)
  if (seconds && !(*seconds > 0 && *seconds <= 86400))
    throw usage_error(fmt::format("--variant-timeout {} is invalid: seconds, above 0 up to 86400 (a day)", *seconds));
}

}  // namespace tiletune::cli
