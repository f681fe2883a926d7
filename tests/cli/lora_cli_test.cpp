// `tiletune batch --lora-dropout` (issue 19): peft's lora_dropout in the plan,
// and bad values refused with exit 2 naming them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

using namespace tiletune_test;

TEST(batch_lora, dropout_is_in_the_plan_and_costs_memory) {
  const std::vector<std::string> base = {"batch", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--seq-len", "2048",
                                         "--lora-rank", "16", "--checkpointing", "off", "--global-batch", "2", "--json"};
  const result plain = run(base);
  std::vector<std::string> with = base;
  with.insert(with.end() - 1, {"--lora-dropout", "0.05"});
  const result dropped = run(with);
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(dropped.code, 0) << dropped.err;
  const auto a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(dropped.out);
  EXPECT_EQ(a["setup"]["lora_dropout"], 0.0);
  EXPECT_EQ(b["setup"]["lora_dropout"], 0.05);
  EXPECT_GT(b["memory"]["activation_bytes_per_sample"].get<double>(),
            a["memory"]["activation_bytes_per_sample"].get<double>());
}

TEST(batch_lora, bad_dropout_is_exit_2_naming_it) {
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--lora-rank", "16", "--lora-dropout", "1.5"},
        std::vector<std::string>{"--lora-rank", "16", "--lora-dropout", "-0.1"},
        std::vector<std::string>{"--lora-dropout", "0.1"}}) {
    std::vector<std::string> args = {"batch", "--model", "gpt2", "--gpu", "h100-sxm"};
    args.insert(args.end(), extra.begin(), extra.end());
    const result r = run(args);
    EXPECT_EQ(r.code, 2) << extra.back();
    EXPECT_NE(r.err.find("--lora-dropout " + extra.back()), std::string::npos) << r.err;
  }
}
