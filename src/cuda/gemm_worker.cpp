// The measuring worker's request loop, and the measurement of a variant:
// load its cubin, launch it, verify its output, time it.
#include "cuda/gemm_worker.hpp"

#include <algorithm>
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

#include "core/compile/kernel_templates.hpp"
#include "core/measure/measure_protocol.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/sm_clock.hpp"
#include "cuda/variant_launch.hpp"
#include "cuda/worker_measures.hpp"
#include "cuda/worker_sampling.hpp"
#include "cuda/worker_state.hpp"

namespace tiletune {

namespace {

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
    out.status = variant_status::launch_error;
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
  void* c = g.c.get();
  // The variant's parameters as its family describes them, scratch buffers included.
  variant_launch bound(r, kernel, raw, g);
  out.device_bytes += bound.scratch_bytes();
  out.clusters_at_once = bound.clusters_at_once();
  const std::function<void()> launch = [&bound] { bound(); };

  // Verify first, on a poisoned C (all bits set: NaN in every dtype) unless beta reads C.
  // A request that says verify=false comes for a variant this run verified already.
  if (!r.verify) {
    out.timing = sample(g, launch);
    out.status = variant_status::ok;
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
  out.verified = true;
  const std::int64_t row_bytes = p.n * element_bytes(p.elements().c);
  if (!g.writes_every_row) {
    // Masked groups: the rows past each group's count must be as they were, and only the written are compared.
    const std::int64_t touched = first_touched_row(g.result_host.data(), p.beta == 0.0 ? nullptr : g.c0_host.data(),
                                                   row_bytes, g.written_rows, p.m * p.batch);
    if (touched >= 0) {
      out.status = variant_status::incorrect;
      out.message = fmt::format("wrote row {} of C, past its group's rows (masked layout)", touched);
      return out;
    }
    g.result_host = gather_rows(g.result_host.data(), row_bytes, g.written_rows);
  }
  out.error = compare_stored_output(p.elements().c, g.result_host.data(), g.reference_host.data(),
                                    g.reference_host.size(), g.reference_sums,
                                    std::max(1u, std::thread::hardware_concurrency()));
  const double allowed = r.error_bound > 0 ? r.error_bound : error_bound(p.type);
  if (!passes(out.error, allowed)) {
    out.status = variant_status::incorrect;
    out.message = fmt::format("relative Frobenius error {:.3g} over the bound {:.2g}", out.error.rel_frobenius, allowed);
    return out;
  }
  out.timing = sample(g, launch);
  out.status = variant_status::ok;
  out.timer = g.timer->name();
  out.sm_clock_mhz = sm_clock_mhz(g.setup.device);
  return out;
}

void answer(std::ostream& out, const measure_response& r) {
  out << to_json(r).dump() << '\n';
  out.flush();
}

// Tells the parent the worker is ready: the device, the timer and the memory it holds.
void announce_ready(std::ostream& out, gpu_state& g) {
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
}

// Answers one request line; false when the CUDA context broke and the worker must exit.
bool answer_request(std::ostream& out, gpu_state& g, const std::string& line) {
  measure_request r;
  try {
    r = measure_request_from_json(nlohmann::json::parse(line));
  } catch (const std::exception& e) {
    measure_response bad;
    bad.id = "?";
    bad.status = variant_status::launch_error;
    bad.message = std::string("bad request: ") + e.what();
    answer(out, bad);
    return true;
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
    answer(out, r.op == measure_op::reference ? measure_reference(g, r)
                : r.op == measure_op::library ? measure_library(g, r)
                : r.op == measure_op::bandwidth ? measure_bandwidth(g, r)
                : r.op == measure_op::launch ? measure_launch(g, r)
                                    : measure_variant(g, r));
  } catch (const std::exception& e) {
    measure_response fail;
    fail.id = r.id;
    fail.status = variant_status::launch_error;
    fail.message = e.what();
    const bool broken = context_is_broken();
    if (broken) fail.message += " (the CUDA context is broken; the worker restarts)";
    fail.worker_exits = broken;
    answer(out, fail);
    if (broken) return false;
  }
  return true;
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
  announce_ready(out, g);

  while (std::getline(in, line))
    if (!answer_request(out, g, line)) return 4;
  return 0;
}

}  // namespace tiletune
