#pragma once
// The NVIDIA kernel driver's version ("580.159.04"), which the tuning database
// keys measurements by: the CUDA driver API's version ("13.0") is shared by
// every driver of a CUDA release.
#include <string>
#include <string_view>

namespace tiletune {

// From the text of /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64
// Kernel Module  580.159.04  Sun ..."): the version, empty when the text has none.
std::string parse_nvidia_driver_version(std::string_view proc_text);

// This machine's, from /proc/driver/nvidia/version; empty where there is none
// (no driver, or a system without that file).
std::string read_nvidia_driver_version();

}  // namespace tiletune
