#include "core/compile_cache.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

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

class fake_compiler : public kernel_compiler {
 public:
  int calls = 0;
  compiled_kernel compile(const compile_job& job) override {
    ++calls;
    compiled_kernel k;
    k.ok = job.source.find("error") == std::string::npos;
    k.log = "log of " + job.name;
    if (k.ok) {
      k.cubin = std::string("\x7f" "ELF\0\x01\x02binary", 14);
      k.resources.registers = 96;
      k.resources.spill_store_bytes = 4;
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
  EXPECT_EQ(second.resources.registers, 96);
  EXPECT_EQ(second.resources.spill_store_bytes, 4);
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
