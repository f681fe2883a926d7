#pragma once
// What the fuzz targets share: an input handed to a parser as a file, as the
// CLI hands it one. Only usage_error may leave a parser (exit 2); any other
// exception escapes the target and is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace tiletune::fuzz {

inline std::filesystem::path input_file(const std::uint8_t* data, std::size_t size, const std::string& name) {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("tiletune-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(std::filesystem::temp_directory_path() / ("tiletune-fuzz-" + std::to_string(getpid())), ec);
    });
    return d;
  }();
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                static_cast<std::streamsize>(size));
  return path;
}

// A finding that is no crash (a wrong exit code, a broken invariant): stop loudly.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

}  // namespace tiletune::fuzz
