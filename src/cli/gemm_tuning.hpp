#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "core/gemm/gemm_suite.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"

namespace tiletune::cli {

// The tuning database unless --no-db: --db FILE, or beside the compile cache. A command that
// only reads opens it with open_mode::read (nothing in the file changes); a --db FILE in a
// folder that does not exist is refused (check_db_path).
std::unique_ptr<tuning_db> open_tuning_db(const std::string& file, bool off,
                                          tuning_db::open_mode mode = tuning_db::open_mode::create,
                                          tuning_db::page_check check = tuning_db::page_check::whole);

// The database at `path` (`named`: the --db the user gave, empty for the default) is no folder, and
// a folder the user named exists: else a bad value (exit 2), as for --out, --into and every input
// file. Checked where the file is opened, and where a missing file reads as an empty database; a
// device or FIFO there is refused by tuning_db itself (exit 3, docs/guarantees.md).
void check_db_path(const std::filesystem::path& path, const std::string& named);
// How a message names the database a command reads: "--db FILE" where the user gave one (named),
// else "the default tuning database FILE (no --db given)".
std::string db_named(const std::filesystem::path& path, const std::string& named);

// The GPU model a record is filed under: the preset's name, else the GPU's own.
std::string device_model_of(const device_spec& d);

// The key a measurement on this machine is stored under: this GPU model,
// driver, CUDA runtime (as host.devices() reports them), tool and compiler, and the problem.
tuning_key live_tuning_key(const device_choice& d, const gemm_problem& p, const std::string& compiler_version,
                           const host_services& host);

// A stored answer: "exact" (same GPU model, driver, CUDA, tool and compiler)
// for a run on a GPU; "same_device_model" for an offline plan (--gpu NAME);
// "stored_plan" for an offline plan with --store-plans where no measurement
// answers: a plan stored by the same tiletune and compiler. Only measurements
// answer a run on a GPU.
struct db_answer {
  tuning_record record;
  std::string match;
};
std::optional<db_answer> look_up(const tuning_db& db, const device_choice& d, const gemm_problem& p, bool live,
                                 const std::string& compiler_version, const host_services& host,
                                 bool stored_plans = false);

// The "tuning_db" key of a result: the file, whether it answered, and from what measurement.
nlohmann::json db_answer_json(const tuning_db& db, const db_answer& a);
// The whole tiletune.gemm/1 result of a stored answer, with today's tool and
// command line and the measuring run's tool under "measured_with".
nlohmann::json result_from_answer(const tuning_db& db, const db_answer& a, const nlohmann::json& tool_now);

// Tables from result JSON: one problem answered from the database, and a suite.
std::string format_db_answer_table(const nlohmann::json& result, int top);
std::string format_suite_results(const std::string& suite_name, const nlohmann::json& device,
                                 const nlohmann::json& results);

// --model: each GEMM of the step, how often it runs, its time (measured, else predicted) and its
// share of the step's GEMM time; and that as a table.
nlohmann::json model_step_json(const std::vector<nlohmann::json>& results, const std::vector<std::int64_t>& counts,
                               const gemm_suite& suite);
std::string format_model_step(const nlohmann::json& step);

// "12.3 s" / "2 min 05 s".
std::string format_seconds(double s);

}  // namespace tiletune::cli
