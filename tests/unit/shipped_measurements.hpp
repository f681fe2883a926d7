#pragma once
// The measured H100 results shipped in profiles/measured/, as the unit tests read them.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gemm/problem.hpp"

namespace tiletune::shipped {

inline std::vector<nlohmann::json> read_results(const std::filesystem::path& dir, bool one_per_problem) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<nlohmann::json> out;
  std::set<std::string> problems;
  for (const auto& f : files) {
    // Runs 1 and 2 timed cuBLASLt before the search, cool, and the finalists hot: superseded by run 4
    // (profiles/measured/h100-2026-11-23/README.md, "The card's power cap").
    if (f.filename().string().rfind("before-pair-", 0) == 0) continue;
    std::ifstream in(f);
    auto j = nlohmann::json::parse(in);
    if (one_per_problem && !problems.insert(gemm_problem_from_json(j.at("problem")).describe()).second) continue;
    out.push_back(std::move(j));
  }
  return out;
}

// Run 4 of 2026-11-23, this version's wgmma and simt kernels and an mma kernel revised since
// (kernel_revisions.hpp): one result per problem, the first by file name (mma-family-alone and
// q_proj repeat 4096^3 bf16 nt). The shipped H100 calibration until 2026-12-05.
inline std::vector<nlohmann::json> h100_2026_11_23() {
  return read_results(std::filesystem::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm", true);
}

// 2026-11-22: the mma and simt kernels of ab37739 (before the swizzle and split-K).
inline std::vector<nlohmann::json> h100_2026_11_22() {
  return read_results(std::filesystem::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-22/gemm", false);
}

// The 2026-12-05 H100 suite of call 1, every family's kernel of this version: one result per problem
// (08.json and mma-only.json repeat 4096^3 bf16 nt). What profiles/calibration/h100-sxm.json is fitted to.
inline std::vector<nlohmann::json> h100_2026_12_05() {
  return read_results(std::filesystem::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-12-05/call1/gemm", true);
}

// The 2026-12-04 H200 suite of call 1, every family's kernel of this version: one result per problem
// (08.json repeats 4096^3 bf16 nt). What profiles/calibration/h200.json is fitted to.
inline std::vector<nlohmann::json> h200_2026_12_04() {
  return read_results(std::filesystem::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h200-2026-12-04-3/call1/gemm", true);
}

}  // namespace tiletune::shipped
