#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/problem.hpp"
#include "core/measure/measurement.hpp"
#include "core/measure/variant_status.hpp"
#include "core/gemm/tile_config.hpp"

namespace tiletune {

// How the L2 is emptied before each timed sample, so that every sample reads its operands from DRAM:
// by writing a buffer of twice its size (what nvbench and Triton do; the lines it leaves in the L2 are
// dirty, so each line a kernel's load allocates writes one back to DRAM first), by reading one (clean
// lines: what a model's previous layer leaves, its weights read), or not at all (what the previous
// sample left stays: warm-L2 timings, operands that fit in the L2 served from it).
enum class l2_flush_mode { write, read, none };
std::string_view to_string(l2_flush_mode m);
// The mode a name ("write", "read", "none") says; none for any other.
std::optional<l2_flush_mode> l2_flush_mode_from_string(std::string_view name);

// What a measuring worker process needs once: the problem and how to measure.
// The worker makes its inputs from the seed, so a restarted worker measures
// on the same data.
struct worker_setup {
  gemm_problem problem;
  int device = 0;
  std::uint64_t seed = 1;
  sampling_policy sampling;
  l2_flush_mode l2_flush = l2_flush_mode::write;
  int reference_algorithms = 4;  // cuBLASLt heuristic candidates timed for the reference
};

struct launch_shape {
  std::int64_t grid_x = 1, grid_y = 1, grid_z = 1;
  int threads = 0;
  std::int64_t dynamic_smem_bytes = 0;
  int cluster_x = 1, cluster_y = 1, cluster_z = 1;  // thread-block cluster
};
// A plain tile grid: M tiles on x, N tiles on y, batch x split_k on z.
launch_shape launch_shape_for(const tile_config& c, const gemm_problem& p);
// The grid the variant's family launches on a GPU of sm_count SMs
// (gemm_family::launch: a persistent family's grid depends on it).
launch_shape launch_shape_for(const tile_config& c, const gemm_problem& p, int sm_count);

// One job for the worker: time cuBLASLt on the setup's problem
// ("reference"), one variant ("variant"), cuBLASLt on a problem of its own
// ("library": the training step's GEMMs for `batch`), or the device's rates
// ("bandwidth": a copy of problem.m x problem.n elements; "launch":
// problem.m tiny launches back to back).
struct measure_request {
  measure_op op = measure_op::variant;
  std::string id;
  std::string cubin_path;
  // "variant": how to launch it, as its family describes it (grid, block, cluster,
  // shared memory, and the parameters the worker binds, scratch buffers included).
  kernel_launch launch;
  gemm_problem problem;  // the ops that carry their own problem (has_own_problem) only
  // "variant": the tile (a family that takes tensor maps builds them from it).
  std::optional<tile_config> config;
  // A search strategy's own budget for this request (a brief first look, a
  // longer second); without it the setup's policy applies.
  std::optional<sampling_policy> sampling;
  bool verify = true;  // false: this run already verified the variant; time it only
  // "variant": the relative Frobenius error its verification allows (gemm_family::error_bound);
  // 0: the dtype's.
  double error_bound = 0;
  // Host side only (never sent): the model's kernel time, from which the
  // supervisor derives how long the request may take.
  double predicted_us = 0;
};

// Whether the request's op brings its own problem (else the setup's holds).
bool has_own_problem(const measure_request& r);

// The worker's answer: ok, incorrect, launch_error or timeout.
struct measure_response {
  std::string id;
  variant_status status = variant_status::launch_error;
  std::string message;
  timing_stats timing;
  error_metrics error;
  bool verified = false;
  std::string timer;  // "cupti" | "cuda_events"
  std::optional<double> sm_clock_mhz;
  std::int64_t device_bytes = 0;  // the worker's device memory while measuring
  std::string algorithm;          // reference: which cuBLASLt algorithm won
  // A kernel that walks its tiles by clusters (kernel_launch::clusters_walk_tiles): how many of its
  // clusters the GPU holds at once (cudaOccupancyMaxActiveClusters), its grid capped there; 0: not asked.
  int clusters_at_once = 0;
  // The worker ends after this answer (a sticky CUDA error broke its context): the supervisor
  // reaps it before the next request, which a fresh worker takes.
  bool worker_exits = false;
};

nlohmann::json to_json(const worker_setup& s);
worker_setup worker_setup_from_json(const nlohmann::json& j);
nlohmann::json to_json(const measure_request& r);
measure_request measure_request_from_json(const nlohmann::json& j);
nlohmann::json to_json(const measure_response& r);
measure_response measure_response_from_json(const nlohmann::json& j);

}  // namespace tiletune
