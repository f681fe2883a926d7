// --export: the chosen variants of a gemm run written to a folder as source,
// cubin, launch JSON and host header, and the exit code that says what could not be.
#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/output.hpp"
#include "cli/gemm_options.hpp"
#include "cli/gemm_setup.hpp"
#include "core/errors.hpp"
#include "core/export/kernel_export.hpp"

namespace tiletune::cli {

namespace {

// A variant that ran and failed (exit 1), as opposed to one that cannot run at all (exit 2).
bool failed_on_the_gpu(variant_status s) {
  return s == variant_status::incorrect || s == variant_status::launch_error || s == variant_status::timeout ||
         s == variant_status::skipped;
}

}  // namespace

kernel_export prepare_export(const gemm_options& o, const gemm_suite& suite,
                             const std::vector<std::optional<gemm_plan>>& plans, const run_info& run) {
  kernel_export e;
  std::set<std::string> folders;
  std::map<std::string, std::string> exported_as;  // variant and problem -> the folder it went into
  bool failed_on_gpu = false, cannot_run = false;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (!plans[i]) continue;  // --export never answers from the database (it holds no kernels)
    const gemm_plan& plan = *plans[i];
    std::string folder;
    if (o.is_suite()) {
      folder = export_folder_name(suite.problems[i].name);
      if (!folders.insert(folder).second) folders.insert(folder += fmt::format("-{}", i + 1));
      folder += "/";
    }
    const auto chosen = variants_to_export(plan, o.only);
    if (chosen.empty()) {
      for (const auto& v : plan.variants) failed_on_gpu |= failed_on_the_gpu(v.status);
      // One problem that no variant runs is refused (exit 2); a suite's or a model step's is its outcome,
      // as the run without --export has it (exit 0), and the rest is exported: it exited 2 beside the
      // files it wrote.
      cannot_run = cannot_run || !o.is_suite();
      e.refusals.push_back(fmt::format("nothing to export for {}: no variant is ok{}", plan.problem.describe(),
                                       o.is_suite() ? " (the suite's other problems are exported)" : ""));
    }
    for (const variant_result* v : chosen) {
      // Two suite entries whose kernels take one C name (one problem, or problems that differ only in
      // alpha and beta, which the caller passes): exported once, so the export's .cu files link into
      // one program (each defined it again).
      const std::string same =
          v->status == variant_status::ok ? export_entry_name(v->config, plan.problem, plan.device) : "";
      if (!same.empty() && !exported_as.emplace(same, folder).second) {
        e.refusals.push_back(fmt::format("{}: the same kernel as {} ({}, entry {}), exported there only, so that the "
                                         "export's .cu files link into one program",
                                         folder, exported_as[same], v->config.id(), same));
        continue;
      }
      if (v->status != variant_status::ok) {
        (failed_on_the_gpu(v->status) ? failed_on_gpu : cannot_run) = true;
        e.refusals.push_back(fmt::format("{} is {} for {}{}; not exported", v->config.id(), to_string(v->status),
                                         plan.problem.describe(), v->reason.empty() ? "" : ": " + v->reason));
        continue;
      }
      ++e.exported;
      for (auto& f : export_variant(plan, *v, run)) {
        f.name = folder + f.name;
        e.files.push_back(std::move(f));
      }
    }
  }
  // No exported file may replace what the run read (--suite, --db, --model's config) or its --out,
  // nor a read-only file: checked for every file before any, --out included, is written.
  std::vector<named_input> keep = gemm_inputs(o);
  keep.push_back({"--out", o.report.out});
  for (const export_file& f : e.files)
    check_replaceable(std::filesystem::path(o.export_dir) / f.name, "--export", keep, output_kind::file);
  e.exit_code = failed_on_gpu ? exit_check_failed : cannot_run ? exit_usage : exit_ok;
  return e;
}

int write_kernel_export(const gemm_options& o, const kernel_export& e) {
  for (const std::string& r : e.refusals) tell("tiletune: --export: {}\n", r);
  if (!e.files.empty()) write_export(o.export_dir, e.files);
  if (!o.report.quiet && !e.files.empty()) {
    std::vector<std::string> written;
    for (const export_file& f : e.files) written.push_back(f.name);
    fmt::print(o.report.json ? stderr : stdout, "exported {} kernel{} to {}: {}\n", e.exported,
               e.exported == 1 ? "" : "s", o.export_dir, fmt::join(written, ", "));
  }
  return e.exit_code;
}

}  // namespace tiletune::cli
