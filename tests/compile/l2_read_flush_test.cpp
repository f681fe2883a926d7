// The read flush's kernel (gemm --l2-flush read, src/cuda/l2_read_flush.cpp) through NVRTC for every
// architecture tiletune runs on: plain global loads of 16 bytes (an ld.global.nc would take the
// read-only path; a plain load allocates its line in the L2 as a GEMM's loads do), a loop over the
// buffer, and the store that keeps the loads in the program. What it does to the L2 is the GPU's to
// show (owed to the GPU issue).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "cuda/l2_read_flush.hpp"

TEST(l2_read_flush, compiles_to_plain_wide_loads_on_every_architecture) {
  for (const auto& [major, minor] : {std::pair{8, 0}, {8, 6}, {8, 9}, {9, 0}, {10, 0}, {12, 0}}) {
    const std::string ptx = tiletune::l2_read_flush_ptx(major, minor);
    const std::string arch = std::to_string(major * 10 + minor);
    EXPECT_NE(ptx.find(".target sm_" + arch), std::string::npos) << arch;
    EXPECT_NE(ptx.find(".entry tt_l2_read_flush"), std::string::npos) << arch;
    EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(ld\.global\.v4\.[ub]32)"))) << arch << "\n" << ptx;
    EXPECT_EQ(ptx.find("ld.global.nc"), std::string::npos) << arch << ": the read-only path\n" << ptx;
    EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(st\.global\.[ub]32)"))) << arch << ": no store keeps the loads\n"
                                                                          << ptx;
    EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(bra(\.uni)?\s)"))) << arch << ": no loop\n" << ptx;
  }
}
