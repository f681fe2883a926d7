#include "core/tune/tuning_db/tuning_db.hpp"

#include <sqlite3.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "core/compile/compile_cache.hpp"
#include "core/errors.hpp"

namespace tiletune {

namespace fs = std::filesystem;

namespace {
constexpr const char* schema_name = "tiletune.tuning-db";
constexpr int busy_timeout_ms = 30000;

struct statement {
  sqlite3_stmt* s = nullptr;
  ~statement() { sqlite3_finalize(s); }
};

std::string column_text(sqlite3_stmt* s, int i) {
  const auto* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}
}  // namespace

std::string tuning_problem_key(const gemm_problem& p) {
  // A scaling mode is keyed only where there is one, so unscaled keys read as before.
  const std::string scaling =
      p.scaling == scaling_mode::none ? "" : fmt::format(" s{}", to_string(p.scaling));
  return fmt::format("{}x{}x{} b{} {} {} a{} b{}{}", p.m, p.n, p.k, p.batch, to_string(p.type), p.layout.name(),
                     p.alpha, p.beta, scaling);
}

fs::path default_tuning_db_path() { return default_cache_dir() / "tuning.sqlite3"; }

void tuning_db::fail(const std::string& what) const {
  throw environment_error(fmt::format("tuning database {}: {}: {} (give another file with --db FILE, or --no-db)",
                                      file_.string(), what, db_ ? sqlite3_errmsg(db_) : "cannot open"));
}

tuning_db::tuning_db(fs::path file, open_mode mode) : file_(std::move(file)), mode_(mode) {
  std::error_code ec;
  if (mode_ == open_mode::existing && !fs::exists(file_, ec))
    throw environment_error(fmt::format("tuning database {} does not exist", file_.string()));
  if (mode_ == open_mode::create && file_.has_parent_path()) fs::create_directories(file_.parent_path(), ec);
  if (fs::is_directory(file_, ec))
    throw environment_error(fmt::format("tuning database {} is a directory; give a file", file_.string()));
  // A constructor that throws runs no destructor: every failure below closes the handle here
  // (sqlite3_open_v2 allocates one even when it fails).
  try {
    open_and_check();
  } catch (...) {
    if (db_) sqlite3_close(db_);
    db_ = nullptr;
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
    throw environment_error(fmt::format("tuning database {} is damaged or not a database ({}); give another file "
                                        "with --db FILE, or --no-db",
                                        file.string(), msg));
  throw environment_error(fmt::format("tuning database {}: {}: {}", file.string(), what, msg));
}

// WAL lets readers go on while one run writes; the busy timeout makes writers queue.
// Switching to WAL takes a lock SQLite does not wait for (several processes
// opening a new file at once got "database is locked"), so retry it here.
void switch_to_wal(sqlite3* db, const fs::path& file) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
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
  if (!m.s || sqlite3_step(m.s) != SQLITE_ROW || sqlite3_column_int(m.s, 0) == 0)
    throw environment_error(fmt::format("{} is not a tiletune tuning database (no tiletune_meta table)",
                                        file.string()));
}

// A new file, or another program's SQLite database: only an empty one becomes ours.
void create_schema(sqlite3* db, const fs::path& file) {
  statement t;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name != 'tiletune_meta'", -1, &t.s, nullptr);
  if (t.s && sqlite3_step(t.s) == SQLITE_ROW && sqlite3_column_int(t.s, 0) > 0)
    throw environment_error(fmt::format("{} is an SQLite database of another program, not a tiletune tuning "
                                        "database; give another file with --db FILE, or --no-db",
                                        file.string()));
  const std::string schema =
      fmt::format("INSERT INTO tiletune_meta VALUES ('schema', '{}/{}')", schema_name, tuning_db::schema_version);
  exec_checked(db, file, schema.c_str(), "cannot write");
  exec_checked(db, file, R"(CREATE TABLE results (
             device_model TEXT NOT NULL, driver TEXT NOT NULL, cuda TEXT NOT NULL,
             tool_version TEXT NOT NULL, compiler TEXT NOT NULL, problem TEXT NOT NULL,
             device_name TEXT, strategy TEXT, measured_at TEXT, recommended TEXT, tflops REAL,
             result TEXT NOT NULL,
             PRIMARY KEY (device_model, driver, cuda, tool_version, compiler, problem)))",
               "cannot create");
}

// The recorded schema must be this tiletune's; a file without one gets it if it may be created.
void check_or_create_schema(sqlite3* db, const fs::path& file, bool existing) {
  statement q;
  sqlite3_prepare_v2(db, "SELECT value FROM tiletune_meta WHERE key = 'schema'", -1, &q.s, nullptr);
  if (q.s && sqlite3_step(q.s) == SQLITE_ROW) {
    const std::string have = column_text(q.s, 0);
    const std::string want = fmt::format("{}/{}", schema_name, tuning_db::schema_version);
    if (have != want)
      throw environment_error(fmt::format("tuning database {} has schema {}, this tiletune reads {}; give another "
                                          "file with --db FILE, or --no-db",
                                          file.string(), have, want));
  } else if (existing) {
    throw environment_error(fmt::format("{} is not a tiletune tuning database (no schema recorded)", file.string()));
  } else {
    create_schema(db, file);
  }
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

void tuning_db::open_and_check() {
  const bool existing = mode_ == open_mode::existing;
  // An existing file is opened read-write all the same: reading a WAL database
  // another run left behind may need to recover its -wal file.
  if (sqlite3_open_v2(file_.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | (existing ? 0 : SQLITE_OPEN_CREATE) | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK)
    fail("cannot open it");
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  if (!existing) switch_to_wal(db_, file_);
  exec_checked(db_, file_, existing ? "BEGIN" : "BEGIN IMMEDIATE", "cannot lock it");
  try {
    if (existing) check_has_meta_table(db_, file_);
    exec_checked(db_, file_, "CREATE TABLE IF NOT EXISTS tiletune_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                 "cannot create");
    check_or_create_schema(db_, file_, existing);
    exec_checked(db_, file_, "COMMIT", "cannot commit");
    if (existing) check_every_page(db_, file_);
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

tuning_db::~tuning_db() { sqlite3_close(db_); }

std::vector<tuning_record> tuning_db::query(const std::string& where, const std::vector<std::string>& args) const {
  statement q;
  const std::string sql =
      "SELECT device_model, driver, cuda, tool_version, compiler, device_name, strategy, measured_at, recommended, "
      "tflops, result FROM results " +
      where + " ORDER BY measured_at DESC";
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &q.s, nullptr) != SQLITE_OK) fail("cannot read it");
  for (std::size_t i = 0; i < args.size(); ++i)
    sqlite3_bind_text(q.s, static_cast<int>(i + 1), args[i].c_str(), -1, SQLITE_TRANSIENT);
  std::vector<tuning_record> out;
  int rc;
  while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) {
    tuning_record r;
    r.key.device_model = column_text(q.s, 0);
    r.key.driver = column_text(q.s, 1);
    r.key.cuda = column_text(q.s, 2);
    r.key.tool_version = column_text(q.s, 3);
    r.key.compiler = column_text(q.s, 4);
    r.device_name = column_text(q.s, 5);
    r.strategy = column_text(q.s, 6);
    r.measured_at = column_text(q.s, 7);
    r.recommended = column_text(q.s, 8);
    r.tflops = sqlite3_column_double(q.s, 9);
    r.result = nlohmann::json::parse(column_text(q.s, 10), nullptr, false);
    if (!r.result.is_object()) fail("a stored result is not JSON");
    try {
      r.key.problem = gemm_problem_from_json(r.result.at("problem"));
    } catch (const std::exception&) {
      fail("a stored result has no readable problem");
    }
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) fail("cannot read it");
  return out;
}

std::optional<tuning_record> tuning_db::find(const tuning_key& k) const {
  auto found = query("WHERE device_model = ?1 AND driver = ?2 AND cuda = ?3 AND tool_version = ?4 AND compiler = ?5 "
                     "AND problem = ?6",
                     {k.device_model, k.driver, k.cuda, k.tool_version, k.compiler, tuning_problem_key(k.problem)});
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

std::vector<tuning_record> tuning_db::find_same_model(const std::string& model, const gemm_problem& p) const {
  return query("WHERE device_model = ?1 AND problem = ?2", {model, tuning_problem_key(p)});
}

std::vector<tuning_record> tuning_db::list(const std::string& model) const {
  return model.empty() ? query("", {}) : query("WHERE device_model = ?1", {model});
}

void tuning_db::store(const tuning_record& r) { bind_and_step(r); }

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

void tuning_db::update(const std::function<std::vector<tuning_record>(std::vector<tuning_record>)>& change) {
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) fail("cannot lock it");
  try {
    for (const auto& r : change(query("", {}))) bind_and_step(r);
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) fail("cannot commit");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void tuning_db::bind_and_step(const tuning_record& r) {
  statement q;
  const char* sql =
      "INSERT OR REPLACE INTO results (device_model, driver, cuda, tool_version, compiler, problem, device_name, "
      "strategy, measured_at, recommended, tflops, result) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
  if (sqlite3_prepare_v2(db_, sql, -1, &q.s, nullptr) != SQLITE_OK) fail("cannot write it");
  const std::string problem = tuning_problem_key(r.key.problem), result = r.result.dump();
  const std::string* texts[] = {&r.key.device_model, &r.key.driver,   &r.key.cuda,       &r.key.tool_version,
                                &r.key.compiler,     &problem,        &r.device_name,    &r.strategy,
                                &r.measured_at,      &r.recommended};
  for (int i = 0; i < 10; ++i) sqlite3_bind_text(q.s, i + 1, texts[i]->c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(q.s, 11, r.tflops);
  sqlite3_bind_text(q.s, 12, result.c_str(), -1, SQLITE_TRANSIENT);
  // One statement is one transaction: a record is stored whole or not at all.
  if (sqlite3_step(q.s) != SQLITE_DONE) fail("cannot store a result");
}

tuning_record record_from_result(const nlohmann::json& result, const nlohmann::json& header, bool allow_predicted) {
  const auto& h = header.is_object() && header.contains("device") ? header : result;
  const bool predicted = allow_predicted && h.value("mode", "") == "predicted";
  if (h.value("mode", "") != "measured" && !predicted)
    throw usage_error("only measured results go into the tuning database; this one is \"" + h.value("mode", "?") + "\"");
  if (!result.contains("problem") || !result.contains("variants"))
    throw usage_error("not a tiletune gemm result: it has no problem or variants");
  tuning_record r;
  const auto& dev = h.at("device");
  const auto& tool = h.value("tool", nlohmann::json::object());
  r.device_name = dev.value("name", "");
  // A GPU without a preset has "preset": null (device_spec's to_json): it is filed under its name.
  r.key.device_model = dev.contains("preset") && dev["preset"].is_string() ? dev["preset"].get<std::string>() : "";
  if (r.key.device_model.empty()) r.key.device_model = r.device_name;
  r.key.driver = tool.value("driver", std::string("unknown"));
  r.key.cuda = tool.value("cuda_runtime", std::string("unknown"));
  r.key.tool_version = tool.value("version", std::string("unknown"));
  r.key.compiler = tool.value("nvrtc", std::string("unknown"));
  r.key.problem = gemm_problem_from_json(result.at("problem"));
  r.measured_at = tool.value("date", std::string());
  if (predicted) r.key.driver = r.key.cuda = predicted_driver;
  r.strategy = result.contains("search") ? result["search"].value("strategy", "") : "exhaustive";
  const auto& rec = result.value("recommendation", nlohmann::json());
  if (rec.is_object()) {
    r.recommended = rec.value("id", "");
    if (rec.contains("tflops") && rec["tflops"].is_number()) r.tflops = rec["tflops"].get<double>();
  }
  // The whole result as one file would hold it: header and body.
  r.result = result;
  for (const char* k : {"schema", "tool", "device", "mode"})
    if (h.contains(k)) r.result[k] = h[k];
  r.result["schema"] = "tiletune.gemm/1";
  return r;
}

bool is_measured(const tuning_record& r) { return r.result.value("mode", "") == "measured"; }

int verification_rank(const tuning_record& r) {
  if (!is_measured(r)) return 0;
  if (r.recommended.empty()) return 1;
  for (const auto& v : r.result.value("variants", nlohmann::json::array()))
    if (v.is_object() && v.value("id", "") == r.recommended)
      return v.value("status", "") == "ok" && v.contains("max_rel_error") && v["max_rel_error"].is_number() ? 2 : 1;
  return 1;
}

bool better_record(const tuning_record& a, const tuning_record& b) {
  const int ra = verification_rank(a), rb = verification_rank(b);
  if (ra != rb) return ra > rb;
  return a.measured_at > b.measured_at;
}

}  // namespace tiletune
