#pragma once
// The cli tests' JSON helpers: a file read as JSON, and a command run with extra flags whose
// stdout is a plan.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace tiletune_test {

inline nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

// `args` then `extra`, run through the binary.
inline result run_with(std::vector<std::string> args, const std::vector<std::string>& extra) {
  args.insert(args.end(), extra.begin(), extra.end());
  return run(args);
}

// The JSON `args` then `extra` print on stdout, expecting exit 0.
inline nlohmann::json plan_with(const std::vector<std::string>& args, const std::vector<std::string>& extra) {
  const result r = run_with(args, extra);
  EXPECT_EQ(r.code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

}  // namespace tiletune_test
