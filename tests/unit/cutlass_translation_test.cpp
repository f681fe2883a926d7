// CUTLASS translations use only values CUTLASS accepts: threadblock swizzles and CUTLASS 3's
// max_swizzle_size of 1, 2, 4 or 8, for every variant of every family, dtype and problem copy.
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "core/device/device_spec.hpp"
#include "core/gemm/family.hpp"
#include "core/gemm/search_space.hpp"

using namespace tiletune;

TEST(cutlass_translation, swizzle_sizes_are_ones_cutlass_accepts) {
  const std::regex swizzle(R"((?:max_swizzle_size |GemmIdentityThreadblockSwizzle<)(\d+))");
  const device_spec& d = find_preset("h100-sxm");
  int swizzled = 0, larger_groups = 0;
  for (dtype t : {dtype::f32, dtype::tf32, dtype::f16, dtype::bf16})
    for (std::int64_t m : {16, 4096}) {
      gemm_problem p;
      p.m = m;
      p.n = p.k = 4096;
      p.type = t;
      p.layout = parse_layout("nt");
      for (kernel_family f : families_for(t))
        for (const tile_config& c : problem_search_space(f, p, d)) {
          const std::string shape = f->cutlass_shape(c, t);
          for (std::sregex_iterator it(shape.begin(), shape.end(), swizzle), end; it != end; ++it) {
            const int v = std::stoi((*it)[1]);
            EXPECT_TRUE(v == 1 || v == 2 || v == 4 || v == 8) << c.id() << ": " << shape;
            ++swizzled;
          }
          if (c.raster_group > 8) {
            EXPECT_NE(shape.find("groups " + std::to_string(c.raster_group) + " tiles"), std::string::npos) << shape;
            ++larger_groups;
          }
        }
    }
  EXPECT_GT(swizzled, 50);
  EXPECT_GT(larger_groups, 0);  // the check above ran on a group CUTLASS cannot express
}

// A translation gives the reason its variant has: copies made for rows off 16 bytes in bf16 said
// fp8's mma.sync needed them (the reason of fp8 operands stored MN-major only).
TEST(cutlass_translation, only_an_fp8_translation_names_fp8) {
  const device_spec& d = find_preset("a100-sxm-80gb");
  int copies = 0;
  for (dtype t : {dtype::f32, dtype::tf32, dtype::f16, dtype::bf16})
    for (const char* l : {"nn", "nt", "tn", "tt"}) {
      gemm_problem p;
      p.m = 1000;
      p.n = 3000;
      p.k = 777;  // rows off 16 bytes: copies padded first
      p.type = t;
      p.layout = parse_layout(l);
      for (kernel_family f : families_for(t))
        for (const tile_config& c : problem_search_space(f, p, d)) {
          const std::string shape = f->cutlass_shape(c, t);
          // (tf32's own reason may name fp8 beside it: CUTLASS's Hopper kernels read both K-major only.)
          if (shape.find("fp8") != std::string::npos) {
            EXPECT_NE(shape.find(std::string(to_string(t)) + " and fp8"), std::string::npos)
                << c.id() << " " << to_string(t) << ": " << shape;
          }
          copies += shape.find("copies") != std::string::npos;
        }
    }
  EXPECT_GT(copies, 0);  // the check ran on translations of copies
}
