#include "core/tune/gemm_tuner.hpp"
#include "core/tune/variant_ranking.hpp"

#include <algorithm>
#include <cmath>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/compile/kernel_templates.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/measure/measurement.hpp"
#include "core/gemm/family.hpp"
#include "core/gemm/search_space.hpp"
#include "core/version.hpp"
#include "core/tune/calibration/kernel_revisions.hpp"

namespace tiletune {

compile_job make_compile_job(const tile_config& c, dtype t, layout l, const device_spec& d) {
  compile_job job;
  job.name = c.id();
  job.source = render_kernel_source(c, t, l);
  job.arch = c.family->compile_arch(d);
  job.options = {"-std=c++17", "--ptxas-options=-v"};
  for (auto& o : c.family->compile_options(c, t, l)) job.options.push_back(std::move(o));
  return job;
}

std::vector<std::string> kernel_debug_options(const std::string& level) {
  if (level.empty()) return {};
  if (level == "lineinfo") return {"-lineinfo"};
  if (level == "full") return {"-G"};
  // For compute-sanitizer's racecheck: every thread makes the mbarrier arrivals one thread makes, in
  // the kernels that define what TT_EVERY_THREAD_ARRIVES does: the same order, each access its own release.
  if (level == "racecheck") return {"-lineinfo", "-DTT_EVERY_THREAD_ARRIVES=1"};
  throw usage_error(fmt::format("--kernel-debug {} is invalid: lineinfo (source lines, the same code), full "
                                "(-G, unoptimized) or racecheck (lineinfo, and every thread makes the barrier "
                                "arrivals one thread makes)",
                                level));
}

void check_fits_memory(const gemm_problem& p, const device_spec& d) {
  const std::int64_t bytes = p.operand_bytes();
  if (d.memory_bytes > 0 && bytes > d.memory_bytes) {
    throw usage_error(fmt::format(
        "{} needs {:.1f} GiB for A, B and C, more than the {:.1f} GiB of the {}", p.describe(),
        static_cast<double>(bytes) / (1 << 30), static_cast<double>(d.memory_bytes) / (1 << 30),
        d.name));
  }
}

std::string why_no_variant_runs(const gemm_problem& p, const device_spec& d) {
  // A GPU with no math for the operand type (fp8 before sm_89): no family runs any variant of it.
  if (d.peak_tflops(p.type) <= 0)
    return fmt::format("{}: the {} ({}) has no {} math{}", p.describe(), d.name, d.arch(), to_string(p.type),
                       is_fp8(p.type) ? ": fp8 tensor cores came with sm_89 (Ada) and sm_90 (Hopper)" : "");
  struct reason {
    std::string family, constraint, first_message;
    std::size_t variants = 0;
  };
  std::vector<reason> why;
  for (kernel_family f : families_for(p.type))
    for (const tile_config& c : problem_search_space(f, p, d)) {
      const auto v = check_constraints(c, p, d);
      if (!v) return "";
      auto it = std::find_if(why.begin(), why.end(), [&](const reason& r) {
        return r.family == to_string(f) && r.constraint == v->constraint;
      });
      if (it == why.end()) it = why.insert(why.end(), reason{std::string(to_string(f)), v->constraint, v->message});
      ++it->variants;
    }
  std::vector<std::string> reasons;
  for (const reason& r : why)
    reasons.push_back(fmt::format("{} {} variant(s) ({}): {}", r.variants, r.family, r.constraint, r.first_message));
  return fmt::format("{}: no variant of any kernel family can run it on the {} ({}): {}", p.describe(), d.name,
                     d.arch(), fmt::join(reasons, "; "));
}

gemm_plan plan_gemm(const gemm_problem& p, const device_spec& d, kernel_compiler& compiler,
                    const plan_options& options) {
  validate(p);
  gemm_plan plan;
  plan.problem = p;
  plan.device = d;
  plan.compiler_version = compiler.version();

  std::vector<compile_job> jobs;
  std::vector<std::size_t> job_variant;
  const std::vector<std::string> debug_options = kernel_debug_options(options.kernel_debug);
  if (!debug_options.empty())
    plan.notes.push_back(fmt::format("kernels built for debugging ({}): their speed is not the release build's",
                                     fmt::join(debug_options, " ")));
  for (kernel_family f : families_for(p.type)) {
    for (const tile_config& c : problem_search_space(f, p, d)) {
      if (!options.only.empty() && std::find(options.only.begin(), options.only.end(), c.id()) == options.only.end())
        continue;
      variant_result v;
      v.config = c;
      v.smem_bytes = c.smem_bytes(p.type, p.layout);
      if (auto broken = check_constraints(c, p, d)) {
        v.status = variant_status::pruned;
        v.constraint = broken->constraint;
        v.reason = broken->message;
      } else {
        jobs.push_back(make_compile_job(c, p.type, p.layout, d));
        jobs.back().options.insert(jobs.back().options.end(), debug_options.begin(), debug_options.end());
        job_variant.push_back(plan.variants.size());
      }
      plan.variants.push_back(std::move(v));
    }
  }

  plan.selected = !options.only.empty();
  if (!options.only.empty()) {
    for (const auto& id : options.only) {
      const bool known = std::any_of(plan.variants.begin(), plan.variants.end(),
                                     [&](const variant_result& v) { return v.config.id() == id; });
      if (!known)
        throw usage_error(fmt::format("--only {}: no variant of that name in the {} search space", id,
                                      to_string(p.type)));
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  compile_variants(plan, jobs, job_variant, compiler, options.jobs, options.progress, options.selection);
  plan.compile_wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  // Best first; ties broken by reuse, waves, then resources (variant_ranking.hpp).
  rank_by_prediction(plan);
  return plan;
}

void compile_recommended_cubin(gemm_plan& plan, kernel_compiler& compiler, const plan_options& options) {
  const std::vector<std::string> debug_options = kernel_debug_options(options.kernel_debug);
  while (plan.recommended) {
    variant_result& v = plan.variants[*plan.recommended];
    if (v.status != variant_status::ok || !v.cubin.empty()) return;
    compile_job job = make_compile_job(v.config, plan.problem.type, plan.problem.layout, plan.device);
    job.options.insert(job.options.end(), debug_options.begin(), debug_options.end());
    compiled_kernel k = compiler.compile(job);
    ++plan.compiled;
    if (k.from_cache) ++plan.cache_hits;
    const kernel_resources& took = v.resources;
    if (!k.ok) {
      assess_compiled(v, k, plan.device, plan.problem);  // a compile error, named as any other
    } else if (k.resources.registers == took.registers && k.resources.static_smem_bytes == took.static_smem_bytes &&
               k.resources.spill_bytes() == took.spill_bytes()) {
      v.cubin = std::move(k.cubin);
      v.from_cache = k.from_cache;
      v.compile_ms = k.compile_ms;
      v.same_program_as.clear();  // its figures are now its own program's
      return;
    } else {
      v.status = variant_status::compile_error;
      v.reason = fmt::format("its own program ({} registers) is not the {} whose figures it took ({} registers)",
                             k.resources.registers, v.same_program_as, took.registers);
    }
    plan.notes.push_back(
        fmt::format("{} was recommended but its own compile failed ({}); the next best is", v.config.id(), v.reason));
    rank_by_prediction(plan);  // ok variants first: the next best is recommended, or none
  }
}

namespace {
// Triton's block sizes are powers of two (tl.arange) and at least 16 (tl.dot): a tile of 192
// columns, 8 rows (swap-AB, which Triton has not) or a K step of 8 is given as the nearest
// block Triton compiles, at least as large.
int triton_block(int size) {
  int b = 16;
  while (b < size) b *= 2;
  return b;
}

// A rounded tile's stages: as many of its larger buffers (BM x BK of A and BK x BN of B a stage) as fit
// where the tile's own stages did, at least 1. 128x192x64 in 5 stages, 200 KB, is 128x256x64 in 4: in 5
// it would ask 240 KB, past the H100's 227 KB for a block, which Triton refuses.
int triton_stages(const tile_config& c) {
  const auto per_stage = [](std::int64_t m, std::int64_t n, std::int64_t k) { return m * k + k * n; };
  const std::int64_t own = per_stage(c.block_m, c.block_n, c.block_k) * c.stages;
  const std::int64_t rounded = per_stage(triton_block(c.block_m), triton_block(c.block_n), triton_block(c.block_k));
  return static_cast<int>(std::clamp<std::int64_t>(own / rounded, 1, std::max(c.stages, 1)));
}
}  // namespace

nlohmann::json triton_config(const tile_config& c, dtype) {
  nlohmann::json j = {{"BLOCK_M", triton_block(c.block_m)},
                      {"BLOCK_N", triton_block(c.block_n)},
                      {"BLOCK_K", triton_block(c.block_k)},
                      {"num_warps", c.family->triton_num_warps(c)},
                      {"num_stages", triton_stages(c)}};
  // The Triton tutorial's matmul names: SPLIT_K slices of K (partials summed),
  // GROUP_SIZE_M block rows walked together; along N, the same with N.
  if (c.split_k > 1) j["SPLIT_K"] = c.split_k;
  if (c.raster_group > 0) j[c.raster_along_n ? "GROUP_SIZE_N" : "GROUP_SIZE_M"] = c.raster_group;
  if (c.cluster_m * c.cluster_n > 1) j["num_ctas"] = c.cluster_m * c.cluster_n;
  return j;
}

std::string triton_rounding(const tile_config& c) {
  std::string out;
  const std::pair<const char*, int> sizes[] = {{"BLOCK_M", c.block_m}, {"BLOCK_N", c.block_n}, {"BLOCK_K", c.block_k}};
  for (const auto& [name, size] : sizes)
    if (triton_block(size) != size) out += fmt::format("{}{} {} -> {}", out.empty() ? "" : ", ", name, size, triton_block(size));
  if (out.empty()) return out;
  out += ": Triton's blocks are powers of two, at least 16";
  if (const int stages = triton_stages(c); stages != c.stages)
    out += fmt::format("; num_stages {} -> {} keeps the larger buffers within the tile's shared memory", c.stages, stages);
  return out;
}

std::string triton_summary(const tile_config& c, dtype t) {
  const nlohmann::json j = triton_config(c, t);
  std::string out;
  for (const char* k : {"BLOCK_M", "BLOCK_N", "BLOCK_K", "SPLIT_K", "GROUP_SIZE_M", "GROUP_SIZE_N", "num_warps",
                        "num_stages", "num_ctas"})
    if (j.contains(k)) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, j[k].get<int>());
  if (const std::string r = triton_rounding(c); !r.empty()) out += " (" + r + ")";
  return out;
}

std::string cutlass_shape(const tile_config& c, dtype t) { return c.family->cutlass_shape(c, t); }

namespace {

nlohmann::json optional_number(double v, bool present) {
  return present ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// The figures every variant has: identity, status, resources, occupancy, the model's time.
nlohmann::json variant_base_json(const variant_result& v, const gemm_plan& plan) {
  const bool ok = v.status == variant_status::ok;
  const bool measured = v.measured.has_value();
  const double peak = plan.device.peak_tflops(plan.problem.type);
  const double time_us =
      measured && v.measured->timing.median_us > 0 ? v.measured->timing.median_us : v.predicted.time_us;
  const double tflops = time_us > 0 ? plan.problem.flops() / (time_us * 1e6) : 0;
  const double gbs = time_us > 0 ? static_cast<double>(plan.problem.least_traffic_bytes()) / (time_us * 1e3) : 0;
  return {
      {"id", v.config.id()},
      {"family", to_string(v.config.family)},
      {"tile", tile_to_json(v.config)},
      {"status", to_string(v.status)},
      {"rank", ok ? nlohmann::json(v.rank) : nlohmann::json(nullptr)},
      {"resources",
       {{"registers", v.compiled ? nlohmann::json(v.resources.registers) : nlohmann::json(nullptr)},
        {"smem_bytes", v.smem_bytes},
        {"spill_bytes", v.compiled ? nlohmann::json(v.resources.spill_bytes()) : nlohmann::json(nullptr)},
        {"stack_bytes", v.compiled ? nlohmann::json(v.resources.stack_bytes) : nlohmann::json(nullptr)},
        {"threads", v.config.threads()}}},
      {"occupancy", v.compiled ? nlohmann::json{{"blocks_per_sm", v.occupancy.blocks_per_sm},
                                                {"warps_per_sm", v.occupancy.warps_per_sm},
                                                {"limited_by", v.occupancy.limited_by}}
                               : nlohmann::json(nullptr)},
      {"median_us", nullptr},
      {"predicted_us", optional_number(v.predicted.time_us, v.predicted.time_us > 0)},
      {"tflops", optional_number(tflops, ok)},
      {"percent_of_peak", optional_number(100.0 * tflops / peak, ok && peak > 0)},
      // Memory-bound shapes (decode) speak bandwidth: the least traffic over the time.
      {"gbs", optional_number(gbs, ok && gbs > 0)},
      {"percent_of_bandwidth", optional_number(100.0 * gbs / plan.device.memory_bandwidth_gbs,
                                               ok && gbs > 0 && plan.device.memory_bandwidth_gbs > 0)},
      {"vs_reference", nullptr},
      {"max_rel_error", nullptr},
  };
}

// What a run on the GPU measured of it: timing, error against cuBLASLt, device memory.
void add_measured_figures(nlohmann::json& j, const variant_result& v, const gemm_plan& plan, std::int64_t scratch) {
  const auto& m = *v.measured;
  if (m.timing.samples > 0) {
    j["median_us"] = m.timing.median_us;
    j["timing"] = to_json(m.timing);
    j["timer"] = m.timer;
    j["sm_clock_mhz"] = m.sm_clock_mhz ? nlohmann::json(*m.sm_clock_mhz) : nlohmann::json(nullptr);
    if (plan.reference && plan.reference->timing.median_us > 0)
      j["vs_reference"] = plan.reference->timing.median_us / m.timing.median_us;
  }
  if (m.verified) {
    j["max_rel_error"] = optional_number(m.error.max_rel_error, std::isfinite(m.error.max_rel_error));
    j["rel_frobenius_error"] = optional_number(m.error.rel_frobenius, std::isfinite(m.error.rel_frobenius));
    j["error_bound"] = v.config.family->error_bound(v.config, plan.problem);
  }
  j["memory_bytes"] = plan.problem.operand_bytes() + scratch;
  // The GPU's own count of the variant's clusters at once, its grid capped there (the model's is an estimate).
  if (m.clusters_at_once > 0) j["clusters_at_once"] = m.clusters_at_once;
  // Timed again beside cuBLASLt: the time the search ranked it by, beside the other finalists'.
  if (v.in_search && v.in_search->timing.samples > 0)
    j["in_search"] = {{"median_us", v.in_search->timing.median_us},
                      {"timing", to_json(v.in_search->timing)},
                      {"sm_clock_mhz", v.in_search->sm_clock_mhz ? nlohmann::json(*v.in_search->sm_clock_mhz)
                                                                 : nlohmann::json(nullptr)}};
}

nlohmann::json variant_json(const variant_result& v, const gemm_plan& plan) {
  const bool ok = v.status == variant_status::ok;
  nlohmann::json j = variant_base_json(v, plan);
  // The scratch buffers its family asks for (split-K's partials): device memory beyond the operands.
  const std::int64_t scratch = v.config.family->scratch_bytes(v.config, plan.problem, plan.device);
  if (v.measured) add_measured_figures(j, v, plan, scratch);
  if (scratch > 0) j["resources"]["workspace_bytes"] = scratch;
  if (ok && v.predicted.time_us > 0) {
    j["model"] = {{"compute_us", v.predicted.compute_us},
                  {"memory_us", v.predicted.memory_us},
                  {"bound", v.predicted.bound},
                  {"blocks", v.predicted.blocks},
                  {"waves", v.predicted.waves},
                  {"wave_efficiency", v.predicted.wave_efficiency},
                  {"tile_efficiency", v.predicted.tile_efficiency}};
    if (v.predicted.fixup_us > 0) j["model"]["fixup_us"] = v.predicted.fixup_us;  // stream-K, split-K
    if (v.predicted.prologue_us > 0) j["model"]["prologue_us"] = v.predicted.prologue_us;  // K-major copies
    if (v.predicted.floor_us > 0) j["model"]["floor_us"] = v.predicted.floor_us;  // calibrated: the measured floor
    if (v.predicted.bound == "floor" && v.predicted.own_us > 0)
      j["model"]["own_us"] = v.predicted.own_us;  // the tile's own time under the floor: orders the variants it ties
    if (v.predicted.clock_fraction < 1)  // calibrated: the clock the power cap leaves a kernel this long
      j["model"]["sm_clock_mhz"] = v.predicted.clock_fraction * plan.device.boost_clock_mhz;
  }
  if (v.compiled || v.status == variant_status::compile_error)
    j["compile"] = {{"ms", v.compile_ms}, {"cached", v.from_cache}};
  if (!v.same_program_as.empty()) j["compile"]["same_program_as"] = v.same_program_as;
  if (!v.constraint.empty()) j["constraint"] = v.constraint;
  if (!v.reason.empty()) j["reason"] = v.reason;
  if (!v.compile_log.empty()) j["compile_log"] = v.compile_log;
  if (v.search_stage) j["search_stage"] = to_string(*v.search_stage);
  if (v.search_stage == search_stage::not_timed) {  // measured mode: no measured figure, and no predicted one in its place
    j["tflops"] = nullptr;
    j["percent_of_peak"] = nullptr;
  }
  return j;
}

// cuBLASLt's figures, or why there are none.
nlohmann::json reference_json(const gemm_plan& plan) {
  nlohmann::json ref = {{"provider", "cublaslt"}, {"median_us", nullptr}, {"tflops", nullptr}};
  if (plan.mode == plan_mode::predicted) ref["note"] = "not measured: predicted mode runs no kernel";
  if (plan.reference) {
    const auto& r = *plan.reference;
    if (r.status == variant_status::ok && r.timing.median_us > 0) {
      ref["median_us"] = r.timing.median_us;
      ref["tflops"] = plan.problem.flops() / (r.timing.median_us * 1e6);
      ref["timing"] = to_json(r.timing);
      ref["algorithm"] = r.algorithm;
      ref["timer"] = r.timer;
      if (r.sm_clock_mhz) ref["sm_clock_mhz"] = *r.sm_clock_mhz;
      if (plan.reference_first_us) {
        ref["first_median_us"] = *plan.reference_first_us;
        ref["note"] =
            "timed again beside the recommended variant, same budget, in the order cuBLASLt, variant, variant, "
            "cuBLASLt (geometric means); first_median_us: before the search";
      }
    } else {
      ref["note"] = "cuBLASLt could not be timed: " + r.message;
    }
  }
  return ref;
}

// The variants (at most max_variants listed, and the recommended one always: a measured search
// may recommend a variant within the noise of faster ones, ranked below them) and how many ended
// in each status.
void add_variants(nlohmann::json& j, const gemm_plan& plan, std::size_t max_variants) {
  constexpr int statuses = variant_status_count;
  std::size_t counts[statuses] = {};
  j["variants"] = nlohmann::json::array();
  for (std::size_t i = 0; i < plan.variants.size(); ++i) {
    const auto& v = plan.variants[i];
    ++counts[static_cast<int>(v.status)];
    if (j["variants"].size() < max_variants || plan.recommended == i) j["variants"].push_back(variant_json(v, plan));
  }
  if (plan.variants.size() > max_variants)  // the rest are counted in summary, not listed
    j["variants_listed"] = {{"listed", j["variants"].size()}, {"of", plan.variants.size()}, {"by", "--top"}};
  nlohmann::json summary = nlohmann::json::object();
  for (int s = 0; s < statuses; ++s)
    summary[std::string(to_string(static_cast<variant_status>(s)))] = counts[s];
  j["summary"] = summary;
}

// The recommended variant in short, with its Triton and CUTLASS equivalents; null when none.
nlohmann::json gemm_recommendation_json(const gemm_plan& plan) {
  if (!plan.recommended) return nullptr;
  const auto& v = plan.variants[*plan.recommended];
  const auto vj = variant_json(v, plan);
  nlohmann::json rec = {
      {"id", v.config.id()},
      {"family", to_string(v.config.family)},
      {"tile", tile_to_json(v.config)},
      {"tflops", vj["tflops"]},
      {"percent_of_peak", vj["percent_of_peak"]},
      {"gbs", vj["gbs"]},
      {"percent_of_bandwidth", vj["percent_of_bandwidth"]},
      {"predicted_us", vj["predicted_us"]},
      {"median_us", vj["median_us"]},
      {"vs_reference", vj["vs_reference"]},
      {"triton", triton_config(v.config, plan.problem.type)},
      {"cutlass", cutlass_shape(v.config, plan.problem.type)},
      {"basis", plan.mode == plan_mode::predicted ? "analytical model: predicted, not measured"
                                         : "measured"},
  };
  if (v.measured) rec["noise"] = v.measured->timing.spread;
  if (vj.contains("in_search")) rec["in_search"] = vj["in_search"];
  if (const std::size_t tie = top_tie_size(plan); plan.mode == plan_mode::predicted && tie > 1)
    rec["tied_with"] = tie - 1;
  return rec;
}

}  // namespace

nlohmann::json result_body(const gemm_plan& plan, std::size_t max_variants) {
  nlohmann::json j;
  j["problem"] = to_json(plan.problem);
  j["problem"]["flops"] = plan.problem.flops();
  j["problem"]["operand_bytes"] = plan.problem.operand_bytes();
  j["reference"] = reference_json(plan);
  if (plan.mode == plan_mode::measured) {
    j["memory"] = {{"peak_device_bytes", plan.peak_device_bytes}, {"operand_bytes", plan.problem.operand_bytes()}};
    j["notes"] = plan.notes;
  }
  if (plan.search) j["search"] = to_json(*plan.search);
  if (plan.mode == plan_mode::measured && plan.l2_flush) j["l2_flush"] = to_string(*plan.l2_flush);
  if (plan.mode != plan_mode::measured) {
    std::vector<std::string> notes = plan.notes;
    if (const std::string tie = top_tie_note(plan); !tie.empty()) notes.push_back(tie);
    if (!notes.empty()) j["notes"] = notes;
  }
  j["compile"] = {{"arch", plan.device.compile_arch()},
                  {"variants_compiled", plan.compiled},
                  {"cache_hits", plan.cache_hits},
                  {"wall_ms", plan.compile_wall_ms}};
  add_variants(j, plan, max_variants);
  j["recommendation"] = gemm_recommendation_json(plan);
  return j;
}

nlohmann::json result_header(const std::string& schema, const device_spec& device, plan_mode mode,
                             const std::string& compiler_version, const run_info& run) {
  nlohmann::json j;
  j["schema"] = schema;
  j["tool"] = {{"name", "tiletune"},
               {"version", tool_version},
               {"commit", source_commit()},
               {"kernels_as_of", kernels_as_of()},  // calibration's test of a timing's kernel
               {"nvrtc", compiler_version},
               {"command_line", run.command_line},
               {"date", run.date_utc}};
  j["device"] = to_json(device);
  j["mode"] = to_string(mode);
  return j;
}

nlohmann::json to_json(const gemm_plan& plan, const run_info& run) {
  nlohmann::json j = result_header("tiletune.gemm/1", plan.device, plan.mode, plan.compiler_version, run);
  j.update(result_body(plan, plan.variants.size()));
  return j;
}

}  // namespace tiletune
