// Less work on the same GPU and kernel is never predicted slower: the model's time of each
// variant grows with M, N and K (sizes that keep every row 16-byte aligned, so the kernel's
// copy path is the same), on every preset, dtype and family, by the physical model and by the
// calibrated one an offline plan uses where a calibration is shipped.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/gemm/family.hpp"
#include "core/gemm/search_space.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/calibration/shipped_calibration.hpp"
#include "core/tune/perf_model.hpp"

using namespace tiletune;

namespace {

// A registers-per-thread figure every compiled variant stays under (occupancy is not what varies here).
constexpr int registers = 128;

double monotone_predicted_us(const device_spec& d, const gemm_problem& p, const tile_config& c) {
  const auto occ = estimate_occupancy(d, c.threads(), registers, c.smem_bytes(p.type, p.layout));
  static const auto calibration = shipped_calibration_for(find_preset("h100-sxm"));
  if (d.compute_capability == 90 && calibration)
    if (auto r = calibrated_prediction(*calibration, d, p, c, occ)) return r->time_us;
  return predict(d, p, c, occ).time_us;
}

// The first size along one dimension whose prediction is faster than the smaller size before it.
std::string first_violation(const device_spec& d, gemm_problem p, const tile_config& c, std::int64_t gemm_problem::*dim) {
  double before = 0;
  std::int64_t before_size = 0;
  for (std::int64_t size : {16, 48, 64, 112, 128, 256, 384, 1000, 1024, 2048, 3000, 4096, 8192}) {
    p.*dim = size;
    if (check_constraints(c, p, d)) continue;
    const double t = monotone_predicted_us(d, p, c);
    if (t < before * (1 - 1e-9))
      return p.describe() + " " + c.id() + " on " + d.name + ": " + std::to_string(t) + " us, but " +
             std::to_string(before) + " us at " + std::to_string(before_size);
    before = t;
    before_size = size;
  }
  return "";
}

}  // namespace

TEST(prediction, less_work_is_never_predicted_slower) {
  std::size_t checked = 0, violations = 0;
  std::string first;
  for (const char* preset : {"h100-sxm", "h100-pcie", "a100-sxm-80gb", "l4"}) {
    const device_spec& d = find_preset(preset);
    for (dtype t : {dtype::f32, dtype::tf32, dtype::f16, dtype::bf16})
      for (kernel_family f : families_for(t))
        for (const tile_config& c : default_search_space(f, t))
          for (auto dim : {&gemm_problem::m, &gemm_problem::n, &gemm_problem::k}) {
            gemm_problem p;
            p.m = p.n = p.k = 2048;
            p.type = t;
            p.layout = parse_layout("nt");
            const std::string v = first_violation(d, p, c, dim);
            ++checked;
            if (!v.empty() && violations++ == 0) first = v;
          }
  }
  EXPECT_GT(checked, 500u);
  EXPECT_EQ(violations, 0u) << "first: " << first;
}
