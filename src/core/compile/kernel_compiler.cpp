#include "core/compile/kernel_compiler.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace tiletune {

namespace {

// The integer that ends just before `suffix` at or after `from`, or -1.
std::int64_t number_before(std::string_view text, std::string_view suffix, std::size_t from,
                           std::size_t until) {
  const std::size_t at = text.find(suffix, from);
  if (at == std::string_view::npos || at > until) return -1;
  std::size_t begin = at;
  while (begin > from && text[begin - 1] == ' ') --begin;
  std::size_t end = begin;
  while (begin > from && std::isdigit(static_cast<unsigned char>(text[begin - 1]))) --begin;
  std::int64_t v = -1;
  std::from_chars(text.data() + begin, text.data() + end, v);
  return begin == end ? -1 : v;
}

}  // namespace

bool parse_ptxas_report(std::string_view whole, kernel_resources& out, std::string_view entry) {
  // ptxas info    : Compiling entry function 'tiletune_gemm' for 'sm_90'
  // ptxas info    : Function properties for tiletune_gemm
  // ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  // ptxas info    : Used 128 registers, used 1 barriers, 16384 bytes smem, 400 bytes cmem[0]
  std::string_view log = whole;
  constexpr std::string_view compiling = "Compiling entry function '";
  if (!entry.empty() && whole.find(compiling) != std::string_view::npos) {
    const std::string header = std::string(compiling) + std::string(entry) + "'";
    const std::size_t at = whole.find(header);
    if (at != std::string_view::npos) {
      const std::size_t next = whole.find(compiling, at + header.size());
      log = whole.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at);
    } else if (whole.find(compiling, whole.find(compiling) + 1) != std::string_view::npos) {
      return false;  // other kernels only: none of them is the one asked for
    }                // one kernel of another name (an export's renamed entry): its figures
  }
  const std::size_t used = log.find("Used ");
  if (used == std::string_view::npos) return false;
  const std::size_t used_end = std::min(log.find('\n', used), log.size());
  const auto regs = number_before(log, " registers", used, used_end);
  if (regs < 0) return false;
  out.registers = static_cast<int>(regs);
  out.static_smem_bytes = std::max<std::int64_t>(0, number_before(log, " bytes smem", used, used_end));
  const std::size_t props = log.find("bytes stack frame");
  if (props != std::string_view::npos) {
    const std::size_t line_begin = log.rfind('\n', props) == std::string_view::npos
                                       ? 0
                                       : log.rfind('\n', props) + 1;
    const std::size_t line_end = std::min(log.find('\n', props), log.size());
    out.stack_bytes = std::max<std::int64_t>(0, number_before(log, " bytes stack frame", line_begin, line_end));
    out.spill_store_bytes =
        std::max<std::int64_t>(0, number_before(log, " bytes spill stores", line_begin, line_end));
    out.spill_load_bytes =
        std::max<std::int64_t>(0, number_before(log, " bytes spill loads", line_begin, line_end));
  }
  return true;
}

void check_compiler_supports(const kernel_compiler& compiler, int compute_capability, const std::string& gpu) {
  const std::vector<int> archs = compiler.supported_archs();
  if (archs.empty() || compute_capability <= 0 || std::find(archs.begin(), archs.end(), compute_capability) != archs.end())
    return;
  const bool older = compute_capability < archs.front();
  throw environment_error(fmt::format(
      "{} cannot compile for sm_{}, the {}'s architecture (it compiles sm_{} to sm_{}): every variant would be a "
      "compile error; plan with {} CUDA toolkit whose NVRTC has sm_{}{}",
      compiler.version(), compute_capability, gpu, archs.front(), archs.back(), older ? "an older" : "a newer",
      compute_capability, compute_capability == 70 ? " (CUDA 12.x has sm_70; CUDA 13 dropped it)" : ""));
}

std::vector<compiled_kernel> compile_all(kernel_compiler& compiler, std::span<const compile_job> jobs,
                                         int threads, const compile_progress& progress) {
  std::vector<compiled_kernel> results(jobs.size());
  std::atomic<std::size_t> next{0};
  std::size_t done = 0, cached = 0;
  std::mutex mutex;
  std::exception_ptr failure;
  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= jobs.size()) return;
      try {
        results[i] = compiler.compile(jobs[i]);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
        next = jobs.size();
        return;
      }
      std::lock_guard lock(mutex);
      ++done;
      if (results[i].from_cache) ++cached;
      if (progress) progress(done, jobs.size(), cached);
    }
  };
  const int n = std::clamp<int>(threads, 1, static_cast<int>(std::max<std::size_t>(jobs.size(), 1)));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return results;
}

}  // namespace tiletune
