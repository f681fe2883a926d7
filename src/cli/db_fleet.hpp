// Internal to the db command: merge and export, the subcommands for a fleet.
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"

namespace tiletune::cli {

// group_db: the --db given at the group's level (`db --db FILE export`), which
// export reads when its own --db is not given.
void add_db_fleet_commands(CLI::App& db_command, run_context& ctx, std::shared_ptr<const std::string> group_db);

}  // namespace tiletune::cli
