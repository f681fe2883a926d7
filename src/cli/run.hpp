#pragma once

#include "cli/host_services.hpp"

namespace tiletune::cli {

// The whole command line: parses argv, runs the command, maps errors to exit
// codes (DESIGN.md). main() calls it; the CLI fuzz target calls it in-process.
// The commands see this machine's GPUs and start `tiletune __worker`.
int run(int argc, char** argv);

// The same, with the GPUs and the measuring worker given (the tests' stand-ins).
int run(int argc, char** argv, host_services host);

}  // namespace tiletune::cli
