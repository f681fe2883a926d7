// Internal to the db command: merge and export, the subcommands for a fleet.
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"

namespace tiletune::cli {

// group_db: the --db given at the group's level (`db --db FILE export`), which
// export reads when its own --db is not given.
// The GPU model that --gpu of db list, export and calibrate names: a preset in
// any case (as gemm --gpu takes it), or a model the database holds under its
// own name (a GPU without a preset is stored by the name it gives itself).
// Anything else is refused (exit 2) naming the value and the known presets.
// db: null when there is no database file yet. Empty gpu: no filter.
std::string gpu_filter(const std::string& gpu, const tuning_db* db);

void add_db_fleet_commands(CLI::App& db_command, run_context& ctx, std::shared_ptr<const std::string> group_db);

}  // namespace tiletune::cli
