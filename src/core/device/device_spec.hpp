#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/gemm/problem.hpp"

namespace tiletune {

// What the tuner needs to know about a GPU: limits that prune variants and
// roofs that rank them. Filled from a preset (datasheet figures) or a live GPU.
struct device_spec {
  std::string name;         // "NVIDIA H100 SXM5 80GB"
  std::string preset;       // "h100-sxm", or empty for a live GPU with no preset
  int compute_capability = 0;  // 90 for sm_90
  int sm_count = 0;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int max_registers_per_thread = 255;
  int register_alloc_unit = 256;       // registers are allocated per warp in this unit
  std::int64_t smem_per_sm_bytes = 0;
  std::int64_t smem_per_block_optin_bytes = 0;  // the most one block may ask for
  std::int64_t smem_reserved_per_block_bytes = 1024;
  std::int64_t l2_bytes = 0;
  std::int64_t memory_bytes = 0;
  double memory_bandwidth_gbs = 0;  // DRAM, datasheet
  double l2_bandwidth_gbs = 0;      // rough microbenchmark figure; ranks variants only
  double boost_clock_mhz = 0;
  double gpu_link_gbs = 0;          // to the other GPUs of a node, one direction (NVLink or PCIe), datasheet
  // The GPUs gpu_link_gbs joins (0: all of a node's): the H100 NVL's NVLink bridge joins a pair, the
  // pairs talk over PCIe at between_groups_gbs.
  int gpu_link_group = 0;
  double between_groups_gbs = 0;
  // Dense peak TFLOP/s per dtype (tensor cores for tf32/f16/bf16 with fp32 accumulate).
  double peak_tflops_f32 = 0;
  double peak_tflops_tf32 = 0;
  double peak_tflops_f16 = 0;
  double peak_tflops_bf16 = 0;
  double peak_tflops_fp8 = 0;  // e4m3 and e5m2 alike; 0 where the GPU has no fp8 tensor cores
  std::string peak_source = "datasheet";  // or "estimated"
  // Where memory_bytes comes from: "driver" (this machine's GPU), or for a preset: the total CUDA reports
  // (what a process sees) "recorded" on a run in profiles/measured, "cited" from a public deviceQuery or
  // PyTorch figure, or "inferred" (a part with the same memory); "nvidia-smi" (only nvidia-smi's total is
  // citable: above CUDA's by the driver's reserve, 0.4-0.8 GiB), "datasheet" or "listings" (unverified).
  std::string memory_source = "driver";

  // A collective's bandwidth per GPU, one direction, among `gpus` GPUs of one node: the GPU link
  // where it joins them all, else the slower hop between its groups; 0 where there is no link.
  double link_gbs_among(int gpus) const {
    return gpu_link_group > 0 && gpus > gpu_link_group ? between_groups_gbs : gpu_link_gbs;
  }
  // The device's peak for math on one input element type, and for a dtype (its row says whose).
  double peak_tflops(element_type e) const;
  double peak_tflops(dtype t) const;
  std::string arch() const;  // "sm_90"
  // The architecture NVRTC compiles for: sm_90, or sm_90a where a family needs it.
  std::string compile_arch() const { return arch(); }
};

// Whether the problem's least traffic takes longer at the device's DRAM bandwidth than its FLOPs at
// the dtype's peak (decode shapes); false where either figure is unknown.
bool memory_bound(const gemm_problem& p, const device_spec& d);

// The clusters of `size` CTAs, per_sm of them to an SM, that the GPU holds at once, as a plan
// estimates it: a cluster sits inside one GPC, and a GPC's SMs left over from whole clusters hold
// none. Pairs fill every SM (an SM pair, a TPC, holds one); larger clusters are taken to lose two
// SMs' worth per per_sm: on an H200 (132 SMs, 2026-12-04) 32 clusters of 4 ran as if fewer fit at
// once, 16 did not. An estimate: a measured run asks the driver (cudaOccupancyMaxActiveClusters),
// caps the grid there and records the count (a variant's "clusters_at_once").
std::int64_t clusters_at_once(const device_spec& d, int size, int per_sm);

// The presets accepted by --gpu, in the order --help lists them.
const std::vector<device_spec>& device_presets();
// Throws usage_error naming the unknown name and listing the known ones.
const device_spec& find_preset(std::string_view name);
// The presets a mistyped --gpu may mean, in the presets' order: those whose name begins with it, in
// letters and digits of any case ("H100": h100-sxm, h100-pcie, h100-nvl; "a10": a100-sxm-80gb,
// a100-sxm-40gb, a10g), or a GPU's own name's ("NVIDIA H100 80GB HBM3"). find_preset's error names them.
std::vector<std::string> presets_near(std::string_view name);
// The preset whose name a live GPU's name matches ("NVIDIA H100 80GB HBM3" -> h100-sxm).
std::optional<device_spec> preset_for_device_name(std::string_view device_name,
                                                  std::int64_t memory_bytes);
// Peak figures estimated from SM count and clock, for a GPU with no preset.
void estimate_peaks(device_spec& spec);
// A local GPU that took a preset by its name keeps the preset's rates per SM and clock: where the
// driver reports fewer SMs (a MIG slice, "NVIDIA H100 80GB HBM3 MIG 1g.10gb"; a cut-down part) or
// another peak clock, its peak FLOP/s and L2 bandwidth scale by SMs x clock, and its peaks are
// "estimated". `spec` holds the driver's SM count and clock; `preset` the figures it matched.
void scale_preset_rates(device_spec& spec, const device_spec& preset);

nlohmann::json to_json(const device_spec& d);

}  // namespace tiletune
