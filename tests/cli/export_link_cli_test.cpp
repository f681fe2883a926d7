// Two exported kernels link into one program: each has a name of its own and a
// host header (ID.h) whose launcher a main.cu calls. nvcc compiles and links
// for sm_90a; nothing runs (no GPU needed). Skipped where nvcc is absent.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace {

// nvcc from $NVCC, PATH, or the toolkit's usual place; empty when there is none.
std::string find_nvcc() {
  if (const char* env = std::getenv("NVCC"); env && *env) return env;
  if (FILE* p = popen("command -v nvcc 2>/dev/null", "r")) {
    char buf[4096] = {};
    const bool got = fgets(buf, sizeof buf, p) != nullptr;
    pclose(p);
    std::string s = got ? buf : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    if (!s.empty()) return s;
  }
  return fs::exists("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : "";
}

// Runs a shell command; its exit code, output and error in `log`.
int shell(const std::string& cmd, std::string& log) {
  log.clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) log.append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

struct exported {
  std::string id, entry;
};

// Exports one named variant of an offline plan into dir; returns its id and entry.
exported export_one(const fs::path& dir, const std::string& dtype, const std::string& layout, const std::string& id,
                    const std::string& k = "777") {
  const result r = run({"gemm", "--m", "1000", "--n", "3000", "--k", k, "--dtype", dtype, "--layout", layout,
                        "--gpu", "h100-sxm", "--dry-run", "--only", id, "--quiet", "--export", dir.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(dir / (id + ".json")));
  return {id, j["launch"]["entry"].get<std::string>()};
}

}  // namespace

TEST(cli_export_link, two_exported_kernels_and_their_headers_link_into_one_program) {
  const std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "no nvcc (set NVCC or put it on PATH): the link test needs one";
  const fs::path dir = tmp_dir() / "export-link";
  fs::remove_all(dir);
  const exported a = export_one(dir, "f32", "tn", "simt_64x64x8_t8x8_v4");
  const exported b = export_one(dir, "bf16", "nt", "mma_64x64x32_w2x2_s3");
  // The same variant for another problem (a model's second GEMM): a name of its own, as the
  // header's constants are that problem's.
  const exported c = export_one(dir / "other", "bf16", "nt", "mma_64x64x32_w2x2_s3", "512");
  ASSERT_FALSE(HasFailure());
  EXPECT_NE(a.entry, b.entry);
  EXPECT_NE(b.entry, c.entry);

  std::ofstream(dir / "main.cu") << fmt::format(
      "#include \"{0}.h\"\n#include \"{1}.h\"\n#include \"other/{1}.h\"\n"
      "int main() {{\n"
      "  float *a = nullptr, *b = nullptr, *c = nullptr;\n"
      "  unsigned short *x = nullptr, *y = nullptr, *z = nullptr;\n"
      "  if ({2}_launch(a, b, c, nullptr, nullptr, 1.0f, 0.0f) != cudaSuccess) return 1;\n"
      "  if ({3}_launch(x, y, z, nullptr, nullptr, 1.0f, 0.0f, 0) != cudaSuccess) return 1;\n"
      "  if ({4}_launch(x, y, z, nullptr, nullptr, 1.0f, 0.0f, 0) != cudaSuccess) return 1;\n"
      "  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;\n"
      "}}\n",
      a.id, b.id, a.entry, b.entry, c.entry);
  const std::string arch = "-arch=sm_90a";
  std::string log;
  for (const std::string& cu : {a.id, b.id, "other/" + c.id, std::string("main")}) {
    const std::string cmd = fmt::format("cd '{}' && '{}' {} -c {}.cu -o {}.o", dir.string(), nvcc, arch, cu, cu);
    ASSERT_EQ(shell(cmd, log), 0) << cmd << "\n" << log;
  }
  const std::string link = fmt::format("cd '{}' && '{}' {} main.o {}.o {}.o other/{}.o -o two_kernels", dir.string(),
                                       nvcc, arch, a.id, b.id, c.id);
  ASSERT_EQ(shell(link, log), 0) << link << "\n" << log;
  EXPECT_TRUE(fs::exists(dir / "two_kernels"));
  // Each object defines its own kernel: the symbol the program calls.
  std::string syms;
  ASSERT_EQ(shell(fmt::format("nm -C '{}'", (dir / "two_kernels").string()), syms), 0);
  EXPECT_NE(syms.find(a.entry), std::string::npos);
  EXPECT_NE(syms.find(b.entry), std::string::npos);
  EXPECT_NE(syms.find(c.entry), std::string::npos);
  EXPECT_EQ(syms.find(" tiletune_gemm"), std::string::npos) << "the JIT's shared name left in the program";
}

// Headers whose tensor maps address typed buffers compile: a variant whose operands are both
// copied K-major first (tf32 tn: one pre-pass kernel, launched twice with constants of its own,
// maps on the copies) and the TMA-store epilogue's (a map on C).
TEST(cli_export_link, headers_of_two_pre_passes_and_of_a_map_on_c_compile) {
  const std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "no nvcc (set NVCC or put it on PATH): the link test needs one";
  const fs::path dir = tmp_dir() / "export-two-copies";
  fs::remove_all(dir);
  // K 768: the copies' rows (K elements) 16-byte aligned, as TMA needs.
  const exported k = export_one(dir, "tf32", "tn", "wgmma_128x128x32_c2_s4_cl1x1_g8m_kc", "768");
  const exported s = export_one(dir, "bf16", "nt", "wgmma_128x128x64_c2_s4_cl1x1_g8m_tmas_pp", "768");
  ASSERT_FALSE(HasFailure());
  std::ofstream(dir / "main.cu") << fmt::format(
      "#include \"{0}.h\"\n#include \"{2}.h\"\n"
      "int main() {{\n"
      "  float *a = nullptr, *b = nullptr, *c = nullptr, *ak = nullptr, *bk = nullptr;\n"
      "  unsigned short* z = nullptr;\n"
      "  if ({1}_launch(a, b, c, ak, bk, 1.0f, 0.0f, 0) != cudaSuccess) return 1;\n"
      "  return {3}_launch(nullptr, nullptr, z, 1.0f, 0.0f, 0) == cudaSuccess ? 0 : 1;\n"
      "}}\n",
      k.id, k.entry, s.id, s.entry);
  std::string log;
  const std::string cmd = fmt::format("cd '{}' && '{}' -arch=sm_90a -c main.cu -o main.o", dir.string(), nvcc);
  ASSERT_EQ(shell(cmd, log), 0) << cmd << "\n" << log;
}
