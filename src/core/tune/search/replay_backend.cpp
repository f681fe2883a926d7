#include "core/tune/search/replay_backend.hpp"
#include "core/tune/variant_ranking.hpp"

#include <algorithm>
#include <random>

#include <nlohmann/json.hpp>

#include "core/compile/compile_cache.hpp"
#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/plan_mode.hpp"

namespace tiletune {

namespace {
timing_stats timing_from_json(const nlohmann::json& t) {
  timing_stats s;
  s.samples = t.value("samples", std::size_t{0});
  s.median_us = t.value("median_us", 0.0);
  s.min_us = t.value("min_us", s.median_us);
  s.p20_us = t.value("p20_us", s.median_us);
  s.p80_us = t.value("p80_us", s.median_us);
  s.spread = t.value("spread", 0.0);
  return s;
}

std::uint64_t seed_of(const std::string& id, std::uint64_t seed, std::size_t call) {
  const std::string h = fnv1a_128_hex(id);
  return std::stoull(h.substr(0, 15), nullptr, 16) ^ (seed * 0x9e3779b97f4a7c15ULL) ^ (call * 0xbf58476d1ce4e5b9ULL);
}
}  // namespace

gemm_plan plan_from_recording(const nlohmann::json& result) {
  if (!result.is_object() || !is_measured_result(result) || !result.contains("variants"))
    throw usage_error("not a measured tiletune gemm result (\"mode\": \"measured\" with variants)");
  gemm_plan plan;
  plan.problem = gemm_problem_from_json(result.at("problem"));
  const auto& dev = result.at("device");
  const std::string preset = dev.contains("preset") && dev["preset"].is_string() ? dev["preset"].get<std::string>() : "";
  plan.device = find_preset(preset.empty() ? "h100-sxm" : preset);
  plan.compiler_version = result.contains("tool") ? result["tool"].value("nvrtc", std::string()) : "";
  for (const auto& vj : result.at("variants")) {
    const auto status = status_of(vj);
    // Only what compiled and fit on the GPU enters the search again.
    if (status == variant_status::pruned || status == variant_status::compile_error ||
        status == variant_status::resource_limit)
      continue;
    variant_result v;
    v.config = tile_from_json(vj.at("tile"));
    v.status = variant_status::ok;
    v.compiled = true;
    const auto& r = vj.at("resources");
    v.resources.registers = r.value("registers", 0);
    v.smem_bytes = r.value("smem_bytes", std::int64_t{0});
    v.occupancy = estimate_occupancy(plan.device, v.config.threads(), v.resources.registers, v.smem_bytes);
    v.predicted = predict(plan.device, plan.problem, v.config, v.occupancy);
    plan.variants.push_back(std::move(v));
  }
  rank_by_prediction(plan);
  return plan;
}

replay_backend::replay_backend(const nlohmann::json& result, sampling_policy full, std::uint64_t seed,
                               thermal_drift drift)
    : full_(full), seed_(seed), drift_(drift) {
  for (const auto& vj : result.at("variants")) {
    recorded r;
    r.status = variant_status_named(vj.value("status", "")).value_or(variant_status::launch_error);
    if (vj.contains("timing") && vj["timing"].is_object()) r.timing = timing_from_json(vj["timing"]);
    variants_[vj.at("id").get<std::string>()] = r;
  }
  const auto& ref = result.at("reference");
  reference_.status = ref.contains("timing") ? variant_status::ok : variant_status::launch_error;
  if (ref.contains("timing")) reference_.timing = timing_from_json(ref["timing"]);
}

measure_response replay_backend::measure(const measure_request& request, const std::string&) {
  ++requests_;
  measure_response out;
  out.id = request.id;
  out.timer = "replay";
  const recorded* rec = nullptr;
  if (request.op == measure_op::reference) {
    rec = &reference_;
  } else if (auto it = variants_.find(request.id); it != variants_.end()) {
    rec = &it->second;
  }
  if (!rec) {
    out.status = variant_status::launch_error;
    out.message = "not in the recording: " + request.id;
    return out;
  }
  out.status = rec->status;
  out.verified = request.op == measure_op::variant && request.verify;
  if (rec->status != variant_status::ok || rec->timing.median_us <= 0) {
    if (rec->status == variant_status::ok) out.status = variant_status::launch_error;
    out.message = "recorded as " + std::string(to_string(rec->status));
    return out;
  }
  const sampling_policy p = request.sampling.value_or(full_);
  const timing_stats& t = rec->timing;
  // p80 - p20 of a normal is 1.683 standard deviations.
  const double sigma = std::max(t.spread, 1e-4) * t.median_us / 1.683;
  std::mt19937_64 rng(seed_of(request.id, seed_, requests_));
  std::normal_distribution<double> noise(0.0, sigma);
  // One launch at the card's clock now (the kernel time so far sets it); it heats the card.
  auto draw = [&] {
    const double heat = drift_.ramp_ms > 0 ? std::min(1.0, kernel_ms_ / drift_.ramp_ms) : 1.0;
    const double us = std::max(t.min_us, t.median_us + noise(rng)) / (1 - drift_.drop * heat);
    kernel_ms_ += us / 1e3;
    return us;
  };
  for (std::size_t i = 0; i < p.warmup; ++i) draw();
  for (double soaked_ms = 0; soaked_ms < p.warmup_ms;) soaked_ms += std::max(draw(), 1.0) / 1e3;  // 1 us at least
  std::vector<double> samples;
  while (!enough_samples(samples, p)) {
    const std::size_t batch = samples.size() < p.min_samples ? p.min_samples : 10;
    for (std::size_t i = 0; i < batch; ++i) samples.push_back(draw());
  }
  out.timing = summarize(samples);
  return out;
}

}  // namespace tiletune
