// Issue 35, fp8: `gemm --dtype e4m3|e5m2` plans, compiles and exports through the same commands
// as the other dtypes (no GPU: --dry-run), keyed with its scaling; what it cannot run is refused
// or explained, naming the value.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_json.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

TEST(fp8, a_plan_for_e4m3_runs_the_wgmma_family_with_promotion_and_bf16_c) {
  const fs::path dir = tmp_dir() / "fp8_plan";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path plan = dir / "plan.json";
  const result r = run({"gemm", "--m", "512", "--n", "384", "--k", "1024", "--dtype", "e4m3", "--gpu", "h100-sxm",
                        "--dry-run", "--top", "3", "--out", plan.string(), "--export", (dir / "kernel").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = read_json(plan);
  EXPECT_EQ(j["problem"]["dtype"], "e4m3");
  EXPECT_EQ(j["problem"]["layout"], "nt");
  EXPECT_EQ(j["problem"]["scaling"], "tensor");
  const nlohmann::json& rec = j["recommendation"];
  ASSERT_TRUE(rec.is_object()) << r.out;
  EXPECT_EQ(rec["family"], "wgmma");
  const std::string id = rec["id"];
  EXPECT_TRUE(id.ends_with("_p1") || id.ends_with("_p2")) << id;
  // The offline plan compiles only what can reach the --top rows (the rest: model_bound); every
  // wgmma variant of the space is listed, compiled or not, and mma.sync's are pruned on sm_90.
  int ok = 0, wgmma = 0;
  for (const auto& v : j["variants"]) {
    if (v["status"] == "ok") {
      ++ok;
      EXPECT_EQ(v["family"], "wgmma") << v["id"];
    }
    if (v["family"] != "wgmma") {
      EXPECT_EQ(v["constraint"], "architecture") << v["id"];
      continue;
    }
    ++wgmma;
    // Every fp8 variant promotes, or accumulates fast (_fa) and says so.
    EXPECT_TRUE(v["tile"].value("promote_k_tiles", 0) >= 1 || v["tile"].value("fast_accumulation", false)) << v["id"];
    EXPECT_EQ(v["tile"]["block_k"], 128) << v["id"];
  }
  EXPECT_GE(ok, 3);
  EXPECT_GE(wgmma, 20);
  // The export's host header passes C as bf16 bits and A, B as bytes.
  std::string header;
  for (const auto& e : fs::directory_iterator(dir / "kernel"))
    if (e.path().extension() == ".h") {
      std::ifstream in(e.path());
      header.assign(std::istreambuf_iterator<char>(in), {});
    }
  ASSERT_FALSE(header.empty());
  EXPECT_NE(header.find("unsigned short* C"), std::string::npos) << header.substr(0, 3000);
  EXPECT_NE(header.find("CU_TENSOR_MAP_DATA_TYPE_UINT8"), std::string::npos);
  EXPECT_NE(header.find("e4m3 (A and B; C bf16)"), std::string::npos);
}

TEST(fp8, what_fp8_cannot_run_is_refused_or_explained) {
  // fp8 unscaled, a scaled 16-bit problem, an unknown mode: refused, naming the mode and what is taken.
  for (const auto& [dtype, scaling, takes] : {std::tuple{"e4m3", "none", "tensor, rowwise, block"},
                                              {"bf16", "block", "none"}, {"e5m2", "blocks", "rowwise"}}) {
    const result r = run({"gemm", "--m", "256", "--n", "256", "--k", "256", "--dtype", dtype, "--scaling", scaling,
                          "--gpu", "h100-sxm", "--dry-run"});
    EXPECT_EQ(r.code, 2) << r.err;
    for (const std::string& named : {std::string("'") + scaling + "'", std::string(takes)})
      EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
  }
  // An Ampere GPU has no fp8 math: refused, naming the problem and what fp8 needs (it planned every
  // variant "architecture"-refused and exited 0).
  const result r = run({"gemm", "--m", "256", "--n", "256", "--k", "256", "--dtype", "e4m3", "--gpu",
                        "a100-sxm-80gb", "--dry-run"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("256x256x256 e4m3 nt: the NVIDIA A100 SXM4 80GB (sm_80) has no e4m3 math: fp8 tensor cores "
                       "came with sm_89"),
            std::string::npos)
      << r.err;
}

// Ada (sm_89): fp8 runs in the mma family (mma.sync m16n8k32): layout nt, the others on K-major
// copies; per-tensor and rowwise scales; what it cannot run says why, and the plan says the kernel
// has not run on a GPU.
TEST(fp8, ada_plans_fp8_mma_sync_and_says_what_it_cannot_run) {
  for (const char* t : {"e4m3", "e5m2_e4m3"}) {
    const result r = run({"gemm", "--m", "1024", "--n", "2048", "--k", "4096", "--dtype", t, "--gpu", "l40s",
                          "--dry-run", "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const std::string id = j["recommendation"]["id"];
    EXPECT_EQ(id.rfind("mma_", 0), 0u) << id;
    EXPECT_NE(j["notes"].dump().find("fp8 through mma.sync m16n8k32, which has not run on a GPU"), std::string::npos)
        << j["notes"].dump(1);
  }
  // C in f32: the variant says so in its id (TT_OUT).
  const result f32 = run({"gemm", "--m", "1024", "--n", "2048", "--k", "4096", "--dtype", "e4m3", "--out-dtype", "f32",
                          "--gpu", "rtx-4090", "--dry-run"});
  ASSERT_EQ(f32.code, 0) << f32.err;
  EXPECT_NE(f32.out.find("_of32 (predicted"), std::string::npos) << f32.out;
  // Rowwise scales: the epilogue applies them (_rw); block scales: no variant, and it says why.
  const result rowwise = run({"gemm", "--m", "1024", "--n", "2048", "--k", "4096", "--dtype", "e4m3", "--scaling",
                              "rowwise", "--gpu", "l4", "--dry-run", "--json"});
  ASSERT_EQ(rowwise.code, 0) << rowwise.err;
  const nlohmann::json rj = nlohmann::json::parse(rowwise.out);
  const std::string rid = rj["recommendation"]["id"];
  EXPECT_EQ(rid.rfind("mma_", 0), 0u) << rid;
  EXPECT_EQ(rid.substr(rid.size() - 3), "_rw") << rid;
  EXPECT_NE(rj["notes"].dump().find("rowwise scales in the epilogue (_rw), which has not run on a GPU"),
            std::string::npos)
      << rj["notes"].dump(1);
  const result block = run({"gemm", "--m", "1024", "--n", "2048", "--k", "4096", "--dtype", "e4m3", "--scaling",
                            "block", "--gpu", "l4", "--dry-run"});
  EXPECT_EQ(block.code, 2) << block.err;  // refused, not planned empty
  EXPECT_NE(block.err.find("no variant of any kernel family can run it on the NVIDIA L4"), std::string::npos)
      << block.err;
  EXPECT_NE(block.err.find("mma variant(s) (scaling): the mma family applies per-tensor (alpha) and rowwise fp8 "
                           "scales, not block scales"),
            std::string::npos)
      << block.err;
  // An operand stored MN-major: every variant transposes it first (_kc), and the model counts that
  // (the refusals of variants with and without copies: unit/mma_k_major_copies_test.cpp).
  for (const char* l : {"nn", "tn", "tt"}) {
    const result r = run({"gemm", "--m", "1000", "--n", "2048", "--k", "4096", "--dtype", "e5m2_e4m3", "--layout", l,
                          "--gpu", "l4", "--dry-run", "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const std::string id = j["recommendation"]["id"];
    EXPECT_EQ(id.rfind("mma_", 0), 0u) << id;
    EXPECT_EQ(id.substr(id.size() - 3), "_kc") << id;
    double prologue_us = 0;
    for (const nlohmann::json& v : j["variants"])
      if (v["id"] == id) prologue_us = v["model"].value("prologue_us", 0.0);
    EXPECT_GT(prologue_us, 0.0) << id;
    EXPECT_NE(j["notes"].dump().find("on K-major copies (_kc), which has not run on a GPU"), std::string::npos)
        << j["notes"].dump(1);
  }
  // An fp8 training step on Ada: every GEMM has a variant (the backward nn and tn on copies).
  const result step = run({"gemm", "--model", "gpt2", "--tokens", "512", "--phase", "train", "--fp8", "tensorwise",
                           "--gpu", "l40s", "--dry-run", "--json"});
  ASSERT_EQ(step.code, 0) << step.err;
  const nlohmann::json sj = nlohmann::json::parse(step.out);
  EXPECT_EQ(sj["model_step"]["gemms_without_variant"], 0) << sj["model_step"].dump(1);
  EXPECT_EQ(sj["suite"]["model"].value("fp8", ""), "tensorwise");  // the suite records the recipe it ran
  // torchao's rowwise recipe too: every GEMM e4m3 with rowwise scales, the backward's on copies.
  const result rw_step = run({"gemm", "--model", "gpt2", "--tokens", "512", "--phase", "train", "--fp8", "rowwise",
                              "--gpu", "l40s", "--dry-run", "--json"});
  ASSERT_EQ(rw_step.code, 0) << rw_step.err;
  const nlohmann::json rsj = nlohmann::json::parse(rw_step.out);
  EXPECT_EQ(rsj["model_step"]["gemms_without_variant"], 0) << rsj["model_step"].dump(1);
  // On an A100 (no fp8 tensor cores) the step is refused, as batch --fp8 refuses it (it was planned, its 12
  // fp8 GEMMs of 15 left out, exit 0).
  const result ampere = run({"gemm", "--model", "gpt2", "--tokens", "512", "--phase", "train", "--fp8", "tensorwise",
                             "--gpu", "a100-sxm-80gb", "--dry-run"});
  EXPECT_EQ(ampere.code, 2);
  EXPECT_NE(ampere.err.find("--fp8 tensorwise needs fp8 tensor cores (sm_89 and later); the NVIDIA A100 SXM4 80GB "
                            "has none"),
            std::string::npos)
      << ampere.err;
  // A suite holding an fp8 problem plans the rest, and that problem's outcome is that no variant runs
  // it, named, as a GPU without any family's variant (B200) has it (fp8.what_fp8_cannot_run_is_refused_or_explained
  // has the single problem, refused). It refused the whole suite.
  const fs::path mixed = tmp_dir() / "fp8-on-ampere-suite.json";
  std::ofstream(mixed) << R"({"schema": "tiletune.suite/1", "name": "m", "problems": [{"m": 64, "n": 64, "k": 64, "dtype": "bf16"},
                                                        {"name": "q8", "m": 64, "n": 64, "k": 64, "dtype": "e5m2"}]})";
  const result suite = run({"gemm", "--suite", mixed.string(), "--gpu", "a100-sxm-80gb", "--dry-run", "--json"});
  EXPECT_EQ(suite.code, 0) << suite.err;
  EXPECT_NE(suite.err.find("64x64x64 e5m2 nt: the NVIDIA A100 SXM4 80GB (sm_80) has no e5m2 math"), std::string::npos)
      << suite.err;
  const auto planned = nlohmann::json::parse(suite.out);
  EXPECT_TRUE(planned["results"][0]["recommendation"].is_object());
  EXPECT_TRUE(planned["results"][1]["recommendation"].is_null());
  // Hopper keeps fp8 in the wgmma family.
  const result h = run({"gemm", "--m", "1024", "--n", "2048", "--k", "4096", "--dtype", "e4m3", "--gpu", "h100-sxm",
                        "--dry-run", "--json"});
  ASSERT_EQ(h.code, 0) << h.err;
  const std::string hid = nlohmann::json::parse(h.out)["recommendation"]["id"];
  EXPECT_EQ(hid.rfind("wgmma_", 0), 0u) << hid;
  const std::vector<std::string> mma_on_hopper = {"gemm", "--m", "200", "--n", "136", "--k", "528", "--dtype", "e4m3",
                                                  "--gpu", "h100-sxm", "--dry-run", "--only", "mma_64x64x128_w2x2_s4"};
  const result refused = run(mma_on_hopper);
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("is the wgmma family's"), std::string::npos) << refused.err;
  // Validation only (gpu_validate.sh fp8mma): a Hopper may run the mma fp8 path to verify it.
  setenv("TILETUNE_MMA_FP8_ON_SM90", "1", 1);
  const result allowed = run(mma_on_hopper);
  unsetenv("TILETUNE_MMA_FP8_ON_SM90");
  EXPECT_NE(allowed.out.find("recommended: mma_64x64x128_w2x2_s4"), std::string::npos) << allowed.out;
}

// An operand stored MN-major (fp8 weights stored K x N, tf32 nn): every wgmma variant makes
// K-major copies first (_kc); the plan's model counts the pre-pass and notes it has not run, the
// export launches it before the GEMM and its JSON describes it.
TEST(fp8, an_mn_major_operand_plans_k_major_copies_and_the_export_launches_the_pre_pass) {
  for (const auto& [t, only] : {std::pair{"e4m3", "wgmma_64x128x128_c1_s5_cl1x1_g8m_p1_kc"},
                                {"tf32", "wgmma_128x128x32_c2_s4_cl1x1_g8m_kc"}}) {
    const fs::path dir = tmp_dir() / (std::string("kc_") + t);
    fs::remove_all(dir);
    fs::create_directories(dir);
    const result r = run({"gemm", "--m", "512", "--n", "384", "--k", "1024", "--dtype", t, "--layout", "nn", "--gpu",
                          "h100-sxm", "--dry-run", "--only", only, "--out", (dir / "plan.json").string(), "--export",
                          (dir / "kernel").string()});
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = read_json(dir / "plan.json");
    ASSERT_EQ(j["recommendation"]["id"], only) << r.out;
    ASSERT_EQ(j["variants"].size(), 1u);
    EXPECT_EQ(j["variants"][0]["tile"].value("k_major_copies", false), true);
    EXPECT_GT(j["variants"][0]["model"].value("prologue_us", 0.0), 0.0);
    // The transposes ran correct on an H200 (2026-12-04): no "has not run" note.
    EXPECT_EQ(j["notes"].dump().find("has not run on a GPU"), std::string::npos) << j["notes"].dump(1);
    std::string header;
    nlohmann::json manifest;
    for (const auto& e : fs::directory_iterator(dir / "kernel")) {
      if (e.path().extension() == ".h") {
        std::ifstream in(e.path());
        header.assign(std::istreambuf_iterator<char>(in), {});
      }
      if (e.path().extension() == ".json") manifest = read_json(e.path());
    }
    ASSERT_FALSE(header.empty());
    const std::string entry = manifest["launch"]["entry"];
    ASSERT_EQ(manifest["launch"]["prologue"].size(), 1u) << manifest["launch"].dump(1);
    EXPECT_EQ(manifest["launch"]["prologue"][0]["entry"], entry + "_transpose");
    EXPECT_EQ(manifest["launch"]["prologue"][0]["cubin_entry"], "tiletune_gemm_transpose");
    EXPECT_NE(header.find("cudaLaunchKernelEx(&before, " + entry + "_transpose, B, B_k_major,"), std::string::npos)
        << header;
  }
}

TEST(fp8, block_scales_plan_with_their_own_variants_and_the_launch_takes_the_scales) {
  const fs::path dir = tmp_dir() / "fp8_block";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const result r = run({"gemm", "--m", "256", "--n", "384", "--k", "512", "--dtype", "e4m3", "--scaling", "block",
                        "--gpu", "h100-sxm", "--dry-run", "--only", "wgmma_64x128x128_c1_s4_cl1x1_g8m_p1_blk_ts", "--out",
                        (dir / "plan.json").string(), "--export", (dir / "kernel").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = read_json(dir / "plan.json");
  EXPECT_EQ(j["problem"]["scaling"], "block");
  EXPECT_EQ(j["recommendation"]["id"], "wgmma_64x128x128_c1_s4_cl1x1_g8m_p1_blk_ts") << r.out;
  EXPECT_EQ(j["recommendation"]["tile"]["tma_scales"], true) << j["recommendation"].dump(1);
  std::ifstream in(dir / "kernel" / "wgmma_64x128x128_c1_s4_cl1x1_g8m_p1_blk_ts.h");
  const std::string header((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(header.find("const float* scale_a, const float* scale_b"), std::string::npos) << header.substr(0, 3000);
  EXPECT_NE(header.find("ran correct on an H200 (2026-12-04, tiletune's own launch)"), std::string::npos);
  EXPECT_NE(header.find("scale_a 16-byte aligned"), std::string::npos) << header.substr(0, 3000);
  // M 258: A's scale rows are not whole 16-byte units, so the tiles load their scales.
  const result odd = run({"gemm", "--m", "258", "--n", "384", "--k", "512", "--dtype", "e4m3", "--scaling", "block",
                          "--gpu", "h100-sxm", "--dry-run", "--only", "wgmma_64x128x128_c1_s4_cl1x1_g8m_p1_blk_ts"});
  EXPECT_NE(odd.code, 0) << odd.out;
  const result loads = run({"gemm", "--m", "258", "--n", "384", "--k", "512", "--dtype", "e4m3", "--scaling", "block",
                            "--gpu", "h100-sxm", "--dry-run", "--only", "wgmma_64x128x128_c1_s4_cl1x1_g8m_p1_blk"});
  EXPECT_EQ(loads.code, 0) << loads.err;
}

TEST(fp8, a_suite_names_each_problem_s_scaling_and_tells_the_scalings_apart) {
  const fs::path dir = tmp_dir() / "fp8_suite";
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream s(dir / "suite.json");
    s << R"({"schema": "tiletune.suite/1", "problems": [
      {"name": "tensor", "m": 256, "n": 256, "k": 512, "dtype": "e4m3", "layout": "nt"},
      {"name": "block", "m": 256, "n": 256, "k": 512, "dtype": "e4m3", "layout": "nt", "scaling": "block"}]})";
  }
  const result r = run({"gemm", "--suite", (dir / "suite.json").string(), "--gpu", "h100-sxm", "--dry-run", "--top",
                        "1", "--out", (dir / "plan.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("256x256x512 e4m3 nt block-scaled"), std::string::npos) << r.out;
  const nlohmann::json j = read_json(dir / "plan.json");
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][1]["problem"]["scaling"], "block");
  EXPECT_NE(std::string(j["results"][1]["recommendation"]["id"]).find("_blk"), std::string::npos);
  // A misspelt mode in a suite is named with its problem.
  {
    std::ofstream s(dir / "bad.json");
    s << R"({"schema": "tiletune.suite/1", "problems": [{"name": "x", "m": 256, "n": 256, "k": 512, "dtype": "e4m3", "scaling": "blok"}]})";
  }
  const result bad = run({"gemm", "--suite", (dir / "bad.json").string(), "--gpu", "h100-sxm", "--dry-run"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("'blok'"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("(\"x\")"), std::string::npos) << bad.err;
}

TEST(fp8, out_dtype_writes_f16_or_f32_c_and_is_refused_elsewhere) {
  const fs::path dir = tmp_dir() / "fp8_out";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const result r = run({"gemm", "--m", "256", "--n", "256", "--k", "512", "--dtype", "e5m2", "--out-dtype", "f32",
                        "--gpu", "h100-sxm", "--dry-run", "--only", "wgmma_64x128x128_c1_s4_cl1x1_g8m_p1_of32", "--out",
                        (dir / "plan.json").string(), "--export", (dir / "kernel").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("256x256x512 e5m2 nt, f32 out"), std::string::npos) << r.out;
  const nlohmann::json j = read_json(dir / "plan.json");
  EXPECT_EQ(j["problem"]["out_dtype"], "f32");
  EXPECT_EQ(j["recommendation"]["id"], "wgmma_64x128x128_c1_s4_cl1x1_g8m_p1_of32");
  std::ifstream in(dir / "kernel" / "wgmma_64x128x128_c1_s4_cl1x1_g8m_p1_of32.h");
  const std::string header((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(header.find("float* C"), std::string::npos) << header.substr(0, 2000);
  // bf16 is fp8's own C: the same problem as no flag.
  const result same = run({"gemm", "--m", "256", "--n", "256", "--k", "512", "--dtype", "e4m3", "--out-dtype", "bf16",
                           "--gpu", "h100-sxm", "--dry-run", "--json", "--top", "1"});
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_FALSE(nlohmann::json::parse(same.out)["problem"].contains("out_dtype"));
  for (const auto& [dtype, out, named] : {std::tuple{"bf16", "f32", "its C is bf16"}, {"e4m3", "e4m3", "bf16, f16 or f32"},
                                          {"e4m3", "f64", "'f64'"}}) {
    const result bad = run({"gemm", "--m", "256", "--n", "256", "--k", "512", "--dtype", dtype, "--out-dtype", out,
                            "--gpu", "h100-sxm", "--dry-run"});
    EXPECT_EQ(bad.code, 2) << bad.err;
    EXPECT_NE(bad.err.find(named), std::string::npos) << bad.err;
  }
}

// Mixed fp8 (A e5m2, B e4m3): planned by the wgmma family, keyed as its own dtype, and the
// export's header names each operand's format.
TEST(fp8, a_mixed_plan_names_each_operands_format) {
  const fs::path dir = tmp_dir() / "fp8_mixed";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const result r = run({"gemm", "--m", "512", "--n", "384", "--k", "1024", "--dtype", "e5m2_e4m3", "--gpu",
                        "h100-sxm", "--dry-run", "--only", "wgmma_64x128x128_c1_s4_cl1x1_g8m_p1", "--out",
                        (dir / "plan.json").string(), "--export", (dir / "kernel").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = read_json(dir / "plan.json");
  EXPECT_EQ(j["problem"]["dtype"], "e5m2_e4m3");
  ASSERT_EQ(j["recommendation"]["id"], "wgmma_64x128x128_c1_s4_cl1x1_g8m_p1") << r.out;
  std::string header;
  for (const auto& e : fs::directory_iterator(dir / "kernel"))
    if (e.path().extension() == ".h") {
      std::ifstream in(e.path());
      header.assign(std::istreambuf_iterator<char>(in), {});
    }
  EXPECT_NE(header.find("e5m2_e4m3 (A e5m2, B e4m3; C bf16)"), std::string::npos) << header.substr(0, 1500);
  const result bad = run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "e4m3_e4m3", "--gpu", "h100-sxm",
                          "--dry-run"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("e4m3_e5m2"), std::string::npos) << bad.err;  // the refusal lists the dtypes
}
