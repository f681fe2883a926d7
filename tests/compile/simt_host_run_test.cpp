// The simt family's own kernel source, run on the CPU: every default variant is rendered as
// tiletune renders it for NVRTC, compiled by the host compiler with a shim for the CUDA keywords
// (support/cuda_host_shim.hpp: a host thread per CUDA thread, a barrier for __syncthreads),
// and run on odd shapes against a double-precision GEMM. Not an emulation written beside the
// kernel (as the mma and wgmma ones are): the kernel itself, so that a change to simt_gemm.cu is
// proven before any GPU sees it. What it cannot see: timing, and anything the GPU's memory model
// allows that host threads with a barrier do not.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/compile/kernel_templates.hpp"
#include "core/gemm/families/simt/simt_family.hpp"
#include "core/gemm/search_space.hpp"
#include "core/device/device_spec.hpp"
#include "core/measure/measure_protocol.hpp"

using namespace tiletune;
namespace fs = std::filesystem;

namespace {

// Appended to the kernel: the block's shared memory and a launch, block after block, each
// block's threads at once.
constexpr const char* host_launcher = R"(
#include <thread>
#include <vector>
alignas(128) float tt_smem[64 * 1024];
extern "C" void tt_host_run(unsigned gx, unsigned gy, unsigned gz, int threads, const float* A, const float* B,
                            float* C, int M, int N, int K, int lda, int ldb, int ldc, long long sa, long long sb,
                            long long sc, float alpha, float beta) {
  gridDim = {gx, gy, gz};
  blockDim = {unsigned(threads), 1, 1};
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x) {
        std::barrier<> bar(threads);
        tt_host_block_barrier = &bar;
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t)
          ts.emplace_back([&, t] {
            threadIdx = {unsigned(t), 0, 0};
            blockIdx = {x, y, z};
            tiletune_gemm(A, B, C, M, N, K, lda, ldb, ldc, sa, sb, sc, alpha, beta, nullptr, nullptr);
          });
        for (auto& th : ts) th.join();
      }
}
)";

using run_fn = void (*)(unsigned, unsigned, unsigned, int, const float*, const float*, float*, int, int, int, int, int,
                        int, long long, long long, long long, float, float);

struct host_kernel {
  std::shared_ptr<void> library;
  run_fn run = nullptr;
  std::string log;
};

// The source as the host compiler takes it: the epilogue's empty asm pins beta in a register
// ("+f", a GPU float register), which on x86 is an SSE register ("+x").
std::string for_the_host(std::string source) {
  for (std::size_t at; (at = source.find("\"+f\"(beta)")) != std::string::npos;) source.replace(at, 10, "\"+x\"(beta)");
  return source + host_launcher;
}

// The options of every host compile; the precompiled prefix below must be made with the same.
constexpr const char* host_options = "-std=c++20 -O1 -fPIC -pthread -w";

// The shim and the launcher's headers, precompiled once per test process: parsing them was 2/3 of
// each variant's compile. Without a usable .gch (it failed to build), the compiler reads the text.
fs::path host_prefix() {
  static const struct prefix {
    fs::path dir = fs::temp_directory_path() / fmt::format("tiletune_host_prefix_{}", getpid());
    fs::path header = dir / "prefix.hpp";
    prefix() {
      fs::create_directories(dir);
      std::ofstream(header) << "#include \"" << TILETUNE_HOST_SHIM << "\"\n#include <thread>\n#include <vector>\n";
      const std::string command = fmt::format("'{}' {} -x c++-header '{}' -o '{}.gch' > /dev/null 2>&1", TILETUNE_HOST_CXX,
                                              host_options, header.string(), header.string());
      if (std::system(command.c_str()) != 0) fs::remove(header.string() + ".gch");
    }
    ~prefix() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } p;
  return p.header;
}

host_kernel build(const std::string& source, const std::string& name) {
  host_kernel k;
  const fs::path prefix = host_prefix();
  const fs::path dir = fs::temp_directory_path() / fmt::format("tiletune_host_run_{}", getpid());
  fs::create_directories(dir);
  const fs::path cpp = dir / (name + ".cpp"), so = dir / (name + ".so"), log = dir / (name + ".log");
  std::ofstream(cpp) << for_the_host(source);
  const std::string command = fmt::format("'{}' {} -shared -include '{}' -x c++ '{}' -o '{}' > '{}' 2>&1", TILETUNE_HOST_CXX,
                                          host_options, prefix.string(), cpp.string(), so.string(), log.string());
  const int rc = std::system(command.c_str());
  std::ifstream in(log);
  k.log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (rc == 0) {
    void* lib = dlopen(so.string().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      k.library = std::shared_ptr<void>(lib, [](void* l) { dlclose(l); });
      k.run = reinterpret_cast<run_fn>(dlsym(lib, "tt_host_run"));
    } else {
      k.log += dlerror();
    }
  }
  std::error_code ignored;
  for (const auto& p : {cpp, so, log}) fs::remove(p, ignored);
  fs::remove(dir, ignored);  // once empty
  return k;
}

// One problem and how its operands are stored.
struct shape {
  int m, n, k, batch;
  int pad;  // added to each leading dimension: odd pads leave no row 16-byte aligned
  float alpha, beta;
};

// The largest difference from a double-precision GEMM, over the fp32 bound of each element
// (K products and C's term: 2^-22 of the sum of their magnitudes, times K, a loose bound that
// a wrong element exceeds by orders). 1 or more: wrong.
double run_and_compare(const host_kernel& k, const tile_config& c, layout l, const shape& s, std::uint32_t seed) {
  const bool at = l.a_transposed, bt = l.b_transposed;
  const int lda = (at ? s.m : s.k) + s.pad, ldb = (bt ? s.k : s.n) + s.pad, ldc = s.n + s.pad;
  const long long sa = static_cast<long long>(lda) * (at ? s.k : s.m) + 3, sb = static_cast<long long>(ldb) * (bt ? s.n : s.k) + 5,
                  sc = static_cast<long long>(ldc) * s.m + 7;
  std::vector<float> A(sa * s.batch), B(sb * s.batch), C(sc * s.batch);
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto* v : {&A, &B, &C})
    for (float& x : *v) x = u(g);
  const std::vector<float> C0 = C;
  gemm_problem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.batch = s.batch;
  p.type = dtype::f32;
  p.layout = l;
  const launch_shape grid = launch_shape_for(c, p);
  k.run(static_cast<unsigned>(grid.grid_x), static_cast<unsigned>(grid.grid_y), static_cast<unsigned>(grid.grid_z), grid.threads, A.data(), B.data(), C.data(), s.m, s.n, s.k, lda, ldb,
        ldc, sa, sb, sc, s.alpha, s.beta);
  double worst = 0;
  for (int z = 0; z < s.batch; ++z)
    for (int i = 0; i < s.m; ++i)
      for (int j = 0; j < s.n; ++j) {
        double sum = 0, magnitude = 0;
        for (int q = 0; q < s.k; ++q) {
          const double a = A[z * sa + (at ? static_cast<long long>(q) * lda + i : static_cast<long long>(i) * lda + q)];
          const double b = B[z * sb + (bt ? static_cast<long long>(j) * ldb + q : static_cast<long long>(q) * ldb + j)];
          sum += a * b;
          magnitude += std::abs(a * b);
        }
        const long long at_c = z * sc + static_cast<long long>(i) * ldc + j;
        const double want = s.alpha * sum + s.beta * C0[at_c];
        const double bound = std::ldexp(1.0, -22) * (s.k + 2) * (std::abs(s.alpha) * magnitude + std::abs(s.beta * C0[at_c]));
        const double e = std::abs(C[at_c] - want) / std::max(bound, 1e-30);
        worst = std::max(worst, e <= 1e300 ? e : 1e300);  // NaN or Inf: wrong
      }
  // Between the matrices and past each row's N: untouched.
  for (long long at_c = 0; at_c < static_cast<long long>(C.size()); ++at_c) {
    const long long within = at_c % sc, row = within / ldc, col = within % ldc;
    if (row >= s.m || col >= s.n) worst = std::max(worst, C[at_c] == C0[at_c] ? 0.0 : 1e9);
  }
  return worst;
}

std::vector<shape> shapes_for(const tile_config& c) {
  // A partial tile in M and N, a partial last k-tile, two matrices, beta reading C; then rows
  // that are not 16-byte aligned (the element-wise loads); then a single row and column.
  return {{c.block_m + 3, 2 * c.block_n - 5, 3 * c.block_k + 5, 2, 0, 1.5f, 0.5f},
          {c.block_m - 1, c.block_n + 7, 2 * c.block_k + 3, 1, 1, 1.0f, 0.0f},
          {1, 1, c.block_k - 3, 1, 3, -2.0f, 0.25f}};
}

// Every default simt variant in one layout each (the four in turn), built in parallel.
struct variant {
  tile_config config;
  layout lay;
  std::string name;
};
std::vector<variant> variants() {
  std::vector<variant> out;
  const char* layouts[] = {"nn", "nt", "tn", "tt"};
  std::size_t i = 0;
  gemm_problem p;
  p.m = p.n = p.k = 4096;
  p.type = dtype::f32;
  for (const tile_config& c : default_search_space(kernel_family{&simt_family()}, dtype::f32))
    if (!check_constraints(c, p, find_preset("h100-sxm"))) {  // those the search can run
      const char* l = layouts[i++ % 4];
      out.push_back({c, parse_layout(l), fmt::format("{}_{}", c.id(), l)});
    }
  return out;
}

std::vector<host_kernel> build_all(const std::vector<variant>& vs,
                                   const std::function<std::string(const std::string&)>& edit = nullptr) {
  std::vector<host_kernel> out(vs.size());
  std::vector<std::thread> workers;
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned w = 0; w < n; ++w)
    workers.emplace_back([&, w] {
      for (std::size_t j = w; j < vs.size(); j += n) {
        std::string source = render_kernel_source(vs[j].config, dtype::f32, vs[j].lay);
        if (edit) source = edit(source);
        out[j] = build(source, vs[j].name);
      }
    });
  for (auto& t : workers) t.join();
  return out;
}

}  // namespace

TEST(simt_host_run, every_default_variant_computes_the_gemm_on_odd_shapes) {
  const auto vs = variants();
  ASSERT_GE(vs.size(), 30u);
  const auto kernels = build_all(vs);
  double worst = 0;
  for (std::size_t j = 0; j < vs.size(); ++j) {
    ASSERT_TRUE(kernels[j].run) << vs[j].name << "\n" << kernels[j].log;
    for (const shape& s : shapes_for(vs[j].config)) {
      const double e = run_and_compare(kernels[j], vs[j].config, vs[j].lay, s, static_cast<std::uint32_t>(j));
      worst = std::max(worst, e);
      EXPECT_LT(e, 1.0) << vs[j].name << " on " << s.m << "x" << s.n << "x" << s.k << " batch " << s.batch << " pad "
                        << s.pad;
    }
  }
  std::printf("%zu simt variants ran on the CPU, 3 shapes each: worst error %.3g of its fp32 bound\n", vs.size(), worst);
}

// The check can fail: each planted change of the kernel's source makes some result wrong.
TEST(simt_host_run, planted_defects_make_the_comparison_fail) {
  std::vector<variant> vs;
  for (const char* l : {"nn", "tt"})
    vs.push_back({simt_tile(64, 128, 16, 8, 4), parse_layout(l), fmt::format("planted_{}", l)});
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> defects = {
      {"the multiply takes the wrong column of B", {"fmaf(a[i], b[j], acc[i][j])", "fmaf(a[i], b[(j + 1) % TT_TN], acc[i][j])"}},
      {"the next k-tile lands in the buffer being read", {"store_shared(buf ^ 1)", "store_shared(buf)"}},
      {"B's stores miss the swizzle its reads assume", {"tt_store_shared_vec(bs + TT_BS_AT(kr, nc), b_regs[i]);",
                                                        "tt_store_shared_vec(bs + TT_BS_AT(kr, nc ^ 4), b_regs[i]);"}},
  };
  for (const auto& [what, change] : defects) {
    const auto kernels = build_all(vs, [&, change = change](const std::string& s) {
      std::string out = s;
      const auto at = out.find(change.first);
      EXPECT_NE(at, std::string::npos) << what;
      if (at != std::string::npos) out.replace(at, change.first.size(), change.second);
      return out;
    });
    double worst = 0;
    for (std::size_t j = 0; j < vs.size(); ++j) {
      ASSERT_TRUE(kernels[j].run) << what << "\n" << kernels[j].log;
      for (const shape& s : shapes_for(vs[j].config))
        worst = std::max(worst, run_and_compare(kernels[j], vs[j].config, vs[j].lay, s, 7));
    }
    EXPECT_GE(worst, 1.0) << what << ": not caught";
  }
}
