// The tuning database's user side at scale (issue 41): compact records and --full,
// db list's filters and limit, db show, db vacuum.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace {
std::vector<std::string> recorded_bf16_nt() {
  std::vector<std::string> files;
  const fs::path dir = fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm";
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find("bf16-nt.json") != std::string::npos) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}
}  // namespace

TEST(db_scale_cli, list_filters_show_compact_or_full_records_and_vacuum) {
  const auto files = recorded_bf16_nt();
  ASSERT_GE(files.size(), 3u);
  const fs::path compact = tmp_dir() / "dbscale-compact.sqlite3", full = tmp_dir() / "dbscale-full.sqlite3";
  fs::remove(compact);
  fs::remove(full);
  std::vector<std::string> import = {"db", "import", "--db", compact.string()};
  import.insert(import.end(), files.begin(), files.end());
  ASSERT_EQ(run(import).code, 0);
  import[3] = full.string();
  import.push_back("--full");
  ASSERT_EQ(run(import).code, 0);

  // db list: the newest N, and the words of a problem as the table prints it.
  auto r = run({"db", "list", "--db", compact.string(), "--limit", "2", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["records"].size(), 2u);
  const std::size_t stored = j["matching"].get<std::size_t>();  // files of one problem share a record
  EXPECT_GE(stored, 3u);
  EXPECT_LE(stored, files.size());
  r = run({"db", "list", "--db", compact.string(), "--problem", "4096x4096x4096 bf16 nt"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(": 1 record(s)"), std::string::npos) << r.out;
  r = run({"db", "list", "--db", compact.string(), "--since", "2099-01-01"});
  EXPECT_NE(r.out.find(": 0 record(s)"), std::string::npos) << r.out;

  // db show: a few rows of a compact record, every row of a full one.
  r = run({"db", "show", "--db", compact.string(), "--problem", "4096x4096x4096 bf16 nt", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["records"].size(), 1u);
  const auto& kept = j["records"][0];
  EXPECT_LE(kept["variants"].size(), 4u);
  const std::size_t total = kept["variants_listed"]["of"].get<std::size_t>();
  EXPECT_GT(total, kept["variants"].size());
  EXPECT_EQ(kept["variants"][0]["id"], kept["recommendation"]["id"]);
  r = run({"db", "show", "--db", full.string(), "--problem", "4096x4096x4096 bf16 nt", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["records"][0]["variants"].size(), total);
  r = run({"db", "show", "--db", compact.string(), "--problem", "4096x4096x4096 bf16 nt"});
  EXPECT_NE(r.out.find("(stored without --db-full)"), std::string::npos) << r.out;
  EXPECT_EQ(run({"db", "show", "--db", compact.string()}).code, 2);  // --problem is required

  // vacuum keeps every record.
  r = run({"db", "vacuum", "--db", compact.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(std::to_string(stored) + " record(s)"), std::string::npos) << r.out;
  EXPECT_EQ(run({"gemm", "--gpu", "h100-sxm", "--m", "64", "--n", "64", "--k", "64", "--no-db", "--db-full"}).code, 2);
}
