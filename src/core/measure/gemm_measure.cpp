#include "core/measure/gemm_measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/gemm/family.hpp"
#include "core/tune/variant_ranking.hpp"

namespace tiletune {

namespace fs = std::filesystem;

double timeout_for(const measure_request& r, const worker_setup& setup, const request_timeout& t) {
  if (t.fixed_s) return *t.fixed_s;
  if (!(r.predicted_us > 0)) return t.unpredicted_s;
  const sampling_policy& p = r.sampling ? *r.sampling : setup.sampling;
  const double kernel_s = r.predicted_us * 1e-6;
  const double launches = static_cast<double>(p.warmup + p.max_samples) + (r.verify ? 1 : 0);
  // Each sample also flushes the L2 and waits for its timer: 100 us is generous.
  const double sampling_s =
      std::min(p.time_cap_ms * 1e-3 + kernel_s * static_cast<double>(p.warmup + 11), launches * kernel_s) +
      launches * 100e-6;
  const gemm_problem& q = setup.problem;
  // Copying C back and checking it: about 20 ns an element on one core.
  const double check_s = r.verify ? static_cast<double>(q.m) * static_cast<double>(q.n) *
                                        static_cast<double>(q.batch) * 20e-9
                                  : 0;
  return t.floor_s + t.multiple * (sampling_s + p.warmup_ms * 1e-3 + check_s);
}

subprocess_backend::subprocess_backend(std::vector<std::string> worker_argv, worker_setup setup,
                                       fs::path scratch_dir, request_timeout timeout, double setup_timeout_s)
    : argv_(std::move(worker_argv)),
      setup_(std::move(setup)),
      scratch_(std::move(scratch_dir)),
      timeout_(timeout),
      setup_timeout_s_(setup_timeout_s) {}

subprocess_backend::~subprocess_backend() = default;

void subprocess_backend::ensure_worker() {
  if (worker_ && worker_->running()) return;
  if (started_once_) ++restarts_;
  started_once_ = true;
  worker_ = std::make_unique<worker_process>(argv_);
  worker_->start();
  // A worker that ends at once (a program that cannot run) may be gone before its setup is
  // written or after: either way it could not start, and says why on stderr.
  const bool accepted = worker_->write_line(to_json(setup_).dump());
  const auto ready = accepted ? worker_->read_line(setup_timeout_s_)
                              : worker_process::read_result{worker_process::read_status::closed, {}};
  nlohmann::json j;
  if (ready.status == worker_process::read_status::line) j = nlohmann::json::parse(ready.text, nullptr, false);
  if (ready.status != worker_process::read_status::line || !j.is_object() || !j.value("ready", false)) {
    const std::string why = j.is_object() && j.contains("error") ? j["error"].get<std::string>()
                            : ready.status == worker_process::read_status::timeout
                                ? fmt::format("no answer in {:.0f} s", setup_timeout_s_)
                                : (accepted ? "it ended: " : "it ended before reading its setup: ") + worker_->stop();
    const std::string tail = worker_->stderr_tail();
    worker_->stop();
    throw environment_error(fmt::format("the GPU worker could not start: {}{}", why, tail.empty() ? "" : "\n" + tail));
  }
  ready_line_ = ready.text;
}

measure_response subprocess_backend::measure(const measure_request& request, const std::string& cubin) {
  ensure_worker();
  measure_request r = request;
  if (!cubin.empty()) {
    const fs::path path = scratch_ / (request.id + ".cubin");
    std::ofstream(path, std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    r.cubin_path = path.string();
  }
  measure_response out;
  out.id = request.id;
  if (!worker_->write_line(to_json(r).dump())) {
    out.status = variant_status::launch_error;
    out.message = "the worker had ended: " + worker_->stop() + "\n" + worker_->stderr_tail();
    return out;
  }
  const double timeout_s = timeout_for(request, setup_, timeout_);
  const auto answer = worker_->read_line(timeout_s);
  switch (answer.status) {
    case worker_process::read_status::line: {
      const auto j = nlohmann::json::parse(answer.text, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        out.status = variant_status::launch_error;
        out.message = "the worker answered garbage: " + answer.text.substr(0, 200);
        worker_->stop();
        return out;
      }
      out = measure_response_from_json(j);
      // A sticky CUDA error ends the worker after it answers. Reaped now, it cannot take the
      // next request with it (written to a worker still on its way out, that request would be
      // blamed for the exit); the next request starts a fresh one.
      if (out.worker_exits) worker_->stop();
      return out;
    }
    case worker_process::read_status::timeout:
      worker_->stop();
      out.status = variant_status::timeout;
      out.message = fmt::format("no result within {:.1f} s ({}); the worker was stopped", timeout_s,
                                timeout_.fixed_s ? "--variant-timeout"
                                : request.predicted_us > 0
                                    ? fmt::format("{:.0f}x the model's estimate of this run plus {:.0f} s; "
                                                  "--variant-timeout sets it",
                                                  timeout_.multiple, timeout_.floor_s)
                                    : "the limit for runs with no estimate");
      return out;
    case worker_process::read_status::closed:
      break;
  }
  const std::string how = worker_->stop();
  out.status = variant_status::launch_error;
  out.message = fmt::format("the worker {} while running it: {}", how, worker_->stderr_tail(600));
  return out;
}

namespace {

// How the worker runs one variant of the plan: its launch on this device as its
// family describes it, and its tile (a family's tensor maps are built from it).
measure_request variant_request(const gemm_plan& plan, const variant_result& v) {
  measure_request r;
  r.op = measure_op::variant;
  r.id = v.config.id();
  r.launch = v.config.family->describe_launch(v.config, plan.problem, plan.device);
  r.config = v.config;
  r.predicted_us = v.predicted.time_us;
  r.error_bound = v.config.family->error_bound(v.config, plan.problem);
  return r;
}

// What a hang or a fault suspends for the rest of the plan, so that a broken kernel costs one
// failure, not one per variant (each a timeout or a worker restart):
// - a timeout, or a launch error of the family's plain kernel: the whole family;
// - a launch error of a variant with optional mechanisms (the family's `mechanisms`): the
//   variants that use all of them, since one broken mechanism says nothing of the others (on the
//   H200 one faulting TMA-store epilogue would otherwise have taken its whole family with it);
//   the family's third such failure suspends the whole family.
class family_guard {
 public:
  explicit family_guard(bool keep_going) : keep_going_(keep_going) {}
  // True (and the variant marked skipped) when a failure suspended it.
  bool skips(variant_result& v) const {
    const auto it = failures_.find(v.config.family);
    if (it == failures_.end()) return false;
    std::vector<std::string> uses = v.config.family->mechanisms(v.config);
    std::sort(uses.begin(), uses.end());
    for (const failure& f : it->second)
      if (f.whole_family || std::includes(uses.begin(), uses.end(), f.mechanisms.begin(), f.mechanisms.end())) {
        v.status = variant_status::skipped;
        v.reason = "not run: " + f.what;
        return true;
      }
    return false;
  }
  void saw(const variant_result& v) {
    if (keep_going_ || (v.status != variant_status::timeout && v.status != variant_status::launch_error)) return;
    auto& seen = failures_[v.config.family];
    failure f;
    f.mechanisms = v.config.family->mechanisms(v.config);
    std::sort(f.mechanisms.begin(), f.mechanisms.end());
    f.whole_family = v.status == variant_status::timeout || f.mechanisms.empty() || seen.size() + 1 >= max_scoped;
    const std::string after = fmt::format("after {} ended in {} ({}); --keep-going runs the rest anyway", v.config.id(),
                                          to_string(v.status), v.reason.substr(0, 200));
    f.what = f.whole_family ? "the family was suspended " + after
                            : fmt::format("its family's variants with {} were suspended {}", fmt::join(f.mechanisms, "+"), after);
    seen.push_back(std::move(f));
  }

 private:
  static constexpr std::size_t max_scoped = 3;  // the third failure of a family suspends all of it
  struct failure {
    std::vector<std::string> mechanisms;  // sorted
    bool whole_family = false;
    std::string what;
  };
  bool keep_going_;
  std::map<kernel_family, std::vector<failure>> failures_;
};
// A worker answers ok, incorrect or timeout; anything else is a launch error.
variant_status status_from(variant_status s) {
  return s == variant_status::ok || s == variant_status::incorrect || s == variant_status::timeout
             ? s
             : variant_status::launch_error;
}

void record_answer(gemm_plan& plan, variant_result& v, measure_response answer) {
  // A timing-only rerun keeps the verdict of the verified first run.
  if (!answer.verified && v.measured && v.measured->verified) {
    answer.verified = true;
    answer.error = v.measured->error;
  }
  v.measured = std::move(answer);
  plan.peak_device_bytes = std::max(plan.peak_device_bytes, v.measured->device_bytes);
  v.status = status_from(v.measured->status);
  if (v.status == variant_status::incorrect) {
    v.reason = fmt::format("relative error {:.3g} exceeds the {} bound {:.2g}", v.measured->error.rel_frobenius,
                           to_string(plan.problem.type), v.config.family->error_bound(v.config, plan.problem));
    if (v.measured->error.non_finite)
      v.reason = fmt::format("{} non-finite outputs (NaN or Inf)", v.measured->error.non_finite);
  } else if (v.status != variant_status::ok) {
    v.reason = v.measured->message;
  }
}

// The variants the search may time: every ok one, with the model's time.
std::vector<search_candidate> search_candidates(const gemm_plan& plan) {
  std::vector<search_candidate> candidates;
  for (std::size_t i = 0; i < plan.variants.size(); ++i) {
    const auto& v = plan.variants[i];
    if (v.status != variant_status::ok) continue;
    search_candidate c;
    c.variant = i;
    c.id = v.config.id();
    c.predicted_us = v.predicted.time_us > 0 ? v.predicted.time_us : 1e30;
    candidates.push_back(std::move(c));
  }
  return candidates;
}

// What the search spent per stage, and which variants it timed and verified.
struct search_tally {
  struct stage_cost {
    double wall_ms = 0, kernel_ms = 0;
  };
  std::map<search_stage, stage_cost> costs;
  std::set<std::size_t> timed;
  std::set<std::size_t> verified;
};

// Puts the tally into the report, and each candidate's stage (or why it was dropped) into its variant.
void close_search(gemm_plan& plan, const std::vector<search_candidate>& candidates, search_tally& tally,
                  search_report& report) {
  for (auto& s : report.stages) {
    s.wall_ms = tally.costs[s.name].wall_ms;
    s.kernel_ms = tally.costs[s.name].kernel_ms;
    report.kernel_ms += s.kernel_ms;
  }
  report.timed = tally.timed.size();
  report.verified = tally.verified.size();
  for (const auto& c : candidates) {
    auto& v = plan.variants[c.variant];
    v.search_stage = c.stage;
    if (v.status == variant_status::ok && !c.dropped_because.empty()) v.reason = c.dropped_because;
  }
}

// Lets the strategy choose which variants to time and for how long; records
// every answer in the plan and what each stage cost in the report.
void run_search(gemm_plan& plan, measure_backend& backend, const measure_progress& progress,
                const search_strategy& strategy, const sampling_policy& full, family_guard& guard) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  search_report report;
  report.strategy = strategy.name();
  std::vector<search_candidate> candidates = search_candidates(plan);
  report.eligible = candidates.size();
  search_tally tally;
  search_context ctx;
  ctx.full = full;
  ctx.progress = [&](std::string_view what, std::size_t done, std::size_t total) {
    if (progress) progress(done, total, std::string(what));
  };
  // With `fold`, a second pass of the stage: the answer's timing and the one c has from the
  // stage's first pass become one (combined_timing).
  auto run = [&](search_candidate& c, const std::optional<sampling_policy>& budget, search_stage stage, bool verify,
                 bool fold) {
    auto& v = plan.variants[c.variant];
    if (v.status != variant_status::ok || guard.skips(v)) return;  // failed earlier: out of the race
    const bool folds = fold && c.runnable() && c.stage == stage;
    measure_request r = variant_request(plan, v);
    r.sampling = budget;
    r.verify = !folds && verify && !(v.measured && v.measured->verified);
    if (progress) progress(tally.timed.size(), candidates.size(), fmt::format("{} {}", to_string(stage), c.id));
    const auto t0 = clock::now();
    measure_response answer = backend.measure(r, v.cubin);
    const double answer_kernel_ms = static_cast<double>(answer.timing.samples) * answer.timing.median_us / 1e3;
    if (folds && answer.status == variant_status::ok && answer.timing.samples > 0)
      answer.timing = combined_timing(c.timing->timing, answer.timing);
    record_answer(plan, v, std::move(answer));
    guard.saw(v);
    auto& cost = tally.costs[stage];
    cost.wall_ms += std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    cost.kernel_ms += answer_kernel_ms;
    ++report.requests;
    tally.timed.insert(c.variant);
    if (v.measured->verified) tally.verified.insert(c.variant);
    c.timing = v.measured;
    c.stage = stage;
  };
  ctx.time = [&](search_candidate& c, const std::optional<sampling_policy>& budget, search_stage stage, bool verify) {
    run(c, budget, stage, verify, false);
  };
  ctx.time_again = [&](search_candidate& c, const std::optional<sampling_policy>& budget, search_stage stage) {
    run(c, budget, stage, false, true);
  };
  strategy.run(candidates, ctx, report);
  close_search(plan, candidates, tally, report);
  report.wall_ms = std::chrono::duration<double, std::milli>(clock::now() - started).count();
  plan.search = report;
}

// cuBLASLt and the recommended variant timed again after the search with the same budget, in
// the order cuBLASLt, variant, variant, cuBLASLt, each side's two medians combined by their
// geometric mean: a clock that falls at a steady rate between the four timings slows both sides
// alike and drops out of the ratio. Long sampling heats the card into its power cap (an H100,
// 2026-11-23: SM clock 1980 -> 1320 MHz at 700 W within half a second): the first reference,
// short and cool, set against finalists timed longer and hotter gave 8192^3 bf16 0.98x cuBLAS in
// one run and 0.90x in the next; and one pair timed one after the other gave an H200's gate_proj
// 0.79x with both at 1395 MHz against 0.96x in the search (2026-11-26).
void time_beside_the_reference(gemm_plan& plan, measure_backend& backend, const sampling_policy& full) {
  if (!plan.recommended || !plan.reference || plan.reference->status != variant_status::ok) return;
  auto& v = plan.variants[*plan.recommended];
  sampling_policy pair = full;
  pair.min_samples = std::min(std::max<std::size_t>(full.min_samples, 30), std::max<std::size_t>(full.max_samples, 1));
  measure_request ref;
  ref.op = measure_op::reference;
  ref.id = "cublaslt";
  ref.sampling = pair;
  measure_request r = variant_request(plan, v);
  r.sampling = pair;
  r.verify = false;
  auto timed = [](const measure_response& m) { return m.status == variant_status::ok && m.timing.median_us > 0; };
  measure_response ref_first = backend.measure(ref, {});
  if (!timed(ref_first)) return;
  measure_response lead_first = backend.measure(r, v.cubin);
  if (!timed(lead_first)) return;  // the search's figures stand
  const measure_response lead_second = backend.measure(r, v.cubin);
  const measure_response ref_second = backend.measure(ref, {});
  if (!timed(lead_second) || !timed(ref_second)) return;
  ref_first.timing = combined_timing(ref_first.timing, ref_second.timing);
  lead_first.timing = combined_timing(lead_first.timing, lead_second.timing);
  plan.reference_first_us = plan.reference->timing.median_us;
  plan.reference = std::move(ref_first);
  v.in_search = v.measured;  // its time beside the other finalists, at their clock
  record_answer(plan, v, std::move(lead_first));
  plan.notes.push_back(fmt::format(
      "cuBLASLt and {} were timed again with the same budget for the ratio, in the order cuBLASLt, variant, "
      "variant, cuBLASLt (geometric means {:.1f} us and {:.1f} us; cuBLASLt's first timing, before the search: "
      "{:.1f} us; the variant's in the search, which ranked it among the finalists: {:.1f} us)",
      v.config.id(), plan.reference->timing.median_us, v.measured->timing.median_us, *plan.reference_first_us,
      v.in_search->timing.median_us));
}

// How deep the search timed a variant: the deepest stage first in the ranking.
int stage_depth(const variant_result& v) { return v.search_stage ? timing_depth(*v.search_stage) : 0; }
}  // namespace

void measure_plan(gemm_plan& plan, measure_backend& backend, const measure_progress& progress, bool verify_only,
                  const search_strategy* strategy, const sampling_policy& full) {
  measure_options o;
  o.verify_only = verify_only;
  o.strategy = strategy;
  o.full = full;
  measure_plan(plan, backend, progress, o);
}

namespace {
// cuBLASLt first: the reference every variant is set against.
void time_reference(gemm_plan& plan, measure_backend& backend, const measure_progress& progress, std::size_t total) {
  measure_request ref;
  ref.op = measure_op::reference;
  ref.id = "cublaslt";
  if (progress) progress(0, total, ref.id);
  plan.reference = backend.measure(ref, {});
  if (plan.reference->status != variant_status::ok)
    plan.notes.push_back("cuBLASLt could not be timed (" + plan.reference->message + "); vs_reference is null");
  plan.peak_device_bytes = std::max(plan.peak_device_bytes, plan.reference->device_bytes);
}

// Checks every ok variant against cuBLASLt without timing; returns the steps done.
std::size_t verify_each(gemm_plan& plan, measure_backend& backend, const measure_progress& progress,
                        family_guard& guard, std::size_t total) {
  std::size_t done = 1;
  for (auto& v : plan.variants) {
    if (v.status != variant_status::ok) continue;
    ++done;
    if (guard.skips(v)) continue;
    const measure_request r = variant_request(plan, v);
    if (progress) progress(done - 1, total, r.id);
    record_answer(plan, v, backend.measure(r, v.cubin));
    guard.saw(v);
  }
  return done;
}

// The model's order stands; only the verdicts changed.
void rank_by_model(gemm_plan& plan) {
  std::stable_sort(plan.variants.begin(), plan.variants.end(), [](const variant_result& a, const variant_result& b) {
    return (a.status == variant_status::ok) > (b.status == variant_status::ok);
  });
  int rank = 0;
  for (auto& v : plan.variants) v.rank = v.status == variant_status::ok ? ++rank : 0;
  plan.recommended.reset();
  if (rank > 0) plan.recommended = 0;
  plan.notes.push_back("verified on the GPU without timing: the ranking is the model's");
}

// Measured order: the fastest correct first; returns whether any variant is ok.
bool rank_by_measurement(gemm_plan& plan) {
  std::stable_sort(plan.variants.begin(), plan.variants.end(), [](const variant_result& a, const variant_result& b) {
    const bool aok = a.status == variant_status::ok, bok = b.status == variant_status::ok;
    if (aok != bok) return aok;
    if (!aok) return static_cast<int>(a.status) < static_cast<int>(b.status);
    if (stage_depth(a) != stage_depth(b)) return stage_depth(a) > stage_depth(b);
    if (!a.measured || !b.measured) return a.predicted.time_us < b.predicted.time_us;
    return a.measured->timing.median_us < b.measured->timing.median_us;
  });
  int rank = 0;
  for (auto& v : plan.variants) v.rank = v.status == variant_status::ok ? ++rank : 0;
  plan.recommended.reset();
  return rank > 0;
}

// search_context::time's contract, kept whatever the strategy did: nothing is recommended
// unverified. A search cut short can leave its leader timed but never checked (on the H200,
// 2026-12-04, a faulting variant suspended every candidate of the decode suite's verifying
// stages, and the leaders of the brief look were recommended unchecked). The leader is checked
// now, keeping its timing; one that fails gives way to the next. Returns whether any is ok.
bool rank_verified_leader_first(gemm_plan& plan, measure_backend& backend, family_guard& guard) {
  while (rank_by_measurement(plan)) {
    variant_result& v = plan.variants.front();
    if (v.measured && v.measured->verified) return true;
    if (guard.skips(v)) continue;
    measure_request r = variant_request(plan, v);
    r.verify = true;
    if (v.measured) {  // timed: the check needs one run; never timed (all that were failed): the run's policy
      sampling_policy once;
      once.warmup = 1;
      once.min_samples = once.max_samples = 1;
      r.sampling = once;
    }
    const std::optional<measure_response> timed = v.measured;
    measure_response answer = backend.measure(r, v.cubin);
    const std::string id = v.config.id();
    if (answer.status == variant_status::ok && timed) {  // the search's timing stands
      answer.timing = timed->timing;
      answer.sm_clock_mhz = timed->sm_clock_mhz;
    }
    record_answer(plan, v, std::move(answer));
    guard.saw(v);
    plan.notes.push_back(fmt::format("{} led the search without having been {} (the search stopped: {}); "
                                     "checked against cuBLASLt after it: {}",
                                     id, timed ? "verified" : "timed", plan.search ? plan.search->stop_reason : "",
                                     to_string(v.status)));
    if (v.status == variant_status::ok && !(v.measured && v.measured->verified)) {
      rank_by_measurement(plan);  // a backend that cannot verify (none of tiletune's): no endless loop
      return true;
    }
  }
  return false;
}

// Among the variants within the measured noise of the fastest, the one with
// the fewest resources leaves more of the GPU to whatever runs beside it.
void recommend_leanest(gemm_plan& plan) {
  const auto& fastest = plan.variants[0];
  const double best = fastest.measured->timing.median_us;
  std::size_t pick = 0;
  for (std::size_t i = 1; i < plan.variants.size() && plan.variants[i].status == variant_status::ok; ++i) {
    const auto& v = plan.variants[i];
    if (stage_depth(v) != stage_depth(fastest) || !v.measured) break;  // only what was timed as deeply
    if (!v.measured->verified) continue;                                 // and only what was verified
    const double noise = std::max(fastest.measured->timing.spread, v.measured->timing.spread);
    if (v.measured->timing.median_us <= best * (1 + noise) && resource_cost(v) < resource_cost(plan.variants[pick]))
      pick = i;
  }
  plan.recommended = pick;
  if (pick == 0) return;
  const auto& v = plan.variants[pick];
  plan.notes.push_back(fmt::format(
      "recommended {} over the fastest {}: {:.1f}% slower, within the measured noise of {:.1f}%, with fewer "
      "resources ({} registers x {} threads, {} bytes of shared memory)",
      v.config.id(), fastest.config.id(), 100 * (v.measured->timing.median_us / best - 1),
      100 * std::max(fastest.measured->timing.spread, v.measured->timing.spread), v.resources.registers,
      v.config.threads(), v.smem_bytes));
}
}  // namespace

void measure_plan(gemm_plan& plan, measure_backend& backend, const measure_progress& progress,
                  const measure_options& options) {
  family_guard guard(options.keep_going);
  plan.mode = options.verify_only ? plan_mode::predicted : plan_mode::measured;
  std::size_t total = 1;
  for (const auto& v : plan.variants) total += v.status == variant_status::ok;
  if (options.verify_only) {
    const std::size_t done = verify_each(plan, backend, progress, guard, total);
    if (progress) progress(done, total, "");
    rank_by_model(plan);
    return;
  }
  time_reference(plan, backend, progress, total);
  const auto exhaustive = make_exhaustive_search();
  run_search(plan, backend, progress, options.strategy ? *options.strategy : *exhaustive, options.full, guard);
  if (progress) progress(total, total, "");
  if (!rank_verified_leader_first(plan, backend, guard)) {
    plan.notes.push_back("no variant ran correctly");
    return;
  }
  recommend_leanest(plan);
  time_beside_the_reference(plan, backend, options.full);
}

}  // namespace tiletune
