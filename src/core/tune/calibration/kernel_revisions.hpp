#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tiletune {

// Calibration fits the kernels this build runs. A kernel family declares when each variant's kernel
// last changed in a way that moves its timings (gemm_family::revised); a timing measured by a build
// whose kernels predate that times another kernel (a main loop revised on 2026-11-28 runs the same
// variants 1.46x faster than the kernel the 2026-11 recordings timed), and fitting it would rate
// today's kernel by an old one's speed.

// The newest revision of any registered family's kernels: what a result this build writes records
// as tool.kernels_as_of (UTC, YYYY-MM-DDTHH:MM:SSZ).
std::string kernels_as_of();

// The kernels a result timed: its tool.kernels_as_of, else (a result written before results
// recorded it) its tool.date, the day it was measured; "" where it has neither.
std::string kernels_as_of(const nlohmann::json& result);

// What mark_superseded found: variants' timings, by family.
struct superseded_timings {
  std::size_t variants = 0;
  std::size_t results = 0;  // results left with no timing of a current kernel
  std::map<std::string, std::size_t> by_family;
  std::string describe() const;  // the count, then by family in parentheses
};

// Marks ("superseded": true) each timed variant whose family revised its kernel after the
// result's kernels_as_of. Calibration fits no family figure to a marked timing and ranks no marked
// variant (measured_medians skips it); what the GPU did stands (its clocks under the power cap, the
// most of its peaks a kernel drew). A result with no date keeps everything (nothing says it is old).
superseded_timings mark_superseded(std::vector<nlohmann::json>& results);

}  // namespace tiletune
