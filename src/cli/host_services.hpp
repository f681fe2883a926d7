// What the commands take from the machine they run on: its GPUs and the
// program that measures on them. The shipped binary uses production_services();
// the tests inject stand-ins through the CLI library (tests/support/
// tiletune_standin_main.cpp), never through the shipped binary's environment.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "cuda/device_query.hpp"

namespace tiletune::cli {

struct host_services {
  // The local GPUs: what `devices` lists and --device, --devices and `check` pick from.
  std::function<local_devices()> devices;
  // The command line that starts a measuring worker (it speaks core/measure/measure_protocol
  // on stdin and stdout): gemm and check measure with it, and so does batch on a local GPU.
  std::function<std::vector<std::string>()> worker_argv;
};

// This machine: the GPUs the CUDA runtime reports, and `tiletune __worker` (this executable).
host_services production_services();

}  // namespace tiletune::cli
