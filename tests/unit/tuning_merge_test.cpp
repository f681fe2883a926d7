#include "core/tune/fleet/tuning_merge.hpp"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/iso_date.hpp"

#include "core/errors.hpp"

using namespace tiletune;
namespace fs = std::filesystem;

namespace {

struct merge_scratch {
  fs::path dir = fs::temp_directory_path() / ("tiletune-merge-" + std::to_string(getpid()));
  merge_scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~merge_scratch() { fs::remove_all(dir); }
};

// A record of problem m x 256 x 256; verified: its recommended variant has a max_rel_error.
tuning_record merge_record(std::int64_t m, const std::string& at, bool verified, const std::string& mode = "measured") {
  tuning_record r;
  r.key.device_model = "h100-sxm";
  r.key.driver = mode == "measured" ? "580.1" : predicted_driver;
  r.key.cuda = mode == "measured" ? "13.0" : predicted_driver;
  r.key.tool_version = "0.1.0";
  r.key.compiler = "nvrtc 13.0";
  r.key.problem.m = m;
  r.key.problem.n = r.key.problem.k = 256;
  r.key.problem.type = dtype::bf16;
  r.measured_at = at;
  r.recommended = "mma_x";
  nlohmann::json v = {{"id", "mma_x"}, {"status", "ok"}};
  if (verified) v["max_rel_error"] = 0.001;
  r.result = {{"problem", to_json(r.key.problem)}, {"mode", mode}, {"variants", nlohmann::json::array({v})}};
  return r;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_refused(const std::vector<fs::path>& inputs, const fs::path& into, const fs::path& named) {
  const bool existed = fs::exists(into);
  const std::string before = existed ? bytes_of(into) : "";
  try {
    merge_tuning_dbs(inputs, into);
    ADD_FAILURE() << "merged " << named;
  } catch (const environment_error& e) {
    EXPECT_NE(std::string(e.what()).find(named.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(fs::exists(into), existed);
  if (existed) {
    EXPECT_EQ(bytes_of(into), before) << "the target changed";
  }
  for (const auto& f : fs::directory_iterator(into.parent_path()))
    EXPECT_EQ(f.path().string().find(".merge-"), std::string::npos) << "left " << f.path();
}

// Runs work(0..n-1) in n child processes at once and expects each to finish without an exception.
void in_child_processes(int n, const std::function<void(int)>& work, const std::string& what) {
  std::vector<pid_t> kids;
  for (int w = 0; w < n; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        work(w);
        _exit(0);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s, process %d: %s\n", what.c_str(), w, e.what());
        _exit(1);
      }
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int status = 0;
    waitpid(k, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << what;
  }
}

}  // namespace

TEST(tuning_merge, keeps_the_better_verified_then_the_newer_record_per_key) {
  const std::vector<std::vector<tuning_record>> in = {
      {merge_record(16, "2026-11-20T00:00:00Z", true), merge_record(32, "2026-11-20T00:00:00Z", false),
       merge_record(48, "2026-11-20T00:00:00Z", true)},
      {merge_record(16, "2026-11-23T00:00:00Z", false),  // newer but unverified: loses
       merge_record(32, "2026-11-23T00:00:00Z", false),  // same rank, newer: wins
       merge_record(48, "2026-11-19T00:00:00Z", true),   // same rank, older: loses
       merge_record(64, "2026-11-23T00:00:00Z", false, "predicted")}};
  std::vector<std::size_t> kept;
  const auto best = pick_best(in, &kept);
  ASSERT_EQ(best.size(), 4u);
  EXPECT_EQ(best[0].measured_at, "2026-11-20T00:00:00Z");  // m 16, verified
  EXPECT_EQ(best[1].measured_at, "2026-11-23T00:00:00Z");  // m 32, newer
  EXPECT_EQ(best[2].measured_at, "2026-11-20T00:00:00Z");  // m 48, newer of the verified
  EXPECT_EQ(kept, (std::vector<std::size_t>{2, 2}));
  EXPECT_EQ(verification_rank(merge_record(1, "", true)), 2);
  EXPECT_EQ(verification_rank(merge_record(1, "", false)), 1);
  EXPECT_EQ(verification_rank(merge_record(1, "", true, "predicted")), 0);
  // A recommended variant past its own error bound (a merged record of an edited file) ranks lowest.
  tuning_record past_bound = merge_record(1, "", true);
  for (auto& v : past_bound.result["variants"])
    if (v.value("id", "") == past_bound.recommended) v["error_bound"] = 0.5 * v["max_rel_error"].get<double>();
  EXPECT_EQ(verification_rank(past_bound), 0);
  EXPECT_TRUE(better_record(merge_record(1, "2000", false), merge_record(1, "2099", true, "predicted")));
}

TEST(tuning_merge, merges_shard_databases_and_an_existing_target_atomically) {
  merge_scratch s;
  const fs::path a = s.dir / "a.sqlite", b = s.dir / "b.sqlite", out = s.dir / "out.sqlite";
  tuning_db(a).store_all(
      {merge_record(16, "2026-11-20T00:00:00Z", true), merge_record(32, "2026-11-20T00:00:00Z", true)});
  tuning_db(b).store_all(
      {merge_record(16, "2026-11-23T00:00:00Z", true), merge_record(48, "2026-11-21T00:00:00Z", false)});
  tuning_db(out).store(merge_record(64, "2026-11-01T00:00:00Z", true, "predicted"));
  const auto summary = merge_tuning_dbs({a, b}, out);
  EXPECT_EQ(summary.records, 4u);
  EXPECT_EQ(summary.duplicates, 1u);
  ASSERT_EQ(summary.inputs.size(), 3u);  // the target first, then the inputs
  EXPECT_EQ(summary.inputs[0].file, out);
  const auto merged = tuning_db(out, tuning_db::open_mode::existing).list();
  ASSERT_EQ(merged.size(), 4u);
  EXPECT_EQ(merged.front().measured_at, "2026-11-23T00:00:00Z");  // m 16: b's newer record
  EXPECT_EQ(merged.front().key.problem.m, 16);
  for (const char* suffix : {"-wal", "-journal"}) EXPECT_FALSE(fs::exists(out.string() + suffix)) << suffix;
  // A missing input is bad input, before anything is read.
  EXPECT_THROW(merge_tuning_dbs({a, s.dir / "none.sqlite"}, out), usage_error);
  // A folder or an empty file given as an input is named as one, and the refusal says nothing merged.
  try {
    merge_tuning_dbs({a, s.dir}, out);
    ADD_FAILURE() << "a folder merged";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file (a folder; refused: nothing was merged)"), std::string::npos)
        << e.what();
  }
  const fs::path empty = s.dir / "empty.sqlite";
  std::ofstream{empty};
  try {
    merge_tuning_dbs({a, empty}, out);
    ADD_FAILURE() << "an empty file merged";
  } catch (const environment_error& e) {
    EXPECT_NE(std::string(e.what()).find("empty.sqlite is empty (0 bytes): not a tiletune tuning database yet"),
              std::string::npos)
        << e.what();
  }
}

// Dates compare in time order whatever form of ISO 8601 a file wrote: "T10:00Z" sorts after
// "T10:00:30Z" as text, so the older record had been kept by import and merge and --since "T09:23Z"
// had left out the records of 09:23:38.
TEST(tuning_merge, dates_written_in_any_accepted_form_compare_in_time_order) {
  EXPECT_EQ(canonical_iso_date("2026-11-23T10:00Z"), "2026-11-23T10:00:00Z");
  EXPECT_EQ(canonical_iso_date("2026-11-23T10:00"), "2026-11-23T10:00:00Z");
  EXPECT_EQ(canonical_iso_date("2026-11-23"), "2026-11-23T00:00:00Z");
  EXPECT_EQ(canonical_iso_date("2026-11-23T10:00:30Z"), "2026-11-23T10:00:30Z");
  EXPECT_EQ(canonical_iso_date("not a date"), "not a date");
  EXPECT_TRUE(better_record(merge_record(16, "2026-11-23T10:00:30Z", true), merge_record(16, "2026-11-23T10:00Z", true)));
  EXPECT_FALSE(better_record(merge_record(16, "2026-11-23T10:00Z", true), merge_record(16, "2026-11-23T10:00:30Z", true)));
  merge_scratch s;
  const fs::path a = s.dir / "a.sqlite", b = s.dir / "b.sqlite", out = s.dir / "out.sqlite";
  tuning_db(a).store(merge_record(16, "2026-11-23T10:00:30Z", true));
  tuning_db(b).store(merge_record(16, "2026-11-23T10:00Z", true));
  for (const auto& inputs : {std::vector<fs::path>{a, b}, std::vector<fs::path>{b, a}}) {
    fs::remove(out);
    merge_tuning_dbs(inputs, out);
    const auto merged = tuning_db(out, tuning_db::open_mode::existing).list();
    ASSERT_EQ(merged.size(), 1u);
    EXPECT_EQ(merged[0].measured_at, "2026-11-23T10:00:30Z");
  }
  tuning_db(out).store(merge_record(32, "2026-11-23T09:23:38Z", true));
  EXPECT_EQ(tuning_db(out).records({"", "", "2026-11-23T09:23Z", 0}).size(), 2u);
  EXPECT_EQ(tuning_db(out).records({"", "", "2026-11-23T10:01", 0}).size(), 0u);
}

// --problem takes a problem as db list prints it (gemm_problem::describe) as well as the key's words:
// "batch 8" had matched nothing, its key word being b8, and b8 alone also matches a beta of 8.
TEST(tuning_merge, a_problem_as_db_list_prints_it_finds_its_record) {
  merge_scratch s;
  const fs::path db = s.dir / "p.sqlite";
  tuning_record batched = merge_record(1024, "2026-11-20T00:00:00Z", true), scaled = batched, beta8 = batched;
  batched.key.problem.batch = 8;
  scaled.key.problem.alpha = 0.5;
  scaled.key.problem.beta = 1;
  beta8.key.problem.beta = 8;
  for (tuning_record* r : {&batched, &scaled, &beta8}) r->result["problem"] = to_json(r->key.problem);
  tuning_db(db).store_all({batched, scaled, beta8});
  auto found = [&](const std::string& words) {
    std::vector<std::string> out;
    for (const auto& r : tuning_db(db).records({"", words, "", 0})) out.push_back(r.key.problem.describe());
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(found(batched.key.problem.describe()), std::vector<std::string>{batched.key.problem.describe()});
  EXPECT_EQ(found(scaled.key.problem.describe()), std::vector<std::string>{scaled.key.problem.describe()});
  EXPECT_EQ(found("batch 8"), std::vector<std::string>{batched.key.problem.describe()});
  EXPECT_EQ(found("alpha 1 beta 8"), std::vector<std::string>{beta8.key.problem.describe()});
  EXPECT_EQ(found("b8").size(), 2u);  // the key's words: batch 8 and beta 8 both read b8
  EXPECT_EQ(found("1024x256x256 bf16 nn").size(), 3u);
}

TEST(tuning_merge, refuses_a_damaged_foreign_or_other_schema_database_and_leaves_the_target) {
  merge_scratch s;
  const fs::path good = s.dir / "good.sqlite", out = s.dir / "out.sqlite";
  {
    tuning_db g(good);
    std::vector<tuning_record> many;
    for (int i = 1; i <= 200; ++i) many.push_back(merge_record(16 * i, "2026-11-20T00:00:00Z", true));
    g.store_all(many);
  }
  tuning_db(out).store(merge_record(8, "2026-11-20T00:00:00Z", true));
  // Damaged: pages past the first overwritten with garbage.
  const fs::path damaged = s.dir / "damaged.sqlite";
  fs::copy_file(good, damaged);
  ASSERT_GT(fs::file_size(damaged), 3 * 4096u);
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 + 100);
    const std::string junk(2 * 4096, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  expect_refused({good, damaged}, out, damaged);
  // Truncated to half.
  const fs::path cut = s.dir / "cut.sqlite";
  fs::copy_file(good, cut);
  fs::resize_file(cut, fs::file_size(cut) / 2);
  expect_refused({cut, good}, out, cut);
  // Not a database at all.
  const fs::path text = s.dir / "text.sqlite";
  std::ofstream(text) << "{\"schema\": \"tiletune.gemm/1\"}\n";
  expect_refused({good, text}, out, text);
  // Another program's SQLite database.
  const fs::path foreign = s.dir / "foreign.sqlite";
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &h), SQLITE_OK);
  sqlite3_exec(h, "CREATE TABLE t (x); INSERT INTO t VALUES (1)", nullptr, nullptr, nullptr);
  sqlite3_close(h);
  expect_refused({good, foreign}, out, foreign);
  // A tiletune database of another schema.
  const fs::path newer = s.dir / "newer.sqlite";
  fs::copy_file(good, newer);
  ASSERT_EQ(sqlite3_open(newer.c_str(), &h), SQLITE_OK);
  sqlite3_exec(h, "UPDATE tiletune_meta SET value = 'tiletune.tuning-db/99' WHERE key = 'schema'", nullptr, nullptr,
               nullptr);
  sqlite3_close(h);
  expect_refused({good, newer}, out, newer);
  try {  // db merge has no --db: the message names none
    merge_tuning_dbs({good, newer}, out);
  } catch (const environment_error& e) {
    EXPECT_EQ(std::string(e.what()).find("--db"), std::string::npos) << e.what();
  }
  // Whole pages, but a stored record or calibration that does not decompress: refused before the
  // target is opened, so a missing target is not created.
  for (const char* column : {"record", "calibration"}) {
    const fs::path blob = s.dir / fmt::format("bad-{}.sqlite", column);
    fs::copy_file(good, blob);
    ASSERT_EQ(sqlite3_open(blob.c_str(), &h), SQLITE_OK);
    const std::string sql = fmt::format("UPDATE results SET {} = x'00112233' WHERE rowid = 7", column);
    ASSERT_EQ(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(h);
    expect_refused({good, blob}, out, blob);
    expect_refused({good, blob}, s.dir / "new-target.sqlite", blob);
  }
  // A stored problem that is not one (its column, or the record's): refused the same way; the target
  // kept no record that db list and export would then refuse. Their messages name the file too.
  for (const char* sql : {"UPDATE results SET problem_json = '{bad' WHERE rowid = 7",
                          "UPDATE results SET problem_json = '{\"m\": 1}' WHERE rowid = 7"}) {
    const fs::path bad = s.dir / "bad-problem.sqlite";
    fs::remove(bad);
    fs::copy_file(good, bad);
    ASSERT_EQ(sqlite3_open(bad.c_str(), &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h, sql, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(h);
    expect_refused({good, bad}, out, bad);
    expect_refused({good, bad}, s.dir / "new-target.sqlite", bad);
    for (const auto& read : std::vector<std::function<void()>>{
             [&] { tuning_db(bad, tuning_db::open_mode::read).for_each_row({}, [](const tuning_row&) {}); },
             [&] { (void)tuning_db(bad, tuning_db::open_mode::read).best_per_problem(""); }}) {
      try {
        read();
        ADD_FAILURE() << "read " << sql;
      } catch (const environment_error& e) {
        EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
      }
    }
  }
  {
    const fs::path bad = s.dir / "bad-record-problem.sqlite";
    fs::copy_file(good, bad);
    {
      tuning_db b(bad);
      tuning_record r = merge_record(16, "2026-11-21T00:00:00Z", true);
      r.result["problem"] = "not a problem";
      b.store(r);
    }
    expect_refused({good, bad}, out, bad);
  }
  // A damaged target is refused too (it would be one of the inputs).
  fs::copy_file(damaged, s.dir / "bad-target.sqlite");
  expect_refused({good}, s.dir / "bad-target.sqlite", s.dir / "bad-target.sqlite");
  // Opening an input changes nothing in it.
  const std::string before = bytes_of(foreign);
  EXPECT_THROW(tuning_db(foreign, tuning_db::open_mode::existing), environment_error);
  EXPECT_EQ(bytes_of(foreign), before);
}

// Several merges into one target that does not exist yet: one creates it, the others find it
// whole (a file switched to WAL before its schema was written read as "not a tiletune database").
TEST(tuning_merge, concurrent_merges_create_one_new_target) {
  merge_scratch s;
  const fs::path in = s.dir / "in.sqlite";
  {
    tuning_db db(in);
    for (int i = 1; i <= 5; ++i) db.store(merge_record(16 * i, "2026-11-20T00:00:00Z", true));
  }
  for (int round = 0; round < 8; ++round) {
    const fs::path out = s.dir / fmt::format("new-{}.sqlite", round);
    in_child_processes(4, [&](int) { merge_tuning_dbs({in}, out); }, "merge round " + std::to_string(round));
    EXPECT_EQ(tuning_db(out, tuning_db::open_mode::read).list().size(), 5u);
  }
}

TEST(tuning_merge, concurrent_writers_and_a_killed_writer_leave_mergeable_databases) {
  merge_scratch s;
  const fs::path shared = s.dir / "shared.sqlite", killed = s.dir / "killed.sqlite", out = s.dir / "out.sqlite";
  // Four processes store 25 records each into one database at once (WAL and the busy timeout queue them).
  in_child_processes(4, [&](int w) {
    tuning_db db(shared);
    for (int i = 0; i < 25; ++i) db.store(merge_record(16 * (w * 25 + i + 1), "2026-11-20T00:00:00Z", true));
  }, "writers");
  EXPECT_EQ(tuning_db(shared, tuning_db::open_mode::existing).list().size(), 100u);
  // A writer killed (SIGKILL) in the middle of storing: what it committed is there, the file is whole.
  { tuning_db create(killed); }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    tuning_db db(killed);
    for (int i = 1;; ++i) db.store(merge_record(16 * i, "2026-11-21T00:00:00Z", false));
  }
  for (int tries = 0; tries < 500; ++tries) {
    usleep(10000);
    if (tuning_db(killed, tuning_db::open_mode::existing).list().size() >= 20) break;
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  const auto stored = tuning_db(killed, tuning_db::open_mode::existing).list().size();
  EXPECT_GE(stored, 20u);
  // Resumed: the same writer goes on where it stopped (INSERT OR REPLACE of the same keys is harmless).
  {
    tuning_db db(killed);
    for (int i = 1; i <= static_cast<int>(stored) + 5; ++i)
      db.store(merge_record(16 * i, "2026-11-21T00:00:00Z", false));
  }
  const auto summary = merge_tuning_dbs({shared, killed}, out);
  // m = 16..1600 from the shared one (verified) and 16..16*(stored+5) from the killed one (unverified).
  EXPECT_EQ(summary.records, std::max<std::size_t>(100, stored + 5));
  for (const auto& r : tuning_db(out, tuning_db::open_mode::existing).list())
    if (r.key.problem.m <= 1600) {
      EXPECT_EQ(verification_rank(r), 2) << r.key.problem.m;
    }
}

// Issue 39: db merge built a temporary file and renamed it over the target, so a
// record another run committed to the target meanwhile was lost. The merge now
// holds the target's write lock: a writer racing it waits, and loses nothing.
TEST(tuning_merge, a_writer_racing_a_slow_merge_loses_no_record) {
  merge_scratch s;
  const fs::path big = s.dir / "big.sqlite", small = s.dir / "small.sqlite", target = s.dir / "target.sqlite";
  // Inputs large enough that the merge takes a while (each record's whole result kept, ~8 KB).
  const std::string padding(8000, 'p');
  std::vector<tuning_record> many;
  for (int i = 1; i <= 1500; ++i) {
    auto r = merge_record(16 * i, "2026-11-20T00:00:00Z", true);
    r.result["padding"] = padding;
    many.push_back(std::move(r));
  }
  {
    tuning_db b(big);
    b.keep_full_results(true);
    b.store_all(many);
  }
  tuning_db(small).store_all(
      {merge_record(8, "2026-11-22T00:00:00Z", true), merge_record(16, "2026-11-23T00:00:00Z", true)});
  tuning_db(target).store(merge_record(4, "2026-11-01T00:00:00Z", true));

  // The writer: runs storing records (keys of their own) into the target, each opening it,
  // storing one record (one transaction) and closing it, before, during and after the merge.
  // It counts what it committed, and the stores whose time overlapped the merge's
  // (begun before the merge ended, ended after it began: each either committed
  // just before the merge took the lock or waited for it).
  std::atomic<bool> merging{false}, merged{false}, failed{false};
  std::atomic<int> committed{0}, during{0};
  std::thread writer([&] {
    try {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      int after = 0;
      for (int i = 1; after < 20 && std::chrono::steady_clock::now() < give_up; ++i) {
        const bool was_merged = merged.load();
        tuning_db(target).store(merge_record(1'000'000 + i, "2026-11-24T00:00:00Z", false));
        committed = i;
        if (!was_merged && merging.load()) ++during;
        if (was_merged) ++after;
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the writer failed: " << e.what();
      failed = true;
    }
  });
  while (committed < 5 && !failed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  merging = true;
  const auto started = std::chrono::steady_clock::now();
  merge_summary summary;
  try {
    summary = merge_tuning_dbs({big, small}, target);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the merge failed: " << e.what();
  }
  const auto took = std::chrono::steady_clock::now() - started;
  merged = true;
  writer.join();
  ASSERT_FALSE(failed);
  EXPECT_LT(took, std::chrono::seconds(15));
  // Every record the writer committed, before, during or after the merge, is in the target.
  const auto all = tuning_db(target, tuning_db::open_mode::existing).list();
  std::set<std::int64_t> ms;
  for (const auto& r : all) ms.insert(r.key.problem.m);
  int lost = 0;
  for (int i = 1; i <= committed; ++i) lost += ms.count(1'000'000 + i) ? 0 : 1;
  EXPECT_EQ(lost, 0) << "of " << committed << " committed by the writer (" << during << " while the merge ran)";
  // And the merge itself: every key of the inputs, m 16 from small (newer, as verified).
  for (int i = 1; i <= 1500; ++i) EXPECT_TRUE(ms.count(16 * i)) << 16 * i;
  EXPECT_TRUE(ms.count(8) && ms.count(4));
  for (const auto& r : all)
    if (r.key.problem.m == 16) {
      EXPECT_EQ(r.measured_at, "2026-11-23T00:00:00Z");
    }
  EXPECT_EQ(all.size(), 1500u + 2u + static_cast<std::size_t>(committed.load()));
  ASSERT_FALSE(summary.inputs.empty());
  EXPECT_EQ(summary.inputs.front().file, target);
  // The race was real: the writer committed while the merge was running.
  EXPECT_GT(during, 0) << "the merge took " << std::chrono::duration<double>(took).count() << " s";
}

// The target named as an input too is the target (one copy of its records), and
// the merge goes into a database another connection holds open (WAL and all).
TEST(tuning_merge, merges_into_a_target_that_is_open_and_named_as_an_input) {
  merge_scratch s;
  const fs::path a = s.dir / "a.sqlite", target = s.dir / "target.sqlite";
  tuning_db(a).store_all({merge_record(16, "2026-11-20T00:00:00Z", true)});
  tuning_db open(target);
  open.store(merge_record(32, "2026-11-20T00:00:00Z", true));
  const fs::path link = s.dir / "link.sqlite";
  fs::create_symlink(target, link);
  const auto summary = merge_tuning_dbs({a, link}, target);
  ASSERT_EQ(summary.inputs.size(), 2u);
  EXPECT_EQ(summary.records, 2u);
  EXPECT_EQ(summary.duplicates, 0u);
  EXPECT_EQ(open.list().size(), 2u);  // the open connection sees the merge
}
