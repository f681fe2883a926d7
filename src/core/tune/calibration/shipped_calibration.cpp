#include "core/tune/calibration/shipped_calibration.hpp"

#include <nlohmann/json.hpp>

namespace tiletune {

namespace {
// The "calibration" object of profiles/calibration/h100-sxm.json, as `tiletune db calibrate` wrote it
// from the 13 problems of profiles/measured/h100-2026-11-23/gemm (profiles/calibration/README.md).
constexpr const char* h100_sxm = R"json(
{
  "device_model": "h100-sxm",
  "dram_share": 0.5568304216293385,
  "efficiency": {
    "mma/*": 0.87,
    "mma/bf16": 0.74,
    "mma/f16": 0.725,
    "mma/tf32": 0.98,
    "simt/*": 0.68,
    "simt/f32": 0.68,
    "wgmma/*": 1.0,
    "wgmma/bf16": 1.0,
    "wgmma/f16": 0.98,
    "wgmma/tf32": 0.98
  },
  "overlap_loss": {
    "mma/*": 1.0,
    "mma/bf16": 1.0,
    "mma/f16": 0.2225,
    "mma/tf32": 0.515,
    "simt/*": 0.47500000000000003,
    "simt/f32": 0.47500000000000003,
    "wgmma/*": 0.29500000000000004,
    "wgmma/bf16": 0.3375,
    "wgmma/f16": 0.24250000000000002,
    "wgmma/tf32": 0.32250000000000006
  },
  "peak_share": {
    "bf16": 0.8400530627126982,
    "f16": 0.7954750093933499,
    "f32": 0.773159252816854,
    "tf32": 0.8368422161865512
  },
  "results": 13,
  "time_scale": {
    "mma/*": 2.1580441449125387,
    "mma/bf16": 1.9180671812114134,
    "mma/f16": 2.4462867874271153,
    "mma/tf32": 3.300582086947662,
    "simt/*": 1.2203565583242613,
    "simt/f32": 1.2203565583242613,
    "wgmma/*": 1.2190162585201592,
    "wgmma/bf16": 1.1899556502856938,
    "wgmma/f16": 1.1946359333497558,
    "wgmma/tf32": 1.1355820869476618
  },
  "variants": {
    "mma/*": 407,
    "mma/bf16": 314,
    "mma/f16": 31,
    "mma/tf32": 62,
    "simt/*": 32,
    "simt/f32": 32,
    "wgmma/*": 360,
    "wgmma/bf16": 282,
    "wgmma/f16": 39,
    "wgmma/tf32": 39
  }
}
)json";
}  // namespace

std::optional<model_calibration> shipped_calibration(const std::string& device_model) {
  if (device_model != "h100-sxm") return std::nullopt;
  model_calibration c = calibration_from_json(nlohmann::json::parse(h100_sxm));
  c.source = "profiles/calibration/h100-sxm.json (built in)";
  return c;
}

}  // namespace tiletune
