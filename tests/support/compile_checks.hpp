#pragma once
// What every compile test asks of the variants it compiles, in one place.
#include <string>
#include <vector>

#include "core/compile/kernel_compiler.hpp"

namespace tiletune_test {

// Compiles the jobs with NVRTC on every core and returns each result, having added a test failure
// (named by the job) for each that did not compile, spilled, used a stack, or drew a ptxas
// performance warning (wgmma serialized, waits or arrives injected).
std::vector<tiletune::compiled_kernel> compile_cleanly(const std::vector<tiletune::compile_job>& jobs);

// NVRTC behind the kernel cache the cli tests share (<scratch>/cache/tiletune, as tiletune_process
// gives the binary): a variant that a cli test's plan compiled, or another compile test, is read
// back (the same source, options, architecture and NVRTC: the same cubin and ptxas report).
tiletune::kernel_compiler& shared_compiler();

// The SASS of each result (sass_reading's listing; empty where it did not compile), in a few
// nvdisasm runs for them all.
std::vector<std::string> sass_of(const std::vector<tiletune::compile_job>& jobs,
                                 const std::vector<tiletune::compiled_kernel>& results);

}  // namespace tiletune_test
