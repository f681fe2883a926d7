#pragma once
#include <istream>
#include <ostream>

namespace tiletune {

// The measuring worker (`tiletune __worker`): reads a worker_setup line, then
// measure_request lines, answering each with a measure_response line.
// Returns the process's exit code: 0 at the end of input, 4 after a sticky
// CUDA error (answered first), 3 when the GPU cannot be set up.
int run_gemm_worker(std::istream& in, std::ostream& out);

}  // namespace tiletune
