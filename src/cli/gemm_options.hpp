// Internal to the gemm command: its options as the flags set them, and the
// pieces that use them (running, the tables, --export).
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/gemm/gemm_suite.hpp"
#include "core/export/kernel_export.hpp"
#include "core/tune/gemm_tuner.hpp"
#include "core/tune/search/search_strategy.hpp"

namespace tiletune::cli {

struct gemm_options {
  struct {
    std::optional<std::int64_t> m, n, k;  // none: not given (a suite gives its own)
    std::int64_t batch = 1;
    // The users train LLMs: bf16, and nt is x @ W.T (a linear layer's forward).
    std::string dtype = "bf16", layout = "nt";
    double alpha = 1.0, beta = 0.0;
    std::optional<std::string> scaling;  // none: the dtype's own (tensor for fp8)
    std::optional<std::string> out;      // --out-dtype; none: the dtype's C
  } problem;
  struct {  // a grouped GEMM: --groups G with --m-per-group, or --tokens routed --top-k experts each
    std::optional<int> count;
    std::string m_per_group;
    std::optional<int> top_k;
    std::optional<std::string> routing;
    std::string layout = "contiguous";
  } groups;
  struct {
    std::optional<std::string> gpu;
    std::optional<int> index;
    std::string devices;  // --devices all|0,2,5: one worker per GPU, problems dealt as they free up
  } device;
  struct {
    std::uint64_t seed = 1;
    std::optional<double> variant_timeout_s;  // none: from each run's predicted time
    bool keep_going = false;
    double target_spread = 0.01;
    double time_cap_ms = 2000;
    std::string l2_flush = "write";  // --l2-flush: write, read or none (core/measure/measure_protocol.hpp)
  } measure;
  struct {
    int jobs = 0;
    std::string cache_dir;
    bool no_cache = false;
    bool compile_all = false;
    std::string kernel_debug;
  } compile;
  std::string suite;
  struct model_options {
    std::string name;  // --model NAME|config.json: the model's GEMMs as the suite
    // Also a grouped problem's tokens (--groups --tokens --top-k); tokens_not_given where --tokens is
    // absent (an explicit 0 is a bad value, not a missing one).
    static constexpr std::int64_t tokens_not_given = std::numeric_limits<std::int64_t>::min();
    std::int64_t tokens = tokens_not_given;
    bool tokens_given() const { return tokens != tokens_not_given; }
    std::string phase = "train";
    std::optional<std::int64_t> sequences;  // --sequences (prefill): the LM head on each one's last token
    int tensor_parallel = 1;  // --tp
    std::string fp8 = "none";  // --fp8 tensorwise: the blocks' linears as batch --fp8 runs them
  } model;
  // A list of problems (--suite or --model) rather than the one of --m --n --k.
  bool is_suite() const { return !suite.empty() || !model.name.empty(); }
  std::string shard;  // --shard I/N: only the suite's problems of shard I (core/tune/fleet/suite_shard.hpp)
  std::vector<std::string> only;
  struct {
    std::string strategy = std::string(default_search_strategy);
    bool retune = false;
    std::string db;
    bool no_db = false;
    double budget_s = 0;
    bool store_plans = false;  // offline plans go into the database too (predicted records)
    bool db_full = false;      // the database keeps every variant's row, not only the compact record
  } tuning;
  struct {
    bool dry_run = false;
    bool verify_only = false;
    int top = 10;
    std::string out;
    bool json = false;
    bool quiet = false;
  } report;
  std::string export_dir;  // --export DIR: the chosen kernels as source, cubin and launch JSON
};

// Tunes (or answers from the database) every problem of the flags or the
// suite, then writes the JSON, prints the table and exports; sets the exit code.
void run_gemm(const gemm_options& o, run_context& ctx);

// The table of a plan: measured, or predicted by the model, its --top rows.
std::string format_table(const gemm_plan& plan, int top);
// Where no variant runs: the constraints that stopped most of them (at most three), a line each.
std::string common_reasons(const std::vector<variant_result>& variants);

// --export DIR: the files of the recommended variant (or each --only variant) of every plan (a
// subfolder per problem for a suite), what could not be exported, and the exit code: 0, 1 when a
// wanted variant failed on the GPU, 2 when one cannot run at all.
struct kernel_export {
  std::vector<export_file> files;
  std::vector<std::string> refusals;  // printed to stderr as the export is written
  std::size_t exported = 0;
  int exit_code = 0;
};

// Renders every file and checks that none would replace what the run read, its --out or a
// read-only file (exit 2 or 3 before anything, --out included, is written).
kernel_export prepare_export(const gemm_options& o, const gemm_suite& suite,
                             const std::vector<std::optional<gemm_plan>>& plans, const run_info& run);
// Writes them and says so; returns the exit code.
int write_kernel_export(const gemm_options& o, const kernel_export& e);

}  // namespace tiletune::cli
