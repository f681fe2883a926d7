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

TEST(batch_moe, mixtral_on_eight_gpus_writes_its_memory_terms) {
  const result r = run({"batch", "--model", mixtral, "--gpu", "h100-sxm", "--seq-len", "2048", "--world-size", "8",
                        "--zero", "3", "--optimizer", "adamw-8bit", "--global-batch", "64", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["memory"]["expert_parallel"], 8);
  EXPECT_GT(j["memory"]["weights_bytes"].get<double>(), 0);
  EXPECT_EQ(j["model"]["moe"]["experts_per_token"], 2);
  EXPECT_FALSE(j["recommendation"].is_null());
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
