// Each family owns its knobs (tile_config::knobs) through its header's accessors:
// a knob the family sets takes part in equality and the id, and survives tile JSON.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/simt/simt_family.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"

namespace tiletune {
namespace {

struct knob_case {
  std::string name;
  tile_config base;
  std::function<int&(tile_config&)> knob;
  int other_value;
};

std::vector<knob_case> knob_cases() {
  return {
      {"simt thread_m", simt_tile(64, 64, 8, 4, 4, 4), [](tile_config& c) -> int& { return simt_thread_m(c); }, 8},
      {"simt thread_n", simt_tile(64, 64, 8, 4, 4, 4), [](tile_config& c) -> int& { return simt_thread_n(c); }, 8},
      {"simt vector_width", simt_tile(64, 64, 8, 4, 4, 4),
       [](tile_config& c) -> int& { return simt_vector_width(c); }, 2},
      {"mma warps_m", mma_tile(128, 128, 32, 2, 2, 3), [](tile_config& c) -> int& { return mma_warps_m(c); }, 4},
      {"mma warps_n", mma_tile(128, 128, 32, 2, 2, 3), [](tile_config& c) -> int& { return mma_warps_n(c); }, 4},
      {"wgmma consumers", wgmma_tile(128, 128, 64, 1, 4), [](tile_config& c) -> int& { return wgmma_consumers(c); },
       2},
  };
}

TEST(family_knobs, a_knob_changes_equality_and_the_id_and_round_trips_through_tile_json) {
  for (const auto& k : knob_cases()) {
    tile_config changed = k.base;
    ASSERT_NE(k.knob(changed), k.other_value) << k.name;
    k.knob(changed) = k.other_value;
    EXPECT_NE(changed, k.base) << k.name;
    EXPECT_NE(changed.id(), k.base.id()) << k.name;
    for (tile_config c : {k.base, changed}) {
      tile_config back = tile_from_json(tile_to_json(c));
      EXPECT_EQ(back, c) << k.name << ": " << tile_to_json(c).dump();
      EXPECT_EQ(k.knob(back), k.knob(c)) << k.name;
    }
  }
}

TEST(family_knobs, the_accessors_read_what_the_builders_set) {
  const tile_config s = simt_tile(64, 32, 16, 8, 4, 2);
  EXPECT_EQ(simt_thread_m(s), 8);
  EXPECT_EQ(simt_thread_n(s), 4);
  EXPECT_EQ(simt_vector_width(s), 2);
  const tile_config m = mma_tile(128, 64, 32, 4, 2, 3);
  EXPECT_EQ(mma_warps_m(m), 4);
  EXPECT_EQ(mma_warps_n(m), 2);
  EXPECT_EQ(mma_warp_tile_m(m), 32);
  EXPECT_EQ(mma_warp_tile_n(m), 32);
  EXPECT_EQ(m.threads(), 4 * 2 * 32);
  EXPECT_EQ(wgmma_consumers(wgmma_tile(128, 128, 64, 2, 4)), 2);
  // Copied in the tuner's hot loops: the family's knobs keep the tile small.
  EXPECT_LE(sizeof(tile_config), 64u);
}

}  // namespace
}  // namespace tiletune
