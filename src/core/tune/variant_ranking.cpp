#include "core/tune/variant_ranking.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/gemm/family.hpp"
#include "core/gemm/k_major_copies.hpp"

namespace tiletune {

namespace {
constexpr double tie_tolerance = 1e-6;

bool nearly_equal(double a, double b) {
  return std::abs(a - b) <= tie_tolerance * std::max(std::abs(a), std::abs(b));
}

}  // namespace

double resource_cost(const variant_result& v) {
  return static_cast<double>(v.config.threads()) * v.resources.registers * 4.0 + static_cast<double>(v.smem_bytes);
}

bool times_tie(double a_us, double b_us) { return nearly_equal(a_us, b_us); }

bool predictions_tie(const prediction& a, const prediction& b) { return nearly_equal(a.time_us, b.time_us); }

bool predicted_before(const variant_result& a, const variant_result& b) {
  if (!predictions_tie(a.predicted, b.predicted)) return a.predicted.time_us < b.predicted.time_us;
  // The calibrated floor sets them alike: the tile's own terms decide. Held out of the fit, the H200's
  // 16x4096x4096 had every decode tile at the floor the other problems' DRAM draw sets (15.3 us) and
  // the pick, by L2 bytes, measured 1.22x the best; by their own time, 1.14x (with the second round
  // of clusters counted: before it, the k4 tiles' own time put one first, 1.31x).
  if (a.predicted.own_us > 0 && b.predicted.own_us > 0 && !nearly_equal(a.predicted.own_us, b.predicted.own_us))
    return a.predicted.own_us < b.predicted.own_us;
  if (!nearly_equal(a.predicted.l2_bytes, b.predicted.l2_bytes)) return a.predicted.l2_bytes < b.predicted.l2_bytes;
  if (!nearly_equal(a.predicted.wave_efficiency, b.predicted.wave_efficiency))
    return a.predicted.wave_efficiency > b.predicted.wave_efficiency;
  if (!nearly_equal(resource_cost(a), resource_cost(b))) return resource_cost(a) < resource_cost(b);
  // Twins: a mechanism measured to help that the model has no term for (gemm_family::tie_order).
  return a.config.family.impl && b.config.family.impl &&
         a.config.family->tie_order(a.config) < b.config.family->tie_order(b.config);
}

std::size_t top_tie_size(const gemm_plan& plan) {
  if (plan.variants.empty() || plan.variants.front().status != variant_status::ok) return 0;
  std::size_t n = 1;
  while (n < plan.variants.size() && plan.variants[n].status == variant_status::ok &&
         predictions_tie(plan.variants[n].predicted, plan.variants.front().predicted))
    ++n;
  return n;
}

void rank_by_prediction(gemm_plan& plan) {
  std::stable_sort(plan.variants.begin(), plan.variants.end(), [](const variant_result& a, const variant_result& b) {
    const bool aok = a.status == variant_status::ok;
    const bool bok = b.status == variant_status::ok;
    if (aok != bok) return aok;
    if (!aok) return static_cast<int>(a.status) < static_cast<int>(b.status);
    return predicted_before(a, b);
  });
  int rank = 0;
  for (auto& v : plan.variants)
    if (v.status == variant_status::ok) v.rank = ++rank;
  plan.recommended.reset();
  if (rank > 0) plan.recommended = 0;
}

void note_untried_recommendation(gemm_plan& plan) {
  if (!plan.recommended || plan.mode == plan_mode::measured) return;
  const tile_config& c = plan.variants[*plan.recommended].config;
  if (!c.family.impl) return;
  const std::string what = c.family->untried_on_gpu(c, plan.problem.type);
  if (!what.empty())
    plan.notes.push_back(fmt::format("the recommended {} uses {}, which has not run on a GPU yet: its figure is "
                                     "the model's, and a run on the GPU is owed before it is trusted",
                                     c.id(), what));
}

void note_tf32_no_faster_than_f32(gemm_plan& plan) {
  const device_spec& d = plan.device;
  if (plan.problem.type != dtype::tf32 || d.peak_tflops_tf32 <= 0 || d.peak_tflops_tf32 > d.peak_tflops_f32) return;
  plan.notes.push_back(fmt::format(
      "on the {} tf32's tensor peak ({:.1f} TFLOP/s) is no higher than f32's ({:.1f}): `--dtype f32` plans exact "
      "f32 kernels, which this plan does not rank and which may be faster here; plan both to compare",
      d.name, d.peak_tflops_tf32, d.peak_tflops_f32));
}

void note_unaligned_rows(gemm_plan& plan) {
  if (!plan.recommended) return;
  const misaligned_stride stride = misaligned_strides(plan.problem);
  if (stride.what.empty()) return;
  const variant_result& v = plan.variants[*plan.recommended];
  const tile_config& c = v.config;
  if (!c.family.impl) return;
  const bool copies = c.family->prologue_bytes(c, plan.problem) > 0;
  if (!copies && !c.family->copies_unaligned_rows_serially(c)) return;
  std::string cost;
  if (plan.mode == plan_mode::predicted)
    cost = copies ? fmt::format(" (the pre-pass: {:.0f} us of the {:.0f} us predicted)", v.predicted.prologue_us,
                                v.predicted.time_us)
                  : "";
  const std::string how = copies ? "first copies the operands into rows padded to 16 bytes, every call" + cost
                                 : "loads those rows one element at a time (16-byte loads need aligned rows)";
  // fp8 reads both operands K-major: in another layout than nt the copies are made whatever the strides.
  const bool layout_copies = copies && is_fp8(plan.problem.type) && plan.problem.layout.name() != "nt";
  const std::string fix =
      layout_copies
          ? "fp8 reads A and B K-major, so layout " + plan.problem.layout.name() +
                " is copied whatever its strides: A stored M x K and B N x K (layout nt), with rows on 16 bytes, are "
                "read in place"
      : stride.padded.empty()
          ? "strides that are multiples of 16 bytes let the kernels read the operands in place"
      : stride.option.empty()
          ? fmt::format("padded to {}, a matrix would hold more than the 2^31-1 elements a problem may have here",
                        stride.padded)
          : fmt::format("stored with the leading dimension{} padded to {} (the pad unread), the rows are read in "
                        "place (`{}` plans that time)",
                        stride.padded.find(" and ") != std::string::npos ? "s" : "",
                        stride.padded, stride.option);
  plan.notes.push_back(fmt::format("{} do not start on 16 bytes, so the recommended {} {}; {}", stride.what, c.id(),
                                   how, fix));
}

std::string top_tie_note(const gemm_plan& plan) {
  if (plan.mode != plan_mode::predicted) return {};
  const std::size_t tie = top_tie_size(plan);
  if (tie < 2) return {};
  // At the calibrated floor the tiles' own times (under it) come first.
  const bool floor = plan.variants.front().predicted.bound == "floor" && plan.variants.front().predicted.own_us > 0;
  return fmt::format(
      "the model predicts {} variants at the same best time ({:.1f} us{}): the tie was broken by {}fewer bytes "
      "served by L2, then fuller waves, then fewer resources, then a mechanism measured to help that the model has "
      "no term for; time them on a GPU to choose among them",
      tie, plan.variants.front().predicted.time_us, floor ? ", the floor the measured kernels set" : "",
      floor ? "each tile's own time under that floor, then " : "");
}

}  // namespace tiletune
