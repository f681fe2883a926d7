#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gemm/problem.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace tiletune {

// Which measurement answers which question: the same GPU model, driver,
// CUDA runtime, tool and compiler, and the same problem.
struct tuning_key {
  std::string device_model;  // the preset ("h100-sxm"), or the GPU's name where none matches
  std::string driver = "unknown", cuda = "unknown";
  std::string tool_version, compiler;
  gemm_problem problem;
};
// "4096x4096x4096 b1 bf16 nt a1 b0": the problem as the database keys it.
std::string tuning_problem_key(const gemm_problem& p);

struct tuning_record {
  tuning_key key;
  std::string device_name;  // as the GPU called itself
  std::string strategy;     // the search that measured it
  std::string measured_at;  // ISO 8601, UTC
  std::string recommended;  // variant id, empty when none ran
  double tflops = 0;
  nlohmann::json result;  // the measured result (tiletune.gemm/1): whole, or compact as a database keeps it
  int verified = -1;      // verification_rank as the database filed it; -1: read it from the result
};

// One row of `db list`: the record's columns, no JSON read.
struct tuning_row {
  tuning_key key;  // key.problem from the record's problem
  std::string device_name, strategy, measured_at, recommended;
  double tflops = 0;
  bool measured = false;
  int verified = 0;  // verification_rank
};
// Which rows `db list` streams: every field is optional.
struct tuning_filter {
  std::string device_model;  // exactly
  std::string problem;       // words of the problem key ("4096x4096x4096 bf16 nt" of "4096x4096x4096 b1 bf16 nt a1 b0")
  std::string since;         // measured_at >= since (ISO 8601 compares as text)
  std::size_t limit = 0;     // newest first, at most this many (0: all)
};

// Measured results in one SQLite file (WAL, busy timeout), shared safely by
// concurrent runs; each store is its own transaction, so an interrupted suite
// keeps every problem it finished. A file that is not a tiletune database, or
// one of a newer schema, is an environment_error naming the file; one of an
// older schema is upgraded in place, in one transaction, when opened.
//
// A record is small (schema 2): the result without its variants, plus the
// recommended variant and the next fastest (compact_result), and for a
// measurement the rows calibration reads (each measured variant's id, time,
// registers and shared memory; the tiles once per id in their own table). The
// whole result (every variant, ~140 KB) is kept beside it only when asked
// (keep_full_results), and read only by find(). Look-ups go through indexes:
// the key, the problem, the time; nothing parses a record it does not return.
class tuning_db {
 public:
  static constexpr int schema_version = 2;
  // create: a missing or empty file becomes a new database. existing: the
  // file must already be a tiletune database;
  // nothing in it is changed by opening but an upgrade of an older schema.
  // read: as existing, and opening changes nothing at all: an older schema is
  // read from an upgraded copy in a temporary file (removed when closed).
  // Every mode refuses a file that is not a regular one (/dev/null, a FIFO).
  enum class open_mode { create, existing, read };
  // How much of an existing file is checked for damage when it is opened. whole: every page (PRAGMA
  // quick_check, 0.57 s at 100,000 records) before anything is read or written: the commands
  // that read or write in bulk (db import, merge, export, calibrate, vacuum). as_read: SQLite's
  // checks of the pages each query reads (a damaged one is an environment_error naming the file),
  // damage elsewhere not looked for: the look-ups that must answer in milliseconds at 100,000
  // records (a gemm repeat, db list, db show, batch --db).
  enum class page_check { whole, as_read };
  explicit tuning_db(std::filesystem::path file, open_mode mode = open_mode::create,
                     page_check check = page_check::whole);
  // How long a database opened after this waits for another run's write lock before it fails
  // naming the file (30 s; a value of 0 or less restores that). Tests shorten it.
  static void set_busy_timeout_ms(int ms);
  ~tuning_db();
  tuning_db(const tuning_db&) = delete;
  tuning_db& operator=(const tuning_db&) = delete;

  // Whether store() keeps every variant's row too (off: the compact record only).
  void keep_full_results(bool keep) { keep_full_ = keep; }

  // The record of this key: the whole result where it was kept, else the compact one.
  std::optional<tuning_record> find(const tuning_key& key) const;
  // Records of this problem measured on this GPU model with any driver or tool, newest first.
  std::vector<tuning_record> find_same_model(const std::string& device_model, const gemm_problem& p) const;
  // Every record (of one GPU model when given), newest first, compact.
  std::vector<tuning_record> list(const std::string& device_model = "") const;
  // The rows a filter selects, newest first, streamed without reading a record's JSON
  // but its problem; and how many rows match (without the limit).
  void for_each_row(const tuning_filter& f, const std::function<void(const tuning_row&)>& each) const;
  std::size_t count(const tuning_filter& f) const;
  std::vector<std::string> device_models() const;
  // The records a filter selects, newest first, each whole where its whole result was kept (db show).
  std::vector<tuning_record> records(const tuning_filter& f) const;
  // Reads every stored record, calibration and whole result: throws environment_error naming
  // the file at the first that does not decompress or is not JSON (db merge checks its inputs).
  void check_records() const;
  // VACUUM: the file rewritten without its free pages (after an upgrade or many replacements).
  void vacuum();
  // The measured results of one GPU model as fit_calibration reads them: the
  // record with "variants" rebuilt from its calibration rows (every measured
  // variant, its tile, registers, shared memory and median).
  std::vector<nlohmann::json> calibration_inputs(const std::string& device_model) const;
  // What calibration_inputs(device_model) would read, in one short string that changes whenever
  // they do (their count, newest measured_at and row ids: a replaced record gets a new row id),
  // read without inflating a record: the key of a cached fit (calibration_cache.hpp).
  std::string calibration_fingerprint(const std::string& device_model) const;
  // The best record per GPU model and problem (better verified, then newer; any
  // driver, tool or compiler), in GPU model then problem key order; each record's
  // result holds what export reads: problem, mode, recommendation.
  std::vector<tuning_record> best_per_problem(const std::string& device_model = "") const;
  // Inserts or replaces the record of the same key.
  void store(const tuning_record& r);
  // Stores every record in one transaction: all or none.
  void store_all(const std::vector<tuning_record>& records);
  // db import: stores r unless the record of its key is as good (better_record: better verified,
  // then newer; of two as good, the one that holds more of the measurement: calibration rows, then
  // the whole result, as a compact record from `db show --json` holds neither), as db merge keeps
  // the better of two; the look-up and the write are one transaction under the write lock.
  // Returns whether r was stored.
  bool store_if_better(const tuning_record& r);
  // The same for every record, in one transaction: all of them looked at and stored, or none (a
  // record that cannot be stored leaves the database as it was). Of the records given for one key,
  // the best (by the same rule; the first on a tie) meets the stored one.
  struct store_outcome {
    std::size_t stored = 0;    // keys whose record was written
    std::size_t repeated = 0;  // records given beside another of their key: one record is kept per key
    // Keys whose stored record stayed, by why: better verified (of them, older than the best given),
    // as well verified and newer, as well verified, as new and holding as much.
    std::size_t better_verified = 0, better_verified_older = 0, newer = 0, as_new = 0;
    std::size_t kept() const { return better_verified + newer + as_new; }
  };
  store_outcome store_all_if_better(const std::vector<tuning_record>& records);
  // db merge: every input's rows into this database in one transaction that
  // holds its write lock (BEGIN IMMEDIATE); per key the better_record stays,
  // the one read first on a tie (this database's own first, then the inputs in
  // order). Streams the rows (no JSON read, bounded memory). Returns, per
  // source (this database first, then each input), the rows read and the rows
  // the merged database keeps from it.
  struct merge_counts {
    std::vector<std::size_t> read, kept;
  };
  merge_counts merge_from(const std::vector<const tuning_db*>& inputs);
  const std::filesystem::path& file() const { return file_; }

 private:
  std::vector<tuning_record> query(const std::string& where, const std::vector<std::string>& args,
                                   bool full = false, std::size_t limit = 0) const;
  [[noreturn]] void fail(const std::string& what) const;
  // A record's problem from its stored JSON text; a text that is not one throws environment_error
  // naming this file and the record (key: its problem column).
  gemm_problem stored_problem(const std::string& json_text, const std::string& key) const;
  // The constructor's work (had_pages: the file existed, not empty); it closes the handle when this throws.
  void open_and_check(bool had_pages);
  void read_upgraded_copy();  // open_mode::read of schema 1: db_ becomes an upgraded temporary copy
  // The column inflated (empty for NULL); a damaged blob is an environment_error naming the file.
  std::string inflated(sqlite3_stmt* s, int column) const;
  void upgrade_from_1();  // schema 1 (the whole result per record) to 2, in the open transaction
  void bind_and_step(const tuning_record& r);
  // What of a measurement the stored record of k holds beyond its compact form: 1 for its
  // calibration rows, 1 more for its whole result; what r would hold stored here.
  int detail_held(const tuning_key& k) const;
  int detail_given(const tuning_record& r) const;
  void merge_input(const tuning_db& in, std::size_t source, sqlite3_stmt* look, sqlite3_stmt* put,
                   std::unordered_map<std::string, std::size_t>& origin, merge_counts& counts);
  std::filesystem::path file_;
  open_mode mode_ = open_mode::create;
  page_check check_ = page_check::whole;
  bool keep_full_ = false;
  sqlite3* db_ = nullptr;
  std::filesystem::path temp_copy_;  // read_upgraded_copy's file, removed by the destructor
};

// The variants a compact record keeps in full: the recommended one and the
// next fastest (measured) or best ranked (planned), this many in all.
inline constexpr std::size_t compact_variant_rows = 4;
// A result without most of its variants (see tuning_db): "variants" holds the
// compact_variant_rows best rows, "variants_listed" says how many of how many.
nlohmann::json compact_result(const nlohmann::json& result);

// default_cache_dir()/tuning.sqlite3: beside the compiled kernels.
std::filesystem::path default_tuning_db_path();

// A record from a measured tiletune.gemm/1 result (and its suite header when
// it came from a suite); throws usage_error when it is not a measured result.
// With allow_predicted, an offline plan is a record too (gemm --store-plans):
// its driver and CUDA runtime are filed as "predicted", so it never shares a
// key with (and so never replaces) a measurement.
tuning_record record_from_result(const nlohmann::json& result, const nlohmann::json& header,
                                 bool allow_predicted = false);
inline constexpr const char* predicted_driver = "predicted";

// Whether a record holds a measurement ("mode": "measured"), not a stored plan.
bool is_measured(const tuning_record& r);
// How well a record's answer was checked, from what it holds: 2 measured with
// its recommended variant verified against cuBLASLt (status ok and a
// max_rel_error figure), 1 measured without that (no variant ran, or an older
// record without the figure), 0 a stored plan (predicted, nothing ran).
int verification_rank(const tuning_record& r);
// Whether a is the better answer for the same question: better verified, then
// newer (measured_at, ISO 8601 UTC, compares as text).
bool better_record(const tuning_record& a, const tuning_record& b);

}  // namespace tiletune
