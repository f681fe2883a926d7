#pragma once

#include <string>

#include "cli/host_services.hpp"

namespace tiletune::cli {

// The whole command line: parses argv, runs the command, maps errors to exit
// codes (DESIGN.md). main() calls it; the CLI fuzz target calls it in-process.
// The commands see this machine's GPUs and start `tiletune __worker`.
int run(int argc, char** argv);

// The same, with the GPUs and the measuring worker given (the tests' stand-ins).
int run(int argc, char** argv, host_services host);

// An error message as stderr gets it after "tiletune: ": control bytes but \n and \t written \xNN,
// and every line after the first indented, so that a value the message quotes (an option's
// argument, a string from a JSON file) can neither send escape sequences nor forge a line of its
// own ("\ntiletune: ok").
std::string error_text(const std::string& message);

}  // namespace tiletune::cli
