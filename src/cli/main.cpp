#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "cli/run.hpp"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  // Output that fits a pipe's buffer (64 KiB on Linux) leaves in one write, before its reader can
  // go (`tiletune gemm --help | head -1` exits 0); stdio's 4 KiB blocks let the reader close the
  // pipe between two of them. A terminal keeps its line buffering.
  static char stdout_buffer[1 << 16];
  if (!isatty(STDOUT_FILENO)) std::setvbuf(stdout, stdout_buffer, _IOFBF, sizeof stdout_buffer);
  return tiletune::cli::run(argc, argv);
}
