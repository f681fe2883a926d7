// Less work on the same GPU and kernel is never predicted slower, for grouped GEMMs
// (mixture-of-experts) too: every group given more rows, the same grid or a larger one, never
// makes a variant of the grouped search space (_grp and stream-K _sk_grp, contiguous and masked
// groups) or the best of the plan faster, by the physical model or by the calibrated one an
// offline plan ranks with (prediction_monotone_test.cpp holds the same for plain problems).
// Before 2026-12: 2 groups of 1 row of 14336x4096 on the H100 predicted 127.0 us for
// wgmma_256x128x64_c2_s3_cl1x1_g8m_grp, 2 rows 126.4 us: a partial grouped tile's latency terms
// were not held to those of whole tiles, and counted the rows in flight of all the groups at once.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/family.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/search_space.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/calibration/shipped_calibration.hpp"
#include "core/tune/perf_model.hpp"

using namespace tiletune;

namespace {

// A registers-per-thread figure every compiled variant stays under (occupancy is not what varies here).
constexpr int grouped_monotone_registers = 128;

// The calibration an offline plan for d uses (nullopt where none).
const std::optional<model_calibration>& grouped_monotone_calibration(const device_spec& d) {
  static std::map<std::string, std::optional<model_calibration>> calibrations;
  auto it = calibrations.find(d.preset);
  if (it == calibrations.end()) it = calibrations.emplace(d.preset, shipped_calibration_for(d)).first;
  return it->second;
}

// The physical model's time and the calibrated one's (the physical where no calibration applies).
struct grouped_monotone_times {
  double physical = 0, calibrated = 0;
};

grouped_monotone_times grouped_monotone_predict(const device_spec& d, const gemm_problem& p, const tile_config& c) {
  const auto occ = estimate_occupancy(d, c.threads(), grouped_monotone_registers, c.smem_bytes(p.type, p.layout));
  grouped_monotone_times t;
  t.physical = t.calibrated = predict(d, p, c, occ).time_us;
  if (const auto& cal = grouped_monotone_calibration(d))
    if (auto r = calibrated_prediction(*cal, d, p, c, occ)) t.calibrated = r->time_us;
  return t;
}

gemm_problem grouped_monotone_problem(std::vector<std::int64_t> rows, group_layout l, std::int64_t n, std::int64_t k,
                                      dtype t) {
  return grouped_problem(groups_of_rows(std::move(rows), l), n, k, t, parse_layout("nt"));
}

// Rows per group: every count up to the largest block_m (256), then a few beyond it (a second
// and third M tile of each block_m).
const std::vector<std::int64_t>& grouped_monotone_walk() {
  static const std::vector<std::int64_t> walk = [] {
    std::vector<std::int64_t> w;
    for (std::int64_t r = 1; r <= 256; ++r) w.push_back(r);
    for (std::int64_t r : {257, 258, 300, 383, 384, 385, 511, 512, 513, 640}) w.push_back(r);
    return w;
  }();
  return walk;
}

// The presets whose families run grouped problems (Hopper's wgmma); the test names a few of them.
std::vector<const device_spec*> grouped_monotone_presets() {
  std::vector<const device_spec*> out;
  for (const char* preset : {"h100-sxm", "h20", "h200", "h100-pcie", "a100-sxm-80gb", "l40s"}) {
    const device_spec& d = find_preset(preset);
    for (kernel_family f : families_for(dtype::bf16)) {
      // A family runs the preset's grouped problems where its space has a variant the GPU accepts.
      const gemm_problem p = grouped_monotone_problem({1, 1}, group_layout::contiguous, 4096, 4096, dtype::bf16);
      bool runs = false;
      for (const tile_config& c : problem_search_space(f, p, d)) runs = runs || !check_constraints(c, p, d);
      if (runs) {
        out.push_back(&d);
        break;
      }
    }
  }
  return out;
}

struct grouped_monotone_shape {
  int groups;
  std::int64_t n, k;
};
constexpr grouped_monotone_shape grouped_monotone_shapes[] = {
    {2, 14336, 4096}, {4, 4096, 14336}, {8, 14336, 4096}, {2, 4096, 14336}, {8, 1024, 512}, {4, 1024, 512}};
// The plans' (each step a whole search space, two dtypes): fewer.
constexpr grouped_monotone_shape grouped_monotone_plan_shapes[] = {
    {2, 14336, 4096}, {4, 4096, 14336}, {8, 14336, 4096}, {8, 1024, 512}};

// Every variant of the grouped search spaces along the walk (the spaces of its ends: stream-K
// copies join where the grid leaves SMs idle).
std::vector<tile_config> grouped_monotone_variants(const device_spec& d, const grouped_monotone_shape& s,
                                                   group_layout l, dtype t) {
  std::vector<tile_config> out;
  std::set<std::string> seen;
  for (std::int64_t rows : {grouped_monotone_walk().front(), std::int64_t{64}, grouped_monotone_walk().back()}) {
    const gemm_problem p = grouped_monotone_problem(std::vector<std::int64_t>(s.groups, rows), l, s.n, s.k, t);
    for (kernel_family f : families_for(t))
      for (const tile_config& c : problem_search_space(f, p, d))
        if (seen.insert(c.id()).second) out.push_back(c);
  }
  return out;
}

// A walk's tally: its steps, the times that fell (the first named), and stream-K's steps to more
// M tiles, which are not compared (below).
struct grouped_monotone_tally {
  std::size_t checked = 0, violations = 0, stream_k_steps = 0, stream_k_falls = 0;
  std::string first;
};

// One variant along the walk: rows_of(r) the groups' rows at step r. Each step's time, physical and
// calibrated, is compared with the step before it (a relative slack of 1e-9). Stream-K (_sk_grp)
// is compared within one grid of M tiles, as the plain model holds it (docs/model.md): its grid is
// one CTA per SM whatever the problem, so more M tiles split each tile among fewer CTAs and its
// owners wait on fewer peers (2 groups of 128 and 129 rows of 14336x4096 on the H100,
// wgmma_128x192x64_c2_s3_sk_grp: 7 peers, a fixup of 11.7 us, against 4 and 7.5 us).
template <typename RowsOf>
void grouped_monotone_walk_variant(const device_spec& d, const grouped_monotone_shape& s, group_layout l, dtype t,
                                   const tile_config& c, RowsOf rows_of, grouped_monotone_tally& tally) {
  double physical = 0, calibrated = 0;
  std::int64_t before = 0, tiles_before = 0;
  for (std::int64_t r : grouped_monotone_walk()) {
    const gemm_problem p = grouped_monotone_problem(rows_of(r), l, s.n, s.k, t);
    if (check_constraints(c, p, d)) continue;
    const grouped_monotone_times now = grouped_monotone_predict(d, p, c);
    const std::int64_t tiles = p.groups->m_tiles(c.block_m);
    const bool compared = !(wgmma_stream_k(c) && before > 0 && tiles != tiles_before);
    const std::string what = p.describe() + " " + c.id() + " on " + d.preset + ": ";
    std::string v;
    if (compared && now.physical < physical * (1 - 1e-9))
      v = what + "physical " + std::to_string(now.physical) + " us at step " + std::to_string(r) + ", " +
          std::to_string(physical) + " us at " + std::to_string(before);
    else if (compared && now.calibrated < calibrated * (1 - 1e-9))
      v = what + "calibrated " + std::to_string(now.calibrated) + " us at step " + std::to_string(r) + ", " +
          std::to_string(calibrated) + " us at " + std::to_string(before);
    if (!compared) {
      ++tally.stream_k_steps;
      tally.stream_k_falls += now.physical < physical * (1 - 1e-9);
    }
    ++tally.checked;
    if (!v.empty() && tally.violations++ == 0) tally.first = v;
    physical = now.physical;
    calibrated = now.calibrated;
    before = r;
    tiles_before = tiles;
  }
}

}  // namespace

TEST(grouped_monotone, presets_with_a_grouped_family) {
  // Hopper's wgmma runs grouped problems; Ampere and Ada have no grouped kernel (no variant there).
  std::set<std::string> presets;
  for (const device_spec* d : grouped_monotone_presets()) presets.insert(d->preset);
  EXPECT_TRUE(presets.count("h100-sxm") && presets.count("h20") && presets.count("h200") && presets.count("h100-pcie"));
  EXPECT_FALSE(presets.count("a100-sxm-80gb"));
  EXPECT_FALSE(presets.count("l40s"));
}

// Each variant, every group given the same rows (the step), walked upward. Before 2026-12: 25,806
// steps fell, 2 groups of 1 row against 2 the first.
TEST(grouped_monotone, every_variant_is_never_faster_for_more_rows_in_every_group) {
  grouped_monotone_tally tally;
  std::size_t stream_k = 0;
  for (const device_spec* d : grouped_monotone_presets())
    for (const grouped_monotone_shape& s : grouped_monotone_shapes)
      for (group_layout l : {group_layout::contiguous, group_layout::masked})
        for (const tile_config& c : grouped_monotone_variants(*d, s, l, dtype::bf16)) {
          const int groups = s.groups;
          auto rows_of = [groups](std::int64_t r) { return std::vector<std::int64_t>(groups, r); };
          grouped_monotone_walk_variant(*d, s, l, dtype::bf16, c, rows_of, tally);
          stream_k += wgmma_stream_k(c);
        }
  EXPECT_GT(tally.checked, 100000u);
  EXPECT_GT(stream_k, 0u);
  EXPECT_GT(tally.stream_k_falls, 0u);  // the exception is real: more M tiles, fewer peers a tile
  EXPECT_EQ(tally.violations, 0u) << "first: " << tally.first;
}

// One group grows (the step) while the others keep their rows (37, 74, ...): an expert that draws
// more tokens, the tiles partly filled and unequal.
TEST(grouped_monotone, every_variant_is_never_faster_for_more_rows_in_one_group) {
  grouped_monotone_tally tally;
  for (const device_spec* d : grouped_monotone_presets())
    for (const grouped_monotone_shape& s : grouped_monotone_shapes)
      for (group_layout l : {group_layout::contiguous, group_layout::masked})
        for (const tile_config& c : grouped_monotone_variants(*d, s, l, dtype::bf16)) {
          const int groups = s.groups;
          auto rows_of = [groups](std::int64_t r) {
            std::vector<std::int64_t> rows(groups, r);
            for (int g = 1; g < groups; ++g) rows[g] = 37 * g;
            return rows;
          };
          grouped_monotone_walk_variant(*d, s, l, dtype::bf16, c, rows_of, tally);
        }
  EXPECT_GT(tally.checked, 100000u);
  EXPECT_EQ(tally.violations, 0u) << "first: " << tally.first;
}

// The best of the plan (every family's search space for the problem at hand, stream-K included)
// along the same walk, bf16 and fp8: never faster for more rows in every group.
TEST(grouped_monotone, the_best_of_a_grouped_plan_is_never_faster_for_more_rows) {
  std::size_t checked = 0, violations = 0;
  std::string first;
  for (const device_spec* d : grouped_monotone_presets())
    for (dtype t : {dtype::bf16, dtype::e4m3})
      for (const grouped_monotone_shape& s : grouped_monotone_plan_shapes)
        for (group_layout l : {group_layout::contiguous, group_layout::masked}) {
          grouped_monotone_times before{0, 0};
          std::int64_t before_rows = 0;
          for (std::int64_t rows : grouped_monotone_walk()) {
            const gemm_problem p = grouped_monotone_problem(std::vector<std::int64_t>(s.groups, rows), l, s.n, s.k, t);
            grouped_monotone_times best{0, 0};
            for (kernel_family f : families_for(t))
              for (const tile_config& c : problem_search_space(f, p, *d)) {
                if (check_constraints(c, p, *d)) continue;
                const grouped_monotone_times u = grouped_monotone_predict(*d, p, c);
                if (best.physical == 0 || u.physical < best.physical) best.physical = u.physical;
                if (best.calibrated == 0 || u.calibrated < best.calibrated) best.calibrated = u.calibrated;
              }
            ASSERT_GT(best.physical, 0) << p.describe() << " on " << d->preset;
            std::string v;
            if (best.physical < before.physical * (1 - 1e-9) || best.calibrated < before.calibrated * (1 - 1e-9))
              v = "the best of " + p.describe() + " on " + d->preset + ": " + std::to_string(best.physical) +
                  " us physical, " + std::to_string(best.calibrated) + " calibrated; " +
                  std::to_string(before.physical) + " and " + std::to_string(before.calibrated) + " at " +
                  std::to_string(before_rows) + " rows a group";
            ++checked;
            if (!v.empty() && violations++ == 0) first = v;
            before = best;
            before_rows = rows;
          }
        }
  EXPECT_GT(checked, 1000u);
  EXPECT_EQ(violations, 0u) << "first: " << first;
}
