// Rows off 16 bytes (K = 50257: GPT-2's vocabulary in the lm_head's backward) plan on copies
// padded to 16 bytes (_kc), which the model puts near the aligned problem's time rather than the
// element-by-element path's, and the export launches the padding pre-pass before the GEMM.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace {
nlohmann::json plan_of(const std::string& gpu, const std::string& k, const fs::path& dir) {
  const result r = run({"gemm", "--m", "4096", "--n", "768", "--k", k, "--dtype", "bf16", "--gpu", gpu, "--dry-run",
                        "--out", (dir / ("plan_" + gpu + "_" + k + ".json")).string()});
  EXPECT_EQ(r.code, 0) << r.err;
  std::ifstream in(dir / ("plan_" + gpu + "_" + k + ".json"));
  return nlohmann::json::parse(in);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

TEST(padded_copies, an_unaligned_k_plans_padded_copies_near_the_aligned_time) {
  const fs::path dir = tmp_dir() / "padded_copies";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* gpu : {"h100-sxm", "a100-sxm-80gb"}) {
    const nlohmann::json odd = plan_of(gpu, "50257", dir), even = plan_of(gpu, "50264", dir);
    const std::string id = odd["recommendation"]["id"];
    EXPECT_TRUE(ends_with(id, "_kc")) << gpu << " " << id;
    EXPECT_EQ(odd["recommendation"]["tile"].value("k_major_copies", false), true) << gpu;
    const double t_odd = odd["recommendation"]["predicted_us"], t_even = even["recommendation"]["predicted_us"];
    // The GEMM plus one pass over both operands (about 1 GB at DRAM bandwidth): under 2x the aligned
    // problem, where the element-by-element copies were 20x.
    EXPECT_LT(t_odd, 2.0 * t_even) << gpu << ": " << t_odd << " us against " << t_even;
    EXPECT_GT(t_odd, t_even) << gpu;
    EXPECT_NE(odd["notes"].dump().find("padd"), std::string::npos) << odd["notes"].dump(1);
    // The plan names the stride, the pre-pass's share and the padding that avoids it; the aligned one does not.
    EXPECT_NE(odd["notes"].dump().find("A's and B's rows (K 50257 bf16 elements"), std::string::npos) << odd["notes"].dump(1);
    EXPECT_NE(odd["notes"].dump().find("`--k 50264` plans that time"), std::string::npos) << odd["notes"].dump(1);
    EXPECT_EQ(even["notes"].dump().find("do not start on 16 bytes"), std::string::npos) << even["notes"].dump(1);
  }
}

TEST(padded_copies, the_export_launches_the_padding_pre_pass_for_each_operand) {
  const fs::path dir = tmp_dir() / "padded_copies_export";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string only = "mma_128x128x32_w2x2_s4_kc";
  const result r = run({"gemm", "--m", "1000", "--n", "3000", "--k", "777", "--dtype", "bf16", "--gpu",
                        "a100-sxm-80gb", "--dry-run", "--only", only, "--export", (dir / "kernel").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream hin(dir / "kernel" / (only + ".h")), jin(dir / "kernel" / (only + ".json"));
  const std::string header((std::istreambuf_iterator<char>(hin)), {});
  const nlohmann::json manifest = nlohmann::json::parse(jin);
  const nlohmann::json& pre = manifest["launch"]["prologue"];
  ASSERT_EQ(pre.size(), 2u) << manifest["launch"].dump(1);
  for (const auto& p : pre)
    for (const auto& a : p["parameters"]) {
      if (a["name"] == "row") {
        EXPECT_EQ(a["value"], 784);
      }
      if (a["name"] == "k_major") {
        EXPECT_EQ(a["value"], 1);
      }
    }
  const std::string entry = manifest["launch"]["entry"];
  const std::size_t a = header.find("cudaLaunchKernelEx(&before, " + entry + "_transpose, A, A_k_major,");
  const std::size_t b = header.find("cudaLaunchKernelEx(&before, " + entry + "_transpose, B, B_k_major,");
  const std::size_t gemm = header.find("cudaLaunchKernelEx(&config, " + entry + ",");
  ASSERT_NE(a, std::string::npos) << header;
  ASSERT_NE(b, std::string::npos);
  EXPECT_LT(a, gemm);
  EXPECT_LT(b, gemm);
}

// fp8 reads both operands K-major: in a layout other than nt the copies are made whatever the
// strides, so the note does not promise an in-place read for a padded leading dimension (following
// that advice kept the pre-pass).
TEST(padded_copies, fp8_in_another_layout_is_told_to_store_nt_not_to_pad) {
  const result r = run({"gemm", "--m", "1000", "--n", "3000", "--k", "777", "--dtype", "e4m3", "--layout", "tn", "--gpu",
                        "l40s", "--dry-run", "--json", "--only", "mma_128x128x128_w2x4_s3_kc"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string notes = nlohmann::json::parse(r.out)["notes"].dump();
  EXPECT_NE(notes.find("layout tn is copied whatever its strides"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("plans that time"), std::string::npos) << notes;
}

// Both operands' rows off 16 bytes: the note names both and the padding of both, and planning what it
// says plans no copies (it named A's alone, and `--m 1008` kept the pre-pass for B's rows).
TEST(padded_copies, the_note_names_every_misaligned_stride_and_its_advice_removes_the_copies) {
  auto plan = [](const std::vector<std::string>& shape) {
    std::vector<std::string> args = {"gemm", "--layout", "tn", "--gpu", "h100-sxm", "--dry-run", "--top", "3", "--json"};
    args.insert(args.end(), shape.begin(), shape.end());
    const result r = run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json odd = plan({"--m", "1001", "--n", "1001", "--k", "1024"});
  const std::string notes = odd["notes"].dump();
  EXPECT_NE(notes.find("A's rows (M 1001 bf16 elements, 2002 bytes apart) and B's rows (N 1001"), std::string::npos)
      << notes;
  const std::string advice = "`--m 1008 --n 1008` plans that time";
  ASSERT_NE(notes.find(advice), std::string::npos) << notes;
  const nlohmann::json padded = plan({"--m", "1008", "--n", "1008", "--k", "1024"});
  EXPECT_EQ(padded["notes"].dump().find("do not start on 16 bytes"), std::string::npos) << padded["notes"].dump(1);
  EXPECT_FALSE(ends_with(padded["recommendation"]["id"].get<std::string>(), "_kc")) << padded["recommendation"]["id"];
  EXPECT_LT(padded["recommendation"]["predicted_us"].get<double>(), odd["recommendation"]["predicted_us"].get<double>());
}

// A padded copy holds more elements than the problem: past 2^31-1 (300,000,000 x 8 for K = 7) no
// variant runs on it (its 32-bit offsets would wrap), and the note advises no `--k 8`, which is refused.
// The _kc variants had been recommended, and `--k 8` advised.
TEST(padded_copies, no_variant_runs_on_a_copy_past_the_element_limit_nor_is_it_advised) {
  const result r = run({"gemm", "--m", "300000000", "--n", "7", "--k", "7", "--gpu", "h100-sxm", "--dry-run", "--no-db",
                        "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto plan = nlohmann::json::parse(r.out);
  ASSERT_TRUE(plan["recommendation"].is_object());
  EXPECT_FALSE(ends_with(plan["recommendation"]["id"].get<std::string>(), "_kc")) << plan["recommendation"]["id"];
  std::size_t limited = 0;
  for (const auto& v : plan["variants"])
    if (ends_with(v["id"].get<std::string>(), "_kc")) {
      EXPECT_NE(v["status"], "ok") << v["id"];
      limited += v.value("constraint", "") == "index_limit";
    }
  EXPECT_GT(limited, 0u);
  const std::string notes = plan["notes"].dump();
  EXPECT_EQ(notes.find("--k 8"), std::string::npos) << notes;
  EXPECT_NE(notes.find("padded to K 8, a matrix would hold more than the 2^31-1 elements"), std::string::npos) << notes;
  EXPECT_EQ(run({"gemm", "--m", "300000000", "--n", "7", "--k", "8", "--gpu", "h100-sxm", "--dry-run"}).code, 2);
}
