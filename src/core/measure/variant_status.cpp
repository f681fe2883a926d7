#include "core/measure/variant_status.hpp"

namespace tiletune {

std::string_view to_string(variant_status s) {
  switch (s) {
    case variant_status::ok: return "ok";
    case variant_status::pruned: return "pruned";
    case variant_status::compile_error: return "compile_error";
    case variant_status::resource_limit: return "resource_limit";
    case variant_status::launch_error: return "launch_error";
    case variant_status::incorrect: return "incorrect";
    case variant_status::timeout: return "timeout";
    case variant_status::skipped: return "skipped";
  }
  return "?";
}

std::optional<variant_status> variant_status_named(std::string_view name) {
  for (int i = 0; i < variant_status_count; ++i)
    if (to_string(static_cast<variant_status>(i)) == name) return static_cast<variant_status>(i);
  return std::nullopt;
}

std::string_view to_string(measure_op op) {
  switch (op) {
    case measure_op::variant: return "variant";
    case measure_op::reference: return "reference";
    case measure_op::library: return "library";
    case measure_op::bandwidth: return "bandwidth";
    case measure_op::launch: return "launch";
  }
  return "?";
}

std::optional<measure_op> measure_op_named(std::string_view name) {
  for (measure_op op : {measure_op::variant, measure_op::reference, measure_op::library, measure_op::bandwidth,
                        measure_op::launch})
    if (to_string(op) == name) return op;
  return std::nullopt;
}

}  // namespace tiletune
