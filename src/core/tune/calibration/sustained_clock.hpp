// The SM clock a kernel runs at under the card's power cap. A Hopper card draws more power the
// busier its math units are and the higher its clock (the voltage follows the clock, so the power
// grows about as its cube); past the cap its firmware lowers the clock, not at once but over a
// window of milliseconds. So a short kernel runs at the boost clock, a long one busy with math at
// the clock the cap sustains: every measured variant records its clock (sm_clock_mhz), and of the
// finalists of the H100's 2026-11-23 and the H200's 2026-12-04 searches (profiles/measured), bf16
// kernels of over 3 ms at more than half the peak ran at a median 0.71 and 0.72 of the boost clock
// (the H200's of 2026-11-26 at 0.87), those under 100 us at the boost clock, f32 (CUDA-core)
// kernels at the boost clock however long. A calibration fitted at one clock had put the long lm_head GEMM
// 15-17% fast and the short ones 5-10% slow (docs/model.md, "The sustained clock").
#pragma once
#include <cstddef>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/device/device_spec.hpp"
#include "core/gemm/problem.hpp"

namespace tiletune {

// The least fraction any model gives (the measured finalists never ran below 0.59 of the boost; a
// damaged calibration does not predict a card at a crawl).
constexpr double least_clock_fraction = 0.3;

// One measured kernel: its time at the boost clock (its measured time times the clock fraction it
// ran at), its power intensity (power_intensity) and the fraction of the boost clock it ran at.
struct clock_sample {
  double boost_us = 0, intensity = 0, fraction = 1;
};

// The clock, as a fraction of the boost clock, that a kernel of boost_us at the boost clock and of
// power intensity `intensity` runs at: the sustained fraction min(1, cbrt(power_share / intensity))
// (the clock at which intensity * fraction^3 meets the cap), reached past burst_us: fraction =
// 1 - (1 - sustained) / (1 + (burst_us / boost_us)^exponent), at least least_clock_fraction.
// power_share 0: no model (the boost clock throughout, as a calibration fitted before this model
// or from kernels that never slowed).
struct sustained_clock {
  double power_share = 0;  // the intensity the cap sustains at the boost clock
  double burst_us = 0;     // the kernel time that has come half way down to the sustained clock
  double exponent = 0;     // how sharply it comes down around burst_us
  std::size_t samples = 0; // measured kernels behind the fit
  bool fitted() const { return power_share > 0 && burst_us > 0 && exponent > 0; }
  double fraction(double boost_us, double intensity) const;
};

// How hard a kernel that runs p in boost_us at the boost clock works the card: its rate over the
// peak of its dtype's units (tensor cores at their dtype's peak alike); f32 runs on the CUDA
// cores, whose peak draws the power of a share of the tensor cores' (their peaks' ratio).
double power_intensity(const device_spec& d, const gemm_problem& p, double boost_us);

// The clock fraction a variant of a tiletune.gemm/1 result ran at (its sm_clock_mhz over the
// device's boost clock, at most 1); 1 where none was recorded.
double recorded_clock_fraction(const nlohmann::json& variant, const device_spec& d);

// The samples of a result's ok variants that recorded their clock.
std::vector<clock_sample> clock_samples(const nlohmann::json& result, const device_spec& d, const gemm_problem& p);

// Below this fraction of the boost clock a kernel ran slowed (the clock steps by 15 MHz, 0.8% of
// 1980: readings a step or two under the boost are not the cap at work).
constexpr double slowed_clock_fraction = 0.97;

// The model that fits the samples' fractions best (least squares; of more than max_fit_samples, an
// even spread of that many); not fitted (power_share 0) where fewer than min_slowed_samples ran slowed.
constexpr std::size_t min_slowed_samples = 8, max_fit_samples = 20000;
sustained_clock fit_sustained_clock(const std::vector<clock_sample>& samples);

nlohmann::json to_json(const sustained_clock& c);
sustained_clock sustained_clock_from_json(const nlohmann::json& j);

}  // namespace tiletune
