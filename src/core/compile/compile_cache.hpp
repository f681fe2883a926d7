#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "core/compile/kernel_compiler.hpp"

namespace tiletune {

// 128-bit FNV-1a of the bytes, as 32 hex digits: the cache's content address.
std::string fnv1a_128_hex(std::string_view bytes);

// $XDG_CACHE_HOME/tiletune, else ~/.cache/tiletune, else a folder under /tmp.
std::filesystem::path default_cache_dir();

// A content-addressed disk cache of compiled kernels, keyed by the source, the
// options, the architecture and the compiler's version. Entries are written to
// a temporary file and renamed, so a reader never sees half an entry and
// concurrent runs can share one folder. A damaged entry reads as a miss.
// Only deterministic results are stored: compile errors and cubins whose own
// figures match the stored ones; internal failures are never stored.
class compile_cache {
 public:
  explicit compile_cache(std::filesystem::path dir);
  static std::string key(const compile_job& job, const std::string& compiler_version);
  std::optional<compiled_kernel> load(const std::string& key) const;
  // Failing to write (read-only folder, full disk) only costs the cache: returns false,
  // as does a result that is not worth keeping (an internal failure, an inconsistent cubin).
  bool store(const std::string& key, const compiled_kernel& k) const;
  const std::filesystem::path& dir() const { return dir_; }
  // An entry of that key is on disk (it may still read as a miss if damaged).
  bool has(const std::string& key) const;

 private:
  std::filesystem::path dir_;
};

// A compiler that asks the cache first and fills it after.
class cached_compiler : public kernel_compiler {
 public:
  cached_compiler(kernel_compiler& inner, compile_cache cache);
  compiled_kernel compile(const compile_job& job) override;
  bool is_cached(const compile_job& job) const override;
  std::string version() const override { return inner_.version(); }
  std::vector<int> supported_archs() const override { return inner_.supported_archs(); }

 private:
  kernel_compiler& inner_;
  compile_cache cache_;
  std::string version_;
};

}  // namespace tiletune
