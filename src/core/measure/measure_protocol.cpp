#include "core/measure/measure_protocol.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "core/gemm/family.hpp"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace tiletune {

launch_shape launch_shape_for(const tile_config& c, const gemm_problem& p) {
  launch_shape s;
  s.grid_x = (p.m + c.block_m - 1) / c.block_m;
  s.grid_y = (p.n + c.block_n - 1) / c.block_n;
  s.grid_z = p.batch * std::max(1, c.split_k);
  s.threads = c.threads();
  s.dynamic_smem_bytes = c.smem_bytes(p.type, p.layout);
  return s;
}

launch_shape launch_shape_for(const tile_config& c, const gemm_problem& p, int sm_count) {
  return c.family->launch(c, p, sm_count);
}

namespace {
// A sampling policy's JSON, shared by the worker's setup and a request's own budget.
nlohmann::json sampling_to_json(const sampling_policy& p) {
  return {{"warmup", p.warmup},
          {"min_samples", p.min_samples},
          {"max_samples", p.max_samples},
          {"target_spread", p.target_spread},
          {"time_cap_ms", p.time_cap_ms},
          {"warmup_ms", p.warmup_ms}};
}
sampling_policy sampling_from_json(const nlohmann::json& p) {
  sampling_policy s;
  s.warmup = p.at("warmup").get<std::size_t>();
  s.min_samples = p.at("min_samples").get<std::size_t>();
  s.max_samples = p.at("max_samples").get<std::size_t>();
  s.target_spread = p.at("target_spread").get<double>();
  s.time_cap_ms = p.at("time_cap_ms").get<double>();
  s.warmup_ms = p.value("warmup_ms", 0.0);
  return s;
}
}  // namespace

std::string_view to_string(l2_flush_mode m) {
  switch (m) {
    case l2_flush_mode::write: return "write";
    case l2_flush_mode::read: return "read";
    case l2_flush_mode::none: return "none";
  }
  return "write";
}

std::optional<l2_flush_mode> l2_flush_mode_from_string(std::string_view name) {
  for (const l2_flush_mode m : {l2_flush_mode::write, l2_flush_mode::read, l2_flush_mode::none})
    if (to_string(m) == name) return m;
  return std::nullopt;
}

nlohmann::json to_json(const worker_setup& s) {
  return {{"problem", to_json(s.problem)},
          {"device", s.device},
          {"seed", s.seed},
          {"sampling", sampling_to_json(s.sampling)},
          {"l2_flush", to_string(s.l2_flush)},
          {"reference_algorithms", s.reference_algorithms}};
}

worker_setup worker_setup_from_json(const nlohmann::json& j) {
  worker_setup s;
  s.problem = gemm_problem_from_json(j.at("problem"));
  s.device = j.at("device").get<int>();
  s.seed = j.at("seed").get<std::uint64_t>();
  s.sampling = sampling_from_json(j.at("sampling"));
  const std::string flush = j.at("l2_flush").get<std::string>();
  const auto mode = l2_flush_mode_from_string(flush);
  if (!mode) throw std::invalid_argument("worker setup: l2_flush \"" + flush + "\" is not write, read or none");
  s.l2_flush = *mode;
  s.reference_algorithms = j.at("reference_algorithms").get<int>();
  return s;
}

bool has_own_problem(const measure_request& r) {
  return r.op == measure_op::library || r.op == measure_op::bandwidth || r.op == measure_op::launch;
}

namespace {
// A parameter as the worker binds it: no prose, a tensor map's operand beside it.
nlohmann::json argument_to_json(const kernel_parameter& k, const kernel_launch& l) {
  nlohmann::json j = {{"name", k.name}, {"kind", k.kind}, {"c_type", k.c_type}};
  if (!k.value.is_null()) j["value"] = k.value;
  if (k.buffer_bytes > 0) j["buffer_bytes"] = k.buffer_bytes;
  for (const auto& t : l.tensor_maps)
    if (t.parameter == k.name) j["tensor"] = t.tensor;
  return j;
}
std::array<std::int64_t, 3> dim3_from_json(const nlohmann::json& j) {
  return {j.at(0).get<std::int64_t>(), j.at(1).get<std::int64_t>(), j.at(2).get<std::int64_t>()};
}

// What the worker needs of one launch (the entry's name only for a prologue kernel: the GEMM's
// is kernel_entry_name).
void launch_to_json(const kernel_launch& l, nlohmann::json& j) {
  j["grid"] = l.grid;
  j["block"] = l.block;
  j["dynamic_smem_bytes"] = l.dynamic_smem_bytes;
  if (l.cluster[0] * l.cluster[1] * l.cluster[2] != 1) j["cluster"] = l.cluster;
  if (l.clusters_walk_tiles) j["clusters_walk_tiles"] = true;
  if (!l.parameters.empty()) {
    nlohmann::json args = nlohmann::json::array();
    for (const auto& k : l.parameters) args.push_back(argument_to_json(k, l));
    j["arguments"] = std::move(args);
  }
}

void launch_from_json(const nlohmann::json& j, kernel_launch& l) {
  l.grid = dim3_from_json(j.at("grid"));
  l.block = dim3_from_json(j.at("block"));
  l.dynamic_smem_bytes = j.at("dynamic_smem_bytes").get<std::int64_t>();
  if (j.contains("cluster")) l.cluster = dim3_from_json(j.at("cluster"));
  l.clusters_walk_tiles = j.value("clusters_walk_tiles", false);
  for (const auto& a : j.value("arguments", nlohmann::json::array())) {
    kernel_parameter k;
    k.name = a.at("name").get<std::string>();
    k.kind = a.at("kind").get<std::string>();
    k.c_type = a.at("c_type").get<std::string>();
    k.value = a.value("value", nlohmann::json());
    k.buffer_bytes = a.value("buffer_bytes", std::int64_t{0});
    if (a.contains("tensor")) {
      tensor_map_description t;
      t.parameter = k.name;
      t.tensor = a.at("tensor").get<std::string>();
      l.tensor_maps.push_back(std::move(t));
    }
    l.parameters.push_back(std::move(k));
  }
}
}  // namespace

nlohmann::json to_json(const measure_request& r) {
  nlohmann::json j = {{"op", to_string(r.op)}, {"id", r.id}, {"cubin_path", r.cubin_path}};
  launch_to_json(r.launch, j);
  if (!r.launch.prologue.empty()) {
    nlohmann::json before = nlohmann::json::array();
    for (const kernel_launch& k : r.launch.prologue) {
      nlohmann::json one = {{"entry", k.entry}};
      launch_to_json(k, one);
      before.push_back(std::move(one));
    }
    j["prologue"] = std::move(before);
  }
  if (has_own_problem(r)) j["problem"] = to_json(r.problem);
  if (r.config) j["config"] = tile_to_json(*r.config);
  if (r.sampling) j["sampling"] = sampling_to_json(*r.sampling);
  if (!r.verify) j["verify"] = false;
  if (r.error_bound > 0) j["error_bound"] = r.error_bound;
  return j;
}

measure_request measure_request_from_json(const nlohmann::json& j) {
  measure_request r;
  const std::string op = j.at("op").get<std::string>();
  const auto known = measure_op_named(op);
  if (!known) throw std::invalid_argument("no measuring op named '" + op + "'");
  r.op = *known;
  r.id = j.at("id").get<std::string>();
  r.cubin_path = j.at("cubin_path").get<std::string>();
  launch_from_json(j, r.launch);
  for (const auto& one : j.value("prologue", nlohmann::json::array())) {
    kernel_launch k;
    k.entry = one.at("entry").get<std::string>();
    launch_from_json(one, k);
    r.launch.prologue.push_back(std::move(k));
  }
  if (j.contains("problem")) r.problem = gemm_problem_from_json(j.at("problem"));
  if (j.contains("config")) r.config = tile_from_json(j.at("config"));
  if (j.contains("sampling")) r.sampling = sampling_from_json(j.at("sampling"));
  r.verify = j.value("verify", true);
  r.error_bound = j.value("error_bound", 0.0);
  return r;
}

nlohmann::json to_json(const measure_response& r) {
  nlohmann::json j = {{"id", r.id},
                      {"status", to_string(r.status)},
                      {"message", r.message},
                      {"timing", to_json(r.timing)},
                      {"verified", r.verified},
                      {"rel_frobenius", r.error.rel_frobenius},
                      {"max_rel_error", r.error.max_rel_error},
                      {"non_finite", r.error.non_finite},
                      {"timer", r.timer},
                      {"device_bytes", r.device_bytes},
                      {"algorithm", r.algorithm}};
  j["sm_clock_mhz"] = r.sm_clock_mhz ? nlohmann::json(*r.sm_clock_mhz) : nlohmann::json(nullptr);
  // Infinite errors are not JSON numbers.
  if (!std::isfinite(r.error.rel_frobenius)) j["rel_frobenius"] = nullptr;
  if (!std::isfinite(r.error.max_rel_error)) j["max_rel_error"] = nullptr;
  if (r.worker_exits) j["worker_exits"] = true;
  if (r.clusters_at_once > 0) j["clusters_at_once"] = r.clusters_at_once;
  return j;
}

measure_response measure_response_from_json(const nlohmann::json& j) {
  measure_response r;
  r.id = j.at("id").get<std::string>();
  const std::string status = j.at("status").get<std::string>();
  const auto known = variant_status_named(status);
  if (!known) throw std::invalid_argument("no variant status named '" + status + "'");
  r.status = *known;
  r.message = j.value("message", "");
  const auto& t = j.at("timing");
  r.timing.samples = t.at("samples").get<std::size_t>();
  r.timing.median_us = t.at("median_us").get<double>();
  r.timing.min_us = t.at("min_us").get<double>();
  r.timing.p20_us = t.at("p20_us").get<double>();
  r.timing.p80_us = t.at("p80_us").get<double>();
  r.timing.spread = t.at("spread").get<double>();
  r.verified = j.value("verified", false);
  const double inf = std::numeric_limits<double>::infinity();
  r.error.rel_frobenius = j.at("rel_frobenius").is_null() ? inf : j.at("rel_frobenius").get<double>();
  r.error.max_rel_error = j.at("max_rel_error").is_null() ? inf : j.at("max_rel_error").get<double>();
  r.error.non_finite = j.value("non_finite", std::size_t{0});
  r.timer = j.value("timer", "");
  if (j.contains("sm_clock_mhz") && j["sm_clock_mhz"].is_number()) r.sm_clock_mhz = j["sm_clock_mhz"].get<double>();
  r.device_bytes = j.value("device_bytes", std::int64_t{0});
  r.algorithm = j.value("algorithm", "");
  r.worker_exits = j.value("worker_exits", false);
  r.clusters_at_once = j.value("clusters_at_once", 0);
  return r;
}

}  // namespace tiletune
