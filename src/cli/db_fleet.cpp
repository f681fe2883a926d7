// tiletune db merge and db export: shard databases into one, and the best
// configs out to Triton, CUTLASS's profiler CSV or JSON.
#include "cli/db_fleet.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/gemm_tuning.hpp"
#include "cli/output.hpp"
#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/tune/fleet/tuning_export.hpp"
#include "core/tune/fleet/tuning_merge.hpp"
#include "core/results/json_file.hpp"

namespace tiletune::cli {

namespace {

namespace fs = std::filesystem;

struct fleet_options {
  std::vector<std::string> inputs;
  std::string into;
  std::string file;  // --db of export
  std::string format = "json";
  std::string out;
  std::string gpu;
  std::shared_ptr<const std::string> group_db;  // `db --db FILE ...`
};

void run_merge(const fleet_options& o, run_context& ctx) {
  if (o.group_db && !o.group_db->empty())
    throw usage_error(fmt::format("db --db {}: db merge reads the databases it is given and writes --into; drop --db",
                                  *o.group_db));
  check_output_path(o.into, "--into", {}, output_kind::database);
  const fs::path target = output_target(o.into, "--into", output_kind::database);
  std::vector<fs::path> inputs(o.inputs.begin(), o.inputs.end());
  const merge_summary s = merge_tuning_dbs(inputs, target);
  for (const auto& in : s.inputs)
    fmt::print("{}: {} record(s), {} kept\n", in.file.string(), in.records, in.kept);
  fmt::print("merged {} database(s) into {}: {} record(s){}\n", s.inputs.size(), o.into, s.records,
             s.duplicates ? fmt::format(" ({} record(s) of a key another input also holds: the better verified, then "
                                        "the newer, kept; the first read where they are alike)",
                                        s.duplicates)
                          : "");
  ctx.exit_code = exit_ok;
}

void run_export(const fleet_options& o, run_context& ctx) {
  if (o.format != "json" && o.format != "triton" && o.format != "cutlass-csv")
    throw usage_error(fmt::format("--format {} is invalid: json, triton or cutlass-csv", o.format));
  const std::string given = !o.file.empty() ? o.file : o.group_db ? *o.group_db : std::string();
  const fs::path file = given.empty() ? default_tuning_db_path() : fs::path(given);
  if (!o.out.empty()) check_output_path(o.out, "--out", {{"--db", file}});
  check_db_path(file, given);
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw usage_error(fmt::format("{}: no tuning database there (nothing measured yet)", db_named(file, given)));
  const tuning_db db(file, tuning_db::open_mode::read);
  const auto best = db.best_per_problem(gpu_filter(o.gpu, &db));
  const std::string date = utc_now_iso();
  std::string text;
  if (o.format == "json")
    text = json_text(export_json(best, file.string(), date)) + "\n";
  else if (o.format == "triton")
    text = export_triton(best, file.string(), date);
  else
    text = export_cutlass_csv(best);
  if (const std::size_t grouped = grouped_records(best); grouped > 0 && o.format != "json")
    tell("tiletune: {} grouped GEMM record(s) (mixture of experts) left out of --format {}: its keys and rows have "
         "no groups; --format json gives them\n",
         grouped, o.format);
  if (o.out.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    write_file_atomically(o.out, text);
    fmt::print("wrote the best config of {} problem(s) from {} to {}\n", best.size(), file.string(), o.out);
  }
  ctx.exit_code = exit_ok;
}

}  // namespace

std::string gpu_filter(const std::string& gpu, const tuning_db* db) {
  if (gpu.empty()) return gpu;
  if (db)
    for (const auto& model : db->device_models())
      if (model == gpu) return gpu;
  try {
    return find_preset(gpu).preset;
  } catch (const usage_error& e) {
    throw usage_error(fmt::format("--gpu {}: {}{}", gpu, e.what(),
                                  db ? fmt::format(", and {} holds no GPU model of that name", db->file().string())
                                     : std::string()));
  }
}

void add_db_fleet_commands(CLI::App& cmd, run_context& ctx, std::shared_ptr<const std::string> group_db) {
  auto o = std::make_shared<fleet_options>();
  o->group_db = std::move(group_db);
  auto* merge = cmd.add_subcommand(
      "merge", "Merge tuning databases (e.g. one per shard of a suite) into one: per key, the better-verified record, "
               "then the newer");
  merge->add_option("files", o->inputs, "The databases to merge")->required();
  merge->add_option("--into", o->into, "The merged database (merged in place in one transaction; runs writing to it "
                                       "meanwhile wait); if it exists, its records take part")
      ->required()
      ->check(refuse_empty_path);
  merge->callback([o, &ctx] { run_merge(*o, ctx); });
  merge->footer(R"(
  tiletune db merge shard-0.sqlite shard-1.sqlite shard-2.sqlite --into tuning.sqlite

A record is filed under GPU model, driver, CUDA, tool, compiler and problem.
Where inputs hold the same key, the better-verified record stays: a
measurement whose recommended variant was verified against cuBLASLt, over a
measurement without that, over a stored plan (--store-plans); then the newer;
then the one holding more of the measurement (its variants' times for
calibration, then the whole result: a record imported from `db show --json`
holds neither).
An input of another schema, not a tiletune database, or damaged (PRAGMA
quick_check) is refused with exit 3 naming it, and nothing is merged: --into
stays as it was. The merge is one transaction in --into that holds its write
lock: a run storing into it at the same time waits (up to 30 s) and loses
nothing; --into is whole, as before the merge or after it. A read-only --into
is refused with exit 3.)");

  auto* exp = cmd.add_subcommand("export", "Write the best config per GPU model and problem as JSON, a Triton "
                                           "autotune config list, or CUTLASS profiler CSV");
  exp->add_option("--format", o->format, "json | triton | cutlass-csv")->capture_default_str();
  exp->add_option("--out", o->out, "Write to FILE (atomically) instead of stdout")->check(refuse_empty_path);
  exp->add_option("--gpu", o->gpu, "Only this GPU model (a preset name such as h100-sxm)");
  exp->add_option("--db", o->file, "The database file");
  exp->callback([o, &ctx] { run_export(*o, ctx); });
  exp->footer(R"(
  tiletune db export --format triton --out tiletune_configs.py
  tiletune db export --format cutlass-csv --gpu h100-sxm --out best.csv

The best record of a problem: verified measurements first, then other
measurements, then stored plans (mode "predicted"), newer first among equals.
triton: CONFIGS[(gpu, m, n, k, batch, dtype, layout, alpha, beta)] is a list
of triton.Config with BLOCK_SIZE_M/N/K, GROUP_SIZE_M (and SPLIT_K), num_warps
and num_stages; a tile Triton's blocks round up (192 to 256) gets as many stages
as fit where its own did, and a comment says so. cutlass-csv: cutlass_profiler's
GEMM report columns, one row per problem, Disposition passed where verified,
not_verified otherwise. Grouped GEMMs (mixture of experts) are in json only.)");
}

}  // namespace tiletune::cli
