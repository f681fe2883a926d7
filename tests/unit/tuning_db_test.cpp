#include "core/tune/tuning_db/tuning_db.hpp"

#include <filesystem>
#include <functional>
#include <fstream>

#include <map>

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/errors.hpp"

using namespace tiletune;
namespace fs = std::filesystem;

namespace {

struct db_scratch {
  fs::path dir = fs::temp_directory_path() / ("tiletune-db-" + std::to_string(getpid()));
  db_scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~db_scratch() { fs::remove_all(dir); }
};

tuning_record db_record(std::int64_t m, const std::string& driver = "580.1") {
  tuning_record r;
  r.key.device_model = "h100-sxm";
  r.key.driver = driver;
  r.key.cuda = "13.0";
  r.key.tool_version = "0.1.0";
  r.key.compiler = "nvrtc 13.0";
  r.key.problem.m = m;
  r.key.problem.n = r.key.problem.k = 256;
  r.key.problem.type = dtype::bf16;
  r.device_name = "NVIDIA H100 80GB HBM3";
  r.strategy = "halving";
  r.measured_at = "2026-11-22T10:00:00Z";
  r.recommended = "mma_x";
  r.tflops = 100 + static_cast<double>(m);
  r.result = {{"problem", to_json(r.key.problem)}, {"mode", "measured"}, {"variants", nlohmann::json::array()}};
  return r;
}

void expect_environment_error_naming(const fs::path& file, const std::string& words) {
  try {
    tuning_db db(file);
    FAIL() << "opened " << file;
  } catch (const environment_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    EXPECT_NE(what.find(words), std::string::npos) << what;
  }
}

}  // namespace

TEST(tuning_db, stores_and_finds_by_the_full_key_and_by_device_model) {
  db_scratch s;
  const fs::path file = s.dir / "t.sqlite3";
  {
    tuning_db db(file);
    db.store(db_record(128));
    db.store(db_record(256));
    auto newer = db_record(128, "590.0");
    newer.measured_at = "2026-12-01T00:00:00Z";
    db.store(newer);
  }
  tuning_db db(file);  // reopened: the records survived
  auto found = db.find(db_record(128).key);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->tflops, 228);
  EXPECT_EQ(found->key.problem.m, 128);
  EXPECT_FALSE(db.find(db_record(512).key));
  auto other_driver = db_record(256).key;
  other_driver.driver = "590.0";
  EXPECT_FALSE(db.find(other_driver));  // another driver is another measurement
  const auto same_model = db.find_same_model("h100-sxm", db_record(128).key.problem);
  ASSERT_EQ(same_model.size(), 2u);
  EXPECT_EQ(same_model[0].key.driver, "590.0");  // newest first
  EXPECT_EQ(db.list().size(), 3u);
  EXPECT_TRUE(db.list("a100-sxm-80gb").empty());
  // A second store of the same key replaces it.
  auto again = db_record(128);
  again.tflops = 1;
  db.store(again);
  EXPECT_EQ(db.find(again.key)->tflops, 1);
  EXPECT_EQ(db.list().size(), 3u);
}

TEST(tuning_db, a_damaged_or_foreign_file_is_an_environment_error_naming_it) {
  db_scratch s;
  const fs::path garbage = s.dir / "garbage.sqlite3";
  std::ofstream(garbage) << std::string(8192, 'x');
  expect_environment_error_naming(garbage, "not a database");

  const fs::path foreign = s.dir / "foreign.sqlite3";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "CREATE TABLE songs (title TEXT)", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  expect_environment_error_naming(foreign, "another program");

  const fs::path newer = s.dir / "newer.sqlite3";
  { tuning_db db(newer); }
  ASSERT_EQ(sqlite3_open(newer.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "UPDATE tiletune_meta SET value = 'tiletune.tuning-db/99' WHERE key = 'schema'", nullptr, nullptr,
               nullptr);
  sqlite3_close(raw);
  expect_environment_error_naming(newer, "tiletune.tuning-db/99");

  expect_environment_error_naming(s.dir, "directory");
}

// Opening changes nothing in a file that is not ours: another program's database is not switched
// to WAL, an empty file opened to read stays empty, and a device or FIFO is refused before SQLite
// writes a journal beside it.
TEST(tuning_db, opening_a_file_that_is_not_ours_leaves_it_as_it_was) {
  db_scratch s;
  const fs::path foreign = s.dir / "songs.sqlite3";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES ('a')", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto bytes = [](const fs::path& f) {
    std::ifstream in(f, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string before = bytes(foreign);
  for (auto mode : {tuning_db::open_mode::create, tuning_db::open_mode::existing, tuning_db::open_mode::read}) {
    EXPECT_THROW(tuning_db(foreign, mode), environment_error);
    EXPECT_EQ(bytes(foreign), before) << "mode " << static_cast<int>(mode);
    EXPECT_FALSE(fs::exists(foreign.string() + "-wal"));
  }
  const fs::path empty = s.dir / "empty.sqlite3";
  std::ofstream(empty).close();
  try {
    tuning_db db(empty, tuning_db::open_mode::read);
    ADD_FAILURE() << "an empty file was read as a database";
  } catch (const environment_error& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fs::file_size(empty), 0u);
  const fs::path fifo = s.dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const fs::path& f : {fifo, fs::path("/dev/null")}) {
    try {
      tuning_db db(f, tuning_db::open_mode::read);
      ADD_FAILURE() << f << " was opened as a database";
    } catch (const environment_error& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(tuning_db(fifo, tuning_db::open_mode::create), environment_error);
  EXPECT_FALSE(fs::exists(fifo.string() + "-journal"));
}

// Several processes write at once (a CI runner's parallel jobs): every record lands.
TEST(tuning_db, parallel_writers_lose_nothing) {
  db_scratch s;
  const fs::path file = s.dir / "shared.sqlite3";
  constexpr int writers = 6, each = 25;
  std::vector<pid_t> children;
  for (int w = 0; w < writers; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        tuning_db db(file);
        for (int i = 0; i < each; ++i) {
          db.store(db_record(1 + w * 1000 + i));
          (void)db.list();  // readers beside the writers
        }
      } catch (...) {
        code = 1;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  tuning_db db(file);
  EXPECT_EQ(db.list().size(), static_cast<std::size_t>(writers * each));
}

// A writer that waits past the busy timeout for another run's write lock fails naming the file and
// saying why (another run holds it: wait), not "give another database file"; the file stays whole.
TEST(tuning_db, a_lock_held_past_the_timeout_says_another_run_holds_it) {
  db_scratch s;
  const fs::path file = s.dir / "held.sqlite3";
  { tuning_db(file).store(db_record(1)); }
  tuning_db::set_busy_timeout_ms(200);
  tuning_db opened_before(file);
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto expect_held = [&](const std::function<void()>& write, const char* what_it_does) {
    try {
      write();
      ADD_FAILURE() << what_it_does << " while another connection held the write lock";
    } catch (const environment_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file.string()), std::string::npos) << what;
      EXPECT_NE(what.find("another run holds it"), std::string::npos) << what;
      EXPECT_EQ(what.find("give another database file"), std::string::npos) << what;
    }
  };
  expect_held([&] { opened_before.store(db_record(2)); }, "stored");                  // a run that had opened it
  expect_held([&] { tuning_db(file).store(db_record(3)); }, "opened it and stored");  // one that opens it now
  tuning_db::set_busy_timeout_ms(0);
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  tuning_db db(file, tuning_db::open_mode::read);
  EXPECT_EQ(db.list().size(), 1u);
}

TEST(tuning_db, record_from_result_takes_the_key_from_a_recorded_h100_file) {
  std::ifstream in(fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-22/gemm/4096x4096x4096-bf16-nt.json");
  const auto j = nlohmann::json::parse(in);
  const auto r = record_from_result(j, nlohmann::json());
  EXPECT_EQ(r.key.device_model, "h100-sxm");
  EXPECT_EQ(r.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.key.driver, "unknown");  // that run's JSON did not record it
  EXPECT_EQ(r.key.compiler, "nvrtc 13.0");
  EXPECT_EQ(r.key.problem.m, 4096);
  EXPECT_EQ(r.recommended, "mma_128x128x32_w2x2_s3");
  EXPECT_EQ(r.strategy, "exhaustive");
  auto predicted = j;
  predicted["mode"] = "predicted";
  EXPECT_THROW(record_from_result(predicted, nlohmann::json()), usage_error);
}

TEST(tuning_db, a_scaling_mode_is_keyed_only_where_there_is_one) {
  gemm_problem p;
  p.m = p.n = p.k = 256;
  p.type = dtype::bf16;
  p.layout = parse_layout("nt");
  EXPECT_EQ(tuning_problem_key(p), "256x256x256 b1 bf16 nt a1 b0");
  p.scaling = scaling_mode::block;
  EXPECT_EQ(tuning_problem_key(p), "256x256x256 b1 bf16 nt a1 b0 sblock");
}

// A page damaged where opening reads nothing (a record's page in the middle of the file): the
// commands that read or write in bulk check every page and refuse the file before anything is
// written (db import stored into such a file and exited 0); the look-ups that answer in
// milliseconds open it, and SQLite refuses a damaged page when a query reads it.
TEST(tuning_db, a_page_damaged_past_the_schema_is_refused_before_a_bulk_write_and_the_file_kept) {
  db_scratch s;
  const fs::path file = s.dir / "damaged.sqlite3";
  {
    tuning_db db(file);
    std::vector<tuning_record> records;
    for (int m = 1; m <= 2000; ++m) records.push_back(db_record(m));
    db.store_all(records);
  }
  ASSERT_FALSE(fs::exists(file.string() + "-wal"));  // the last close checkpointed every page into the file
  const auto size = fs::file_size(file);
  ASSERT_GT(size, 64u * 4096);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f << std::string(4000, '\xde');
  }
  auto bytes = [](const fs::path& f) {
    std::ifstream in(f, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string before = bytes(file);
  for (auto mode : {tuning_db::open_mode::create, tuning_db::open_mode::existing, tuning_db::open_mode::read}) {
    try {
      tuning_db db(file, mode);
      ADD_FAILURE() << "opened a damaged file, mode " << static_cast<int>(mode);
    } catch (const environment_error& e) {
      EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    }
    EXPECT_EQ(bytes(file), before) << "mode " << static_cast<int>(mode);
  }
  // A look-up opens it without reading every page, and a query over every record meets the damage.
  tuning_db quick(file, tuning_db::open_mode::read, tuning_db::page_check::as_read);
  EXPECT_THROW((void)quick.list(), environment_error);
}

// Of two records alike (as well verified, as new), the one holding more of the measurement stays:
// a record re-imported from `db show --json` (compact: no variants' times) replaced nothing, but
// kept a later import of the measurement it came from out, and calibration then had nothing to fit.
TEST(tuning_db, of_two_records_alike_the_one_holding_the_variants_times_stays_in_import_and_merge) {
  db_scratch s;
  const tuning_record measured = db_record(128);
  tuning_record compact = db_record(128);
  compact.result["variants_listed"] = {{"listed", 0}, {"by", "tuning database (the recommended and next best)"}};
  {
    tuning_db db(s.dir / "import.sqlite3");
    EXPECT_TRUE(db.store_if_better(compact));
    EXPECT_TRUE(db.calibration_inputs("h100-sxm").empty());
    EXPECT_TRUE(db.store_if_better(measured));  // alike, and holding the variants' times
    EXPECT_FALSE(db.store_if_better(compact));
    EXPECT_FALSE(db.store_if_better(measured));  // alike in every way: the stored record stays
    EXPECT_EQ(db.calibration_inputs("h100-sxm").size(), 1u);
  }
  {
    tuning_db c(s.dir / "compact.sqlite3"), m(s.dir / "measured.sqlite3");
    c.store(compact);
    m.store(measured);
  }
  const tuning_db c(s.dir / "compact.sqlite3", tuning_db::open_mode::read),
      m(s.dir / "measured.sqlite3", tuning_db::open_mode::read);
  tuning_db into(s.dir / "merged.sqlite3");
  const auto counts = into.merge_from({&c, &m});  // the compact record read first
  EXPECT_EQ(counts.kept, (std::vector<std::size_t>{0, 0, 1}));
  EXPECT_EQ(into.calibration_inputs("h100-sxm").size(), 1u);
}

// Calibration's rows keep where a halving search last timed each variant and how far behind that
// stage's leader it was dropped (the pick's slowdown at one clock, calibration/one_clock.hpp); rows
// of a search without stages keep neither.
TEST(tuning_db, calibration_rows_keep_each_variants_search_stage_and_margin) {
  db_scratch s;
  tuning_record r = db_record(128);
  r.result["search"] = {{"strategy", "halving"}};
  auto variant = [](const char* id, const char* stage, const char* reason) {
    nlohmann::json v = {{"id", id}, {"status", "ok"}, {"median_us", 10.0},
                        {"tile", {{"family", "mma"}, {"block_m", 64}}}};
    if (*stage) v["search_stage"] = stage;
    if (*reason) v["reason"] = reason;
    return v;
  };
  r.result["variants"] = nlohmann::json::array({variant("mma_a", "full", ""),
                                                variant("mma_b", "longer", "dropped after the longer stage: 3.4% behind the leader"),
                                                variant("mma_c", "", "")});
  tuning_db db(s.dir / "t.sqlite3");
  db.store(r);
  const auto inputs = db.calibration_inputs("h100-sxm");
  ASSERT_EQ(inputs.size(), 1u);
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& v : inputs[0]["variants"]) by_id[v["id"]] = v;
  ASSERT_EQ(by_id.size(), 3u);
  EXPECT_EQ(by_id["mma_a"]["search_stage"], "full");
  EXPECT_FALSE(by_id["mma_a"].contains("behind_leader"));
  EXPECT_EQ(by_id["mma_b"]["search_stage"], "longer");
  EXPECT_NEAR(by_id["mma_b"]["behind_leader"].get<double>(), 0.034, 1e-12);
  EXPECT_FALSE(by_id["mma_c"].contains("search_stage"));
}
