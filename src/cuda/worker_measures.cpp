// The worker's measurements other than a variant's: cuBLASLt (the reference
// and the step GEMMs of `batch`), the copy bandwidth and the launch floor.
#include "cuda/worker_measures.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "cuda/sm_clock.hpp"
#include "cuda/worker_sampling.hpp"

namespace tiletune {

namespace {
// A grouped problem's speed reference: the loop of cuBLASLt GEMMs, one per group with rows.
measure_response measure_group_loop(gpu_state& g, const measure_request& r, const gemm_problem& p, const void* a,
                                    const void* b, void* c) {
  measure_response out;
  out.id = r.id;
  const cublaslt_group_loop loop(g.lt, p, false, workspace_bytes);
  if (!loop.ready()) {
    out.status = variant_status::launch_error;
    out.message = "cuBLASLt offers no algorithm for a group of " + p.describe();
    return out;
  }
  out.timing = sample(g, [&] { loop.run(a, b, c, g.workspace.get(), g.stream); });
  out.algorithm = loop.algorithm_name();
  out.status = variant_status::ok;
  out.timer = g.timer->name();
  out.sm_clock_mhz = sm_clock_mhz(g.setup.device);
  out.device_bytes = g.device_bytes;
  return out;
}
}  // namespace

measure_response measure_reference(gpu_state& g, const measure_request& r) {
  measure_response out;
  out.id = r.id;
  if (g.setup.problem.grouped()) return measure_group_loop(g, r, g.setup.problem, g.a.get(), g.b.get(), g.c.get());
  cublaslt_gemm lt(g.lt, g.setup.problem, false, workspace_bytes);
  if (g.scale_a && !lt.set_scales(g.scale_a.get(), g.scale_b.get())) {
    out.status = variant_status::launch_error;
    out.message = fmt::format("this cuBLASLt has no {} fp8 scales (cuBLAS 12.9 added them)",
                              to_string(g.setup.problem.scaling));
    return out;
  }
  const int n = lt.algorithms(g.setup.reference_algorithms);
  if (n < 1) {
    out.status = variant_status::launch_error;
    out.message = "cuBLASLt offers no algorithm for this problem";
    return out;
  }
  double best = 0;
  for (int i = 0; i < n; ++i) {
    const timing_stats t = sample(g, [&] { lt.run(i, g.a.get(), g.b.get(), g.c.get(), g.workspace.get(), g.stream); });
    if (best == 0 || t.median_us < best) {
      best = t.median_us;
      out.timing = t;
      out.algorithm = lt.algorithm_name(i);
    }
  }
  out.status = variant_status::ok;
  out.timer = g.timer->name();
  out.sm_clock_mhz = sm_clock_mhz(g.setup.device);
  out.device_bytes = g.device_bytes;
  return out;
}

// cuBLASLt on a problem other than the setup's: the step GEMMs of `batch`.
// Inputs are a random block repeated (generating gigabytes on the host would
// take longer than the timing); non-zero, as timing needs.
measure_response measure_library(gpu_state& g, const measure_request& r) {
  measure_response out;
  out.id = r.id;
  const gemm_problem& p = r.problem;
  validate(p);
  const operand_types e = p.elements();
  auto bytes_of = [](std::int64_t count, element_type t) {
    return static_cast<std::size_t>(count) * static_cast<std::size_t>(element_bytes(t));
  };
  const std::size_t a_bytes = bytes_of(p.a_elements(), e.a);
  const std::size_t b_bytes = bytes_of(p.b_elements(), e.b);
  const std::size_t c_bytes = bytes_of(p.c_elements(), e.c);
  device_ptr a = device_alloc(a_bytes), b = device_alloc(b_bytes), c = device_alloc(c_bytes);
  // One block per element type: a repeated block must hold whole elements of its matrix.
  const host_matrix block_a = random_matrix(e.a, 1 << 20, g.setup.seed + 7);
  const host_matrix block_b = random_matrix(e.b, 1 << 20, g.setup.seed + 7);
  const host_matrix block_c = random_matrix(e.c, 1 << 20, g.setup.seed + 7);
  for (auto [ptr, bytes, block] : {std::tuple{a.get(), a_bytes, &block_a}, std::tuple{b.get(), b_bytes, &block_b},
                                   std::tuple{c.get(), c_bytes, &block_c}}) {
    for (std::size_t at = 0; at < bytes; at += block->bytes.size())
      TT_CUDA(cudaMemcpyAsync(static_cast<char*>(ptr) + at, block->bytes.data(), std::min(block->bytes.size(), bytes - at),
                              cudaMemcpyHostToDevice, g.stream));
  }
  TT_CUDA(cudaStreamSynchronize(g.stream));  // the host block goes out of scope below
  if (p.grouped()) return measure_group_loop(g, r, p, a.get(), b.get(), c.get());
  cublaslt_gemm lt(g.lt, p, false, workspace_bytes);
  if (lt.algorithms(1) < 1) {
    out.status = variant_status::launch_error;
    out.message = "cuBLASLt offers no algorithm for " + p.describe();
    return out;
  }
  out.timing = sample(g, [&] { lt.run(0, a.get(), b.get(), c.get(), g.workspace.get(), g.stream); });
  out.algorithm = lt.algorithm_name(0);
  out.status = variant_status::ok;
  out.timer = g.timer->name();
  return out;
}

namespace {

// CUDA events for a sample of copies or memsets: CUPTI's kernel records do
// not see them. Puts the worker's timer back on the way out.
struct event_timer_scope {
  gpu_state& g;
  std::unique_ptr<kernel_timer> saved;
  explicit event_timer_scope(gpu_state& state) : g(state), saved(std::move(state.timer)) {
    g.timer = make_event_timer();
  }
  ~event_timer_scope() { g.timer = std::move(saved); }
};

}  // namespace

// The device's streaming bandwidth for `batch`'s memory-bound work: one
// device-to-device copy of problem.m x problem.n elements (read + write).
// The answer's timing is per copy; the caller divides 2 x bytes by it.
measure_response measure_bandwidth(gpu_state& g, const measure_request& r) {
  measure_response out;
  out.id = r.id;
  const std::size_t bytes = static_cast<std::size_t>(r.problem.m * r.problem.n) *
                            static_cast<std::size_t>(element_bytes(r.problem.type));
  device_ptr src = device_alloc(bytes), dst = device_alloc(bytes);
  TT_CUDA(cudaMemsetAsync(src.get(), 1, bytes, g.stream));
  const event_timer_scope events(g);
  out.timing = sample(g, [&] { TT_CUDA(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, g.stream)); });
  out.status = variant_status::ok;
  out.timer = g.timer->name();
  return out;
}

// The GPU's floor per launch of a tiny operation issued back to back (what
// eager PyTorch's short kernels cost at least): problem.m 4-byte memsets per
// sample; the answer's timing is per launch.
measure_response measure_launch(gpu_state& g, const measure_request& r) {
  measure_response out;
  out.id = r.id;
  const std::int64_t launches = std::max<std::int64_t>(1, r.problem.m);
  device_ptr tiny = device_alloc(256);
  const event_timer_scope events(g);
  timing_stats t = sample(g, [&] {
    for (std::int64_t i = 0; i < launches; ++i) TT_CUDA(cudaMemsetAsync(tiny.get(), 0, 4, g.stream));
  });
  const double n = static_cast<double>(launches);
  t.median_us /= n;
  t.min_us /= n;
  t.p20_us /= n;
  t.p80_us /= n;
  out.timing = t;
  out.status = variant_status::ok;
  out.timer = g.timer->name();
  return out;
}

}  // namespace tiletune
