// Tuning a suite on many machines: gemm --shard, --store-plans, db merge and db export, end to end.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace {

// Starts tiletune in the background, its output in files named after `tag`.
pid_t start(std::vector<std::string> args, const std::string& tag) {
  return spawn(binary_path(), std::move(args), tmp_dir() / (tag + ".out"), tmp_dir() / (tag + ".err"));
}

result finish(pid_t pid, const std::string& tag) {
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(tmp_dir() / (tag + ".out")),
          slurp(tmp_dir() / (tag + ".err"))};
}

// Five small f32 problems (simt: quick to compile offline).
fs::path small_suite() {
  const fs::path suite = tmp_dir() / "fleet-suite.json";
  std::ofstream(suite) << R"({"schema": "tiletune.suite/1", "name": "fleet", "problems": [
      {"name": "a", "m": 64, "n": 64, "k": 64, "dtype": "f32", "layout": "nn"},
      {"name": "b", "m": 96, "n": 64, "k": 64, "dtype": "f32", "layout": "nn"},
      {"name": "c", "m": 128, "n": 64, "k": 64, "dtype": "f32", "layout": "nn"},
      {"name": "d", "m": 64, "n": 128, "k": 64, "dtype": "f32", "layout": "nn"},
      {"name": "e", "m": 64, "n": 64, "k": 128, "dtype": "f32", "layout": "nn"}]})";
  return suite;
}

std::vector<std::string> shard_args(const fs::path& suite, const std::string& shard, const fs::path& db,
                                    const fs::path& out) {
  return {"gemm",         "--suite", suite.string(), "--gpu", "h100-sxm", "--dry-run", "--shard", shard,
          "--store-plans", "--db",   db.string(),    "--out", out.string(), "--quiet"};
}

std::size_t records_in(const fs::path& db) {
  const result r = run({"db", "list", "--db", db.string(), "--json"});
  if (r.code != 0) return 0;
  return nlohmann::json::parse(r.out)["records"].size();
}

}  // namespace

TEST(fleet_cli, a_bad_shard_exits_2_naming_it) {
  const fs::path suite = small_suite(), out = tmp_dir() / "never.json";
  for (const char* bad : {"3/3", "-1/3", "1/0", "x/2", "1"}) {
    const result r = run({"gemm", "--suite", suite.string(), "--gpu", "h100-sxm", "--shard", bad, "--no-db", "--out",
                          out.string()});
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("--shard ") + bad), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
  const result no_suite = run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--shard", "0/2"});
  EXPECT_EQ(no_suite.code, 2);
  EXPECT_NE(no_suite.err.find("--suite"), std::string::npos) << no_suite.err;
  EXPECT_EQ(run({"gemm", "--suite", suite.string(), "--gpu", "h100-sxm", "--store-plans", "--no-db"}).code, 2);
}

// An offline shard that no problem hashes to is a predicted result, as every other offline shard is
// (it said "measured", so compare refused it beside its siblings and report called it timed).
TEST(fleet_cli, an_empty_offline_shard_is_predicted) {
  const fs::path suite = small_suite();
  int empty = 0;
  for (int i = 0; i < 8; ++i) {
    const result r = run({"gemm", "--suite", suite.string(), "--gpu", "h100-sxm", "--no-db", "--shard",
                          std::to_string(i) + "/8", "--json", "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["mode"], "predicted") << i;
    empty += j["results"].empty();
  }
  EXPECT_GT(empty, 0);  // five problems over eight shards: some shard is empty
}

TEST(fleet_cli, shards_of_an_offline_suite_run_at_once_merge_and_answer_every_problem) {
  const fs::path suite = small_suite(), dir = tmp_dir() / "shards";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Three shards at once, each with its own database, and three more into one shared database.
  std::vector<pid_t> pids;
  for (int i = 0; i < 3; ++i) {
    const std::string s = std::to_string(i);
    pids.push_back(start(shard_args(suite, s + "/3", dir / ("shard-" + s + ".sqlite"), dir / ("shard-" + s + ".json")),
                         "shard" + s));
    pids.push_back(start(shard_args(suite, s + "/3", dir / "shared.sqlite", dir / ("shared-" + s + ".json")),
                         "shared" + s));
  }
  for (std::size_t p = 0; p < pids.size(); ++p) {
    const std::string tag = (p % 2 ? "shared" : "shard") + std::to_string(p / 2);
    const result r = finish(pids[p], tag);
    ASSERT_EQ(r.code, 0) << tag << ": " << r.err;
  }
  // Every problem in exactly one shard.
  std::multiset<std::string> names;
  for (int i = 0; i < 3; ++i) {
    const auto j = nlohmann::json::parse(slurp(dir / ("shard-" + std::to_string(i) + ".json")));
    EXPECT_EQ(j["shard"]["index"], i);
    EXPECT_EQ(j["shard"]["of"], 5);
    for (const auto& r : j["results"]) names.insert(r["name"].get<std::string>());
  }
  EXPECT_EQ(names, (std::multiset<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(records_in(dir / "shared.sqlite"), 5u) << "concurrent writers of one database lost a plan";
  // Merged, the database answers every problem of the suite.
  const fs::path merged = dir / "merged.sqlite";
  const result m = run({"db", "merge", (dir / "shard-0.sqlite").string(), (dir / "shard-1.sqlite").string(),
                        (dir / "shard-2.sqlite").string(), (dir / "shared.sqlite").string(), "--into",
                        merged.string()});
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("into " + merged.string() + ": 5 record(s)"), std::string::npos) << m.out;
  const result again = run({"gemm", "--suite", suite.string(), "--gpu", "h100-sxm", "--dry-run", "--store-plans",
                            "--db", merged.string(), "--json", "--quiet"});
  ASSERT_EQ(again.code, 0) << again.err;
  const auto j = nlohmann::json::parse(again.out);
  ASSERT_EQ(j["results"].size(), 5u);
  for (const auto& r : j["results"]) {
    EXPECT_EQ(r["tuning_db"]["answered"], true) << r["name"];
    EXPECT_EQ(r["tuning_db"]["match"], "stored_plan") << r["name"];
    EXPECT_EQ(r["tuning_db"]["strategy"], "model") << r["name"];  // no search ran: the model ranked them
    EXPECT_EQ(r["mode"], "predicted");
  }
  // One problem answered by its stored plan: the table lists the predicted rows, says it was
  // planned (not measured) and keeps the recommendation's TFLOP/s.
  const result one = run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "f32", "--layout", "nn", "--gpu",
                          "h100-sxm", "--dry-run", "--store-plans", "--db", merged.string(), "--top", "2"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("PREDICTED (a stored plan)"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("by --store-plans"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("measured 20"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("predicted us"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("\n   1  simt_"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("TFLOP/s predicted"), std::string::npos) << one.out;
  // Without --store-plans a stored plan answers nothing (only measurements do), and it calibrates nothing.
  const auto plain = nlohmann::json::parse(run({"gemm", "--suite", suite.string(), "--gpu", "h100-sxm", "--dry-run",
                                               "--db", merged.string(), "--json", "--quiet"})
                                               .out);
  for (const auto& r : plain["results"]) EXPECT_FALSE(r.contains("tuning_db") && r["tuning_db"]["answered"] == true);
  // Export: one config per problem in each format.
  const result ej = run({"db", "export", "--db", merged.string(), "--format", "json"});
  ASSERT_EQ(ej.code, 0) << ej.err;
  EXPECT_EQ(nlohmann::json::parse(ej.out)["configs"].size(), 5u);
  const fs::path py = dir / "configs.py";
  ASSERT_EQ(run({"db", "export", "--db", merged.string(), "--format", "triton", "--out", py.string()}).code, 0);
  const std::string text = slurp(py);
  std::size_t configs = 0;
  for (std::size_t at = 0; (at = text.find("triton.Config(", at)) != std::string::npos; ++at) ++configs;
  EXPECT_EQ(configs, 5u) << text;
  const result csv = run({"db", "export", "--db", merged.string(), "--format", "cutlass-csv"});
  ASSERT_EQ(csv.code, 0);
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 6) << csv.out;  // header and 5 rows
  EXPECT_NE(csv.out.find(",not_verified,"), std::string::npos) << "a plan is not verified";
  const result bad = run({"db", "export", "--db", merged.string(), "--format", "yaml"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--format yaml"), std::string::npos) << bad.err;
}

TEST(fleet_cli, a_killed_shard_resumes_and_a_damaged_shard_database_is_refused) {
  const fs::path suite = small_suite(), dir = tmp_dir() / "killed";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path db = dir / "shard-0.sqlite";
  // Shard 0/1 is the whole suite; killed once it has stored a plan.
  // Its own empty compile cache, so each problem takes a while and the kill lands mid-suite.
  auto args = shard_args(suite, "0/1", db, dir / "first.json");
  args.insert(args.end(), {"--cache-dir", (dir / "cache").string()});
  const pid_t pid = start(args, "killed");
  std::size_t stored = 0;
  for (int tries = 0; tries < 1200 && (stored = records_in(db)) == 0; ++tries) usleep(50000);
  kill(pid, SIGKILL);
  const result first = finish(pid, "killed");
  ASSERT_GE(stored, 1u);
  if (first.code == 128 + SIGKILL) {
    // The kill may land after the result was written (under a sanitizer the exit itself takes
    // seconds), so a result file may exist, but never a partial one: it is written whole or not at all.
    if (fs::exists(dir / "first.json")) {
      const auto written = nlohmann::json::parse(slurp(dir / "first.json"), nullptr, false);
      ASSERT_FALSE(written.is_discarded()) << "a killed run left a half-written result file";
      EXPECT_EQ(written["results"].size(), 5u) << "a killed run left a partial result file";
    }
  } else {
    std::fprintf(stderr, "note: the shard finished (exit %d) before it was killed\n", first.code);
  }
  auto again = shard_args(suite, "0/1", db, dir / "resumed.json");
  again.insert(again.end(), {"--cache-dir", (dir / "cache").string()});
  const result resumed = run(again);
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  const auto j = nlohmann::json::parse(slurp(dir / "resumed.json"));
  ASSERT_EQ(j["results"].size(), 5u);
  int answered = 0;
  for (const auto& r : j["results"]) answered += r.contains("tuning_db") && r["tuning_db"]["answered"] == true;
  EXPECT_GE(answered, 1) << "the resumed shard planned again what it had stored";
  EXPECT_EQ(records_in(db), 5u);
  // A damaged shard database: exit 3 naming it, and the merged database is not written.
  const fs::path damaged = dir / "damaged.sqlite", merged = dir / "merged.sqlite";
  fs::copy_file(db, damaged);
  fs::resize_file(damaged, 4096 + 512);
  const result m = run({"db", "merge", db.string(), damaged.string(), "--into", merged.string()});
  EXPECT_EQ(m.code, 3) << m.err;
  EXPECT_NE(m.err.find(damaged.string()), std::string::npos) << m.err;
  EXPECT_FALSE(fs::exists(merged));
  const result missing = run({"db", "merge", db.string(), (dir / "none.sqlite").string(), "--into", merged.string()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("none.sqlite"), std::string::npos) << missing.err;
}

// Issue 39: `db --db FILE SUB` is honoured by every subcommand (export ignored it and read the
// default database); merge, which has no use for it, refuses it instead of ignoring it.
TEST(fleet_cli, the_groups_db_option_is_honoured_by_every_db_subcommand) {
  const fs::path dir = tmp_dir() / "group-db";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path db = dir / "group.sqlite", into = dir / "into.sqlite";
  const fs::path measured = fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm";
  const result imp = run({"db", "--db", db.string(), "import", (measured / "4096x4096x4096-bf16-nt.json").string()});
  ASSERT_EQ(imp.code, 0) << imp.err;
  ASSERT_TRUE(fs::exists(db));
  const result list = run({"db", "--db", db.string(), "list", "--json"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_EQ(nlohmann::json::parse(list.out)["records"].size(), 1u);
  const result cal = run({"db", "--db", db.string(), "calibrate", "--gpu", "h100-sxm", "--json"});
  EXPECT_EQ(cal.code, 0) << cal.err;
  const result exp = run({"db", "--db", db.string(), "export", "--format", "json"});
  ASSERT_EQ(exp.code, 0) << exp.err;
  EXPECT_NE(exp.out.find(db.string()), std::string::npos) << exp.out;
  EXPECT_NE(exp.out.find("4096"), std::string::npos) << exp.out;
  const result merge = run({"db", "--db", db.string(), "merge", db.string(), "--into", into.string()});
  EXPECT_EQ(merge.code, 2) << merge.err;
  EXPECT_NE(merge.err.find("--db " + db.string()), std::string::npos) << merge.err;
  EXPECT_FALSE(fs::exists(into));
}

// db import keeps, for each key, the better record whatever the files' order (better verified,
// then newer, as db merge does), and leaves out partial runs (--only), which gemm never stores:
// an --only run of the mma family alone had answered later plans with a kernel 2.7x slower.
// A result whose recommended variant failed its check (an edited file: status ok beside an error past
// its own bound, or marked incorrect) is refused as a whole: it would be stored and exported as the
// answer. The same file's other variants being incorrect is a run's ordinary outcome.
TEST(fleet_cli, import_refuses_a_recommended_variant_past_its_error_bound) {
  const fs::path dir = tmp_dir() / "import-incorrect";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path whole =
      fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm/q_proj-4096x4096x4096-bf16-nt.json";
  for (const bool marked : {false, true}) {
    nlohmann::json j = nlohmann::json::parse(slurp(whole));
    const std::string id = j["recommendation"]["id"];
    for (auto& v : j["variants"])
      if (v["id"] == id) {
        if (marked) v["status"] = "incorrect";
        else v["max_rel_error"] = 10 * v["error_bound"].get<double>();
      }
    const fs::path bad = dir / (marked ? "marked.json" : "past-bound.json"), db = dir / "t.sqlite";
    std::ofstream(bad) << j.dump();
    const result imp = run({"db", "import", "--db", db.string(), whole.string(), bad.string()});
    EXPECT_EQ(imp.code, 2) << imp.err;
    EXPECT_NE(imp.err.find("the recommended variant " + id + " is incorrect"), std::string::npos) << imp.err;
    EXPECT_NE(imp.err.find(bad.string()), std::string::npos) << imp.err;
    EXPECT_FALSE(fs::exists(db)) << "nothing is stored when one file is refused";
  }
}

TEST(fleet_cli, import_keeps_the_better_record_in_any_order_and_leaves_out_partial_runs) {
  const fs::path dir = tmp_dir() / "import-order";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path measured = fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm";
  const fs::path whole = measured / "q_proj-4096x4096x4096-bf16-nt.json";
  const fs::path only = measured / "mma-family-alone-4096x4096x4096-bf16-nt.json";
  // The same run one day later: a copy whose date is newer and whose recommendation is marked.
  nlohmann::json later = nlohmann::json::parse(slurp(whole));
  later["tool"]["date"] = "2026-11-24T09:07:51Z";
  const fs::path newer = dir / "newer.json";
  std::ofstream(newer) << later.dump();
  auto recommended = [&](const fs::path& db) {
    const result show = run({"db", "show", "--db", db.string(), "--problem", "4096x4096x4096 bf16 nt", "--json"});
    EXPECT_EQ(show.code, 0) << show.err;
    const auto records = nlohmann::json::parse(show.out);
    return records.dump();
  };
  for (const bool newer_first : {false, true}) {
    const fs::path db = dir / (newer_first ? "newer-first.sqlite" : "older-first.sqlite");
    std::vector<std::string> args = {"db", "import", "--db", db.string()};
    for (const fs::path& f : newer_first ? std::vector<fs::path>{newer, whole, only}
                                         : std::vector<fs::path>{whole, newer, only})
      args.push_back(f.string());
    const result imp = run(args);
    ASSERT_EQ(imp.code, 0) << imp.err;
    EXPECT_NE(imp.err.find("left out: a partial run (--only)"), std::string::npos) << imp.err;
    EXPECT_NE(imp.out.find("1 partial run(s) left out"), std::string::npos) << imp.out;
    // Two results of one problem and setup leave one record, and the summary says so.
    EXPECT_NE(imp.out.find("1 of the same problem and setup as another result here"), std::string::npos) << imp.out;
    EXPECT_NE(imp.out.find(", 1 record(s) from these files"), std::string::npos) << imp.out;
    const std::string stored = recommended(db);
    EXPECT_NE(stored.find("2026-11-24T09:07:51Z"), std::string::npos) << (newer_first ? "newer first" : "older first");
    EXPECT_EQ(stored.find("mma-only.json"), std::string::npos) << "the --only run was stored";
    // Answered from the database: the whole run's wgmma pick, not the mma family's best.
    const result plan = run({"gemm", "--m", "4096", "--n", "4096", "--k", "4096", "--gpu", "h100-sxm", "--dry-run",
                             "--db", db.string(), "--json"});
    ASSERT_EQ(plan.code, 0) << plan.err;
    EXPECT_EQ(nlohmann::json::parse(plan.out)["recommendation"]["id"].get<std::string>().rfind("wgmma_", 0), 0u)
        << plan.out.substr(0, 400);
  }
  // db show's --limit 0 is all records, as db list's is (it was the default 10).
  const fs::path two = dir / "two.sqlite";
  const result distinct = run({"db", "import", "--db", two.string(), whole.string(),
                               (measured / "k_proj-4096x1024x4096-bf16-nt.json").string()});
  ASSERT_EQ(distinct.code, 0) << distinct.err;
  EXPECT_EQ(distinct.out.find("same problem and setup"), std::string::npos) << distinct.out;
  auto shown = [&](const char* limit) {
    const result r = run({"db", "show", "--db", two.string(), "--problem", "bf16 nt", "--limit", limit, "--json"});
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out)["records"].size();
  };
  EXPECT_EQ(shown("1"), 1u);
  EXPECT_EQ(shown("0"), 2u);
  // A run with --only says so in its result ("partial"), which import reads before the command line.
  const result part = run({"gemm", "--m", "256", "--n", "256", "--k", "256", "--gpu", "h100-sxm", "--dry-run",
                           "--only", "wgmma_128x128x64_c1_s5_cl1x1_g8m_tmas", "--no-db", "--json"});
  ASSERT_EQ(part.code, 0) << part.err;
  EXPECT_EQ(nlohmann::json::parse(part.out).value("partial", ""), "--only");
}
