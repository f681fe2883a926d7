// Internal to the measuring worker: the requests it answers besides a
// variant's ("reference", "library", "bandwidth", "launch").
#pragma once
#include "core/measure/measure_protocol.hpp"
#include "cuda/worker_state.hpp"

namespace tiletune {

measure_response measure_reference(gpu_state& g, const measure_request& r);
measure_response measure_library(gpu_state& g, const measure_request& r);
measure_response measure_bandwidth(gpu_state& g, const measure_request& r);
measure_response measure_launch(gpu_state& g, const measure_request& r);

}  // namespace tiletune
