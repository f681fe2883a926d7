#include "core/results/result_figures.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/gemm/dtype_table.hpp"

namespace tiletune {

namespace {

// A positive figure, or 0 for none (absent, null or 0).
double figure_of(const nlohmann::json& j, const std::string& key) {
  return j.is_object() && j.contains(key) && j[key].is_number() && j[key].get<double>() > 0 ? j[key].get<double>() : 0;
}

// The GPU's peak for a problem, or 0 where the file gives none: the device keys it by the element type its
// dtype's row names, as the writer does ("fp8" for e4m3, e5m2 and their mixes).
double peak_for(dtype t, const device_limits& l) {
  const element_type e = row_of(t).peak;
  const std::string key = e == element_type::e4m3 || e == element_type::e5m2 ? "fp8" : std::string(to_string(e));
  const auto it = l.peak_tflops.find(key);
  return it == l.peak_tflops.end() ? 0 : it->second;
}

constexpr double slack = 1.05;  // clocks above the datasheet's boost, timer resolution

// A time faster than the GPU's peak math rate or its memory allows (the operands the L2 cannot
// hold must stream from memory) is a damaged or forged figure: refused, naming it.
void check_physics(const gemm_problem& p, std::optional<double> time_us, const std::string& figure,
                   const device_limits& l, const std::string& where) {
  if (!time_us) return;
  if (const double peak = peak_for(p.type, l); peak > 0) {
    const double floor_us = p.flops() / (peak * 1e12) * 1e6;
    if (*time_us * slack < floor_us)
      throw usage_error(fmt::format("{}: {} {} us is faster than the GPU's peak {} TFLOP/s allows ({:.4g} us for {}): "
                                    "not a real measurement",
                                    where, figure, *time_us, peak, floor_us, p.describe()));
  }
  const double streamed = static_cast<double>(p.operand_bytes()) - l.l2_bytes;
  if (l.bandwidth_gbs > 0 && streamed > 0) {
    const double floor_us = streamed / (l.bandwidth_gbs * 1e9) * 1e6;
    if (*time_us * slack < floor_us)
      throw usage_error(fmt::format("{}: {} {} us is faster than the GPU's memory allows ({:.0f} GB/s moves the {:.0f} "
                                    "bytes its L2 cannot hold in {:.4g} us): not a real measurement",
                                    where, figure, *time_us, l.bandwidth_gbs, streamed, floor_us));
  }
}

}  // namespace

// A figure of a result: absent or null is none; anything but a positive finite
// number is a damaged file, named with its field.
std::optional<double> result_figure_at(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number())
    throw usage_error(fmt::format("{}: \"{}\" is {}, not a number", where, key, j[key].dump()));
  const double v = j[key].get<double>();
  if (!std::isfinite(v) || !(v > 0))
    throw usage_error(fmt::format("{}: \"{}\" is {}, not a positive number", where, key, j[key].dump()));
  return v;
}

// A file of a known preset is held to the preset's figures: it may give a lower one (a slower part of the
// model), never a higher one (a forged time passed under a "peak" the file raised itself), and one it leaves
// out (or gives 0) is the preset's. A preset of another version of the tool: the file's own figures.
device_limits limits_of(const nlohmann::json& device) {
  device_limits l;
  if (!device.is_object()) return l;
  nlohmann::json known = nlohmann::json::object();
  if (device.contains("preset") && device["preset"].is_string()) {
    try {
      known = to_json(find_preset(device["preset"].get<std::string>()));
    } catch (const usage_error&) {
    }
  }
  auto held = [](double file, double preset) {
    return file > 0 && preset > 0 ? std::min(file, preset) : std::max(file, preset);
  };
  l.bandwidth_gbs = held(figure_of(device, "memory_bandwidth_gbs"), figure_of(known, "memory_bandwidth_gbs"));
  l.l2_bytes = held(figure_of(device, "l2_bytes"), figure_of(known, "l2_bytes"));
  const nlohmann::json none = nlohmann::json::object();
  const nlohmann::json& file_peaks = device.contains("peak_tflops") ? device["peak_tflops"] : none;
  const nlohmann::json& preset_peaks = known.contains("peak_tflops") ? known["peak_tflops"] : none;
  for (const nlohmann::json* peaks : {&file_peaks, &preset_peaks})
    if (peaks->is_object())
      for (const auto& [type, v] : peaks->items())
        if (const double peak = held(figure_of(file_peaks, type), figure_of(preset_peaks, type)); peak > 0)
          l.peak_tflops[type] = peak;
  return l;
}

device_limits preset_limits(const std::string& preset) {
  return limits_of(nlohmann::json{{"preset", preset}});
}

void check_tflops_within_peak(dtype t, double tflops, const device_limits& l, const std::string& at) {
  if (const double peak = peak_for(t, l); peak > 0 && tflops > peak * slack)
    throw usage_error(fmt::format("{}: \"tflops\" {} is more than the GPU's peak {} TFLOP/s: not a real measurement",
                                  at, tflops, peak));
}

// The times and TFLOP/s of a variant, the recommendation or the reference: report draws them and db import
// stores them, so each time is held to the GPU, and the TFLOP/s to the problem's FLOPs over the time it is
// of (the measured one where there is one, as the writer computes it) and to the peak.
void check_timed_figures(const gemm_problem& p, const nlohmann::json& v, const device_limits& l,
                         const std::string& at) {
  const auto median = result_figure_at(v, "median_us", at), predicted = result_figure_at(v, "predicted_us", at);
  check_physics(p, median, "median_us", l, at);
  check_physics(p, predicted, "predicted_us", l, at);
  const double tflops = figure_of(v, "tflops");  // (0 is none: check_figures let it be a non-negative number)
  if (tflops <= 0) return;
  if (const auto time_us = median ? median : predicted) {
    const double said = p.flops() / (*time_us * 1e-6) / 1e12;
    if (std::abs(tflops / said - 1) > 0.01)
      throw usage_error(fmt::format("{}: \"tflops\" {} disagrees with the problem's FLOPs over {} = {:.4g}", at, tflops,
                                    median ? "median_us" : "predicted_us", said));
  }
  check_tflops_within_peak(p.type, tflops, l, at);
}


}  // namespace tiletune
