// Setting up the measuring worker's GPU for a problem: buffers, operands,
// the fp32 cuBLASLt reference every variant is checked against, the timer.
#include "cuda/worker_state.hpp"

#include "cuda/cublaslt_library.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tiletune {

device_ptr device_alloc(std::size_t bytes) {
  void* p = nullptr;
  TT_CUDA(cudaMalloc(&p, std::max<std::size_t>(bytes, 256)));
  return device_ptr(p);
}

void setup_gpu(gpu_state& g) {
  const gemm_problem& p = g.setup.problem;
  TT_CUDA(cudaSetDevice(g.setup.device));
  TT_CUDA(cudaFree(nullptr));  // create the context now
  std::size_t free_before = 0, total = 0;
  TT_CUDA(cudaMemGetInfo(&free_before, &total));
  TT_CUDA(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
  TT_CUBLAS(cublaslt().Create(&g.lt));

  const operand_types e = p.elements();
  auto bytes = [](element_type t) { return static_cast<std::size_t>(element_bytes(t)); };
  g.a_count = static_cast<std::size_t>(p.a_elements());
  g.b_count = static_cast<std::size_t>(p.b_elements());
  g.c_count = static_cast<std::size_t>(p.c_elements());
  const host_matrix a = random_matrix(e.a, g.a_count, g.setup.seed);
  const host_matrix b = random_matrix(e.b, g.b_count, g.setup.seed + 1);
  const host_matrix c0 = random_matrix(e.c, g.c_count, g.setup.seed + 2);
  g.a = device_alloc(g.a_count * bytes(e.a));
  g.b = device_alloc(g.b_count * bytes(e.b));
  g.c = device_alloc(g.c_count * bytes(e.c));
  g.c0 = device_alloc(g.c_count * bytes(e.c));
  g.reference = device_alloc(g.c_count * 4);
  g.workspace = device_alloc(workspace_bytes);
  TT_CUDA(cudaMemcpy(g.a.get(), a.bytes.data(), a.bytes.size(), cudaMemcpyHostToDevice));
  TT_CUDA(cudaMemcpy(g.b.get(), b.bytes.data(), b.bytes.size(), cudaMemcpyHostToDevice));
  TT_CUDA(cudaMemcpy(g.c0.get(), c0.bytes.data(), c0.bytes.size(), cudaMemcpyHostToDevice));
  if (p.groups) {
    const std::vector<int> rows(p.groups->rows.begin(), p.groups->rows.end());
    g.group_rows = device_alloc(rows.size() * sizeof(int));
    TT_CUDA(cudaMemcpy(g.group_rows.get(), rows.data(), rows.size() * sizeof(int), cudaMemcpyHostToDevice));
  }
  g.written_rows = written_row_ranges(p);
  g.writes_every_row = g.written_rows.size() == 1 && g.written_rows[0] == row_range{0, p.m * p.batch};
  if (!g.writes_every_row) g.c0_host = c0.bytes;
  // The flush buffer: writing (or reading) twice the L2 evicts the operands between samples.
  int l2 = 0;
  TT_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, g.setup.device));
  g.flush_bytes = g.setup.l2_flush != l2_flush_mode::none ? 2 * static_cast<std::size_t>(l2) : 0;
  if (g.flush_bytes) g.flush = device_alloc(g.flush_bytes);
  if (g.setup.l2_flush == l2_flush_mode::read) {
    TT_CUDA(cudaMemset(g.flush.get(), 0, g.flush_bytes));  // once: the values the kernel folds
    g.read_flush = std::make_unique<l2_read_flush>(g.setup.device);
  }

  // The verification reference: fp32 output, pedantic fp32 compute, C0 in fp32.
  TT_CUDA(cudaMemcpy(g.reference.get(), c0.values.data(), g.c_count * 4, cudaMemcpyHostToDevice));
  // (A grouped problem: one GEMM per group with rows.) cuBLASLt computes fp8 only in its fast
  // mode: the reference multiplies bf16 copies of the fp8 operands instead, which hold their
  // values exactly (bf16 has e4m3's and e5m2's exponent range and more mantissa).
  // Rowwise and block scales (powers of two) are folded into those copies, still exact.
  gemm_problem reference_problem = p;
  device_ptr a_exact, b_exact;
  if (is_fp8(p.type)) {
    reference_problem.type = dtype::bf16;
    reference_problem.scaling = scaling_mode::none;
    reference_problem.out.reset();
    const problem_scales scales = random_scales(p, g.setup.seed + 3);
    auto upload = [](const std::vector<float>& v) {
      device_ptr d = device_alloc(v.size() * 4);
      TT_CUDA(cudaMemcpy(d.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
      return d;
    };
    if (!scales.a.empty()) {
      g.scale_a = upload(scales.a);
      g.scale_b = upload(scales.b);
    }
    auto upload_bf16 = [](const std::vector<float>& values) {
      std::vector<std::uint16_t> bits(values.size());
      for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = float_to_bf16_bits(values[i]);
      device_ptr d = device_alloc(bits.size() * 2);
      TT_CUDA(cudaMemcpy(d.get(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
      return d;
    };
    a_exact = upload_bf16(scales.a.empty() ? a.values : scaled_values(p, 'a', a.values, scales));
    b_exact = upload_bf16(scales.b.empty() ? b.values : scaled_values(p, 'b', b.values, scales));
  }
  const cublaslt_group_loop accurate(g.lt, reference_problem, true, workspace_bytes);
  if (!accurate.ready()) throw cuda_error("cuBLASLt has no algorithm for the fp32 reference", 0);
  accurate.run(a_exact ? a_exact.get() : g.a.get(), b_exact ? b_exact.get() : g.b.get(), g.reference.get(),
               g.workspace.get(), g.stream);
  g.reference_host.resize(g.c_count);
  TT_CUDA(cudaMemcpyAsync(g.reference_host.data(), g.reference.get(), g.c_count * 4, cudaMemcpyDeviceToHost, g.stream));
  TT_CUDA(cudaStreamSynchronize(g.stream));
  if (!g.writes_every_row) {  // only the rows a variant writes are compared
    const std::vector<unsigned char> kept =
        gather_rows(reinterpret_cast<const unsigned char*>(g.reference_host.data()), p.n * 4, g.written_rows);
    g.reference_host.resize(kept.size() / sizeof(float));  // the bytes of whole floats, copied as such
    std::memcpy(g.reference_host.data(), kept.data(), g.reference_host.size() * sizeof(float));
  }
  g.reference_sums = summarize_reference(g.reference_host.data(), g.reference_host.size());

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

}  // namespace tiletune
