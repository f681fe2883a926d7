// A calibration measured on one part of an architecture carries over to the others: an offline
// plan for an H100 PCIe is ranked by the H100 SXM's shipped calibration, says so, and never
// predicts the PCIe card (slower on every figure) faster than the SXM card on the same problem
// and kernel. With the SXM calibrated and the PCIe not, f32 4096^3 came out 35% faster on PCIe.
#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/gemm/family.hpp"
#include "core/gemm/search_space.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/calibration/shipped_calibration.hpp"
#include "core/tune/perf_model.hpp"

using namespace tiletune;

namespace {

// Every figure of `slow` at most `fast`'s: the premise of the comparison.
bool slower_on_every_figure(const device_spec& slow, const device_spec& fast) {
  return slow.sm_count <= fast.sm_count && slow.boost_clock_mhz <= fast.boost_clock_mhz &&
         slow.memory_bandwidth_gbs <= fast.memory_bandwidth_gbs && slow.l2_bandwidth_gbs <= fast.l2_bandwidth_gbs &&
         slow.l2_bytes <= fast.l2_bytes && slow.smem_per_sm_bytes <= fast.smem_per_sm_bytes &&
         slow.peak_tflops_f32 <= fast.peak_tflops_f32 && slow.peak_tflops_tf32 <= fast.peak_tflops_tf32 &&
         slow.peak_tflops_f16 <= fast.peak_tflops_f16 && slow.peak_tflops_bf16 <= fast.peak_tflops_bf16;
}

double transfer_predicted_us(const device_spec& d, const std::optional<model_calibration>& cal, const gemm_problem& p,
                    const tile_config& c) {
  const occupancy_estimate occ = estimate_occupancy(d, c.threads(), 128, c.smem_bytes(p.type, p.layout));
  if (cal)
    if (auto r = calibrated_prediction(*cal, d, p, c, occ)) return r->time_us;
  return predict(d, p, c, occ).time_us;
}

}  // namespace

TEST(calibration_transfer, a_part_without_its_own_measurements_uses_its_architectures_and_says_so) {
  const auto sxm = shipped_calibration_for(find_preset("h100-sxm"));
  const auto pcie = shipped_calibration_for(find_preset("h100-pcie"));
  ASSERT_TRUE(sxm && pcie);
  EXPECT_EQ(sxm->source, "profiles/calibration/h100-sxm.json (built in)");
  EXPECT_NE(pcie->source.find("measured on h100-sxm and applied to h100-pcie by architecture (sm_90)"),
            std::string::npos)
      << pcie->source;
  EXPECT_EQ(pcie->efficiency, sxm->efficiency);
  // Another architecture is not calibrated by an H100's measurements.
  EXPECT_FALSE(shipped_calibration_for(find_preset("a100-sxm-80gb")));
  EXPECT_FALSE(shipped_calibration_for(find_preset("l4")));
}

TEST(calibration_transfer, a_gpu_slower_on_every_figure_is_never_predicted_faster) {
  const device_spec& fast = find_preset("h100-sxm");
  const device_spec& slow = find_preset("h100-pcie");
  ASSERT_TRUE(slower_on_every_figure(slow, fast));
  const auto fast_cal = shipped_calibration_for(fast), slow_cal = shipped_calibration_for(slow);
  int compared = 0;
  for (dtype t : {dtype::f32, dtype::tf32, dtype::f16, dtype::bf16})
    for (auto [m, n, k] : {std::array<std::int64_t, 3>{4096, 4096, 4096}, {16, 4096, 4096}, {8192, 8192, 1024}}) {
      gemm_problem p;
      p.m = m;
      p.n = n;
      p.k = k;
      p.type = t;
      p.layout = parse_layout("nt");
      for (kernel_family f : families_for(t))
        for (const tile_config& c : default_search_space(f, t)) {
          if (check_constraints(c, p, fast) || check_constraints(c, p, slow)) continue;
          const double on_fast = transfer_predicted_us(fast, fast_cal, p, c),
                       on_slow = transfer_predicted_us(slow, slow_cal, p, c);
          EXPECT_GE(on_slow, on_fast * (1 - 1e-9)) << c.id() << " " << p.describe();
          ++compared;
        }
    }
  EXPECT_GT(compared, 300);
}
