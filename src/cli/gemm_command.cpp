// The gemm command's flags and help; gemm_run.cpp runs it.
#include <memory>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/gemm_options.hpp"
#include "cli/option_checks.hpp"
#include "cli/output.hpp"
#include "core/gemm/dtype_table.hpp"
#include "core/gemm/family.hpp"

namespace tiletune::cli {

namespace {
// The registered kernel families, a line each.
std::string kernel_families_help() {
  std::string s = "Kernel families:\n";
  for (const gemm_family* f : all_families()) s += fmt::format("  {:<7} {}\n", f->name(), f->summary());
  return s;
}

// A grouped GEMM (mixture-of-experts): G experts' GEMMs of one N and K in one launch.
void add_group_options(CLI::App* cmd, gemm_options* o) {
  cmd->add_option("--groups", o->groups.count,
                  "A grouped GEMM (mixture-of-experts) of G groups sharing --n and --k, each with its own rows: give "
                  "them with --m-per-group, or as --tokens routed to --top-k experts each")
      ->type_name("G");
  cmd->add_option("--m-per-group", o->groups.m_per_group, "With --groups: the rows of each group, such as 128,0,517")
      ->type_name("R,R,...");
  cmd->add_option("--top-k", o->groups.top_k, "With --groups --tokens: distinct experts each token is routed to")
      ->type_name("K");
  cmd->add_option("--routing", o->groups.routing,
                  "With --groups --tokens: how tokens spread over experts: uniform, or zipf:S (expert r takes a "
                  "share as 1/r^S; measured routers show S near 1) [default: uniform]. With --model: a "
                  "mixture-of-experts model's experts as grouped GEMMs of tokens so routed");
  cmd->add_option("--group-layout", o->groups.layout,
                  "With --groups: contiguous (the groups' rows of A and C one after another, unpadded) or masked "
                  "(each group owns as many rows as the largest, its first rows valid: fixed shapes for CUDA graphs)")
      ->capture_default_str();
  for (const char* flag : {"--m-per-group", "--top-k", "--group-layout"})
    cmd->get_option(flag)->needs(cmd->get_option("--groups"));
  cmd->get_option("--m-per-group")->excludes(cmd->get_option("--tokens"));
}

// The problem: its shape, type and layout, or a suite of them.
void add_problem_options(CLI::App* cmd, gemm_options* o) {
  cmd->add_option("--m", o->problem.m, "Rows of C and op(A)")->check(whole_number);
  cmd->add_option("--n", o->problem.n, "Columns of C and op(B)")->check(whole_number);
  cmd->add_option("--k", o->problem.k, "The reduction dimension")->check(whole_number);
  cmd->add_option("--suite", o->suite, "Tune every problem of a suite file (see profiles/suites/) into one result");
  cmd->add_option("--model", o->model.name,
                  "Tune every distinct GEMM of one step of a model (a name as `tiletune batch --model` takes, or a "
                  "Hugging Face config.json) as a suite, with a table of each GEMM's share of the step")
      ->check(not_empty);
  cmd->add_option("--tokens", o->model.tokens,
                  "With --model: the step's tokens (train, prefill: sequences x length; decode: sequences). With "
                  "--groups: the tokens routed to the groups (experts)")
      ->check(whole_number);
  cmd->add_option("--phase", o->model.phase,
                  "With --model: train (forward, data- and weight-gradient GEMMs), prefill or decode (forward)")
      ->capture_default_str();
  cmd->add_option("--sequences", o->model.sequences,
                  "With --model --phase prefill: the sequences --tokens holds; the LM head then runs on each one's "
                  "last token (S rows), as vLLM and transformers' generate do (default: on every token, as a pass "
                  "that returns every logit, such as a perplexity evaluation)")
      ->check(whole_number)
      ->type_name("S");
  cmd->add_option("--tp", o->model.tensor_parallel,
                  "With --model: the GEMMs of one of N tensor-parallel ranks (Megatron-style: q, k, v, gate, up and "
                  "lm_head split by outputs, o and down by inputs; N must divide the attention heads)")
      ->capture_default_str()
      ->type_name("N");
  cmd->add_option("--fp8", o->model.fp8,
                  "With --model and --dtype bf16: the GEMMs of `batch --fp8` (tensorwise: the blocks' linears' forward "
                  "in e4m3, their gradients in e5m2_e4m3; rowwise: all three in e4m3 with rowwise scales; the LM head "
                  "in bf16), so that batch finds them tuned")
      ->capture_default_str();
  cmd->add_option("--batch", o->problem.batch, "Independent GEMMs of the same shape")
      ->capture_default_str()
      ->check(whole_number);
  add_group_options(cmd, o);
  cmd->add_option("--dtype", o->problem.dtype,
                  dtype_names(" | ") + " (fp32 accumulation; e4m3 and e5m2 are fp8 inputs with bf16 C, e4m3_e5m2 and "
                                       "e5m2_e4m3 fp8 with A of the first format and B of the second)")
      ->capture_default_str();
  cmd->add_option("--scaling", o->problem.scaling,
                  "fp8: how A and B are scaled: tensor (the default: one scale each, passed as their product in "
                  "--alpha), rowwise (one per row of A and column of B) or block (1x128 of A, 128x128 of B); the "
                  "other types take none, their default")
      ->type_name("none|tensor|rowwise|block");
  cmd->add_option("--out-dtype", o->problem.out, "fp8: C's element type, bf16 (the default), f16 or f32")
      ->type_name("bf16|f16|f32");
  cmd->add_option("--layout", o->problem.layout,
                  "A then B: n = stored as written (A MxK, B KxN, row-major), t = transposed; nt is x @ W.T. fp8 (and tf32 "
                  "on Hopper) reads both operands K-major: in other layouts a pre-pass copies them first (the _kc "
                  "variants, timed with it)")
      ->capture_default_str();
  cmd->add_option("--alpha", o->problem.alpha, "Scale of the product")->capture_default_str()->check(finite_float);
  cmd->add_option("--beta", o->problem.beta, "Scale of the old C (0: C is not read)")
      ->capture_default_str()
      ->check(finite_float);
  cmd->add_option("--shard", o->shard,
                  "Suites: tune only shard I of N (I from 0 to N-1), chosen by a hash of each problem, so N "
                  "machines can split a suite; see `tiletune db merge`")
      ->type_name("I/N");
  // A suite names each problem whole: a problem flag beside it would be ignored, so it is refused.
  for (const char* flag : {"--m", "--n", "--k", "--batch", "--dtype", "--layout", "--alpha", "--beta", "--scaling", "--out-dtype"})
    cmd->get_option("--suite")->excludes(cmd->get_option(flag));
  // A model's GEMMs take their shapes and layouts from the model; --dtype stays. Their fp8 scaling and
  // C are --fp8's recipe: --scaling and --out-dtype were ignored (a bf16 step took --scaling rowwise).
  for (const char* flag :
       {"--m", "--n", "--k", "--batch", "--layout", "--alpha", "--beta", "--suite", "--scaling", "--out-dtype"})
    cmd->get_option("--model")->excludes(cmd->get_option(flag));
  for (const char* flag : {"--m", "--batch", "--suite", "--model"})
    cmd->get_option("--groups")->excludes(cmd->get_option(flag));
  cmd->get_option("--phase")->needs(cmd->get_option("--model"));
  cmd->get_option("--sequences")->needs(cmd->get_option("--model"));
  cmd->get_option("--tp")->needs(cmd->get_option("--model"));
  cmd->get_option("--fp8")->needs(cmd->get_option("--model"));
  // --fp8 names each GEMM's dtype, scaling and C (the recipe's): the flags would be ignored.
  for (const char* flag : {"--scaling", "--out-dtype"}) cmd->get_option("--fp8")->excludes(cmd->get_option(flag));
  cmd->get_option("--model")->needs(cmd->get_option("--tokens"));
}

// Which GPU: a preset to plan for, or local ones to measure on.
void add_device_options(CLI::App* cmd, gemm_options* o) {
  cmd->add_option("--gpu", o->device.gpu, "Plan for a GPU preset without touching a GPU (see `tiletune devices`)");
  cmd->add_option("--device", o->device.index, "Use local GPU I (default: 0)")->check(whole_non_negative);
  cmd->add_option("--devices", o->device.devices,
                  "Suites: measure on several local GPUs at once, one worker each, the problems dealt as they free "
                  "up: all, or distinct numbers such as 0,2,5 (one GPU model); see below")
      ->type_name("all|I,J,...");
}

// What a run does to each variant, and how long it samples.
void add_run_options(CLI::App* cmd, gemm_options* o) {
  cmd->add_flag("--dry-run", o->report.dry_run, "Compile, prune and rank with the model; launch nothing");
  cmd->add_option("--only", o->only, "Keep only these variant ids (as the id column and the JSON's \"id\" print them); an offline plan none of whose selected variants can run the problem is refused (exit 2), saying why")->delimiter(',');
  cmd->add_flag("--verify-only", o->report.verify_only,
                "On a GPU: check every variant against cuBLASLt without timing; the model ranks them");
  cmd->add_option("--seed", o->measure.seed, "Seed of the random inputs (0 or more)")
      ->capture_default_str()
      ->check(whole_non_negative);  // else "-1" wraps to 2^64-1 unsaid
  cmd->add_option("--variant-timeout", o->measure.variant_timeout_s,
                  "Seconds before a variant's run is stopped and marked timeout (default: 5 s plus 4x the model's "
                  "estimate of that run)");
  cmd->add_flag("--keep-going", o->measure.keep_going,
                "Run every variant even after one hung or failed to launch (by default a hang, or a fault of a "
                "family's plain kernel, skips the rest of that family for the problem; a fault of a variant with "
                "optional mechanisms, such as _tmas or _sk, skips the variants that use them, and a family's third "
                "fault all of it; each skipped variant names the failure)");
  cmd->add_option("--target-spread", o->measure.target_spread,
                  "Sample until (p80 - p20) / median is under this")->capture_default_str();
  cmd->add_option("--time-cap-ms", o->measure.time_cap_ms, "Most kernel time spent sampling one variant")
      ->capture_default_str();
  cmd->add_option("--l2-flush", o->measure.l2_flush,
                  "How the L2 is emptied before each timed sample, cuBLASLt's too: write (a buffer of twice its "
                  "size written, as nvbench and Triton do; the dirty lines it leaves are written back as the "
                  "kernel's loads evict them), read (the buffer read: clean lines, as a model's previous layer "
                  "leaves them), none (the L2 as the last sample left it: operands that fit stay in it). A run "
                  "not flushed by write neither answers from the tuning database nor goes into it, and compare "
                  "and check refuse to set it against one that was")
      ->capture_default_str()
      ->type_name("write|read|none");
}

// What is printed and written.
void add_output_options(CLI::App* cmd, gemm_options* o) {
  cmd->add_option("--top", o->report.top,
                  "Rows of the table (and variants of a suite's JSON); an offline plan compiles until the --top best "
                  "are certain, the rest pruned as model_bound (the recommendation is the same; --compile-all "
                  "compiles every one)")
      ->capture_default_str();
  cmd->add_option("--out", o->report.out, "Write the JSON result to FILE (atomically)")->check(refuse_empty_path);
  cmd->add_flag("--json", o->report.json, "Print the JSON on stdout instead of the table");
  cmd->add_flag("--quiet,-q", o->report.quiet, "No table and no progress line");
}

// How variants are compiled, cached and exported.
void add_compile_options(CLI::App* cmd, gemm_options* o) {
  cmd->add_option("--jobs,-j", o->compile.jobs, "Parallel NVRTC compiles (0, the default: all cores)");
  cmd->add_option("--cache-dir", o->compile.cache_dir,
                  "Compiled-kernel cache (default: $XDG_CACHE_HOME/tiletune or ~/.cache/tiletune)");
  cmd->add_option("--kernel-debug", o->compile.kernel_debug,
                  "Build the kernels for cuda-gdb and compute-sanitizer: lineinfo (source lines, the same code), "
                  "full (-G, unoptimized) or racecheck (lineinfo, and every consumer thread makes the mbarrier "
                  "arrivals one thread makes, for racecheck to judge each access by its own release); such runs "
                  "stay out of the tuning database");
  cmd->add_flag("--no-cache", o->compile.no_cache, "Compile every variant afresh and store nothing");
  cmd->add_flag("--compile-all", o->compile.compile_all,
                "Offline plans: compile every variant, rasterization copies and those the model bounds out of the "
                "--top best included (by default they are reported as pruned, constraint model_bound)");
  cmd->add_option("--export", o->export_dir,
                  "Write the recommended variant (or each --only variant) into folder DIR as ID.cu, ID.cubin, "
                  "ID.json (how to launch it) and ID.h (a host header with a launcher); see below")
      ->type_name("DIR")
      ->check(refuse_empty_path);
}

// Which variants are timed and how the tuning database is used.
void add_tuning_options(CLI::App* cmd, gemm_options* o) {
  cmd->add_option("--search", o->tuning.strategy,
                  "Which variants are timed, and how long: halving (the model drops the far-behind, a brief look "
                  "at the rest, longer looks at the best third, stop when the leader is clear of the noise), "
                  "exhaustive (every variant to the full budget), model (only the model's best 4). Past a brief "
                  "look the card is warmed into its power cap and each variant timed in two mirrored passes, so "
                  "that the clock favours none")
      ->capture_default_str();
  cmd->add_flag("--retune", o->tuning.retune, "Measure afresh (offline: plan with the model) even when the tuning database has this problem");
  cmd->add_option("--db", o->tuning.db,
                  "Tuning database (SQLite; default: tuning.sqlite3 beside the compile cache)");
  cmd->add_flag("--no-db", o->tuning.no_db, "Neither answer from nor store into the tuning database");
  cmd->add_flag("--store-plans", o->tuning.store_plans,
                "Offline plans: store them in the tuning database too (as predicted records, which never "
                "answer a run on a GPU nor calibrate the model); a later --store-plans run answers from them, so a "
                "stopped shard resumes");
  cmd->add_flag("--db-full", o->tuning.db_full,
                "Keep every variant's row of what is stored (about 100-150 KB a record); by default the database "
                "keeps a compact record of a few KB: the result, the recommended and next best variants' rows, and "
                "each measured variant's time for calibration");
  cmd->add_option("--budget-s", o->tuning.budget_s,
                  "Suites: start no new problem after this many seconds (0: no budget); the tuning database "
                  "keeps what was measured, so the same command resumes; a suite cut this way exits 4")
      ->capture_default_str();
}

// The help after the option list, before and after the families' lines.
constexpr const char* gemm_examples = R"(
Examples:
  tiletune gemm --suite profiles/suites/llm.json --gpu h100-sxm --dry-run --out llm-plan.json
  tiletune gemm --m 4096 --n 4096 --k 4096 --dtype bf16 --layout nt --gpu h100-sxm --dry-run --out plan.json
  tiletune gemm --m 1000 --n 3000 --k 777 --dtype f32 --layout tn --gpu a100-sxm-80gb

)";
constexpr const char* gemm_details = R"(
Every variant of the search space of the families that serve the dtype on the
GPU (split-K and grouped-raster copies where the problem's shape calls for
them) is compiled with NVRTC for the GPU's architecture. Variants that
break a constraint are pruned with its name; compiled ones carry their
registers, shared memory, spills and occupancy; the rest are ranked by the
analytical model. With --gpu or --dry-run every figure is PREDICTED, and the
JSON says "mode": "predicted".

On a machine with a GPU (and no --dry-run) every variant is run in a worker
process, verified against cuBLASLt and timed with CUPTI beside cuBLASLt in the
same run ("mode": "measured"); a variant that faults or hangs gets
launch_error or timeout and the run goes on.

--export DIR writes the recommended variant, or each variant named by --only,
as four files in DIR (created if missing; existing files are replaced; each
file is written whole or not at all): ID.cu, the CUDA C++ source with its tile
constants fixed, which compiles alone with NVRTC or nvcc and says in its header
how to launch it; ID.cubin, the binary tiletune compiled from it (read its SASS
with scripts/show_sass.sh DIR/ID.cubin); ID.json (schema tiletune.kernel/1):
entry, arch, grid, block, cluster, dynamic shared memory, the parameters in
order with their values for this problem, registers and spills, and the
problem with its figures, measured or predicted; ID.h, a host header declaring
the kernel and an inline <entry>_launch() for this problem (grid, block,
cluster, shared memory attribute, tensor maps). The entry in ID.cu and ID.h is
tiletune_<id>_<dtype>_<layout>_<M>x<N>x<K> (and _b<batch>, or a grouped
problem's _g<groups>_<hash>), unique per variant and problem, so several
exports (a model's GEMMs too) link into one program (ID.cubin keeps
tiletune's own name, tiletune_gemm). With --suite, each problem's kernels go
into a subfolder named after the problem (characters other than
letters, digits, '.', '_' and '-' become '-'); two entries of one problem
that recommend one kernel export it once, in the first one's folder. When a
wanted variant is not ok, nothing is written for it and the exit code is 1 if
it failed on the GPU (incorrect, launch_error, timeout), else 2 (pruned,
compile_error, resource_limit, or no variant ok at all); a suite's problem
that no variant runs is its outcome, said, and the rest is exported.

--export compiles (and on a GPU measures) afresh instead of answering from
the tuning database, which keeps results, not kernels.

Every measured result goes into the tuning database (--db FILE, default
tuning.sqlite3 beside the compile cache), filed under the GPU model, driver,
CUDA runtime, tool and compiler versions and the problem. A repeat answers
from it at once and says so ("tuning_db" in the JSON); --retune measures
afresh, --no-db leaves it alone. An offline plan (--gpu NAME) answers from a
measured record of the same GPU model where there is one, and says so.
A suite stopped by --budget-s or an interruption resumes where it stopped.

Tuning a suite on many machines: each runs one shard with its own database,
then the databases are merged (problems are dealt by a hash of the problem,
so shard I of N is the same set on every machine; scripts/slurm_tune.sh does
this as a Slurm job array):
  tiletune gemm --suite S --shard 0/3 --db shard-0.sqlite --out shard-0.json
  tiletune db merge shard-*.sqlite --into tuning.sqlite
Offline (--gpu NAME), add --store-plans to keep the plans in the database.

Tuning a suite on every GPU of one machine: one worker per GPU, each problem
dealt to the next GPU that is free, one result file and one database:
  tiletune gemm --suite profiles/suites/llm.json --devices all --out llm.json
  tiletune gemm --suite profiles/suites/llm.json --devices 0,2,5 --out llm.json
stderr says per GPU what it runs ("[dev 2] 5/12 NAME (SHAPE): ok 0.93x
cuBLAS in 41.0 s"). A GPU whose cuBLASLt run crashes or hangs, whose worker
cannot start, or that shows no progress within a limit derived from the
problem's time limits, is retired and its problem dealt to another; a problem
that faulted on 2 GPUs is failed. The JSON says which GPU ran each problem
("ran_on"), which GPUs were retired and why ("devices"), and what failed
("failed"); the exit code is then 3. This was tested with stand-in workers
only, never on real GPUs.

Progress goes to stderr: a bar on a terminal, otherwise one line per step
and problem with the elapsed time and an estimate of the time left.

  tiletune db import profiles/measured/h100-2026-11-22/gemm/*.json
  tiletune gemm --m 4096 --n 4096 --k 4096 --dtype bf16 --layout nt --gpu h100-sxm

Exit codes: 0 done; 1 --export found no ok variant to write after a GPU run;
2 bad input (the message names it); 3 no GPU and no --gpu, a CUDA library is
missing, or the tuning database is damaged or not tiletune's (the message
names the file), an --out or --export file cannot be written (a read-only one
is kept), or with --devices a problem got no answer (every GPU it was
dealt to faulted); 4 --budget-s stopped a suite before its last problem (the
output is written; "not_run" names the rest); 70 internal error.)";
}  // namespace

void add_gemm_command(CLI::App& app, run_context& ctx) {
  auto o = std::make_shared<gemm_options>();
  auto* cmd = app.add_subcommand("gemm", "Tune the tile shape of one GEMM: C = alpha * op(A) * op(B) + beta * C");
  add_problem_options(cmd, o.get());
  add_device_options(cmd, o.get());
  add_run_options(cmd, o.get());
  add_output_options(cmd, o.get());
  add_compile_options(cmd, o.get());
  add_tuning_options(cmd, o.get());
  cmd->footer(gemm_examples + kernel_families_help() + gemm_details);
  cmd->callback([o, cmd, &ctx] {
    // An offline plan (--gpu NAME, --dry-run) runs nothing: the options that shape a measurement
    // are said to have no effect rather than taken in silence.
    if (o->device.gpu || o->report.dry_run) {
      std::string unused;
      for (const char* flag :
           {"--seed", "--variant-timeout", "--keep-going", "--target-spread", "--time-cap-ms", "--search"})
        if (cmd->count(flag) > 0) unused += std::string(unused.empty() ? "" : ", ") + flag;
      if (cmd->count("--db-full") > 0 && !o->tuning.store_plans) unused += std::string(unused.empty() ? "" : ", ") + "--db-full";
      if (!unused.empty())
        tell("tiletune: {} {} no effect on an offline plan ({}): nothing is measured\n", unused,
             unused.find(',') == std::string::npos ? "has" : "have", o->report.dry_run ? "--dry-run" : "--gpu");
    }
    // Options another option switches off: said, as above.
    if (o->tuning.no_db && cmd->count("--retune") > 0)
      tell("tiletune: --retune has no effect with --no-db: no tuning database is read, so nothing is answered from it\n");
    if (o->compile.no_cache && cmd->count("--cache-dir") > 0)
      tell("tiletune: --cache-dir {} has no effect with --no-cache: no compiled kernel or fit is read from or stored "
           "in a cache\n",
           o->compile.cache_dir);
    run_gemm(*o, ctx);
  });
}

}  // namespace tiletune::cli
