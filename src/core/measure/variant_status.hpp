#pragma once
#include <optional>
#include <string_view>

// The states a variant and a worker request pass through, as values end to end;
// their names are what the JSON and the worker protocol carry.
namespace tiletune {

// Every variant ends in one of these; none of them stops the run.
enum class variant_status {
  ok,              // compiled and fits (predicted mode), or verified and timed (measured)
  pruned,          // broke a named constraint before compilation
  compile_error,   // NVRTC rejected it; the log travels with it
  resource_limit,  // compiled, but spills registers or cannot be resident on an SM
  launch_error,
  incorrect,
  timeout,
  skipped,         // not run: its family was suspended after a timeout or launch error (the reason names it)
};
// How many statuses there are (skipped is the last): for tallies indexed by status.
inline constexpr int variant_status_count = static_cast<int>(variant_status::skipped) + 1;
std::string_view to_string(variant_status s);
// The status a name stands for; none for a name that is not one.
std::optional<variant_status> variant_status_named(std::string_view name);

// What the measuring worker is asked to do (measure_protocol.hpp).
enum class measure_op {
  variant,    // verify and time one compiled variant on the setup's problem
  reference,  // time cuBLASLt on the setup's problem
  library,    // time cuBLASLt on a problem of the request's own
  bandwidth,  // the device's copy bandwidth
  launch,     // back-to-back tiny launches
};
std::string_view to_string(measure_op op);
std::optional<measure_op> measure_op_named(std::string_view name);

}  // namespace tiletune
