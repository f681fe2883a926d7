#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/errors.hpp"
#include "core/report/html_report.hpp"

namespace tiletune::cli {

namespace {

// What report's flags set.
struct report_command_options {
  std::vector<std::string> files;
  std::string out = "report.html";
  std::optional<std::string> vega_dir;
  report_options report;
  bool goal_given = false, top_given = false;  // on the command line, not by default
};

// The help after the option list.
constexpr const char* report_help = R"(
What each kind of file draws (the file's "schema" decides):
  gemm (tiletune.gemm/1)          tile heatmap (block M x N per family; colour =
                                  TFLOP/s, measured or predicted; cells with no
                                  figure show their status: pruned, compile_error...),
                                  roofline of the device with every variant and
                                  cuBLAS, the search's stages, registers / shared
                                  memory / occupancy of the top variants
  suite (tiletune.gemm-suite/1)   each problem's best variant / cuBLAS (bars, goal
                                  line at --goal), TFLOP/s by shape
  batch (tiletune.batch/1)        peak memory stacked by term against the budget per
                                  micro-batch, with and without checkpointing;
                                  tokens/s by micro-batch; the recommendation marked
  compare (tiletune.compare/1)    per problem, the change with its verdict's colour
                                  and the noise band
  db (tiletune.tuning-db-list/1,  recorded TFLOP/s per problem and GPU
      tiletune.tuning-export/1)
Every section says in words whether its figures are measured or predicted.

The page is one file: Vega (https://vega.github.io) is read from Debian's
libjs-vega (apt-get install libjs-vega) and inlined, so viewing it needs no
network. It prints one result per page.

Examples:
  tiletune gemm --m 4096 --n 4096 --k 4096 --gpu h100-sxm --dry-run --out plan.json
  tiletune report plan.json --out plan.html
  tiletune report profiles/baselines/h100-sxm.json --goal 0.9 --out suite.html
  tiletune batch --model gpt2 --gpu h100-sxm --out b.json && tiletune report b.json
  tiletune compare old.json new.json --out cmp.json; tiletune report cmp.json old.json new.json
  tiletune db list --json > db.json && tiletune report db.json

Exit codes: 0 written; 2 a file is unreadable, not JSON, or not a result this
command draws (the message names the file and its schema; nothing is
written); 3 Vega is not installed (the message names the missing file).)";

void run_report(const report_command_options& o, run_context& ctx) {
  std::vector<named_input> inputs;
  for (const auto& f : o.files) inputs.push_back({"FILE", f});
  check_output_path(o.out, "--out", inputs);
  if (o.report.top_resources < 1)
    throw usage_error(fmt::format("--top {} is invalid: at least 1", o.report.top_resources));
  if (!(o.report.goal_vs_reference > 0 && o.report.goal_vs_reference <= 100))
    throw usage_error(fmt::format("--goal {} is invalid: a fraction of cuBLAS's speed, above 0 up to 100",
                                  o.report.goal_vs_reference));
  // Every file is read and checked before anything is written.
  std::vector<report_section> sections;
  for (const auto& f : o.files) {
    auto more = report_sections_from_file(f, o.report);
    sections.insert(sections.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  // --goal draws on suites only, --top on a single gemm result's resource charts: given where no
  // file takes it, it is said to have no effect rather than taken in silence.
  auto drawn = [&](result_kind kind) {
    return std::any_of(sections.begin(), sections.end(), [&](const report_section& s) { return s.kind == kind; });
  };
  if (o.goal_given && !drawn(result_kind::suite))
    tell("tiletune: --goal {} has no effect: no file here is a suite result (tiletune.gemm-suite/1), where the goal "
         "line is drawn\n", o.report.goal_vs_reference);
  if (o.top_given && !drawn(result_kind::gemm))
    tell("tiletune: --top {} has no effect: no file here is a gemm result (tiletune.gemm/1), whose resource charts "
         "it bounds\n", o.report.top_resources);
  const vega_library vega =
      load_vega_library(o.vega_dir ? std::optional<std::filesystem::path>(*o.vega_dir) : std::nullopt);
  // Vega's scripts are inputs too: --out onto one would replace the library with a page.
  for (const auto& script : vega.scripts) inputs.push_back({"Vega's script", script.file});
  check_output_path(o.out, "--out", inputs);
  write_file_atomically(o.out, render_report_page(sections, vega, ctx.command_line));
  std::size_t charts = 0;
  for (const auto& s : sections) charts += s.charts.size();
  fmt::print("wrote {}: {} section(s), {} chart(s)\n", o.out, sections.size(), charts);
  ctx.exit_code = exit_ok;
}

}  // namespace

void add_report_command(CLI::App& app, run_context& ctx) {
  auto o = std::make_shared<report_command_options>();
  auto* cmd = app.add_subcommand("report", "Draw result files as one self-contained HTML page of charts");
  cmd->add_option("FILE", o->files,
                  "Result files: gemm (--out of `tiletune gemm`), a suite result, a batch plan, a compare/check "
                  "--out, a `db list --json` or `db export --format json` export")
      ->required();
  cmd->add_option("--out", o->out, "The HTML page to write")->capture_default_str()->check(refuse_empty_path);
  cmd->add_option("--goal", o->report.goal_vs_reference,
                  "Suites: the goal line, as a fraction of cuBLAS's speed (0.9 = 90% of cuBLAS)")
      ->capture_default_str();
  cmd->add_option("--top", o->report.top_resources, "gemm: how many of the best variants the resource charts show")
      ->capture_default_str();
  cmd->add_option("--vega-dir", o->vega_dir,
                  "A folder with Vega 5's scripts (default: $TILETUNE_VEGA_DIR, else /usr/share/javascript/vega from "
                  "Debian's libjs-vega)");
  cmd->footer(report_help);
  cmd->callback([o, cmd, &ctx] {
    o->goal_given = cmd->count("--goal") > 0;
    o->top_given = cmd->count("--top") > 0;
    run_report(*o, ctx);
  });
}

}  // namespace tiletune::cli
