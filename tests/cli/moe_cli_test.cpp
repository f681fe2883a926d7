// `tiletune batch` on mixture-of-experts configs and unsupported model types (issue 19).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace {
const std::string mixtral = std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/mixtral-8x7b.json";
}  // namespace

// Experts split over 8 GPUs as torchtitan splits them (expert_parallel_degree); the Trainer and DeepSpeed,
// whose emitted configs split none, refuse it (it had been planned, the configs running every expert gathered).
TEST(batch_moe, mixtral_on_sixteen_gpus_writes_its_memory_terms) {
  const result r = run({"batch", "--model", mixtral, "--gpu", "h100-sxm", "--seq-len", "2048", "--world-size", "16",
                        "--zero", "3", "--expert-parallel", "8", "--framework", "fsdp2", "--checkpointing", "auto",
                        "--global-batch", "64", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["memory"]["expert_parallel"], 8);
  EXPECT_GT(j["memory"]["weights_bytes"].get<double>(), 0);
  EXPECT_EQ(j["model"]["moe"]["experts_per_token"], 2);
  EXPECT_FALSE(j["recommendation"].is_null());
  for (const char* framework : {"hf", "deepspeed", "litgpt", "composer"}) {
    const result refused = run({"batch", "--model", mixtral, "--gpu", "h100-sxm", "--seq-len", "2048", "--world-size",
                                "16", "--zero", "3", "--expert-parallel", "8", "--framework", framework, "--checkpointing",
                                "on", "--global-batch", "64", "--json"});
    EXPECT_EQ(refused.code, 2) << framework;
    EXPECT_TRUE(refused.out.empty()) << framework;
    EXPECT_NE(refused.err.find(std::string("--framework ") + framework + " --expert-parallel 8: "), std::string::npos)
        << refused.err;
    EXPECT_NE(refused.err.find("splits no experts"), std::string::npos) << refused.err;
  }
}

TEST(batch_moe, mixtral_on_one_gpu_says_what_would_fit) {
  const result r = run({"batch", "--model", mixtral, "--gpu", "h100-sxm", "--seq-len", "2048", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["recommendation"].is_null());
  EXPECT_GT(j["memory"]["optimizer_bytes"].get<double>(), 0);
}

TEST(batch_moe, an_unsupported_model_type_is_exit_2_naming_it_and_the_supported) {
  const fs::path config = tmp_dir() / "mamba-config.json";
  std::ofstream(config) << R"({"model_type": "mamba", "hidden_size": 768})";
  const result r = run({"batch", "--model", config.string(), "--gpu", "h100-sxm"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("\"mamba\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mixtral"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gemma2"), std::string::npos) << r.err;
  fs::remove(config);
}

TEST(batch_moe, a_bad_expert_parallel_degree_is_exit_2) {
  const result r = run({"batch", "--model", mixtral, "--gpu", "h100-sxm", "--world-size", "8", "--expert-parallel",
                        "3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--expert-parallel 3"), std::string::npos) << r.err;
}

// `tiletune gemm --groups` (issue 36): a grouped GEMM planned offline for an H100, the grouped wgmma
// kernel recommended and exported with its rows; elsewhere every family refuses it by name.
TEST(gemm_grouped, routed_tokens_plan_on_the_grouped_kernel_and_export_their_rows) {
  const fs::path dir = tmp_dir() / "export-grouped";
  fs::remove_all(dir);
  const result r = run({"gemm", "--groups", "8", "--tokens", "512", "--top-k", "2", "--routing", "zipf:1.2", "--n",
                        "1024", "--k", "512", "--gpu", "h100-sxm", "--no-db", "--json", "--export", dir.string(), "--only",
                        "wgmma_128x128x64_c1_s4_cl1x1_g8m_grp,wgmma_128x256x64_c2_s4_cl1x1_g8m_grp"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& groups = j["problem"]["groups"];
  EXPECT_EQ(groups["count"], 8);
  EXPECT_EQ(groups["routing"], "zipf:1.2");
  std::int64_t rows = 0;
  for (const auto& v : groups["rows"]) rows += v.get<std::int64_t>();
  EXPECT_EQ(rows, 1024);
  EXPECT_EQ(j["problem"]["m"], 1024);
  EXPECT_DOUBLE_EQ(j["problem"]["flops"].get<double>(), 2.0 * 1024 * 1024 * 512);
  const std::string id = j["recommendation"]["id"];
  EXPECT_NE(id.find("_grp"), std::string::npos) << id;
  const auto launch = nlohmann::json::parse(std::ifstream(dir / (id + ".json")));
  bool passes_rows = false;
  for (const auto& p : launch["launch"]["parameters"])
    if (p["name"] == "group_rows") passes_rows = p["value"] == groups["rows"];
  EXPECT_TRUE(passes_rows) << launch["launch"]["parameters"].dump();
}

namespace {
void expect_bad_usage(const std::vector<std::string>& args, const std::string& named) {
  const result r = run(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(named), std::string::npos) << "message should name '" << named << "': " << r.err;
}
}  // namespace

TEST(gemm_grouped, bad_group_flags_are_usage_errors_naming_them) {
  const std::vector<std::string> nk = {"--n", "256", "--k", "256", "--gpu", "h100-sxm", "--no-db"};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.begin(), "gemm");
    a.insert(a.end(), nk.begin(), nk.end());
    return a;
  };
  expect_bad_usage(with({"--groups", "3", "--m-per-group", "1,2"}), "gives the rows of 2 groups, --groups says 3");
  expect_bad_usage(with({"--groups", "3"}), "--m-per-group R,R,..., or --tokens T --top-k K");
  // --tokens given: only --top-k is missing, and the message says so (it asked for --tokens too).
  expect_bad_usage(with({"--groups", "3", "--tokens", "16"}), "--groups 3 --tokens 16 routes each token to --top-k K of "
                                                              "the groups: give --top-k");
  expect_bad_usage(with({"--groups", "3", "--tokens", "64", "--top-k", "4"}), "--top-k 4 is invalid");
  // An explicit --tokens 0 is a bad value, named as with --model (it read as --tokens not given).
  expect_bad_usage(with({"--groups", "3", "--tokens", "0"}), "--tokens 0 is invalid: at least 1");
  expect_bad_usage(with({"--groups", "3", "--tokens", "0", "--top-k", "1"}), "--tokens 0 is invalid: at least 1");
  expect_bad_usage(with({"--groups", "3", "--tokens", "-5", "--top-k", "1"}), "--tokens -5 is invalid: at least 1");
  expect_bad_usage(with({"--groups", "2", "--m-per-group", "1,-2"}), "-2");
  expect_bad_usage(with({"--groups", "2", "--m-per-group", "8,8", "--routing", "zipf:1"}), "--m-per-group the rows");
  expect_bad_usage(with({"--groups", "2", "--m-per-group", "8,8", "--group-layout", "padded"}), "padded");
  expect_bad_usage(with({"--groups", "2", "--m-per-group", "8,8", "--layout", "tn"}), "--layout tn");
  expect_bad_usage(with({"--m", "8", "--tokens", "64"}), "--tokens 64 needs --model");
  expect_bad_usage(with({"--m", "8", "--routing", "uniform"}), "--groups");
  expect_bad_usage({"gemm", "--model", "llama-3-8b", "--tokens", "16", "--routing", "uniform", "--gpu", "h100-sxm"},
                     "no routed experts");
}

TEST(gemm_grouped, a_gpu_without_a_grouped_kernel_says_why) {
  const result r = run({"gemm", "--groups", "2", "--m-per-group", "64,0", "--n", "256", "--k", "256", "--gpu",
                        "a100-sxm-80gb", "--no-db", "--json"});
  // Refused with each family's reason (it was planned with every variant pruned, exit 0), and no JSON.
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  for (const char* why : {"mma variant(s) (grouped): the mma family has no grouped kernel",
                          "wgmma variant(s) (architecture): the wgmma family needs sm_90"})
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
}
