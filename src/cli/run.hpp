#pragma once

namespace tiletune::cli {

// The whole command line: parses argv, runs the command, maps errors to exit
// codes (DESIGN.md). main() calls it; the CLI fuzz target calls it in-process.
int run(int argc, char** argv);

}  // namespace tiletune::cli
