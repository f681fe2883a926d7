#include "core/tune/fleet/suite_shard.hpp"

#include <charconv>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"

namespace tiletune {

namespace {
bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}
}  // namespace

suite_shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  suite_shard s;
  const bool ok = slash != std::string::npos &&
                  parse_int(std::string_view(text).substr(0, slash), s.index) &&
                  parse_int(std::string_view(text).substr(slash + 1), s.count);
  if (!ok)
    throw usage_error(fmt::format("--shard {} is invalid: give I/N, shard I of N counted from 0 (0/4 to 3/4)", text));
  if (s.count < 1) throw usage_error(fmt::format("--shard {} is invalid: N must be at least 1", text));
  if (s.index < 0 || s.index >= s.count)
    throw usage_error(fmt::format("--shard {} is invalid: I counts from 0 to N-1 (0 to {}), as Slurm's array task ids "
                                  "of --array=0-{}",
                                  text, s.count - 1, s.count - 1));
  return s;
}

std::uint64_t fnv1a64(const std::string& text) {
  // FNV-1a, 64-bit: offset basis 14695981039346656037, prime 1099511628211
  // (Fowler, Noll, Vo; the IETF draft draft-eastlake-fnv). Defined on bytes,
  // so every machine of a fleet computes the same split (std::hash need not).
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

int shard_of(const gemm_problem& p, int count) {
  return static_cast<int>(fnv1a64(tuning_problem_key(p)) % static_cast<std::uint64_t>(count));
}

gemm_suite select_shard(const gemm_suite& suite, const suite_shard& s) {
  gemm_suite out;
  out.name = suite.name;
  for (const auto& p : suite.problems)
    if (shard_of(p.problem, s.count) == s.index) out.problems.push_back(p);
  return out;
}

}  // namespace tiletune
