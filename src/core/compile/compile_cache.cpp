#include "core/compile/compile_cache.hpp"

#include "core/compile/cubin_resources.hpp"
#include "core/compile/kernel_templates.hpp"
#include "core/whole_file.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tiletune {

namespace fs = std::filesystem;

namespace {
// Version 2: version 1 could hold failures of the driver-cache bug (no ptxas report).
constexpr std::string_view entry_magic = "tiletune-kernel-cache 2\n";

// An entry is only what one deterministic compile gives: a compile error with its
// log, or a cubin whose own figures agree with the resources stored beside it.
bool consistent(const compiled_kernel& k) {
  if (k.internal_failure) return false;
  if (!k.ok) return k.cubin.empty() && !k.log.empty();
  cubin_resources c;
  std::string error;
  if (!read_cubin_resources(k.cubin, kernel_entry_name, c, error)) return false;
  const kernel_resources& r = k.resources;
  return c.registers == r.registers && c.static_smem_bytes == r.static_smem_bytes &&
         c.frame_bytes == r.stack_bytes && r.spill_store_bytes >= 0 && r.spill_load_bytes >= 0 &&
         (r.spill_bytes() == 0 || r.stack_bytes > 0);  // spills live in the local frame
}
}

std::string fnv1a_128_hex(std::string_view bytes) {
  // FNV-1a with the 128-bit offset basis and prime of the FNV specification.
  __extension__ typedef unsigned __int128 u128;
  const u128 prime = (static_cast<u128>(0x0000000001000000ULL) << 64) | 0x000000000000013BULL;
  u128 h = (static_cast<u128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= prime;
  }
  return fmt::format("{:016x}{:016x}", static_cast<std::uint64_t>(h >> 64),
                     static_cast<std::uint64_t>(h));
}

fs::path default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "tiletune";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "tiletune";
  return fs::temp_directory_path() / fmt::format("tiletune-cache-{}", getuid());
}

compile_cache::compile_cache(fs::path dir) : dir_(std::move(dir)) {}

std::string compile_cache::key(const compile_job& job, const std::string& compiler_version) {
  // Length-prefixed fields, so no two different jobs serialise alike.
  std::string text;
  auto field = [&](std::string_view s) { text += fmt::format("{}:{};", s.size(), s); };
  field(compiler_version);
  field(job.arch);
  for (const auto& o : job.options) field(o);
  field(job.source);
  return fnv1a_128_hex(text);
}

std::optional<compiled_kernel> compile_cache::load(const std::string& key) const {
  std::ifstream in(dir_ / (key + ".ttk"), std::ios::binary);
  if (!in) return std::nullopt;
  std::string magic(entry_magic.size(), '\0');
  if (!in.read(magic.data(), static_cast<std::streamsize>(magic.size())) || magic != entry_magic)
    return std::nullopt;
  std::string meta_line;
  if (!std::getline(in, meta_line)) return std::nullopt;
  try {
    const auto meta = nlohmann::json::parse(meta_line);
    compiled_kernel k;
    k.ok = meta.at("ok").get<bool>();
    k.log = meta.at("log").get<std::string>();
    k.resources.registers = meta.at("registers").get<int>();
    k.resources.static_smem_bytes = meta.at("static_smem_bytes").get<std::int64_t>();
    k.resources.stack_bytes = meta.at("stack_bytes").get<std::int64_t>();
    k.resources.spill_store_bytes = meta.at("spill_store_bytes").get<std::int64_t>();
    k.resources.spill_load_bytes = meta.at("spill_load_bytes").get<std::int64_t>();
    k.resources.from_ptxas_report = meta.at("from_ptxas_report").get<bool>();
    const auto cubin_bytes = meta.at("cubin_bytes").get<std::size_t>();
    // The stated size must be exactly what is left of the file (a damaged size could ask for gigabytes).
    const auto body_begin = in.tellg();
    std::error_code ec;
    const auto file_bytes = fs::file_size(dir_ / (key + ".ttk"), ec);
    if (ec || body_begin < 0 || file_bytes < static_cast<std::uintmax_t>(body_begin) ||
        file_bytes - static_cast<std::uintmax_t>(body_begin) != cubin_bytes)
      return std::nullopt;
    k.cubin.resize(cubin_bytes);
    if (cubin_bytes && !in.read(k.cubin.data(), static_cast<std::streamsize>(cubin_bytes)))
      return std::nullopt;
    if (in.peek() != std::ifstream::traits_type::eof()) return std::nullopt;  // trailing junk
    if (!consistent(k)) return std::nullopt;
    k.from_cache = true;
    return k;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool compile_cache::has(const std::string& key) const {
  std::error_code ec;
  return fs::is_regular_file(dir_ / (key + ".ttk"), ec);
}

bool compile_cache::store(const std::string& key, const compiled_kernel& k) const {
  if (!consistent(k)) return false;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return false;
  const nlohmann::json meta = {{"ok", k.ok},
                               {"log", k.log},
                               {"registers", k.resources.registers},
                               {"static_smem_bytes", k.resources.static_smem_bytes},
                               {"stack_bytes", k.resources.stack_bytes},
                               {"spill_store_bytes", k.resources.spill_store_bytes},
                               {"spill_load_bytes", k.resources.spill_load_bytes},
                               {"from_ptxas_report", k.resources.from_ptxas_report},
                               {"cubin_bytes", k.cubin.size()}};
  std::string bytes = std::string(entry_magic) +
                      meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
  bytes.append(k.cubin.data(), k.cubin.size());
  return write_file_whole(dir_ / (key + ".ttk"), bytes);
}

cached_compiler::cached_compiler(kernel_compiler& inner, compile_cache cache)
    : inner_(inner), cache_(std::move(cache)), version_(inner.version()) {}

bool cached_compiler::is_cached(const compile_job& job) const {
  return cache_.has(compile_cache::key(job, version_));
}

compiled_kernel cached_compiler::compile(const compile_job& job) {
  const std::string key = compile_cache::key(job, version_);
  if (auto hit = cache_.load(key)) return *hit;
  compiled_kernel k = inner_.compile(job);
  cache_.store(key, k);
  return k;
}

}  // namespace tiletune
