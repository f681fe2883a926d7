#pragma once
#include "core/gemm/family.hpp"
#include "core/gemm/kernel_launch.hpp"

namespace tiletune {

// The export's description of a wgmma variant's launch (wgmma_launch.cpp).
kernel_launch wgmma_launch(const tile_config& c, const gemm_problem& p, const device_spec& d);

}  // namespace tiletune
