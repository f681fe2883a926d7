#include <csignal>

#include "cli/run.hpp"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  return tiletune::cli::run(argc, argv);
}
