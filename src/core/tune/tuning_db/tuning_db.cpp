#include "core/tune/tuning_db/tuning_db.hpp"

#include <sqlite3.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "core/compile/compile_cache.hpp"
#include "core/errors.hpp"
#include "core/tune/calibration/one_clock.hpp"
#include "core/iso_date.hpp"
#include "core/tune/tuning_db/sqlite_statement.hpp"
#include "core/plan_mode.hpp"
#include "core/results/json_file.hpp"

namespace tiletune {

namespace fs = std::filesystem;

namespace {
constexpr const char* schema_name = "tiletune.tuning-db";
// How long a writer waits for another run's write lock before it gives up (set_busy_timeout_ms).
std::atomic<int> busy_timeout_ms{30000};
// What a writer locked out past that timeout is told: the file is whole, waiting is the answer.
constexpr const char* held_by_another_run = "another run holds it; try again when that run ends";

using sqlite::column_text;
using sqlite::statement;
}  // namespace

void tuning_db::set_busy_timeout_ms(int ms) { busy_timeout_ms = ms > 0 ? ms : 30000; }

fs::path default_tuning_db_path() { return default_cache_dir() / "tuning.sqlite3"; }

void tuning_db::fail(const std::string& what) const {
  // Locked past the busy timeout: another run holds the file, which is whole; waiting is the answer.
  const int code = db_ ? sqlite3_errcode(db_) : SQLITE_CANTOPEN;
  const bool busy = code == SQLITE_BUSY || code == SQLITE_LOCKED;
  throw environment_error(fmt::format("tuning database {}: {}: {} ({})", file_.string(), what,
                                      db_ ? sqlite3_errmsg(db_) : "cannot open",
                                      busy ? held_by_another_run : "give another database file"));
}

tuning_db::tuning_db(fs::path file, open_mode mode, page_check check)
    : file_(std::move(file)), mode_(mode), check_(check) {
  std::error_code ec;
  const bool exists = fs::exists(file_, ec);
  if (mode_ != open_mode::create && !exists)
    throw environment_error(fmt::format("tuning database {} does not exist", file_.string()));
  if (fs::is_directory(file_, ec))
    throw environment_error(fmt::format("tuning database {} is a directory; give a file", file_.string()));
  // SQLite would write its journal beside /dev/null, or block on a FIFO.
  if (exists && !fs::is_regular_file(file_, ec))
    throw environment_error(fmt::format("tuning database {} is not a regular file (a device, FIFO or socket); give a "
                                        "database file",
                                        file_.string()));
  if (mode_ == open_mode::read && fs::file_size(file_, ec) == 0 && !ec)
    throw environment_error(fmt::format("tuning database {} is empty (0 bytes): not a tiletune tuning database yet "
                                        "(a run that stores results makes it one)",
                                        file_.string()));
  if (mode_ == open_mode::create && file_.has_parent_path()) fs::create_directories(file_.parent_path(), ec);
  // A constructor that throws runs no destructor: every failure below closes the handle here
  // (sqlite3_open_v2 allocates one even when it fails).
  // A file with pages is checked whole where asked, created or not (db import into a damaged file).
  const bool had_pages = exists && fs::file_size(file_, ec) > 0 && !ec;
  try {
    open_and_check(had_pages);
  } catch (...) {
    if (db_) sqlite3_close(db_);
    db_ = nullptr;
    if (!temp_copy_.empty()) fs::remove(temp_copy_, ec);
    throw;
  }
}

namespace {

// Runs sql; a failure throws environment_error naming the file, and damage as such.
void exec_checked(sqlite3* db, const fs::path& file, const char* sql, const char* what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) == SQLITE_OK) return;
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  const int code = sqlite3_errcode(db);
  if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
    throw environment_error(fmt::format("tuning database {} is damaged or not a database ({}); give another "
                                        "database file",
                                        file.string(), msg));
  // Locked past the busy timeout (opening takes the write lock to check or create the schema).
  const bool busy = code == SQLITE_BUSY || code == SQLITE_LOCKED;
  throw environment_error(fmt::format("tuning database {}: {}: {}{}", file.string(), what, msg,
                                      busy ? fmt::format(" ({})", held_by_another_run) : ""));
}

// WAL lets readers go on while one run writes; the busy timeout makes writers queue.
// Switching to WAL takes a lock SQLite does not wait for (several processes
// opening a new file at once got "database is locked"), so retry it here.
void switch_to_wal(sqlite3* db, const fs::path& file) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms.load());
  for (int rc; (rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr)) != SQLITE_OK;) {
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || std::chrono::steady_clock::now() > give_up) {
      exec_checked(db, file, "PRAGMA journal_mode=WAL", "cannot switch to WAL");  // once more, to report the error
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void check_has_meta_table(sqlite3* db, const fs::path& file) {
  statement m;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'tiletune_meta'", -1,
                     &m.s, nullptr);
  if (!m.s) exec_checked(db, file, "SELECT count(*) FROM sqlite_master", "cannot read it");  // reports damage by its kind
  if (!m.s || sqlite3_step(m.s) != SQLITE_ROW || sqlite3_column_int(m.s, 0) == 0) {
    std::error_code ec;
    throw environment_error(fmt::format("{} is not a tiletune tuning database ({})", file.string(),
                                        fs::file_size(file, ec) == 0 && !ec ? "it is empty" : "no tiletune_meta table"));
  }
}

// Schema 2's tables: the records (named `table`, so an upgrade can build them
// beside schema 1's), their indexes, and the tiles of the calibration rows.
void create_tables(sqlite3* db, const fs::path& file, const std::string& table) {
  const std::string sql = fmt::format(R"(CREATE TABLE {0} (
             device_model TEXT NOT NULL, driver TEXT NOT NULL, cuda TEXT NOT NULL,
             tool_version TEXT NOT NULL, compiler TEXT NOT NULL, problem TEXT NOT NULL,
             device_name TEXT, strategy TEXT, measured_at TEXT, recommended TEXT, tflops REAL,
             measured INTEGER NOT NULL, verified INTEGER NOT NULL,
             problem_json TEXT NOT NULL, recommendation TEXT,
             record BLOB NOT NULL, calibration BLOB, full BLOB,
             PRIMARY KEY (device_model, driver, cuda, tool_version, compiler, problem));
           CREATE TABLE IF NOT EXISTS variant_tiles (num INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
                                                     tile TEXT NOT NULL))",
                                      table);
  exec_checked(db, file, sql.c_str(), "cannot create");
}

void create_indexes(sqlite3* db, const fs::path& file) {
  exec_checked(db, file,
               "CREATE INDEX IF NOT EXISTS results_by_problem ON results (problem, device_model);"
               "CREATE INDEX IF NOT EXISTS results_by_time ON results (measured_at)",
               "cannot create");
}

// A new file, or another program's SQLite database: only an empty one becomes ours.
void create_schema(sqlite3* db, const fs::path& file) {
  statement t;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name != 'tiletune_meta'", -1, &t.s, nullptr);
  if (t.s && sqlite3_step(t.s) == SQLITE_ROW && sqlite3_column_int(t.s, 0) > 0)
    throw environment_error(fmt::format("{} is an SQLite database of another program, not a tiletune tuning "
                                        "database; give another database file",
                                        file.string()));
  const std::string schema =
      fmt::format("INSERT INTO tiletune_meta VALUES ('schema', '{}/{}')", schema_name, tuning_db::schema_version);
  exec_checked(db, file, schema.c_str(), "cannot write");
  create_tables(db, file, "results");
  create_indexes(db, file);
}

// The recorded schema must be this tiletune's, or schema 1 (returned: the
// caller upgrades it); a file without one gets it if it may be created.
int check_or_create_schema(sqlite3* db, const fs::path& file, bool existing) {
  statement q;
  sqlite3_prepare_v2(db, "SELECT value FROM tiletune_meta WHERE key = 'schema'", -1, &q.s, nullptr);
  if (q.s && sqlite3_step(q.s) == SQLITE_ROW) {
    const std::string have = column_text(q.s, 0);
    const std::string want = fmt::format("{}/{}", schema_name, tuning_db::schema_version);
    if (have == fmt::format("{}/1", schema_name)) return 1;
    if (have != want)
      throw environment_error(fmt::format("tuning database {} has schema {}, this tiletune reads {}; give another "
                                          "database file (a tiletune of its version reads it)",
                                          file.string(), have, want));
  } else if (existing) {
    throw environment_error(fmt::format("{} is not a tiletune tuning database (no schema recorded)", file.string()));
  } else {
    create_schema(db, file);
  }
  return tuning_db::schema_version;
}

// A damaged page may lie where no query of the schema reads: check every page.
void check_every_page(sqlite3* db, const fs::path& file) {
  statement c;
  if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &c.s, nullptr) != SQLITE_OK)
    exec_checked(db, file, "PRAGMA quick_check", "cannot check it");
  std::string first;
  int rc = sqlite3_step(c.s);
  if (rc == SQLITE_ROW) first = column_text(c.s, 0);
  if (rc != SQLITE_ROW || first != "ok")
    throw environment_error(fmt::format("tuning database {} is damaged (PRAGMA quick_check: {})", file.string(),
                                        rc == SQLITE_ROW ? first : sqlite3_errmsg(db)));
}

}  // namespace

void tuning_db::open_and_check(bool had_pages) {
  const bool create = mode_ == open_mode::create, read = mode_ == open_mode::read;
  // An existing file is opened read-write all the same: reading a WAL database
  // another run left behind may need to recover its -wal file.
  if (sqlite3_open_v2(file_.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK)
    fail("cannot open it");
  sqlite3_busy_timeout(db_, busy_timeout_ms.load());
  // Nothing is written before the file is known to be ours (or empty): the schema is
  // created in the first transaction, and only then is the file switched to WAL, so
  // another run never sees a file with a header and no schema.
  exec_checked(db_, file_, create ? "BEGIN IMMEDIATE" : "BEGIN", "cannot lock it");
  bool upgrade_copy = false;
  try {
    // Before anything is written (a damaged file gets no schema, upgrade or WAL switch).
    if (check_ == page_check::whole && had_pages) check_every_page(db_, file_);
    if (!create) check_has_meta_table(db_, file_);
    if (create)
      exec_checked(db_, file_, "CREATE TABLE IF NOT EXISTS tiletune_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                   "cannot create");
    if (check_or_create_schema(db_, file_, !create) == 1) {
      if (read) {
        upgrade_copy = true;  // this file stays as it is
      } else {
        // An upgrade writes: the read transaction of an existing file becomes a write one.
        if (!create) exec_checked(db_, file_, "COMMIT; BEGIN IMMEDIATE", "cannot lock it");
        if (check_or_create_schema(db_, file_, !create) == 1) upgrade_from_1();
      }
    }
    exec_checked(db_, file_, "COMMIT", "cannot commit");
    if (create) switch_to_wal(db_, file_);
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
  if (upgrade_copy) read_upgraded_copy();
}

void tuning_db::read_upgraded_copy() {
  // SQLite's backup reads through the connection, so a -wal file's pages come along.
  static int copies = 0;
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec)
    throw environment_error(fmt::format("tuning database {} has schema 1: no temporary folder to read it upgraded in "
                                        "({}; set TMPDIR to a writable folder)",
                                        file_.string(), ec.message()));
  temp_copy_ = tmp / fmt::format("tiletune-{}-{}-schema1-read.sqlite3", static_cast<long>(::getpid()), ++copies);
  fs::remove(temp_copy_, ec);
  sqlite3* copy = nullptr;
  if (sqlite3_open_v2(temp_copy_.c_str(), &copy, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    sqlite3_close(copy);
    throw environment_error(fmt::format("tuning database {} has schema 1: cannot make the temporary copy {} to read "
                                        "it upgraded (set TMPDIR to a writable folder)",
                                        file_.string(), temp_copy_.string()));
  }
  sqlite3_backup* b = sqlite3_backup_init(copy, "main", db_, "main");
  const int rc = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
  sqlite3_backup_finish(b);
  sqlite3_close(db_);
  db_ = copy;
  if (rc != SQLITE_DONE) fail("cannot copy it to read it upgraded (schema 1)");
  sqlite3_busy_timeout(db_, busy_timeout_ms.load());
  exec_checked(db_, file_, "BEGIN IMMEDIATE", "cannot lock its temporary copy");
  try {
    upgrade_from_1();
    exec_checked(db_, file_, "COMMIT", "cannot commit");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

tuning_db::~tuning_db() {
  sqlite3_close(db_);
  std::error_code ec;
  if (!temp_copy_.empty()) fs::remove(temp_copy_, ec);
}

std::string tuning_db::inflated(sqlite3_stmt* s, int column) const {
  try {
    return sqlite::column_inflated(s, column);
  } catch (const environment_error& e) {
    throw environment_error(fmt::format("tuning database {}: {}; give another database file", file_.string(), e.what()));
  }
}

namespace {
// The columns every schema has, then schema 2's verification rank.
constexpr const char* record_columns =
    "device_model, driver, cuda, tool_version, compiler, device_name, strategy, measured_at, recommended, tflops";
constexpr const char* rank_column = "verified";

// A compact record (read from a database) rather than a search's result.
bool is_compact(const nlohmann::json& result) {
  const auto listed = result.value("variants_listed", nlohmann::json::object());
  return listed.is_object() && listed.value("by", "").rfind("tuning database", 0) == 0;
}
}  // namespace

std::vector<tuning_record> tuning_db::query(const std::string& where, const std::vector<std::string>& args,
                                            bool full, std::size_t limit) const {
  statement q;
  const std::string sql =
      fmt::format("SELECT {}, {}, {}, problem FROM results {} ORDER BY measured_at DESC{}", record_columns,
                  full ? "coalesce(full, record)" : "record", rank_column, where,
                  sqlite::limit_clause(limit));
  // Each record is inflated and parsed: the queries by key read one or a few.
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &q.s, nullptr) != SQLITE_OK) fail("cannot read it");
  for (std::size_t i = 0; i < args.size(); ++i) sqlite::bind(q.s, static_cast<int>(i + 1), args[i]);
  std::vector<tuning_record> out;
  int rc;
  while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) {
    tuning_record r;
    sqlite::read_record_head(q.s, r);
    r.result = nlohmann::json::parse(inflated(q.s, 10), nullptr, false);
    r.verified = sqlite3_column_int(q.s, 11);
    if (!r.result.is_object())
      throw environment_error(fmt::format("tuning database {}: a stored record ({}) is damaged (not JSON); give "
                                          "another database file",
                                          file_.string(), sqlite::column_text(q.s, 12)));
    r.key.problem =
        stored_problem(r.result.contains("problem") ? r.result["problem"].dump() : "", sqlite::column_text(q.s, 12));
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) fail("cannot read it");
  return out;
}

std::optional<tuning_record> tuning_db::find(const tuning_key& k) const {
  auto found = query(std::string("WHERE ") + sqlite::key_clause,
                     {k.device_model, k.driver, k.cuda, k.tool_version, k.compiler, tuning_problem_key(k.problem)},
                     /*full=*/true);
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

std::vector<tuning_record> tuning_db::find_same_model(const std::string& model, const gemm_problem& p) const {
  return query("WHERE problem = ?2 AND device_model = ?1", {model, tuning_problem_key(p)}, /*full=*/true);
}

std::vector<tuning_record> tuning_db::list(const std::string& model) const {
  return model.empty() ? query("", {}) : query("WHERE device_model = ?1", {model});
}

void tuning_db::store(const tuning_record& r) {
  // One transaction: the record and the tiles its calibration rows name, whole or not at all.
  store_all({r});
}

void tuning_db::store_all(const std::vector<tuning_record>& records) {
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) fail("cannot lock it");
  try {
    for (const auto& r : records) bind_and_step(r);
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) fail("cannot commit");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

int tuning_db::detail_held(const tuning_key& k) const {
  statement q;
  if (sqlite3_prepare_v2(db_,
                         fmt::format("SELECT (calibration IS NOT NULL) + (full IS NOT NULL) FROM results WHERE {}",
                                     sqlite::key_clause)
                             .c_str(),
                         -1, &q.s, nullptr) != SQLITE_OK)
    fail("cannot read it");
  int i = 1;
  for (const auto& v : {k.device_model, k.driver, k.cuda, k.tool_version, k.compiler, tuning_problem_key(k.problem)})
    sqlite::bind(q.s, i++, v);
  return sqlite3_step(q.s) == SQLITE_ROW ? sqlite3_column_int(q.s, 0) : 0;
}

int tuning_db::detail_given(const tuning_record& r) const {
  if (is_compact(r.result) || !is_measured(r)) return 0;  // (bind_and_step files calibration rows for the rest)
  return keep_full_ ? 2 : 1;
}

bool tuning_db::store_if_better(const tuning_record& r) { return store_all_if_better({r}).stored == 1; }

tuning_db::store_outcome tuning_db::store_all_if_better(const std::vector<tuning_record>& records) {
  store_outcome out;
  // Whether a replaces b (b holding b_detail): better verified, then newer, then holding more.
  auto replaces = [](const tuning_record& a, int a_detail, const tuning_record& b, int b_detail) {
    return better_record(a, b) || (!better_record(b, a) && a_detail > b_detail);
  };
  std::vector<const tuning_record*> best;  // per key, in the order first given
  std::unordered_map<std::string, std::size_t> of_key;
  for (const auto& r : records) {
    const tuning_key& k = r.key;
    const std::string columns[6] = {k.device_model, k.driver, k.cuda, k.tool_version, k.compiler,
                                    tuning_problem_key(k.problem)};
    const auto [at, first] = of_key.emplace(sqlite::joined_key(columns), best.size());
    if (first) {
      best.push_back(&r);
    } else {
      ++out.repeated;
      if (replaces(r, detail_given(r), *best[at->second], detail_given(*best[at->second]))) best[at->second] = &r;
    }
  }
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) fail("cannot lock it");
  try {
    for (const tuning_record* r : best) {
      const auto held = find(r->key);
      if (!held || replaces(*r, detail_given(*r), *held, detail_held(r->key))) {
        bind_and_step(*r);
        ++out.stored;
      } else if (verification_rank(*held) != verification_rank(*r)) {
        ++out.better_verified;
        out.better_verified_older += canonical_iso_date(held->measured_at) < canonical_iso_date(r->measured_at);
      } else if (canonical_iso_date(held->measured_at) != canonical_iso_date(r->measured_at)) {
        ++out.newer;
      } else {
        ++out.as_new;
      }
    }
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) fail("cannot commit");
    return out;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

namespace {

// The number of a variant's tile in variant_tiles, filed on first sight.
long long tile_number(sqlite3* db, const std::string& id, const nlohmann::json& tile) {
  statement ins, get;
  sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO variant_tiles (id, tile) VALUES (?1, ?2)", -1, &ins.s, nullptr);
  sqlite3_prepare_v2(db, "SELECT num FROM variant_tiles WHERE id = ?1", -1, &get.s, nullptr);
  if (!ins.s || !get.s) return -1;
  sqlite::bind(ins.s, 1, id);
  sqlite::bind(ins.s, 2, tile.dump());
  if (sqlite3_step(ins.s) != SQLITE_DONE) return -1;
  sqlite::bind(get.s, 1, id);
  return sqlite3_step(get.s) == SQLITE_ROW ? sqlite3_column_int64(get.s, 0) : -1;
}

}  // namespace

void tuning_db::bind_and_step(const tuning_record& r) {
  const bool compact_given = is_compact(r.result);
  const bool measured = is_measured(r);
  // Calibration's rows: every timed variant of a measurement, [tile number, median, registers, shared memory,
  // (search stage, margin behind its leader, (SM clock))].
  nlohmann::json calibration;
  if (measured && !compact_given) {
    calibration = nlohmann::json::array();
    for (const auto& v : r.result.value("variants", nlohmann::json::array())) {
      if (!is_ok_variant(v) || !v.contains("median_us") || !v["median_us"].is_number() || !v.contains("tile") ||
          !v["tile"].is_object() || !v.contains("id") || !v["id"].is_string())
        continue;
      nlohmann::json tile = v["tile"];
      if (!tile.contains("family") && v.contains("family")) tile["family"] = v["family"];
      const long long num = tile_number(db_, v["id"].get<std::string>(), tile);
      if (num < 0) fail("cannot store a variant's tile");
      const auto res = v.value("resources", nlohmann::json::object());
      auto whole = [&](const char* k) -> std::int64_t {
        return res.is_object() && res.contains(k) && res[k].is_number_integer() ? res[k].get<std::int64_t>() : 0;
      };
      // And where the search timed it in stages: its stage and its margin behind the stage's leader
      // (one_clock.hpp: the pick's slowdown at one clock); then the SM clock it ran at, where recorded
      // (sustained_clock.hpp), after a null stage where it had none.
      nlohmann::json row = {num, v["median_us"], whole("registers"), whole("smem_bytes")};
      const bool staged = v.contains("search_stage") && v["search_stage"].is_string();
      const bool clocked = v.contains("sm_clock_mhz") && v["sm_clock_mhz"].is_number();
      if (staged || clocked)
        row.insert(row.end(), {staged ? v["search_stage"] : nlohmann::json(), staged ? behind_the_leader(v) : -1.0});
      if (clocked) row.push_back(v["sm_clock_mhz"]);
      calibration.push_back(std::move(row));
    }
  }
  statement q;
  const char* sql =
      "INSERT OR REPLACE INTO results (device_model, driver, cuda, tool_version, compiler, problem, device_name, "
      "strategy, measured_at, recommended, tflops, measured, verified, problem_json, recommendation, record, "
      "calibration, full) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)";
  if (sqlite3_prepare_v2(db_, sql, -1, &q.s, nullptr) != SQLITE_OK) fail("cannot write it");
  const std::string problem = tuning_problem_key(r.key.problem);
  const std::string* texts[] = {&r.key.device_model, &r.key.driver,   &r.key.cuda,       &r.key.tool_version,
                                &r.key.compiler,     &problem,        &r.device_name,    &r.strategy,
                                &r.measured_at,      &r.recommended};
  for (int i = 0; i < 10; ++i) sqlite::bind(q.s, i + 1, *texts[i]);
  sqlite3_bind_double(q.s, 11, r.tflops);
  sqlite3_bind_int(q.s, 12, measured ? 1 : 0);
  sqlite3_bind_int(q.s, 13, verification_rank(r));
  sqlite::bind(q.s, 14, json_text(r.result.at("problem"), -1));
  const auto rec = r.result.value("recommendation", nlohmann::json());
  if (rec.is_object()) sqlite::bind(q.s, 15, json_text(rec, -1));
  sqlite::bind_blob(q.s, 16, sqlite::deflate(compact_given ? json_text(r.result, -1) : json_text(compact_result(r.result), -1)));
  if (!calibration.is_null()) sqlite::bind_blob(q.s, 17, sqlite::deflate(json_text(calibration, -1)));
  if (keep_full_ && !compact_given) sqlite::bind_blob(q.s, 18, sqlite::deflate(json_text(r.result, -1)));
  if (sqlite3_step(q.s) != SQLITE_DONE) fail("cannot store a result");
}

// Schema 1 kept the whole result in `result`: each row becomes a schema 2 row
// (its compact record and calibration rows; the whole result kept only where
// this database keeps them), in the transaction the caller opened.
void tuning_db::upgrade_from_1() {
  exec_checked(db_, file_, "ALTER TABLE results RENAME TO results_1", "cannot upgrade it");
  create_tables(db_, file_, "results");
  {
    statement q;
    const std::string sql = fmt::format("SELECT {}, result FROM results_1", record_columns);
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &q.s, nullptr) != SQLITE_OK) fail("cannot read it to upgrade it");
    int rc;
    while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) {
      tuning_record r;
      sqlite::read_record_head(q.s, r);
      r.result = nlohmann::json::parse(column_text(q.s, 10), nullptr, false);
      if (!r.result.is_object() || !r.result.contains("problem")) fail("a stored result is not JSON; not upgraded");
      r.key.problem = gemm_problem_from_json(r.result.at("problem"));
      bind_and_step(r);
    }
    if (rc != SQLITE_DONE) fail("cannot read it to upgrade it");
  }
  exec_checked(db_, file_, "DROP TABLE results_1", "cannot upgrade it");
  create_indexes(db_, file_);
  const std::string schema =
      fmt::format("UPDATE tiletune_meta SET value = '{}/{}' WHERE key = 'schema'", schema_name, schema_version);
  exec_checked(db_, file_, schema.c_str(), "cannot upgrade it");
}

}  // namespace tiletune
