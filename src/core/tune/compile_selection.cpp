#include "core/tune/compile_selection.hpp"
#include "core/tune/variant_ranking.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "core/gemm/family.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "core/tune/perf_model.hpp"

namespace tiletune {

std::string program_key(const tile_config& c) {
  tile_config base = c;
  base.raster_group = 0;
  base.raster_along_n = false;
  return base.id();
}

namespace {
double ranking_time_us(const compile_selection& how, const device_spec& d, const gemm_problem& p,
                       const tile_config& c, const occupancy_estimate& occ) {
  return how.ranking_time ? how.ranking_time(p, c, occ) : predict(d, p, c, occ).time_us;
}
}  // namespace

int register_floor(const tile_config& c) {
  // The block's BM x BN fp32 accumulators live in its registers (a variant that
  // spills is not ok and never ranked), so no thread can have fewer than
  // BM * BN / threads on average, and registers are allocated per thread alike
  // (setmaxnreg only moves them between warps of the block). All of them are
  // live at every multiply of the main loop, beside that multiply's operands.
  const int threads = std::max(1, c.threads());
  const int accumulators =
      static_cast<int>((static_cast<std::int64_t>(c.block_m) * c.block_n + threads - 1) / threads);
  return accumulators + (c.family.impl ? c.family->operand_registers(c) : 0);
}

double optimistic_time_us(const device_spec& d, const gemm_problem& p, const tile_config& c,
                          std::int64_t dynamic_smem_bytes, const compile_selection& how) {
  // Shared memory: static shared memory only adds to the tile's own.
  const int threads = std::max(1, c.threads());
  const occupancy_estimate best = estimate_occupancy(d, threads, register_floor(c), dynamic_smem_bytes);
  return ranking_time_us(how, d, p, c, best);
}

void assess_compiled(variant_result& v, compiled_kernel& k, const device_spec& d, const gemm_problem& p) {
  v.compiled = k.ok;
  v.from_cache = k.from_cache;
  v.compile_ms = k.compile_ms;
  if (!k.ok) {
    v.status = variant_status::compile_error;
    v.reason = "NVRTC could not compile it";
    v.compile_log = k.log.size() > 4000 ? k.log.substr(0, 4000) + "\n[log truncated]" : k.log;
    return;
  }
  v.resources = k.resources;
  v.cubin = std::move(k.cubin);
  v.smem_bytes += k.resources.static_smem_bytes;
  v.occupancy = estimate_occupancy(d, v.config.threads(), k.resources.registers, v.smem_bytes);
  if (k.resources.spill_bytes() > 0) {
    v.status = variant_status::resource_limit;
    v.constraint = "spills";
    v.reason = fmt::format("spills registers: {} bytes stored, {} loaded", k.resources.spill_store_bytes,
                           k.resources.spill_load_bytes);
  } else if (!k.resources.from_ptxas_report && k.resources.stack_bytes > 0) {
    // No report to split it: local memory is spills or a local array, both rejected.
    v.status = variant_status::resource_limit;
    v.constraint = "local_memory";
    v.reason = fmt::format("uses {} bytes of local memory per thread (spills or a local array)",
                           k.resources.stack_bytes);
  } else if (v.occupancy.blocks_per_sm == 0) {
    v.status = variant_status::resource_limit;
    v.constraint = "occupancy";
    v.reason = fmt::format("cannot be resident: {} registers x {} threads, {} bytes of shared memory",
                           k.resources.registers, v.config.threads(), v.smem_bytes);
  } else {
    v.status = variant_status::ok;
    v.predicted = predict(d, p, v.config, v.occupancy);
  }
}

namespace {

// The keep-th best predicted time among the ok variants, or +inf while fewer are ok.
double kth_best_us(const gemm_plan& plan, const compile_selection& how) {
  const int keep = how.keep;
  std::vector<double> times;
  for (const auto& v : plan.variants)
    if (v.status == variant_status::ok)
      times.push_back(ranking_time_us(how, plan.device, plan.problem, v.config, v.occupancy));
  if (keep <= 0 || times.size() < static_cast<std::size_t>(keep)) return std::numeric_limits<double>::infinity();
  std::nth_element(times.begin(), times.begin() + (keep - 1), times.end());
  return times[keep - 1];
}

}  // namespace

namespace {

// Jobs that compile to one program; the first job of each leads it.
struct program_groups {
  std::vector<std::size_t> leaders;
  std::vector<std::vector<std::size_t>> copies;  // per leader, the other jobs of its group
};

program_groups group_jobs(const gemm_plan& plan, const std::vector<std::size_t>& job_variant, std::size_t job_count,
                          const compile_selection& how) {
  program_groups groups;
  std::map<std::string, std::size_t> group_of;
  for (std::size_t j = 0; j < job_count; ++j) {
    const tile_config& c = plan.variants[job_variant[j]].config;
    const std::string key = how.share_raster_copies ? program_key(c) : std::to_string(j);
    const auto [it, fresh] = group_of.emplace(key, groups.leaders.size());
    if (fresh) {
      groups.leaders.push_back(j);
      groups.copies.emplace_back();
    } else {
      groups.copies[it->second].push_back(j);
    }
  }
  return groups;
}

// Compile order: best case first when bounded (stable: the search space's order among equals);
// fills each group's optimistic time when bounded.
std::vector<std::size_t> compile_order(const gemm_plan& plan, const program_groups& groups,
                                       const std::vector<std::size_t>& job_variant, const compile_selection& how,
                                       std::vector<double>& optimistic) {
  std::vector<std::size_t> order(groups.leaders.size());
  std::iota(order.begin(), order.end(), 0);
  optimistic.assign(groups.leaders.size(), 0.0);
  if (how.keep > 0) {
    for (std::size_t g = 0; g < groups.leaders.size(); ++g) {
      const variant_result& v = plan.variants[job_variant[groups.leaders[g]]];
      optimistic[g] = optimistic_time_us(plan.device, plan.problem, v.config, v.smem_bytes, how);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return optimistic[a] < optimistic[b]; });
  }
  return order;
}

// Compiles groups in batches and assesses their variants, counting as it goes.
struct group_compiler {
  gemm_plan& plan;
  std::vector<compile_job>& jobs;
  const std::vector<std::size_t>& job_variant;
  kernel_compiler& compiler;
  int threads;
  const compile_progress& progress;
  const program_groups& groups;
  const std::vector<std::size_t>& order;
  std::size_t done = 0, cached = 0;

  // Compiles the groups order[at, end) as one batch.
  void compile(std::size_t at, std::size_t end) {
    std::vector<compile_job> batch;
    for (std::size_t r = at; r < end; ++r) batch.push_back(std::move(jobs[groups.leaders[order[r]]]));
    const std::size_t done_before = done, cached_before = cached;
    auto results = compile_all(compiler, batch, threads, [&](std::size_t n, std::size_t, std::size_t hits) {
      if (progress) progress(done_before + n, order.size(), cached_before + hits);
    });
    for (std::size_t r = at; r < end; ++r) {
      const std::size_t g = order[r];
      compiled_kernel& k = results[r - at];
      ++done;
      if (k.from_cache) ++cached;
      for (std::size_t j : groups.copies[g]) {
        // The same program: its figures, no cubin (nothing launches an offline plan).
        compiled_kernel same{k.ok, k.log, {}, k.resources, 0.0, k.from_cache, k.internal_failure};
        variant_result& v = plan.variants[job_variant[j]];
        assess_compiled(v, same, plan.device, plan.problem);
        v.same_program_as = plan.variants[job_variant[groups.leaders[g]]].config.id();
      }
      assess_compiled(plan.variants[job_variant[groups.leaders[g]]], k, plan.device, plan.problem);
    }
  }
};

std::string bounded_reason(double optimistic_us, double bar, const compile_selection& how) {
  return fmt::format(
      "not ranked: at best (every block it allows resident) the model gives it {:.1f} us, slower than the {} best "
      "compiled variants (the {}th: {:.1f} us); --compile-all compiles and ranks it",
      optimistic_us, how.keep, how.keep, bar);
}

// Prunes every variant of the groups from order[at] on, bounded out by the model; returns how many.
std::size_t prune_bounded(gemm_plan& plan, const group_compiler& gc, std::size_t at,
                          const std::vector<double>& optimistic, double bar, const compile_selection& how) {
  std::size_t bounded_variants = 0;
  for (std::size_t r = at; r < gc.order.size(); ++r) {
    const std::size_t g = gc.order[r];
    std::vector<std::size_t> members = gc.groups.copies[g];
    members.push_back(gc.groups.leaders[g]);
    for (std::size_t j : members) {
      variant_result& v = plan.variants[gc.job_variant[j]];
      v.status = variant_status::pruned;
      v.constraint = "model_bound";
      v.reason = bounded_reason(optimistic[g], bar, how);
      ++bounded_variants;
    }
  }
  return bounded_variants;
}

// A plan's statuses do not depend on what the compile cache held or on the batches' size (the
// cores): a group compiled anyway (read from the cache, or in the last batch) whose optimistic time
// is behind the final bar is reported as the groups never compiled are, as it was before
// compiling. Returns how many variants.
std::size_t unrank_behind_the_bar(gemm_plan& plan, const group_compiler& gc, std::size_t compiled_groups,
                                  const std::vector<variant_result>& before, const std::vector<double>& optimistic,
                                  const compile_selection& how) {
  const double bar = kth_best_us(plan, how);
  std::size_t variants = 0;
  for (std::size_t r = 0; r < compiled_groups; ++r) {
    const std::size_t g = gc.order[r];
    if (!(optimistic[g] > bar) || times_tie(optimistic[g], bar)) continue;
    std::vector<std::size_t> members = gc.groups.copies[g];
    members.push_back(gc.groups.leaders[g]);
    for (std::size_t j : members) {
      const std::size_t i = gc.job_variant[j];
      plan.variants[i] = before[i];
      plan.variants[i].status = variant_status::pruned;
      plan.variants[i].constraint = "model_bound";
      plan.variants[i].reason = bounded_reason(optimistic[g], bar, how);
      ++variants;
    }
  }
  return variants;
}

void add_compile_notes(gemm_plan& plan, std::size_t shared, std::size_t bounded_variants, std::size_t job_count,
                       int keep) {
  if (shared > 0)
    plan.notes.push_back(fmt::format(
        "{} rasterization copies took the registers and shared memory of their tile's compiled program (the block "
        "order does not change the program; the measured path compiles each)",
        shared));
  if (bounded_variants > 0)
    plan.notes.push_back(fmt::format(
        "{} of {} variants not ranked: even at their best the model puts them behind the {} best compiled "
        "(--compile-all compiles every one)",
        bounded_variants, job_count, keep));
}

}  // namespace

void compile_variants(gemm_plan& plan, std::vector<compile_job>& jobs, const std::vector<std::size_t>& job_variant,
                      kernel_compiler& compiler, int threads, const compile_progress& progress,
                      const compile_selection& how) {
  const program_groups groups = group_jobs(plan, job_variant, jobs.size(), how);
  std::vector<double> optimistic;
  std::vector<std::size_t> order = compile_order(plan, groups, job_variant, how, optimistic);
  group_compiler gc{plan, jobs, job_variant, compiler, threads, progress, groups, order};
  const std::vector<variant_result> before = how.keep > 0 ? plan.variants : std::vector<variant_result>{};
  std::size_t at = 0;
  if (how.keep > 0) {
    // Programs already in the compile cache cost a file read, not a compile: assess them all
    // first, whatever their bound, so their exact times set the bar the others must beat (in a
    // suite, what earlier problems compiled). More variants assessed never changes the best
    // `keep`; the rest keep the order of their optimistic times.
    const auto first_uncached = std::stable_partition(order.begin(), order.end(), [&](std::size_t g) {
      return compiler.is_cached(jobs[groups.leaders[g]]);
    });
    const std::size_t cached_groups = static_cast<std::size_t>(first_uncached - order.begin());
    if (cached_groups > 0) gc.compile(0, cached_groups);
    at = cached_groups;
  }
  std::size_t bounded_variants = 0;
  const int cores = how.cores > 0 ? how.cores : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::size_t round = how.keep > 0 ? static_cast<std::size_t>(std::clamp(threads, 1, cores)) : order.size();
  while (at < order.size()) {
    const double bar = kth_best_us(plan, how);
    if (how.keep > 0 && optimistic[order[at]] > bar && !times_tie(optimistic[order[at]], bar)) {
      // Sorted by optimistic time: no group from here on can enter the best `keep` (a tie
      // could, on reuse or waves: variant_ranking.hpp).
      bounded_variants = prune_bounded(plan, gc, at, optimistic, bar, how);
      if (progress) progress(gc.done, gc.done, gc.cached);
      break;
    }
    const std::size_t end = std::min(order.size(), at + round);
    gc.compile(at, end);
    at = end;
  }
  if (how.keep > 0) bounded_variants += unrank_behind_the_bar(plan, gc, at, before, optimistic, how);
  plan.compiled += gc.done;
  plan.cache_hits += gc.cached;
  // The copies of the programs ranked (not of those compiled only because the cache held them).
  const auto shared = static_cast<std::size_t>(std::count_if(
      plan.variants.begin(), plan.variants.end(), [](const variant_result& v) { return !v.same_program_as.empty(); }));
  add_compile_notes(plan, shared, bounded_variants, jobs.size(), how.keep);
}

}  // namespace tiletune
