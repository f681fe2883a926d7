// Internal to the db command: merge and export, the subcommands for a fleet.
#pragma once
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"

namespace tiletune::cli {

void add_db_fleet_commands(CLI::App& db_command, run_context& ctx);

}  // namespace tiletune::cli
