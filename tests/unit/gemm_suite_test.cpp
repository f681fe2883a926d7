#include "core/gemm/gemm_suite.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "core/errors.hpp"

using namespace tiletune;

namespace {
std::string suite_error_of(const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("tiletune-suite-" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << text;
  std::string message;
  try {
    load_suite(path);
  } catch (const usage_error& e) {
    message = e.what();
  }
  std::filesystem::remove(path);
  return message;
}
}  // namespace

TEST(suite, the_shipped_suites_load) {
  for (const char* name : {"llm", "squares", "skinny"}) {
    const auto s = load_suite(std::filesystem::path(TILETUNE_SOURCE_DIR) / "profiles/suites" / (std::string(name) + ".json"));
    EXPECT_EQ(s.name, name);
    EXPECT_GE(s.problems.size(), 7u);
  }
}

TEST(suite, a_bad_problem_is_named) {
  EXPECT_NE(suite_error_of(R"({"schema": "tiletune.suite/1", "problems": [
      {"name": "good", "m": 8, "n": 8, "k": 8, "dtype": "f32"},
      {"name": "bad", "m": 0, "n": 8, "k": 8, "dtype": "f32"}]})").find("problem 1 (\"bad\")"),
            std::string::npos);
  EXPECT_NE(
      suite_error_of(R"({"schema": "tiletune.suite/1", "problems": [{"name": "x", "m": 8, "n": 8, "dtype": "f32"}]})")
          .find("\"x\""),
      std::string::npos);
  EXPECT_NE(suite_error_of(R"({"schema": "tiletune.suite/1", "problems": []})").find("non-empty"), std::string::npos);
  EXPECT_NE(suite_error_of(R"({"problems": []})").find("not a suite"), std::string::npos);
  EXPECT_NE(suite_error_of(R"({"schema": "tiletune.suite/1", "problems": [
      {"name": "a", "m": 8, "n": 8, "k": 8, "dtype": "f32"}, {"name": "a", "m": 9, "n": 8, "k": 8, "dtype": "f32"}]})")
                .find("twice"),
            std::string::npos);
  // A misspelt top-level key, and a size past int64 (JSON reads it unsigned; it wrapped to -1).
  EXPECT_NE(suite_error_of(R"({"schema": "tiletune.suite/1", "problem": [], "problems": [
      {"name": "a", "m": 8, "n": 8, "k": 8, "dtype": "f32"}]})")
                .find("unknown key \"problem\""),
            std::string::npos);
  EXPECT_NE(suite_error_of(R"({"schema": "tiletune.suite/1", "problems": [
      {"name": "a", "m": 18446744073709551615, "n": 8, "k": 8, "dtype": "f32"}]})")
                .find("\"m\": 18446744073709551615 is larger than any GEMM's"),
            std::string::npos);
}

// A problem that names no layout takes gemm's default, nt (x @ W.T), as --layout does.
TEST(suite, a_problem_without_a_layout_is_nt_as_gemm_defaults) {
  const auto path = std::filesystem::temp_directory_path() / ("tiletune-suite-nt-" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << R"({"schema": "tiletune.suite/1", "problems": [
      {"name": "plain", "m": 8, "n": 8, "k": 8, "dtype": "bf16"},
      {"name": "nn", "m": 8, "n": 8, "k": 8, "dtype": "bf16", "layout": "nn"}]})";
  const gemm_suite s = load_suite(path);
  std::filesystem::remove(path);
  ASSERT_EQ(s.problems.size(), 2u);
  EXPECT_EQ(s.problems[0].problem.layout.name(), "nt");
  EXPECT_EQ(s.problems[1].problem.layout.name(), "nn");
}

// validate() words its refusals for gemm's flags; a suite's refusal names the field the file holds.
TEST(suite, a_refused_value_is_named_by_its_field_not_a_flag) {
  const std::string out = suite_error_of(R"({"schema": "tiletune.suite/1", "problems": [
      {"name": "a", "m": 8, "n": 8, "k": 8, "dtype": "bf16", "out_dtype": "f32"}]})");
  EXPECT_NE(out.find("\"out_dtype\": f32 is not offered for dtype bf16"), std::string::npos) << out;
  EXPECT_EQ(out.find("--"), std::string::npos) << out;
  const std::string batch = suite_error_of(R"({"schema": "tiletune.suite/1", "problems": [
      {"name": "a", "m": 8, "n": 8, "k": 8, "batch": 70000, "dtype": "bf16"}]})");
  EXPECT_NE(batch.find("\"batch\": 70000 is too large"), std::string::npos) << batch;
}
