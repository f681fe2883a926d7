#pragma once
// The figures a result file, a tuning database record or an export gives of a GEMM's speed, held to
// what the GPU can do: every reader (compare, check, report, db import) refuses the same forged or
// damaged figure with the same words.
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/gemm/problem.hpp"

namespace tiletune {

// A figure of a result: absent or null is none; anything but a positive finite number is a damaged
// file, named with its field (usage_error).
std::optional<double> result_figure_at(const nlohmann::json& j, const char* key, const std::string& where);

// What a GPU can do at most. No figure (0, or no peak for a type) is not checked.
struct device_limits {
  std::map<std::string, double> peak_tflops;  // by the device's key: f32, tf32, f16, bf16, fp8
  double bandwidth_gbs = 0;
  double l2_bytes = 0;
};

// A result file's "device" object held to the known preset it names: the file may give a lower figure
// (a slower part of the model), never a higher one, and one it leaves out is the preset's. A preset of
// another version of the tool: the file's own figures.
device_limits limits_of(const nlohmann::json& device);
// A known preset's figures (as --gpu spells it, any case), or none for another name.
device_limits preset_limits(const std::string& preset);

// median_us and predicted_us no faster than the GPU's peak math rate or its memory allow (the operands
// the L2 cannot hold stream from memory); tflops what the problem's FLOPs over the time give (the
// measured time where there is one) and no more than the peak. Throws usage_error naming the figure at AT.
void check_timed_figures(const gemm_problem& p, const nlohmann::json& v, const device_limits& l, const std::string& at);
// A TFLOP/s of an element type no more than the GPU's peak for it (where the problem is known only by
// its type, as db list prints it).
void check_tflops_within_peak(dtype t, double tflops, const device_limits& l, const std::string& at);

}  // namespace tiletune
