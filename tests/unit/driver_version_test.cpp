// The kernel driver's version the tuning database keys a measurement by.
#include "core/device/driver_version.hpp"

#include <gtest/gtest.h>

using namespace tiletune;

// /proc/driver/nvidia/version in the forms the proprietary and the open kernel modules print
// (not yet read on the GPU machines: owed to the GPU issue), and text that holds no version.
TEST(driver_version, read_from_the_kernel_modules_version_line) {
  EXPECT_EQ(parse_nvidia_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Sun Oct 12 "
                                        "01:52:06 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
            "580.159.04");
  EXPECT_EQ(parse_nvidia_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release "
                                        "Build  (dvs-builder@U16-I3-B03-4-3)  Thu Jan 23 2025\n"),
            "570.86.15");
  EXPECT_EQ(parse_nvidia_driver_version("NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.54.14  Thu Feb 22 "
                                        "2024\n"),
            "550.54.14");
  EXPECT_EQ(parse_nvidia_driver_version(""), "");
  EXPECT_EQ(parse_nvidia_driver_version("GCC version: gcc version 12.2.0\n"), "");  // not the NVRM line
  EXPECT_EQ(parse_nvidia_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  Sun Oct 12\n"), "");
}
