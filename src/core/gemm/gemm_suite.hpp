#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "core/gemm/problem.hpp"

namespace tiletune {

// A list of GEMMs tuned in one run, e.g. a model's linear layers.
//   {"schema": "tiletune.suite/1", "name": "llm",
//    "problems": [{"name": "llama-3-8b q_proj 4096 tokens", "m": 4096, "n": 4096, "k": 4096,
//                  "dtype": "bf16", "layout": "nt"}, ...]}
struct suite_problem {
  std::string name;
  gemm_problem problem;
};
struct gemm_suite {
  std::string name;
  std::vector<suite_problem> problems;
};

// Throws usage_error naming the file and the problem (by index and name) that is bad.
gemm_suite load_suite(const std::filesystem::path& path);

}  // namespace tiletune
