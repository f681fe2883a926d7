#include "core/device/device_presets.hpp"

#include <cstdint>
#include <string>
#include <utility>

// The presets `--gpu NAME` plans for: each figure and where it comes from, one function a GPU.

namespace tiletune {

namespace {

constexpr std::int64_t KiB = 1024;
constexpr std::int64_t MiB = 1024 * KiB;

device_spec hopper(std::string key, std::string name) {
  device_spec d;
  d.preset = std::move(key);
  d.name = std::move(name);
  d.compute_capability = 90;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.smem_per_sm_bytes = 228 * KiB;
  d.smem_per_block_optin_bytes = 227 * KiB;
  d.l2_bytes = 50 * MiB;
  return d;
}

device_spec ampere_a100(std::string key, std::string name) {
  device_spec d;
  d.preset = std::move(key);
  d.name = std::move(name);
  d.compute_capability = 80;
  d.sm_count = 108;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.smem_per_sm_bytes = 164 * KiB;
  d.smem_per_block_optin_bytes = 163 * KiB;
  d.l2_bytes = 40 * MiB;
  d.boost_clock_mhz = 1410;
  d.peak_tflops_f32 = 19.5;
  d.peak_tflops_tf32 = 156;
  d.peak_tflops_f16 = 312;
  d.peak_tflops_bf16 = 312;
  d.l2_bandwidth_gbs = 4800;
  return d;
}

// GA102 (sm_86): the RTX A6000 and the GeForce RTX 3090.
device_spec ampere_ga102(std::string key, std::string name) {
  device_spec d;
  d.preset = std::move(key);
  d.name = std::move(name);
  d.compute_capability = 86;
  d.max_threads_per_sm = 1536;
  d.max_blocks_per_sm = 16;
  d.smem_per_sm_bytes = 100 * KiB;
  d.smem_per_block_optin_bytes = 99 * KiB;
  d.l2_bytes = 6 * MiB;
  d.l2_bandwidth_gbs = 2500;  // rough, as the others: ranks tiles only
  d.gpu_link_gbs = 32;        // PCIe 4.0 x16
  return d;
}

device_spec ada(std::string key, std::string name) {
  device_spec d;
  d.preset = std::move(key);
  d.name = std::move(name);
  d.compute_capability = 89;
  d.max_threads_per_sm = 1536;
  d.max_blocks_per_sm = 24;
  d.smem_per_sm_bytes = 100 * KiB;
  d.smem_per_block_optin_bytes = 99 * KiB;
  d.gpu_link_gbs = 32;  // PCIe 4.0 x16, no NVLink on any Ada part
  return d;
}

// Figures from NVIDIA's datasheets and architecture whitepapers (dense, no
// sparsity): H100 datasheet (SXM5 and PCIe), H200 datasheet, A100 datasheet
// and Ampere whitepaper, L4 datasheet, Ada (AD102) whitepaper for the RTX
// 4090; shared memory, register and thread limits from the CUDA C++
// Programming Guide's table of compute capabilities. L2 bandwidth is not
// published: those are rough microbenchmark figures used only to rank tiles.
// Memory is what the driver reports to CUDA (issue 39), not the marketing figure: the total a
// process sees (cudaDeviceProp.totalGlobalMem, deviceQuery's bytes, PyTorch's total_memory), which is
// nvidia-smi's memory.total less the driver's reserve (0.4-0.8 GiB, by part and driver). Each preset
// names its source: recorded (our runs), cited (a public deviceQuery or PyTorch figure), inferred
// (a sibling part's), or nvidia-smi (only nvidia-smi's total is citable: above CUDA's by the reserve).
// Figures: NVIDIA H100 datasheet (SXM5) for SMs, clock, bandwidth and peaks; memory and L2 bandwidth as noted.
device_spec h100_sxm_preset() {
  device_spec h100_sxm = hopper("h100-sxm", "NVIDIA H100 SXM5 80GB");
  h100_sxm.sm_count = 132;
  h100_sxm.boost_clock_mhz = 1980;
  // Memory: the driver's total as recorded on an H100 80GB HBM3 (79.2 GiB, 85017493504 bytes:
  // device.memory_bytes in profiles/measured/h100-2026-11-22/gemm/*.json, and `tiletune devices`
  // in profiles/measured/h100-2026-11-23/devices.txt), not the datasheet's 80 GB.
  h100_sxm.memory_bytes = 85017493504LL;
  h100_sxm.memory_source = "recorded";
  h100_sxm.memory_bandwidth_gbs = 3350;
  // L2 to SMs: from ncu's L2 throughput and the bytes of the best 4096^3 bf16 variant
  // (profiles/measured/h100-2026-11-23/ncu/; the derivation: docs/model.md).
  h100_sxm.l2_bandwidth_gbs = 14900;
  h100_sxm.peak_tflops_f32 = 66.9;
  h100_sxm.peak_tflops_tf32 = 494.7;
  h100_sxm.peak_tflops_f16 = 989.4;
  h100_sxm.peak_tflops_bf16 = 989.4;
  h100_sxm.peak_tflops_fp8 = 1978.9;  // e4m3/e5m2 dense (3958 with sparsity)
  h100_sxm.gpu_link_gbs = 450;  // NVLink 4: 900 GB/s both ways
  return h100_sxm;
}

// Figures: NVIDIA H100 datasheet (PCIe); memory as noted.
device_spec h100_pcie_preset() {
  device_spec h100_pcie = hopper("h100-pcie", "NVIDIA H100 PCIe 80GB");
  h100_pcie.sm_count = 114;
  h100_pcie.boost_clock_mhz = 1755;
  // Memory: the H100 SXM's recorded total (79.2 GiB as CUDA reports it). nvidia-smi reports the same
  // 81559 MiB on both (NVIDIA/nccl#1264 for the SXM; "NVIDIA H100 PCIe, 81559 MiB" in public logs),
  // the same 80 GB of HBM with the same driver reserve; it was 80 GiB, above what either reports.
  h100_pcie.memory_bytes = h100_sxm_preset().memory_bytes;
  h100_pcie.memory_source = "inferred";
  h100_pcie.memory_bandwidth_gbs = 2000;
  // L2 to SMs: the SXM's measured 14.9 TB/s at this part's SMs and clock, as the H100 NVL's and
  // H20's (no PCIe figure is measured). It was 5,500 GB/s, a figure of the scale before the SXM's
  // was measured with ncu, which put 4096^3 e4m3 at 2.0x the SXM's time (its figures differ by 1.68x at most).
  h100_pcie.l2_bandwidth_gbs = h100_sxm_preset().l2_bandwidth_gbs * 114 / 132 * 1755 / 1980;
  h100_pcie.peak_tflops_f32 = 51.2;
  h100_pcie.peak_tflops_tf32 = 378;
  h100_pcie.peak_tflops_f16 = 756;
  h100_pcie.peak_tflops_bf16 = 756;
  h100_pcie.peak_tflops_fp8 = 1513;  // dense (3026 with sparsity)
  h100_pcie.gpu_link_gbs = 64;  // PCIe 5.0 x16
  return h100_pcie;
}

// Figures: NVIDIA H200 datasheet (SXM) for bandwidth and peaks; the die's figures are the H100 SXM's; memory as noted.
device_spec h200_preset() {
  device_spec h200 = hopper("h200", "NVIDIA H200 SXM 141GB");
  h200.sm_count = 132;
  h200.boost_clock_mhz = 1980;
  // Memory and L2: what the driver reported on the H200 of profiles/measured/h200-2026-11-26 (device
  // in gemm/*.json, and devices.txt): 139.8 GiB (150109880320 bytes: CUDA's total, as the H100 SXM's
  // 79.2 GiB; nvidia-smi's memory.total, cited in issue 39, is 140.4 GiB, the driver's reserve
  // beside it), not the datasheet's 141 GB (which this preset held as 131.3 GiB); and 60 MiB of L2,
  // where the H100 SXM reports 50.
  h200.memory_bytes = 150109880320LL;
  h200.memory_source = "recorded";
  h200.l2_bytes = 60 * MiB;
  h200.memory_bandwidth_gbs = 4800;
  // The same GH100 die as the H100 SXM (132 SMs, the same clocks; the HBM and the L2 enabled
  // differ), so the same L2-to-SM bandwidth as measured there (14.9 TB/s), not a figure of its own.
  h200.l2_bandwidth_gbs = h100_sxm_preset().l2_bandwidth_gbs;
  h200.peak_tflops_f32 = 66.9;
  h200.peak_tflops_tf32 = 494.7;
  h200.peak_tflops_f16 = 989.4;
  h200.peak_tflops_bf16 = 989.4;
  h200.peak_tflops_fp8 = 1978.9;
  h200.gpu_link_gbs = 450;  // NVLink 4: 900 GB/s both ways
  return h200;
}

// Figures: NVIDIA A100 datasheet (SXM4 80GB) and the Ampere whitepaper (ampere_a100 above); memory as noted.
device_spec a100_80_preset() {
  device_spec a100_80 = ampere_a100("a100-sxm-80gb", "NVIDIA A100 SXM4 80GB");
  // Memory: 85100068864 bytes (79.26 GiB), deviceQuery in thamada/nvidia-smi nvsim/A100SXMx4_deviceQuery.py
  // (driver 555.42.02, 2024-11-14: nvidia-smi's 81920 MiB less 763 reserved).
  a100_80.memory_bytes = 85100068864LL;
  a100_80.memory_source = "cited";
  a100_80.memory_bandwidth_gbs = 2039;
  a100_80.gpu_link_gbs = 300;  // NVLink 3: 600 GB/s both ways
  return a100_80;
}

// Figures: NVIDIA A100 datasheet (SXM4 40GB) and the Ampere whitepaper (ampere_a100 above); memory as noted.
device_spec a100_40_preset() {
  device_spec a100_40 = ampere_a100("a100-sxm-40gb", "NVIDIA A100 SXM4 40GB");
  // Memory: 40536 MiB (39.59 GiB), get_device_properties of an A100-SXM4-40GB in the docstring of
  // PaddlePaddle/Paddle python/paddle/device/cuda/__init__.py (PyTorch's OOM messages on A100 40GB
  // say the same 39.59 GiB); nvidia-smi's total is 40960 MiB.
  a100_40.memory_bytes = 40536LL * MiB;
  a100_40.memory_source = "cited";
  a100_40.memory_bandwidth_gbs = 1555;
  a100_40.gpu_link_gbs = 300;  // NVLink 3: 600 GB/s both ways
  return a100_40;
}

// Figures: NVIDIA L4 datasheet; memory as noted.
device_spec l4_preset() {
  device_spec l4 = ada("l4", "NVIDIA L4");
  l4.sm_count = 58;
  l4.boost_clock_mhz = 2040;
  l4.l2_bytes = 48 * MiB;
  // Memory: 23570219008 bytes (21.95 GiB), deviceQuery in thamada/nvidia-smi gls/L4_deviceQuery.py (CUDA
  // driver 12.4, 2024-11-12; nvidia-smi's total is 23034 MiB, as modal-labs/modal-client#2797 tabulates
  // it); not the datasheet's 24 GB read as 24 GiB.
  l4.memory_bytes = 23570219008LL;
  l4.memory_source = "cited";
  l4.memory_bandwidth_gbs = 300;
  l4.l2_bandwidth_gbs = 1500;
  l4.peak_tflops_f32 = 30.3;
  l4.peak_tflops_tf32 = 60;
  l4.peak_tflops_f16 = 121;
  l4.peak_tflops_bf16 = 121;
  l4.peak_tflops_fp8 = 242.5;  // dense (485 with sparsity)
  return l4;
}

// Figures: NVIDIA Ada (AD102) whitepaper for the RTX 4090; memory as noted.
device_spec rtx4090_preset() {
  device_spec rtx4090 = ada("rtx-4090", "NVIDIA GeForce RTX 4090");
  rtx4090.sm_count = 128;
  rtx4090.boost_clock_mhz = 2520;
  rtx4090.l2_bytes = 72 * MiB;
  // Memory: 25386352640 bytes (23.64 GiB), deviceQuery in thamada/nvidia-smi gls/RTX4090_deviceQuery.py
  // (CUDA driver 12.4, Linux; PyTorch's OOM messages say 23.64 GiB); nvidia-smi's total is 24564 MiB
  // (RLinf/RLinf#255). It was 24 GiB.
  rtx4090.memory_bytes = 25386352640LL;
  rtx4090.memory_source = "cited";
  rtx4090.memory_bandwidth_gbs = 1008;
  rtx4090.l2_bandwidth_gbs = 5000;
  rtx4090.peak_tflops_f32 = 82.6;
  rtx4090.peak_tflops_tf32 = 82.6;
  // GeForce parts run fp16/bf16 with fp32 accumulation at half the fp16-accumulate rate.
  rtx4090.peak_tflops_f16 = 165.2;
  rtx4090.peak_tflops_bf16 = 165.2;
  rtx4090.peak_tflops_fp8 = 330.3;  // with fp32 accumulation, as bf16
  return rtx4090;
}

// Figures: the H800 is the H100 SXM5 die, clocks, memory and peaks with NVLink cut to 400 GB/s
// both ways (NVIDIA's H800 product brief); memory as the H100 SXM's (the same 80 GB HBM3; no H800's
// own driver figure is recorded or cited).
device_spec h800_preset() {
  device_spec d = h100_sxm_preset();
  d.preset = "h800";
  d.name = "NVIDIA H800 SXM5 80GB";
  d.memory_source = "inferred";  // the H100 SXM's recorded total
  d.gpu_link_gbs = 200;
  return d;
}

// Figures: NVIDIA H100 NVL datasheet (per GPU: 94 GB HBM3 at 3.9 TB/s, 835 TFLOP/s bf16 dense,
// 60 fp32, NVLink bridge 600 GB/s both ways); 132 SMs at 1785 MHz. Memory: 99861594112 bytes (93.0
// GiB), deviceQuery in thamada/nvidia-smi gls/H100NVLx2_deviceQuery.py (driver 550.54.14: nvidia-smi's
// 95830 MiB, as in NVIDIA/gpu-admin-tools#4, less 594 reserved); it was 94 GB as 10^9 bytes.
device_spec h100_nvl_preset() {
  device_spec d = hopper("h100-nvl", "NVIDIA H100 NVL");
  d.sm_count = 132;
  d.boost_clock_mhz = 1785;
  d.memory_bytes = 99861594112LL;
  d.memory_source = "cited";
  d.memory_bandwidth_gbs = 3900;
  d.l2_bandwidth_gbs = h100_sxm_preset().l2_bandwidth_gbs * 1785 / 1980;  // the SXM's, at this clock
  d.peak_tflops_f32 = 60;
  d.peak_tflops_tf32 = 417.5;
  d.peak_tflops_f16 = 835;
  d.peak_tflops_bf16 = 835;
  d.peak_tflops_fp8 = 1670.5;  // dense (3341 with sparsity)
  d.gpu_link_gbs = 300;  // the NVLink bridge of a pair; between the pairs PCIe 5.0 x16
  d.gpu_link_group = 2;
  d.between_groups_gbs = 64;
  return d;
}

// Figures: NVIDIA publishes no H20 datasheet; these are the figures every listing repeats (78 SMs of
// the GH100 die; 96 GB HBM3 at 4.0 TB/s; 60 MB L2; dense 148 bf16/fp16, 74 tf32, 44 fp32 TFLOP/s,
// the tensor rate capped by the part, not its clock; NVLink 900 GB/s both ways). Unverified: no H20
// run is recorded. Memory: 97285 MiB (95.0 GiB), PyTorch's total_memory of an H20 in a comment of
// alipay/PainlessInferenceAcceleration flood/flood/ops/seg_attn.py (PyTorch's OOM messages on the H20
// 96G say 95.00 GiB; nvidia-smi's total is 97871 MiB, NVIDIA/nvtrust#128); it was 96 GB as 10^9 bytes.
// L2 bandwidth: the H100 SXM's per SM.
device_spec h20_preset() {
  device_spec d = hopper("h20", "NVIDIA H20");
  d.sm_count = 78;
  d.boost_clock_mhz = 1980;
  d.l2_bytes = 60 * MiB;
  d.memory_bytes = 97285LL * MiB;
  d.memory_source = "cited";
  d.memory_bandwidth_gbs = 4000;
  d.l2_bandwidth_gbs = h100_sxm_preset().l2_bandwidth_gbs * 78 / 132;
  d.peak_tflops_f32 = 44;
  d.peak_tflops_tf32 = 74;
  d.peak_tflops_f16 = 148;
  d.peak_tflops_bf16 = 148;
  d.peak_tflops_fp8 = 296;
  d.peak_source = "listings";  // no datasheet
  d.gpu_link_gbs = 450;
  return d;
}

// Figures: NVIDIA L40S datasheet (48 GB GDDR6 at 864 GB/s; dense: 91.6 fp32, 183 tf32, 362.05
// bf16/fp16 TFLOP/s); AD102 with 142 SMs at 2520 MHz and 96 MB L2. Memory: as the driver reports it.
device_spec l40s_preset() {
  device_spec d = ada("l40s", "NVIDIA L40S");
  d.sm_count = 142;
  d.boost_clock_mhz = 2520;
  d.l2_bytes = 96 * MiB;
  // 47803596800 bytes (44.52 GiB), deviceQuery in thamada/nvidia-smi nvsim/L40S_deviceQuery.py (driver
  // 550.127.05, ECC on: nvidia-smi's 46068 MiB, as modal-labs/modal-client#2797 tabulates it, less 479).
  d.memory_bytes = 47803596800LL;
  d.memory_source = "cited";
  d.memory_bandwidth_gbs = 864;
  d.l2_bandwidth_gbs = 5000;
  d.peak_tflops_f32 = 91.6;
  d.peak_tflops_tf32 = 183;
  d.peak_tflops_f16 = 362.05;
  d.peak_tflops_bf16 = 362.05;
  d.peak_tflops_fp8 = 733;  // dense (1466 with sparsity)
  return d;
}

// Figures: NVIDIA RTX 6000 Ada Generation datasheet (48 GB GDDR6 at 960 GB/s, 91.1 fp32 TFLOP/s,
// 1457 fp8 sparse: 364.2 bf16 dense); AD102 with 142 SMs at 2505 MHz, 96 MB L2. Memory: 51002867712
// bytes (47.50 GiB), deviceQuery in thamada/nvidia-smi gls/RTX6000Ada_x8_deviceQuery.py (driver
// 550.127.05, ECC off: nvidia-smi's 49140 MiB less 500 reserved; with ECC on it is less, as the
// L40S's). It was 48 GB as 10^9 bytes.
device_spec rtx6000_ada_preset() {
  device_spec d = ada("rtx-6000-ada", "NVIDIA RTX 6000 Ada Generation");
  d.sm_count = 142;
  d.boost_clock_mhz = 2505;
  d.l2_bytes = 96 * MiB;
  d.memory_bytes = 51002867712LL;
  d.memory_source = "cited";
  d.memory_bandwidth_gbs = 960;
  d.l2_bandwidth_gbs = 5000;
  d.peak_tflops_f32 = 91.1;
  d.peak_tflops_tf32 = 182.1;
  d.peak_tflops_f16 = 364.2;
  d.peak_tflops_bf16 = 364.2;
  d.peak_tflops_fp8 = 728.5;  // dense (1457 with sparsity)
  return d;
}

// Figures: NVIDIA RTX A6000 datasheet (48 GB GDDR6 at 768 GB/s, 38.7 fp32 TFLOP/s, 309.7 fp16
// tensor sparse: 154.8 dense, tf32 half that); 84 SMs at 1800 MHz. Memory: 51160023040 bytes (47.65
// GiB), deviceQuery on the University of Geneva's Baobab (hpc-community.unige.ch/t/3741, CUDA driver
// 12.7, 2024-11-28, ECC off; nvidia-smi's total is 49140 MiB, noonghunna/club-3090#1047); it was 48 GB
// as 10^9 bytes.
device_spec rtx_a6000_preset() {
  device_spec d = ampere_ga102("rtx-a6000", "NVIDIA RTX A6000");
  d.sm_count = 84;
  d.boost_clock_mhz = 1800;
  d.memory_bytes = 51160023040LL;
  d.memory_source = "cited";
  d.memory_bandwidth_gbs = 768;
  d.peak_tflops_f32 = 38.7;
  d.peak_tflops_tf32 = 77.4;
  d.peak_tflops_f16 = 154.8;
  d.peak_tflops_bf16 = 154.8;
  return d;
}

// Figures: NVIDIA Ampere GA102 whitepaper for the RTX 3090 (82 SMs at 1695 MHz, 936 GB/s, 35.6
// fp32 TFLOP/s; fp16/bf16 tensor with fp32 accumulation 71 dense, GeForce's half rate; tf32 35.6).
// Memory: 25327697920 bytes (23.59 GiB), deviceQuery in thamada/nvidia-smi gls/RTX3090_deviceQuery.py
// (driver 560.35.03: nvidia-smi's 24576 MiB, as in noonghunna/club-3090#1127, less 422 reserved).
device_spec rtx3090_preset() {
  device_spec d = ampere_ga102("rtx-3090", "NVIDIA GeForce RTX 3090");
  d.sm_count = 82;
  d.boost_clock_mhz = 1695;
  d.memory_bytes = 25327697920LL;
  d.memory_source = "cited";
  d.memory_bandwidth_gbs = 936;
  d.peak_tflops_f32 = 35.6;
  d.peak_tflops_tf32 = 35.6;
  d.peak_tflops_f16 = 71;
  d.peak_tflops_bf16 = 71;
  return d;
}

// Figures: NVIDIA's Blackwell datasheet for HGX B200 at 1,000 W, per GPU (dense: 80 fp32, 1,100
// tf32, 2,250 bf16/fp16, 4,500 fp8 TFLOP/s; as glennklockwood.com's B200 page tabulates it), the DGX
// B200 datasheet (1,440 GB of HBM3e over 8 GPUs: 180 GB each), NVLink 5 at 1.8 TB/s both ways; a
// boost clock of 1965 MHz as third parties list it (unverified); 148 SMs, 126.5 MiB of L2 and a
// 7680-bit bus at 3996 MHz (DDR: 7,672 GB/s, where the datasheet's 64 TB/s over 8 GPUs says 8,000)
// as CUDA and nvidia-smi report them on a B200 in pytorch/ao#4002 (2026-03-05; the bus width as
// drivers now report it); shared memory per SM as compute capability 10.0's in the CUDA C++
// Programming Guide (228 KB).
// Memory: 182642 MiB (178.36 GiB), PyTorch's total_memory of a B200 on Modal in a comment of
// ai-bot-pro/achatbot deploy/modal/src/llm/vllm/vlm/skywork_r1v.py (nvidia-smi's total is 183359
// MiB, NVIDIA/TensorRT-LLM#10278; it was 180 GB as 10^9 bytes). L2 bandwidth: a
// rough figure, 1.5 x the H100 SXM's (ranks tiles only; no family here plans sm_100's tensor cores).
device_spec b200_preset() {
  device_spec d = hopper("b200", "NVIDIA B200");
  d.compute_capability = 100;
  d.sm_count = 148;
  d.boost_clock_mhz = 1965;
  d.l2_bytes = 253 * MiB / 2;  // 126.5 MiB
  d.memory_bytes = 182642LL * MiB;
  d.memory_source = "cited";
  d.memory_bandwidth_gbs = 7680.0 / 8 * 3996 * 2 / 1000;  // 7,672 GB/s
  d.l2_bandwidth_gbs = h100_sxm_preset().l2_bandwidth_gbs * 1.5;
  d.peak_tflops_f32 = 80;
  d.peak_tflops_tf32 = 1100;
  d.peak_tflops_f16 = 2250;
  d.peak_tflops_bf16 = 2250;
  d.peak_tflops_fp8 = 4500;
  d.gpu_link_gbs = 900;  // NVLink 5: 1.8 TB/s both ways
  return d;
}

// Figures: NVIDIA's GeForce RTX 5090 specifications (170 SMs, 2407 MHz boost, 32 GB GDDR7 at
// 1,792 GB/s, 104.8 fp32 TFLOP/s; 838 "AI TFLOPS" fp16 with sparsity and fp16 accumulation: 419
// dense), 96 MB of L2 as reviews list it. Its fp32-accumulating tensor rate is taken as half the
// fp16-accumulating one, as on the GeForce parts before it (209.5 bf16/fp16, 104.8 tf32, 419 fp8):
// unverified for this generation. sm_120's limits taken as sm_89's (100 KB of shared memory per
// SM; unverified). Memory: 32607 MiB, nvidia-smi's total in noonghunna/club-3090#1261 (driver
// 610.57.04, 2026-09-11; it was 32 GiB, 161 MiB over it): no CUDA total of it is citable, so this is
// above what a process sees by the driver's reserve; L2 bandwidth: the RTX 4090's per SM and clock.
device_spec rtx5090_preset() {
  device_spec d = ada("rtx-5090", "NVIDIA GeForce RTX 5090");
  d.compute_capability = 120;
  d.sm_count = 170;
  d.boost_clock_mhz = 2407;
  d.l2_bytes = 96 * MiB;
  d.memory_bytes = 32607LL * MiB;
  d.memory_source = "nvidia-smi";
  d.memory_bandwidth_gbs = 1792;
  d.l2_bandwidth_gbs = 5000.0 * 170 / 128 * 2407 / 2520;
  d.peak_tflops_f32 = 104.8;
  d.peak_tflops_tf32 = 104.8;
  d.peak_tflops_f16 = 209.5;
  d.peak_tflops_bf16 = 209.5;
  d.peak_tflops_fp8 = 419;
  d.gpu_link_gbs = 64;  // PCIe 5.0 x16, no NVLink
  return d;
}

// Figures: NVIDIA Tesla V100 datasheet and Volta whitepaper for the SXM2 32 GB (80 SMs at 1530 MHz,
// 900 GB/s HBM2, 6 MB L2, 15.7 fp32 TFLOP/s, 125 fp16 tensor TFLOP/s with fp32 accumulation, NVLink
// 2 at 300 GB/s both ways; no bf16, tf32 or fp8 tensor cores: those peaks are 0), shared memory per
// SM and block as compute capability 7.0's in the CUDA C++ Programming Guide (96 KB). Memory: 32512
// MiB (31.75 GiB), PyTorch's "total capacity" of a 32 GB V100 in its out-of-memory message in
// uni-medical/SAM-Med3D#8 (2023-11-16; liucongg/ChatGLM-Finetuning#73 has 31.74 GiB under another
// driver); it was the datasheet's 32 GiB, which counts the driver's reserve. L2 bandwidth: a rough
// figure, ranks tiles only.
device_spec v100_preset() {
  device_spec d;
  d.preset = "v100-sxm2";
  d.name = "Tesla V100-SXM2-32GB";
  d.compute_capability = 70;
  d.sm_count = 80;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.smem_per_sm_bytes = 96 * KiB;
  d.smem_per_block_optin_bytes = 96 * KiB;
  d.l2_bytes = 6 * MiB;
  d.boost_clock_mhz = 1530;
  d.memory_bytes = 32512LL * MiB;
  d.memory_source = "cited";
  d.memory_bandwidth_gbs = 900;
  d.l2_bandwidth_gbs = 2500;
  d.peak_tflops_f32 = 15.7;
  d.peak_tflops_f16 = 125;
  d.gpu_link_gbs = 150;
  return d;
}

// The A10G, AWS's GA102 part of the G5 instances: NVIDIA publishes no datasheet, so these are the
// figures listings repeat (80 SMs at 1710 MHz, 24 GB GDDR6 at 600 GB/s, 6 MB L2; fp32 35 TFLOP/s,
// 80 x 128 x 2 x 1.71 GHz; its tensor cores at GeForce's half rate with fp32 accumulation, 70 bf16/fp16
// and 35 tf32 dense: Baseten's "A10 vs A10G" puts its tensor compute below the A10's 125). Unverified:
// no A10G run is recorded or cited. Memory: 23028 MiB, the nvidia-smi total of g5 runs (and of the
// A10 in modal-labs/modal-client#2797): no CUDA total of it is citable, so this is above what a
// process sees by the driver's reserve.
device_spec a10g_preset() {
  device_spec d = ampere_ga102("a10g", "NVIDIA A10G");
  d.sm_count = 80;
  d.boost_clock_mhz = 1710;
  d.memory_bytes = 23028LL * MiB;
  d.memory_source = "nvidia-smi";
  d.memory_bandwidth_gbs = 600;
  d.peak_tflops_f32 = 35;
  d.peak_tflops_tf32 = 35;
  d.peak_tflops_f16 = 70;
  d.peak_tflops_bf16 = 70;
  d.peak_source = "listings";  // no datasheet
  return d;
}

}  // namespace

std::vector<device_spec> make_device_presets() {
  return {h100_sxm_preset(),   h100_pcie_preset(), h200_preset(),        a100_80_preset(), a100_40_preset(),
          l4_preset(),         rtx4090_preset(),   h800_preset(),        h100_nvl_preset(), l40s_preset(),
          rtx6000_ada_preset(), rtx_a6000_preset(), rtx3090_preset(), a10g_preset(), h20_preset(), b200_preset(),
          rtx5090_preset(), v100_preset()};
}

}  // namespace tiletune
