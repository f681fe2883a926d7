#include "cuda/gemm_worker.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/measure/host_data.hpp"
#include "core/compile/kernel_templates.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/gemm/tensor_map_spec.hpp"
#include "cuda/cublaslt_gemm.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_timer.hpp"
#include "cuda/sm_clock.hpp"
#include "cuda/tensor_map.hpp"

namespace tiletune {

namespace {

struct device_deleter {
  void operator()(void* p) const noexcept { TT_CUDA_NOEXCEPT(cudaFree(p)); }
};
using device_ptr = std::unique_ptr<void, device_deleter>;

device_ptr device_alloc(std::size_t bytes) {
  void* p = nullptr;
  TT_CUDA(cudaMalloc(&p, std::max<std::size_t>(bytes, 256)));
  return device_ptr(p);
}

constexpr std::size_t workspace_bytes = 32 << 20;

// Everything one worker holds for one problem.
struct gpu_state {
  worker_setup setup;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  device_ptr a, b, c, c0, reference, flush, workspace;
  std::size_t a_count = 0, b_count = 0, c_count = 0, flush_bytes = 0;
  std::vector<float> reference_host;
  reference_summary reference_sums;   // once per run: every variant is checked against it
  std::vector<unsigned char> result_host;  // C as a variant stored it, reused across variants
  std::unique_ptr<kernel_timer> timer;
  std::string timer_note;
  std::int64_t device_bytes = 0;

  std::size_t c_bytes() const { return c_count * static_cast<std::size_t>(element_bytes(setup.problem.type)); }
};

void setup_gpu(gpu_state& g) {
  const gemm_problem& p = g.setup.problem;
  TT_CUDA(cudaSetDevice(g.setup.device));
  TT_CUDA(cudaFree(nullptr));  // create the context now
  std::size_t free_before = 0, total = 0;
  TT_CUDA(cudaMemGetInfo(&free_before, &total));
  TT_CUDA(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
  TT_CUBLAS(cublasLtCreate(&g.lt));

  const std::size_t eb = static_cast<std::size_t>(element_bytes(p.type));
  g.a_count = static_cast<std::size_t>(p.m * p.k * p.batch);
  g.b_count = static_cast<std::size_t>(p.k * p.n * p.batch);
  g.c_count = static_cast<std::size_t>(p.m * p.n * p.batch);
  const host_matrix a = random_matrix(p.type, g.a_count, g.setup.seed);
  const host_matrix b = random_matrix(p.type, g.b_count, g.setup.seed + 1);
  const host_matrix c0 = random_matrix(p.type, g.c_count, g.setup.seed + 2);
  g.a = device_alloc(g.a_count * eb);
  g.b = device_alloc(g.b_count * eb);
  g.c = device_alloc(g.c_count * eb);
  g.c0 = device_alloc(g.c_count * eb);
  g.reference = device_alloc(g.c_count * 4);
  g.workspace = device_alloc(workspace_bytes);
  TT_CUDA(cudaMemcpy(g.a.get(), a.bytes.data(), a.bytes.size(), cudaMemcpyHostToDevice));
  TT_CUDA(cudaMemcpy(g.b.get(), b.bytes.data(), b.bytes.size(), cudaMemcpyHostToDevice));
  TT_CUDA(cudaMemcpy(g.c0.get(), c0.bytes.data(), c0.bytes.size(), cudaMemcpyHostToDevice));
  // The flush buffer: writing twice the L2 evicts the operands between samples.
  int l2 = 0;
  TT_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, g.setup.device));
  g.flush_bytes = g.setup.flush_l2 ? 2 * static_cast<std::size_t>(l2) : 0;
  if (g.flush_bytes) g.flush = device_alloc(g.flush_bytes);

  // The verification reference: fp32 output, pedantic fp32 compute, C0 in fp32.
  TT_CUDA(cudaMemcpy(g.reference.get(), c0.values.data(), g.c_count * 4, cudaMemcpyHostToDevice));
  cublaslt_gemm accurate(g.lt, p, true, workspace_bytes);
  if (accurate.algorithms(1) < 1) throw cuda_error("cuBLASLt has no algorithm for the fp32 reference", 0);
  accurate.run(0, g.a.get(), g.b.get(), g.reference.get(), g.workspace.get(), g.stream);
  g.reference_host.resize(g.c_count);
  TT_CUDA(cudaMemcpyAsync(g.reference_host.data(), g.reference.get(), g.c_count * 4, cudaMemcpyDeviceToHost, g.stream));
  TT_CUDA(cudaStreamSynchronize(g.stream));
  g.reference_sums = summarize_reference(g.reference_host.data(), g.c_count);

  // TILETUNE_TIMER=events skips CUPTI: to compare the timers, or where CUPTI misbehaves.
  const char* forced = std::getenv("TILETUNE_TIMER");
  if (forced && std::string(forced) == "events") {
    g.timer_note = "TILETUNE_TIMER=events";
  } else {
    g.timer = make_cupti_timer(g.timer_note);
  }
  if (!g.timer) g.timer = make_event_timer();
  std::size_t free_after = 0;
  TT_CUDA(cudaMemGetInfo(&free_after, &total));
  g.device_bytes = static_cast<std::int64_t>(free_before - free_after);
}

// Between samples: evict the L2 and give C back its starting values when beta reads it.
void prepare_sample(gpu_state& g) {
  if (g.flush_bytes) TT_CUDA(cudaMemsetAsync(g.flush.get(), 0, g.flush_bytes, g.stream));
  if (g.setup.problem.beta != 0.0)
    TT_CUDA(cudaMemcpyAsync(g.c.get(), g.c0.get(), g.c_bytes(), cudaMemcpyDeviceToDevice, g.stream));
}

template <typename Launch>
timing_stats sample_with(gpu_state& g, Launch&& launch) {
  for (std::size_t i = 0; i < g.setup.sampling.warmup; ++i) {
    prepare_sample(g);
    launch();
  }
  TT_CUDA(cudaStreamSynchronize(g.stream));
  std::vector<double> samples;
  while (!enough_samples(samples, g.setup.sampling)) {
    // Batches of samples between synchronizations keep the GPU busy.
    const std::size_t batch = samples.size() < g.setup.sampling.min_samples ? g.setup.sampling.min_samples : 10;
    for (std::size_t i = 0; i < batch; ++i) {
      prepare_sample(g);
      g.timer->begin_sample(g.stream);
      launch();
      g.timer->end_sample(g.stream);
    }
    const auto got = g.timer->collect(g.stream);
    samples.insert(samples.end(), got.begin(), got.end());
  }
  return summarize(samples);
}

// CUPTI that enabled but then misses records (seen under some profilers and
// containers) hands over to CUDA events for the rest of the worker's life.
template <typename Launch>
timing_stats sample(gpu_state& g, Launch&& launch) {
  try {
    return sample_with(g, launch);
  } catch (const cuda_error&) {
    throw;
  } catch (const std::runtime_error& e) {
    if (g.timer->name() != "cupti") throw;
    g.timer_note = std::string("CUPTI failed mid-run (") + e.what() + "); timing with CUDA events";
    std::fprintf(stderr, "tiletune worker: %s\n", g.timer_note.c_str());
    g.timer = make_event_timer();
    return sample_with(g, launch);
  }
}

measure_response measure_reference(gpu_state& g, const measure_request& r) {
  measure_response out;
  out.id = r.id;
  cublaslt_gemm lt(g.lt, g.setup.problem, false, workspace_bytes);
  const int n = lt.algorithms(g.setup.reference_algorithms);
  if (n < 1) {
    out.status = "launch_error";
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
  out.status = "ok";
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
  const std::size_t eb = static_cast<std::size_t>(element_bytes(p.type));
  const std::size_t a_bytes = static_cast<std::size_t>(p.m * p.k * p.batch) * eb;
  const std::size_t b_bytes = static_cast<std::size_t>(p.k * p.n * p.batch) * eb;
  const std::size_t c_bytes = static_cast<std::size_t>(p.m * p.n * p.batch) * eb;
  device_ptr a = device_alloc(a_bytes), b = device_alloc(b_bytes), c = device_alloc(c_bytes);
  const host_matrix block = random_matrix(p.type, 1 << 20, g.setup.seed + 7);
  for (auto [ptr, bytes] : {std::pair{a.get(), a_bytes}, std::pair{b.get(), b_bytes}, std::pair{c.get(), c_bytes}}) {
    for (std::size_t at = 0; at < bytes; at += block.bytes.size())
      TT_CUDA(cudaMemcpyAsync(static_cast<char*>(ptr) + at, block.bytes.data(), std::min(block.bytes.size(), bytes - at),
                              cudaMemcpyHostToDevice, g.stream));
  }
  TT_CUDA(cudaStreamSynchronize(g.stream));  // the host block goes out of scope below
  cublaslt_gemm lt(g.lt, p, false, workspace_bytes);
  if (lt.algorithms(1) < 1) {
    out.status = "launch_error";
    out.message = "cuBLASLt offers no algorithm for " + p.describe();
    return out;
  }
  out.timing = sample(g, [&] { lt.run(0, a.get(), b.get(), c.get(), g.workspace.get(), g.stream); });
  out.algorithm = lt.algorithm_name(0);
  out.status = "ok";
  out.timer = g.timer->name();
  return out;
}

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
  out.status = "ok";
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
  out.status = "ok";
  out.timer = g.timer->name();
  return out;
}

struct library_deleter {
  void operator()(cudaLibrary_t l) const noexcept { TT_CUDA_NOEXCEPT(cudaLibraryUnload(l)); }
};

measure_response measure_variant(gpu_state& g, const measure_request& r) {
  measure_response out;
  out.id = r.id;
  out.device_bytes = g.device_bytes;
  std::ifstream file(r.cubin_path, std::ios::binary);
  const std::string cubin((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (cubin.empty()) {
    out.status = "launch_error";
    out.message = "cannot read " + r.cubin_path;
    return out;
  }
  cudaLibrary_t raw = nullptr;
  TT_CUDA(cudaLibraryLoadData(&raw, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  std::unique_ptr<std::remove_pointer_t<cudaLibrary_t>, library_deleter> library(raw);
  cudaKernel_t kernel = nullptr;
  TT_CUDA(cudaLibraryGetKernel(&kernel, raw, kernel_entry_name));
  const int smem = static_cast<int>(r.launch.dynamic_smem_bytes);
  TT_CUDA(cudaKernelSetAttributeForDevice(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem, g.setup.device));

  const gemm_problem& p = g.setup.problem;
  const void* a = g.a.get();
  const void* b = g.b.get();
  void* c = g.c.get();
  int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
  int lda = static_cast<int>(p.lda()), ldb = static_cast<int>(p.ldb()), ldc = static_cast<int>(p.ldc());
  long long sa = p.m * p.k, sb = p.k * p.n, sc = p.m * p.n;
  float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  // Split-K: the fp32 partials and the per-tile counters (zeroed once; the kernel resets them).
  device_ptr split_workspace, split_counters;
  void* workspace = nullptr;
  void* counters = nullptr;
  if (r.launch.workspace_bytes > 0) {
    split_workspace = device_alloc(static_cast<std::size_t>(r.launch.workspace_bytes));
    split_counters = device_alloc(static_cast<std::size_t>(r.launch.tile_counters) * 4);
    TT_CUDA(cudaMemsetAsync(split_counters.get(), 0, static_cast<std::size_t>(r.launch.tile_counters) * 4, g.stream));
    workspace = split_workspace.get();
    counters = split_counters.get();
    out.device_bytes += r.launch.workspace_bytes + r.launch.tile_counters * 4;
  }
  void* args[] = {&a, &b, &c, &m, &n, &k, &lda, &ldb, &ldc, &sa, &sb, &sc, &alpha, &beta, &workspace, &counters};
  const dim3 grid(static_cast<unsigned>(r.launch.grid_x), static_cast<unsigned>(r.launch.grid_y),
                  static_cast<unsigned>(r.launch.grid_z));
  const dim3 block(static_cast<unsigned>(r.launch.threads));
  std::function<void()> launch = [&] {
    TT_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args, static_cast<std::size_t>(smem),
                             g.stream));
  };
  // wgmma: tensor maps of A and B instead of their pointers, a persistent grid, maybe a cluster.
  encoded_tensor_map map_a, map_b;
  int batch = static_cast<int>(p.batch);
  void* wgmma_args[] = {&map_a, &map_b, &c, &m, &n, &k, &ldc, &sc, &batch, &alpha, &beta};
  cudaLaunchAttribute cluster_attr[1]{};
  cudaLaunchConfig_t wgmma_config{};
  const bool is_wgmma = r.config && r.config->family->uses_tensor_maps();
  if (is_wgmma) {
    map_a = encode_tensor_map(tensor_map_for(p, *r.config, 'a'), a);
    map_b = encode_tensor_map(tensor_map_for(p, *r.config, 'b'), b);
    wgmma_config.gridDim = grid;
    wgmma_config.blockDim = block;
    wgmma_config.dynamicSmemBytes = static_cast<std::size_t>(smem);
    wgmma_config.stream = g.stream;
    if (r.launch.cluster_x * r.launch.cluster_y * r.launch.cluster_z > 1) {
      cluster_attr[0].id = cudaLaunchAttributeClusterDimension;
      cluster_attr[0].val.clusterDim.x = static_cast<unsigned>(r.launch.cluster_x);
      cluster_attr[0].val.clusterDim.y = static_cast<unsigned>(r.launch.cluster_y);
      cluster_attr[0].val.clusterDim.z = static_cast<unsigned>(r.launch.cluster_z);
      wgmma_config.attrs = cluster_attr;
      wgmma_config.numAttrs = 1;
    }
    launch = [&] {
      TT_CUDA(cudaLaunchKernelExC(&wgmma_config, reinterpret_cast<const void*>(kernel), wgmma_args));
    };
  }

  // Verify first, on a poisoned C (all bits set: NaN in every dtype) unless beta reads C.
  // A request that says verify=false comes for a variant this run verified already.
  if (!r.verify) {
    out.timing = sample(g, launch);
    out.status = "ok";
    out.verified = false;
    out.timer = g.timer->name();
    out.sm_clock_mhz = sm_clock_mhz(g.setup.device);
    return out;
  }
  if (p.beta == 0.0) {
    TT_CUDA(cudaMemsetAsync(c, 0xff, g.c_bytes(), g.stream));
  } else {
    TT_CUDA(cudaMemcpyAsync(c, g.c0.get(), g.c_bytes(), cudaMemcpyDeviceToDevice, g.stream));
  }
  launch();
  g.result_host.resize(g.c_bytes());
  TT_CUDA(cudaMemcpyAsync(g.result_host.data(), c, g.result_host.size(), cudaMemcpyDeviceToHost, g.stream));
  TT_CUDA(cudaStreamSynchronize(g.stream));
  out.error = compare_stored_output(p.type, g.result_host.data(), g.reference_host.data(), g.c_count,
                                    g.reference_sums, std::max(1u, std::thread::hardware_concurrency()));
  out.verified = true;
  if (!passes(out.error, p.type)) {
    out.status = "incorrect";
    out.message = fmt::format("relative Frobenius error {:.3g} over the bound {:.1g}", out.error.rel_frobenius,
                              error_bound(p.type));
    return out;
  }
  out.timing = sample(g, launch);
  out.status = "ok";
  out.timer = g.timer->name();
  out.sm_clock_mhz = sm_clock_mhz(g.setup.device);
  return out;
}

void answer(std::ostream& out, const measure_response& r) {
  out << to_json(r).dump() << '\n';
  out.flush();
}

}  // namespace

int run_gemm_worker(std::istream& in, std::ostream& out) {
  gpu_state g;
  std::string line;
  if (!std::getline(in, line)) return 0;
  try {
    g.setup = worker_setup_from_json(nlohmann::json::parse(line));
    setup_gpu(g);
  } catch (const std::exception& e) {
    out << nlohmann::json{{"ready", false}, {"error", e.what()}}.dump() << '\n';
    out.flush();
    return 3;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, g.setup.device);
  out << nlohmann::json{{"ready", true},
                        {"device", prop.name},
                        {"timer", g.timer->name()},
                        {"timer_note", g.timer_note},
                        {"device_bytes", g.device_bytes}}
             .dump()
      << '\n';
  out.flush();

  while (std::getline(in, line)) {
    measure_request r;
    try {
      r = measure_request_from_json(nlohmann::json::parse(line));
    } catch (const std::exception& e) {
      measure_response bad;
      bad.id = "?";
      bad.status = "launch_error";
      bad.message = std::string("bad request: ") + e.what();
      answer(out, bad);
      continue;
    }
    // A request's own sampling budget (a search strategy's brief look) holds for that request only.
    const sampling_policy setup_sampling = g.setup.sampling;
    if (r.sampling) g.setup.sampling = *r.sampling;
    struct restore_sampling {
      gpu_state& g;
      sampling_policy saved;
      ~restore_sampling() { g.setup.sampling = saved; }
    } restore{g, setup_sampling};
    try {
      answer(out, r.op == "reference" ? measure_reference(g, r)
                  : r.op == "library" ? measure_library(g, r)
                  : r.op == "bandwidth" ? measure_bandwidth(g, r)
                  : r.op == "launch" ? measure_launch(g, r)
                                      : measure_variant(g, r));
    } catch (const std::exception& e) {
      measure_response fail;
      fail.id = r.id;
      fail.status = "launch_error";
      fail.message = e.what();
      const bool broken = context_is_broken();
      if (broken) fail.message += " (the CUDA context is broken; the worker restarts)";
      answer(out, fail);
      if (broken) return 4;
    }
  }
  return 0;
}

}  // namespace tiletune
