#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tiletune {

// What ptxas reported for one kernel (-Xptxas -v).
struct kernel_resources {
  int registers = 0;
  std::int64_t static_smem_bytes = 0;
  std::int64_t stack_bytes = 0;
  std::int64_t spill_store_bytes = 0;
  std::int64_t spill_load_bytes = 0;
  // False when ptxas printed no report and the figures come from the cubin: spill
  // bytes are then unknown, and stack_bytes > 0 (local memory) may be spills.
  bool from_ptxas_report = true;
  std::int64_t spill_bytes() const { return spill_store_bytes + spill_load_bytes; }
};

// Reads the figures of entry function `entry` in a ptxas -v report (a cubin may hold more than one
// kernel: a K-major copy's pre-pass beside the GEMM), or of the first one where `entry` is empty
// or the report names one entry function only (an export renames it). Returns false when that part
// of the report holds no "Used N registers" line, or the report names several entry functions but
// not `entry`.
bool parse_ptxas_report(std::string_view log, kernel_resources& out, std::string_view entry = {});

struct compile_job {
  std::string name;    // for messages: the variant id
  std::string source;  // complete source
  std::string arch;    // "sm_90"
  std::vector<std::string> options;  // beyond the architecture
  std::string entry;  // the kernel whose resources are read; empty: kernel_entry_name (an export renames it)
};

// The outcome of one compilation: a value, never an exception.
struct compiled_kernel {
  bool ok = false;
  std::string log;    // the compiler's log (errors, or the ptxas report)
  std::string cubin;  // the binary, when ok
  kernel_resources resources;
  double compile_ms = 0;  // wall time of this compile (0 for a cache hit)
  bool from_cache = false;
  // The compiler itself failed (internal error, crash, unreadable output), not
  // the source: such a result may differ next time, so it is never cached.
  bool internal_failure = false;
};

// The one thing the core needs from a compiler; NVRTC implements it in src/cuda.
class kernel_compiler {
 public:
  virtual ~kernel_compiler() = default;
  virtual compiled_kernel compile(const compile_job& job) = 0;
  // Whether compile(job) would come from a cache rather than a compiler (cheap to ask;
  // false when unknown). A hint only: a damaged entry still compiles.
  virtual bool is_cached(const compile_job&) const { return false; }
  // Identifies the compiler build, so the cache never mixes versions.
  virtual std::string version() const = 0;
  // The compute capabilities it compiles for (75 for sm_75), ascending; empty when unknown.
  virtual std::vector<int> supported_archs() const { return {}; }
};

// Refuses (environment_error, exit 3) a GPU whose architecture the compiler cannot compile for:
// CUDA 13's NVRTC has no sm_70 (V100), and every variant would be a compile error.
void check_compiler_supports(const kernel_compiler& compiler, int compute_capability, const std::string& gpu);

using compile_progress = std::function<void(std::size_t done, std::size_t total, std::size_t cached)>;

// Compiles every job on `jobs` threads (at least 1); results come back in job order.
std::vector<compiled_kernel> compile_all(kernel_compiler& compiler, std::span<const compile_job> jobs,
                                         int threads, const compile_progress& progress = {});

}  // namespace tiletune
