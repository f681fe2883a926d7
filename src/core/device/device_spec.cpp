#include "core/device/device_spec.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/device/device_presets.hpp"
#include "core/errors.hpp"

namespace tiletune {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

double device_spec::peak_tflops(element_type e) const {
  switch (e) {
    case element_type::f32: return peak_tflops_f32;
    case element_type::tf32: return peak_tflops_tf32;
    case element_type::f16: return peak_tflops_f16;
    case element_type::bf16: return peak_tflops_bf16;
    case element_type::e4m3:
    case element_type::e5m2: return peak_tflops_fp8;
  }
  return 0;
}

double device_spec::peak_tflops(dtype t) const { return peak_tflops(row_of(t).peak); }

bool memory_bound(const gemm_problem& p, const device_spec& d) {
  const double peak = d.peak_tflops(p.type), bandwidth = d.memory_bandwidth_gbs;
  return peak > 0 && bandwidth > 0 &&
         static_cast<double>(p.least_traffic_bytes()) / (bandwidth * 1e3) > p.flops() / (peak * 1e6);
}

std::string device_spec::arch() const { return fmt::format("sm_{}", compute_capability); }

const std::vector<device_spec>& device_presets() {
  static const std::vector<device_spec> presets = make_device_presets();
  return presets;
}

const device_spec& find_preset(std::string_view name) {
  std::string key = lower(name);
  for (const auto& d : device_presets()) {
    if (d.preset == key) return d;
  }
  std::string known;
  for (const auto& d : device_presets()) known += (known.empty() ? "" : ", ") + d.preset;
  const std::vector<std::string> near = presets_near(name);
  if (near.empty()) throw usage_error(fmt::format("unknown GPU preset '{}': known presets are {}", name, known));
  std::string said;
  for (std::size_t i = 0; i < near.size(); ++i)
    said += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + near[i];
  throw usage_error(fmt::format("unknown GPU preset '{}': did you mean {}? (known presets are {})", name, said, known));
}

std::vector<std::string> presets_near(std::string_view name) {
  // Letters and digits only, in lower case: "H100", "h100_sxm", "RTX 4090" and "NVIDIA A10G" read as the
  // presets' names do.
  auto letters = [](std::string_view s) {
    std::string out;
    for (char c : s)
      if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  std::string key = letters(name);
  if (key.rfind("nvidia", 0) == 0) key.erase(0, 6);
  std::vector<std::string> near;
  if (key.empty()) return near;
  for (const auto& d : device_presets()) {
    const std::string preset = letters(d.preset);
    // The preset begins with what was given ("h100": h100-sxm, h100-pcie, h100-nvl), or what was given
    // begins with the preset and a model's suffix ("h100sxm5": h100-sxm; not "h200nvl": h20).
    const bool begins_with_preset = key.rfind(preset, 0) == 0 && !(std::isdigit(static_cast<unsigned char>(preset.back())) &&
                                                                   std::isdigit(static_cast<unsigned char>(key[preset.size()])));
    if (preset.rfind(key, 0) == 0 || begins_with_preset) near.push_back(d.preset);
  }
  // A GPU's own name ("NVIDIA H100 80GB HBM3"), as a device reports it.
  if (near.empty())
    if (const auto by_name = preset_for_device_name(name, 0)) near.push_back(by_name->preset);
  return near;
}

std::optional<device_spec> preset_for_device_name(std::string_view device_name,
                                                  std::int64_t memory_bytes) {
  const std::string n = lower(device_name);
  auto has = [&](std::string_view s) { return n.find(s) != std::string::npos; };
  std::string key;
  if (has("h200")) key = "h200";
  else if (has("h800")) key = "h800";
  else if (has("h20") && !has("h200")) key = "h20";
  else if (has("h100") && has("nvl")) key = "h100-nvl";
  else if (has("h100") && has("pcie")) key = "h100-pcie";
  else if (has("h100")) key = "h100-sxm";
  else if (has("a100") && !has("pcie")) key = memory_bytes > (48LL << 30) ? "a100-sxm-80gb" : "a100-sxm-40gb";
  else if (has("l40s")) key = "l40s";
  else if (n.ends_with(" l4") || has(" l4 ")) key = "l4";  // not the L40 or L40S
  else if (has("4090")) key = "rtx-4090";
  else if (has("rtx 6000 ada")) key = "rtx-6000-ada";
  else if (has("a6000")) key = "rtx-a6000";
  else if (has("3090")) key = "rtx-3090";
  else if (has("a10g")) key = "a10g";  // not the A10 (72 SMs, the datasheet's tensor rate)
  else if (has("b200") && !has("gb200")) key = "b200";
  else if (has("5090")) key = "rtx-5090";
  else if (has("v100") && has("sxm2") && memory_bytes > (24LL << 30)) key = "v100-sxm2";
  if (key.empty()) return std::nullopt;
  return find_preset(key);
}

void scale_preset_rates(device_spec& d, const device_spec& preset) {
  if (preset.sm_count <= 0 || preset.boost_clock_mhz <= 0 || d.sm_count <= 0 || d.boost_clock_mhz <= 0) return;
  const double scale = (d.sm_count * d.boost_clock_mhz) / (preset.sm_count * preset.boost_clock_mhz);
  if (std::abs(scale - 1) < 1e-3) return;
  for (double device_spec::*peak : {&device_spec::peak_tflops_f32, &device_spec::peak_tflops_tf32,
                                    &device_spec::peak_tflops_f16, &device_spec::peak_tflops_bf16,
                                    &device_spec::peak_tflops_fp8})
    d.*peak = preset.*peak * scale;
  d.l2_bandwidth_gbs = preset.l2_bandwidth_gbs * scale;
  d.peak_source = "estimated";
}

void estimate_peaks(device_spec& d) {
  // Dense flops per clock per SM (fp32 FFMA; tensor cores with fp32
  // accumulate), from the architecture whitepapers. GeForce parts of sm_86 and
  // sm_89 run half the tensor rate shown for the data-centre parts.
  double f32 = 128, f16 = 0;
  switch (d.compute_capability) {
    case 80: f32 = 128; f16 = 2048; break;
    case 86: f32 = 256; f16 = 512; break;
    case 87: f32 = 256; f16 = 1024; break;
    case 89: f32 = 256; f16 = 1024; break;
    case 90: f32 = 256; f16 = 4096; break;
    default: f32 = 128; f16 = 1024; break;
  }
  const double clock_hz = d.boost_clock_mhz * 1e6;
  d.peak_tflops_f32 = d.sm_count * f32 * clock_hz / 1e12;
  d.peak_tflops_f16 = d.sm_count * f16 * clock_hz / 1e12;
  d.peak_tflops_bf16 = d.peak_tflops_f16;
  d.peak_tflops_tf32 = d.peak_tflops_f16 / 2;
  // fp8 tensor cores (Ada, Hopper) run twice the 16-bit rate; Ampere has none.
  d.peak_tflops_fp8 = d.compute_capability >= 89 ? 2 * d.peak_tflops_f16 : 0;
  if (d.l2_bandwidth_gbs <= 0) d.l2_bandwidth_gbs = 2.5 * d.memory_bandwidth_gbs;
  d.peak_source = "estimated";
}

nlohmann::json to_json(const device_spec& d) {
  return {
      {"name", d.name},
      {"preset", d.preset.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.preset)},
      {"arch", d.arch()},
      {"compute_capability", d.compute_capability},
      {"sm_count", d.sm_count},
      {"max_threads_per_sm", d.max_threads_per_sm},
      {"max_blocks_per_sm", d.max_blocks_per_sm},
      {"registers_per_sm", d.registers_per_sm},
      {"smem_per_sm_bytes", d.smem_per_sm_bytes},
      {"smem_per_block_optin_bytes", d.smem_per_block_optin_bytes},
      {"l2_bytes", d.l2_bytes},
      {"memory_bytes", d.memory_bytes},
      {"memory_bandwidth_gbs", d.memory_bandwidth_gbs},
      {"boost_clock_mhz", d.boost_clock_mhz},
      {"peak_tflops",
       {{"f32", d.peak_tflops_f32},
        {"tf32", d.peak_tflops_tf32},
        {"f16", d.peak_tflops_f16},
        {"bf16", d.peak_tflops_bf16},
        {"fp8", d.peak_tflops_fp8}}},
      {"peak_source", d.peak_source},
      {"memory_source", d.memory_source},
  };
}

std::int64_t clusters_at_once(const device_spec& d, int size, int per_sm) {
  const std::int64_t slots = static_cast<std::int64_t>(std::max(per_sm, 1)) * std::max(d.sm_count, 1);
  if (size <= 2) return std::max<std::int64_t>(1, slots / std::max(size, 1));
  return std::max<std::int64_t>(1, slots / size - 2 * std::max(per_sm, 1));
}

}  // namespace tiletune
