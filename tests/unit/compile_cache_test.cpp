#include "core/compile/compile_cache.hpp"

#include <filesystem>
#include <fstream>

#include <iterator>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/compile/cubin_resources.hpp"
#include "core/compile/kernel_templates.hpp"

using namespace tiletune;
namespace fs = std::filesystem;

namespace {
struct temp_dir {
  fs::path path;
  temp_dir() {
    path = fs::temp_directory_path() /
           ("tiletune-cache-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
  }
  ~temp_dir() { fs::remove_all(path); }
};

std::string read_cubin_file(const std::string& name) {
  std::ifstream in(std::string(TILETUNE_SOURCE_DIR) + "/tests/data/cubins/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class fake_compiler : public kernel_compiler {
 public:
  int calls = 0;
  compiled_kernel compile(const compile_job& job) override {
    ++calls;
    compiled_kernel k;
    k.ok = job.source.find("error") == std::string::npos;
    k.log = "log of " + job.name;
    if (k.ok) {
      // A real cubin that spills, with ptxas's report: the cache checks one against the other.
      k.cubin = read_cubin_file("spill_sm90.cubin");
      k.log = read_cubin_file("spill_sm90.ptxas.txt");
      complete_resources(k, kernel_entry_name);
    }
    k.compile_ms = 100;
    return k;
  }
  std::string version() const override { return "fake 1.0"; }
};

compile_job job(std::string source) {
  compile_job j;
  j.name = "v";
  j.source = std::move(source);
  j.arch = "sm_90";
  j.options = {"-std=c++17"};
  return j;
}
}  // namespace

TEST(fnv1a_128, known_vectors) {
  // From the FNV reference test vectors.
  EXPECT_EQ(fnv1a_128_hex(""), "6c62272e07bb014262b821756295c58d");
  EXPECT_EQ(fnv1a_128_hex("a"), "d228cb696f1a8caf78912b704e4a8964");
}

TEST(compile_cache, key_covers_source_options_arch_and_version) {
  const auto base = compile_cache::key(job("x"), "nvrtc 13.0");
  EXPECT_NE(base, compile_cache::key(job("y"), "nvrtc 13.0"));
  EXPECT_NE(base, compile_cache::key(job("x"), "nvrtc 13.1"));
  auto other_arch = job("x");
  other_arch.arch = "sm_80";
  EXPECT_NE(base, compile_cache::key(other_arch, "nvrtc 13.0"));
  auto other_opts = job("x");
  other_opts.options.push_back("-lineinfo");
  EXPECT_NE(base, compile_cache::key(other_opts, "nvrtc 13.0"));
  EXPECT_EQ(base, compile_cache::key(job("x"), "nvrtc 13.0"));
}

TEST(compile_cache, second_compile_is_a_hit_with_the_same_content) {
  temp_dir dir;
  fake_compiler inner;
  cached_compiler cached(inner, compile_cache(dir.path));
  const auto first = cached.compile(job("kernel"));
  const auto second = cached.compile(job("kernel"));
  EXPECT_EQ(inner.calls, 1);
  EXPECT_FALSE(first.from_cache);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.cubin, first.cubin);  // binary with NUL bytes survives
  EXPECT_EQ(second.resources.registers, 32);
  EXPECT_EQ(second.resources.spill_store_bytes, 1140);
  EXPECT_EQ(second.log, first.log);
  // Compile errors are deterministic, so they are cached too.
  cached.compile(job("error here"));
  const auto err = cached.compile(job("error here"));
  EXPECT_EQ(inner.calls, 2);
  EXPECT_FALSE(err.ok);
  // Nothing temporary is left behind.
  for (const auto& e : fs::directory_iterator(dir.path)) EXPECT_EQ(e.path().extension(), ".ttk") << e.path();
}

TEST(compile_cache, a_damaged_entry_is_a_miss_and_is_rewritten) {
  temp_dir dir;
  fake_compiler inner;
  cached_compiler cached(inner, compile_cache(dir.path));
  cached.compile(job("kernel"));
  const fs::path entry = dir.path / (compile_cache::key(job("kernel"), "fake 1.0") + ".ttk");
  ASSERT_TRUE(fs::exists(entry));
  const auto size = fs::file_size(entry);
  fs::resize_file(entry, size - 3);  // truncated, as by a crash mid-write elsewhere
  EXPECT_FALSE(compile_cache(dir.path).load(compile_cache::key(job("kernel"), "fake 1.0")));
  cached.compile(job("kernel"));
  EXPECT_EQ(inner.calls, 2);
  EXPECT_EQ(fs::file_size(entry), size);
  std::ofstream(entry) << "garbage";
  EXPECT_FALSE(compile_cache(dir.path).load(compile_cache::key(job("kernel"), "fake 1.0")));
}

TEST(compile_cache, an_unwritable_folder_only_costs_the_cache) {
  fake_compiler inner;
  cached_compiler cached(inner, compile_cache("/proc/tiletune-cannot-write-here"));
  EXPECT_TRUE(cached.compile(job("kernel")).ok);
  EXPECT_TRUE(cached.compile(job("kernel")).ok);
  EXPECT_EQ(inner.calls, 2);
}

TEST(compile_cache, internal_failures_are_never_cached) {
  temp_dir dir;
  const compile_cache cache(dir.path);
  compiled_kernel k;
  k.ok = false;
  k.internal_failure = true;
  k.log = "nvrtcCompileProgram: NVRTC_ERROR_INTERNAL_ERROR";
  EXPECT_FALSE(cache.store("k", k));
  EXPECT_FALSE(cache.load("k"));
  // A "success" whose cubin cannot be read is no result either.
  compiled_kernel bogus;
  bogus.ok = true;
  bogus.cubin = "not a cubin";
  bogus.resources.registers = 10;
  EXPECT_FALSE(cache.store("k", bogus));
}

TEST(compile_cache, an_entry_whose_figures_disagree_with_its_cubin_is_a_miss_and_rewritten) {
  temp_dir dir;
  fake_compiler inner;
  cached_compiler cached(inner, compile_cache(dir.path));
  const auto good = cached.compile(job("kernel"));
  ASSERT_TRUE(good.ok) << good.log;
  const std::string key = compile_cache::key(job("kernel"), "fake 1.0");
  const fs::path entry = dir.path / (key + ".ttk");
  std::string text;
  {
    std::ifstream in(entry, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto damaged = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << t;
    return compile_cache(dir.path).load(key);
  };
  EXPECT_FALSE(damaged("\"registers\":32", "\"registers\":33"));
  EXPECT_FALSE(damaged("\"stack_bytes\":584", "\"stack_bytes\":0"));
  EXPECT_FALSE(damaged("\"cubin_bytes\":26624", "\"cubin_bytes\":9999999999"));
  EXPECT_FALSE(damaged("tiletune-kernel-cache 2", "tiletune-kernel-cache 1"));
  EXPECT_FALSE(damaged("ELF", "ELG"));
  EXPECT_TRUE(damaged("\"registers\":32", "\"registers\":32"));  // the undamaged text loads
  damaged("\"registers\":32", "\"registers\":33");
  const int calls = inner.calls;
  const auto again = cached.compile(job("kernel"));
  EXPECT_EQ(inner.calls, calls + 1);
  EXPECT_FALSE(again.from_cache);
  EXPECT_TRUE(compile_cache(dir.path).load(key));  // rewritten
}

TEST(compile_cache, processes_and_threads_writing_one_key_leave_a_whole_entry) {
  temp_dir dir;
  fake_compiler inner;
  const compiled_kernel k = inner.compile(job("kernel"));
  ASSERT_TRUE(k.ok);
  const compile_cache cache(dir.path);
  // Each writer also reads: a reader sees nothing or a whole entry, never part of one.
  auto hammer = [&] {
    int bad = 0;
    for (int i = 0; i < 40; ++i) {
      cache.store("same", k);
      const auto got = cache.load("same");
      if (!got || got->cubin != k.cubin || got->resources.registers != k.resources.registers) ++bad;
    }
    return bad;
  };
  std::vector<pid_t> children;
  for (int p = 0; p < 3; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(hammer() == 0 ? 0 : 1);
    children.push_back(pid);
  }
  std::vector<std::thread> threads;
  std::vector<int> bad(3, 0);
  for (int t = 0; t < 3; ++t) threads.emplace_back([&, t] { bad[t] = hammer(); });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 3; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a child process read a broken entry";
  }
  for (const auto& e : fs::directory_iterator(dir.path)) EXPECT_EQ(e.path().extension(), ".ttk") << e.path();
}
