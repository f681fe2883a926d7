#pragma once
#include <cstdint>
#include <string>

#include "core/device/device_spec.hpp"
#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"

namespace tiletune {

struct occupancy_estimate {
  int blocks_per_sm = 0;
  int warps_per_sm = 0;
  std::string limited_by;  // "registers", "shared_memory", "threads", "blocks"
};

// Resident blocks per SM from the compiled kernel's registers and the block's
// shared memory, as the CUDA occupancy calculator counts them (registers are
// allocated per warp in units of register_alloc_unit; each block also holds
// the driver's reserved shared memory).
occupancy_estimate estimate_occupancy(const device_spec& d, int threads, int registers,
                                      std::int64_t smem_bytes);

// The analytical model's figures for one variant.
struct prediction {
  double time_us = 0;
  double compute_us = 0;  // tensor/FMA work of whole tiles at the attainable rate
  double memory_us = 0;   // the slower of DRAM (unique bytes) and L2 (tile traffic): a floor no kernel of this tile beats
  double tflops = 0;      // useful flops (2*M*N*K*batch) over time_us
  std::int64_t blocks = 0;
  double waves = 0;            // blocks / resident blocks, fractional
  double wave_efficiency = 0;  // useful share of the SM-slots the waves occupy
  double tile_efficiency = 0;  // M*N*K over the padded tiles' M*N*K
  std::string bound;           // "compute" or "memory"
  double dram_bytes = 0;       // unique bytes through DRAM (operands once, C, split-K partials)
  double l2_bytes = 0;         // bytes L2 serves the blocks: the tile's panels, C, partials
  double dram_us = 0;          // memory_us's DRAM part: the unique bytes' bandwidth and latency terms
  double l2_us = 0;            // memory_us's L2 part (and the serial copies of unaligned rows)
  double fixup_us = 0;         // after the k-loop, serial (in time_us): stream-K's busiest owner's fixup,
                               // split-K's reduction by the last slice
  double prologue_us = 0;      // kernels launched before the GEMM (a transposing pre-pass; in time_us, serial)
  double latency_us = 0;       // the busiest SM's k-tiles, an L2 round trip per tiles_in_flight of them
  double floor_us = 0;         // calibrated: the least time the measured kernels allow (their best share of
                               // peak FLOP/s and DRAM bandwidth); time_us is never under it
  double own_us = 0;           // calibrated: the tile's own time, the floor aside (time_us where above it); of
                               // variants the floor sets alike, the one whose own time is least goes first
  double clock_fraction = 1;   // calibrated: the share of the boost clock the power cap leaves the kernel
                               // (sustained_clock.hpp); compute_us and time_us are at that clock
};

// The compute side of a pipelined k-loop: its math and its loads' latency chain, each k-tile
// waiting for the later of the two (pipelined_compute_us in perf_model.cpp says how).
double pipelined_compute_us(double compute_us, double latency_us);

// Fraction of the dtype's peak a family reaches on an architecture when the
// SM is busy; an assumption of the model, to be replaced by profiles/ data.
double family_efficiency(kernel_family f, int compute_capability);

// Below 1 when the tile reads shared memory faster than it can be served
// (128 bytes per clock per SM) at the compute rate rate_per_sm (flop/s).
double shared_memory_factor(const device_spec& d, dtype t, const tile_config& c, double rate_per_sm);

// efficiency > 0 replaces family_efficiency's assumption (a calibrated figure, core/calibration);
// dram_share > 0 the share of the DRAM peak a kernel can draw (physically 0.9: a large copy's; a
// calibration may fit what GEMMs drew under the measuring protocol).
prediction predict(const device_spec& d, const gemm_problem& p, const tile_config& c,
                   const occupancy_estimate& occ, double efficiency = 0);
prediction predict(const device_spec& d, const gemm_problem& p, const tile_config& c,
                   const occupancy_estimate& occ, double efficiency, double dram_share);

// A GEMM as a tuned library (cuBLAS) runs it: 128x128 tiles, one per SM at a
// time, at `efficiency` of the dtype's peak (cuBLAS bf16 8192^3 measured about
// 798 of 989 TFLOP/s on an H100: 0.8), against the DRAM roof.
prediction predict_library_gemm(const device_spec& d, const gemm_problem& p, double efficiency = 0.8);

}  // namespace tiletune
