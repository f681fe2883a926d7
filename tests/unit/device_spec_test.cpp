#include "core/device/device_spec.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"

namespace fs = std::filesystem;

using namespace tiletune;

TEST(device_spec, the_required_presets_exist_with_sane_figures) {
  for (const char* name : {"h100-sxm", "h100-pcie", "h200", "a100-sxm-80gb", "a100-sxm-40gb", "l4", "rtx-4090", "h800",
                           "h100-nvl", "l40s", "rtx-6000-ada", "rtx-a6000", "rtx-3090", "a10g", "h20", "b200", "rtx-5090"}) {
    const device_spec& d = find_preset(name);
    EXPECT_EQ(d.preset, name);
    EXPECT_GT(d.sm_count, 0) << name;
    EXPECT_GT(d.memory_bandwidth_gbs, 0) << name;
    EXPECT_GT(d.l2_bandwidth_gbs, d.memory_bandwidth_gbs) << name;
    EXPECT_GE(d.smem_per_sm_bytes, d.smem_per_block_optin_bytes) << name;
    // Tensor-core rates are above the FFMA rate on every preset.
    EXPECT_GE(d.peak_tflops_bf16, d.peak_tflops_tf32) << name;
    EXPECT_GE(d.peak_tflops_tf32, d.peak_tflops_f32) << name;
  }
  // The V100: fp16 tensor cores only (its own dtypes: no bf16, tf32 or fp8 rate).
  const device_spec& v100 = find_preset("v100-sxm2");
  EXPECT_EQ(v100.arch(), "sm_70");
  EXPECT_GT(v100.peak_tflops_f16, 7 * v100.peak_tflops_f32);  // 125 against 15.7
  EXPECT_EQ(v100.peak_tflops_bf16 + v100.peak_tflops_tf32 + v100.peak_tflops_fp8, 0);
  EXPECT_NEAR(80 * 64 * 2 * 1.53e9 / 1e12, v100.peak_tflops_f32, 0.1);  // 80 SMs x 64 FP32 lanes x 2 x clock
  EXPECT_EQ(find_preset("h100-sxm").arch(), "sm_90");
  EXPECT_EQ(find_preset("A100-SXM-80GB").arch(), "sm_80");
  EXPECT_EQ(find_preset("l4").arch(), "sm_89");
}

TEST(device_spec, unknown_preset_names_it_and_lists_known_ones) {
  try {
    find_preset("no-such-gpu");
    FAIL();
  } catch (const usage_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'no-such-gpu'"), std::string::npos);
    EXPECT_NE(m.find("h100-sxm"), std::string::npos);
  }
}

// A near miss is answered with the presets it may mean: what a new user types first ("H100", "a100",
// the name nvidia-smi prints) is no preset's name.
TEST(device_spec, a_near_miss_names_the_presets_it_may_mean) {
  using list = std::vector<std::string>;
  EXPECT_EQ(presets_near("H100"), (list{"h100-sxm", "h100-pcie", "h100-nvl"}));
  EXPECT_EQ(presets_near("a100_sxm"), (list{"a100-sxm-80gb", "a100-sxm-40gb"}));
  EXPECT_EQ(presets_near("RTX 4090"), (list{"rtx-4090"}));
  EXPECT_EQ(presets_near("h100-sxm5"), (list{"h100-sxm"}));
  EXPECT_EQ(presets_near("h200nvl"), (list{"h200"}));  // not h20: 0 after h20 is another model
  EXPECT_EQ(presets_near("NVIDIA H100 80GB HBM3"), (list{"h100-sxm"}));
  EXPECT_TRUE(presets_near("no-such-gpu").empty());
  EXPECT_TRUE(presets_near("--").empty());
  try {
    find_preset("H100");
    FAIL();
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("'H100': did you mean h100-sxm, h100-pcie or h100-nvl? (known presets are"),
              std::string::npos)
        << e.what();
  }
  try {
    find_preset("no-such-gpu");
    FAIL();
  } catch (const usage_error& e) {
    EXPECT_EQ(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
}

TEST(device_spec, live_names_map_to_presets) {
  const std::int64_t gib = 1LL << 30;
  EXPECT_EQ(preset_for_device_name("NVIDIA H100 80GB HBM3", 80 * gib)->preset, "h100-sxm");
  EXPECT_EQ(preset_for_device_name("NVIDIA H100 PCIe", 80 * gib)->preset, "h100-pcie");
  EXPECT_EQ(preset_for_device_name("NVIDIA H200", 141 * gib)->preset, "h200");
  EXPECT_EQ(preset_for_device_name("NVIDIA A100-SXM4-40GB", 40 * gib)->preset, "a100-sxm-40gb");
  EXPECT_EQ(preset_for_device_name("NVIDIA A100-SXM4-80GB", 80 * gib)->preset, "a100-sxm-80gb");
  EXPECT_EQ(preset_for_device_name("NVIDIA H800", 80 * gib)->preset, "h800");
  EXPECT_EQ(preset_for_device_name("NVIDIA H100 NVL", 94 * gib)->preset, "h100-nvl");
  EXPECT_EQ(preset_for_device_name("NVIDIA H20", 96 * gib)->preset, "h20");
  EXPECT_EQ(preset_for_device_name("NVIDIA L4", 23 * gib)->preset, "l4");
  EXPECT_EQ(preset_for_device_name("NVIDIA L40S", 45 * gib)->preset, "l40s");
  EXPECT_FALSE(preset_for_device_name("NVIDIA L40", 45 * gib).has_value());  // not an L4
  EXPECT_EQ(preset_for_device_name("NVIDIA RTX 6000 Ada Generation", 48 * gib)->preset, "rtx-6000-ada");
  EXPECT_EQ(preset_for_device_name("NVIDIA RTX A6000", 48 * gib)->preset, "rtx-a6000");
  EXPECT_EQ(preset_for_device_name("NVIDIA GeForce RTX 3090", 24 * gib)->preset, "rtx-3090");
  EXPECT_EQ(preset_for_device_name("NVIDIA A10G", 22 * gib)->preset, "a10g");
  EXPECT_FALSE(preset_for_device_name("NVIDIA A10", 22 * gib).has_value());  // not the A10G's rates
  EXPECT_FALSE(preset_for_device_name("NVIDIA GeForce GTX 1080", 8 * gib).has_value());
  EXPECT_EQ(preset_for_device_name("NVIDIA B200", 180 * gib)->preset, "b200");
  EXPECT_FALSE(preset_for_device_name("NVIDIA GB200", 186 * gib).has_value());  // not the HGX part's figures
  EXPECT_EQ(preset_for_device_name("NVIDIA GeForce RTX 5090", 32 * gib)->preset, "rtx-5090");
  EXPECT_EQ(preset_for_device_name("Tesla V100-SXM2-32GB", 32 * gib)->preset, "v100-sxm2");
  EXPECT_FALSE(preset_for_device_name("Tesla V100-SXM2-16GB", 16 * gib).has_value());  // not its memory
}

TEST(device_spec, estimated_peaks_match_the_datasheet_for_a100) {
  device_spec d = find_preset("a100-sxm-80gb");
  estimate_peaks(d);
  // 108 SMs x 2048 dense fp16 flops/clock x 1410 MHz = 311.9 TFLOP/s.
  EXPECT_NEAR(d.peak_tflops_bf16, 312, 1);
  EXPECT_NEAR(d.peak_tflops_f32, 19.5, 0.1);
  EXPECT_EQ(d.peak_source, "estimated");
}

// A local GPU named as a preset but reporting fewer SMs (a MIG slice) or another clock keeps the
// preset's rates per SM and clock: a 1g.10gb slice of an H100 SXM (16 of 132 SMs) is not 989 TFLOP/s.
TEST(device_spec, a_local_gpu_with_fewer_sms_than_its_preset_scales_its_peaks) {
  const device_spec& h100 = find_preset("h100-sxm");
  device_spec slice = *preset_for_device_name("NVIDIA H100 80GB HBM3 MIG 1g.10gb", 10LL << 30);
  slice.sm_count = 16;
  scale_preset_rates(slice, h100);
  EXPECT_NEAR(slice.peak_tflops_bf16, h100.peak_tflops_bf16 * 16 / 132, 1e-9);
  EXPECT_NEAR(slice.peak_tflops_fp8, h100.peak_tflops_fp8 * 16 / 132, 1e-9);
  EXPECT_NEAR(slice.peak_tflops_f32, h100.peak_tflops_f32 * 16 / 132, 1e-9);
  EXPECT_NEAR(slice.l2_bandwidth_gbs, h100.l2_bandwidth_gbs * 16 / 132, 1e-9);
  EXPECT_EQ(slice.peak_source, "estimated");
  device_spec slower = h100;  // a lower peak clock scales the same way
  slower.boost_clock_mhz = 1755;
  scale_preset_rates(slower, h100);
  EXPECT_NEAR(slower.peak_tflops_tf32, h100.peak_tflops_tf32 * 1755 / 1980, 1e-9);
  device_spec same = h100;  // the recorded H100 runs: the preset's own figures, from its datasheet
  scale_preset_rates(same, h100);
  EXPECT_EQ(same.peak_tflops_bf16, h100.peak_tflops_bf16);
  EXPECT_EQ(same.peak_source, "datasheet");
}

// Issue 39: a preset's memory is what the driver reports, not the marketing figure.
TEST(device_spec, preset_memory_is_what_the_driver_reports) {
  // The H100 SXM's: recorded in profiles/ by a run on one (device.memory_bytes of a measured result).
  std::ifstream in(std::string(TILETUNE_SOURCE_DIR) + "/profiles/measured/h100-2026-11-22/gemm/4096x4096x4096-bf16-nt.json");
  ASSERT_TRUE(in) << "the recorded H100 result is missing";
  const auto recorded = nlohmann::json::parse(in)["device"];
  ASSERT_EQ(recorded["preset"], "h100-sxm");
  EXPECT_EQ(find_preset("h100-sxm").memory_bytes, recorded["memory_bytes"].get<std::int64_t>());
  // 79.2 GiB, below the datasheet's 80 GiB: planning against 80 GiB promised memory that is not there.
  EXPECT_NEAR(find_preset("h100-sxm").memory_bytes / double(1LL << 30), 79.2, 0.05);
  // The H200's: 139.8 GiB as its driver reported it to CUDA on the recorded run (nvidia-smi's 140.4 GiB,
  // cited in issue 39, counts the driver's reserve), not 141 GB read as 131.3 GiB.
  EXPECT_NEAR(find_preset("h200").memory_bytes / double(1LL << 30), 139.8, 0.05);
  // Every preset says where its memory comes from; each "recorded" one, and its L2, is what a run in
  // profiles/measured recorded on that GPU model (the H200 reports 60 MiB of L2, the H100 SXM 50).
  const std::set<std::string> sources{"recorded", "cited", "inferred", "nvidia-smi", "datasheet", "listings"};
  for (const auto& d : device_presets()) {
    EXPECT_TRUE(sources.count(d.memory_source)) << d.preset << ": " << d.memory_source;
    if (d.memory_source != "recorded") continue;
    bool found = false;
    for (const auto& dir : fs::directory_iterator(fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured")) {
      std::ifstream r(dir.path() / "gemm/4096x4096x4096-bf16-nt.json");
      if (!r) continue;
      const auto device = nlohmann::json::parse(r)["device"];
      if (device["preset"] != d.preset) continue;
      found = true;
      EXPECT_EQ(d.memory_bytes, device["memory_bytes"].get<std::int64_t>()) << dir.path();
      EXPECT_EQ(d.l2_bytes, device["l2_bytes"].get<std::int64_t>()) << dir.path();
    }
    EXPECT_TRUE(found) << d.preset << " says its memory was recorded, and no run in profiles/measured is of it";
  }
  // One definition for every preset: the total CUDA reports to a process, as the recorded ones are.
  // Cited beside each preset: deviceQuery's bytes (thamada/nvidia-smi's captures for the A100 80GB, L4,
  // L40S, RTX 4090, RTX 6000 Ada, RTX 3090 and H100 NVL; a university cluster's for the RTX A6000) or
  // PyTorch's total_memory in MiB (the A100 40GB, H20, B200). They had been nvidia-smi's totals, which
  // count the driver's reserve: an A100 80GB was planned against 80.0 GiB, an H100 SXM against 79.2.
  const std::int64_t mib = 1LL << 20;
  const std::pair<const char*, std::int64_t> reported[] = {
      {"a100-sxm-80gb", 85100068864}, {"a100-sxm-40gb", 40536 * mib}, {"l4", 23570219008},
      {"l40s", 47803596800},          {"rtx-3090", 25327697920},      {"h100-nvl", 99861594112},
      {"h20", 97285 * mib},           {"b200", 182642 * mib},         {"rtx-4090", 25386352640},
      {"rtx-a6000", 51160023040},     {"rtx-6000-ada", 51002867712}, {"v100-sxm2", 32512 * mib}};
  for (const auto& [name, total] : reported) {
    EXPECT_EQ(find_preset(name).memory_bytes, total) << name;
    EXPECT_EQ(find_preset(name).memory_source, "cited") << name;
  }
  // Each CUDA total is below nvidia-smi's memory.total for the part, by a reserve of 0.4 to 0.8 GiB
  // (the same sources' nvidia-smi lines); only the A10G and RTX 5090 have no citable CUDA total.
  const std::pair<const char*, std::int64_t> smi[] = {
      {"a100-sxm-80gb", 81920}, {"a100-sxm-40gb", 40960}, {"l4", 23034},       {"l40s", 46068},
      {"rtx-3090", 24576},      {"h100-nvl", 95830},      {"h20", 97871},      {"b200", 183359},
      {"rtx-4090", 24564},      {"rtx-a6000", 49140},     {"rtx-6000-ada", 49140}, {"h100-sxm", 81559}};
  for (const auto& [name, total] : smi) {
    const double reserve_gib = double(total * mib - find_preset(name).memory_bytes) / double(1LL << 30);
    EXPECT_GT(reserve_gib, 0.3) << name;
    EXPECT_LT(reserve_gib, 0.9) << name;
  }
  for (const auto& d : device_presets()) {
    if (d.memory_source != "nvidia-smi") continue;
    EXPECT_TRUE(d.preset == "a10g" || d.preset == "rtx-5090") << d.preset;
  }
  // An inferred total is that of a recorded or cited part with the same memory (the H800 and H100 PCIe
  // the H100 SXM's); none is a datasheet's figure, which counts the driver's reserve.
  for (const auto& d : device_presets()) {
    if (d.memory_source == "inferred") {
      bool from_a_known_total = false;
      for (const auto& other : device_presets())
        from_a_known_total |= other.preset != d.preset && other.memory_bytes == d.memory_bytes &&
                              (other.memory_source == "recorded" || other.memory_source == "cited");
      EXPECT_TRUE(from_a_known_total) << d.preset;
    }
    EXPECT_NE(d.memory_source, "datasheet") << d.preset;
    EXPECT_NE(d.memory_source, "listings") << d.preset;
  }
}

// The presets added for issue 37, against their datasheets by arithmetic: the estimate from SMs x
// clock x the architecture's dense rate lands within 2% of each datasheet figure entered.
TEST(device_spec, new_presets_agree_with_their_clocks_and_sms) {
  // L40S: 142 x 1024 x 2.52 GHz = 366.4 (datasheet 362.05); RTX 6000 Ada: 142 x 1024 x 2.505 = 364.2;
  // RTX A6000 (a data-centre rate on GA102): 84 x 1024 x 1.8 = 154.8; fp32: SMs x 256 x clock.
  for (const char* name : {"l40s", "rtx-6000-ada"}) {
    device_spec d = find_preset(name);
    const double bf16 = d.peak_tflops_bf16, f32 = d.peak_tflops_f32;
    estimate_peaks(d);
    EXPECT_NEAR(d.peak_tflops_bf16 / bf16, 1, 0.02) << name;
    EXPECT_NEAR(d.peak_tflops_f32 / f32, 1, 0.02) << name;
  }
  const device_spec& a6000 = find_preset("rtx-a6000");
  EXPECT_NEAR(84 * 1024 * 1.8e9 / 1e12, a6000.peak_tflops_bf16, 0.1);
  EXPECT_NEAR(84 * 256 * 1.8e9 / 1e12, a6000.peak_tflops_f32, 0.1);
  const device_spec& h800 = find_preset("h800");
  EXPECT_EQ(h800.peak_tflops_bf16, find_preset("h100-sxm").peak_tflops_bf16);
  EXPECT_LT(h800.gpu_link_gbs, find_preset("h100-sxm").gpu_link_gbs);
  EXPECT_EQ(find_preset("rtx-3090").arch(), "sm_86");
  // A10G (listings, no datasheet): fp32 80 SMs x 128 lanes x 2 x 1.71 GHz = 35.0; its tensor cores at
  // GeForce GA102's half rate with fp32 accumulation, 80 x 512 x 1.71 GHz = 70.0 bf16 dense.
  const device_spec& a10g = find_preset("a10g");
  EXPECT_EQ(a10g.arch(), "sm_86");
  EXPECT_NEAR(80 * 128 * 2 * 1.71e9 / 1e12, a10g.peak_tflops_f32, 0.1);
  EXPECT_NEAR(80 * 512 * 1.71e9 / 1e12, a10g.peak_tflops_bf16, 0.1);
  EXPECT_EQ(a10g.peak_source, "listings");
}

// B200 and RTX 5090 (issue 37), against their published figures by arithmetic: the B200's dense
// bf16 is half its fp8 and twice its tf32 (HGX B200: 2,250, 4,500, 1,100 TFLOP/s), and 180 GB at 8
// TB/s per GPU (DGX B200: 1,440 GB and 64 TB/s over 8); the RTX 5090's fp32 is 170 SMs x 128 lanes x
// 2 x 2.407 GHz = 104.7 TFLOP/s, its fp32-accumulating bf16 half its 419 dense fp16-accumulating one.
// Datacenter Blackwell plans no mma.sync (its rate there is unknown); GeForce Blackwell does.
TEST(device_spec, blackwell_presets_agree_with_their_datasheets) {
  const device_spec& b200 = find_preset("b200");
  EXPECT_EQ(b200.arch(), "sm_100");
  EXPECT_DOUBLE_EQ(b200.peak_tflops_fp8, 2 * b200.peak_tflops_bf16);
  EXPECT_NEAR(b200.peak_tflops_bf16 / b200.peak_tflops_tf32, 2, 0.05);
  // The DGX B200's 1,440 GB is 180 GB a GPU; the driver reports more than 180 GB read as 10^9 bytes.
  EXPECT_GT(b200.memory_bytes * 8, 1'440'000'000'000LL);
  // Its bandwidth as the driver reports the bus (pytorch/ao#4002): 7680 bits at 3996 MHz, DDR, under
  // the datasheet's 8 TB/s a GPU; its L2 126.5 MiB as CUDA reports it.
  EXPECT_NEAR(b200.memory_bandwidth_gbs, 7672, 1);
  EXPECT_LT(b200.memory_bandwidth_gbs * 8, 64000);
  EXPECT_EQ(b200.l2_bytes, 126 * (1LL << 20) + (1LL << 19));
  const device_spec& rtx5090 = find_preset("rtx-5090");
  EXPECT_EQ(rtx5090.arch(), "sm_120");
  EXPECT_NEAR(170 * 128 * 2 * 2.407e9 / 1e12, rtx5090.peak_tflops_f32, 0.2);
  EXPECT_NEAR(rtx5090.peak_tflops_bf16 * 2, 419, 0.1);
}
