// db merge at scale: every input's rows streamed into this database in one
// transaction, compared by their key and rank columns, copied as they are
// stored (no record's JSON read but its calibration rows' tile numbers).
#include <unordered_map>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/iso_date.hpp"
#include "core/tune/tuning_db/sqlite_statement.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"

namespace tiletune {

using sqlite::column_text;
using sqlite::statement;

namespace {

constexpr const char* all_columns =
    "device_model, driver, cuda, tool_version, compiler, problem, device_name, strategy, measured_at, recommended, "
    "tflops, measured, verified, problem_json, recommendation, record, calibration, full";
constexpr int column_count = 18;
constexpr int measured_at_column = 8, verified_column = 12, calibration_column = 16, full_column = 17;

// The key of the row a statement stands on, its first six columns in key_clause's order.
std::string record_key_of(sqlite3_stmt* s) {
  std::string columns[6];
  for (int i = 0; i < 6; ++i) columns[i] = column_text(s, i);
  return sqlite::joined_key(columns);
}

}  // namespace

namespace {

// The keys a database holds now (db merge's source 0), and how many.
std::size_t read_own_keys(sqlite3* db, std::unordered_map<std::string, std::size_t>& origin) {
  statement own;
  if (sqlite3_prepare_v2(db, "SELECT device_model, driver, cuda, tool_version, compiler, problem FROM results", -1,
                         &own.s, nullptr) != SQLITE_OK)
    return static_cast<std::size_t>(-1);
  std::size_t n = 0;
  while (sqlite3_step(own.s) == SQLITE_ROW) {
    origin[record_key_of(own.s)] = 0;
    ++n;
  }
  return n;
}

// An input's tile numbers as `to` numbers the same tiles (filed there on first sight);
// false when a statement fails.
bool map_tiles(sqlite3* from, sqlite3* to, std::unordered_map<long long, long long>& tile_of) {
  statement t, ins, get;
  sqlite3_prepare_v2(from, "SELECT num, id, tile FROM variant_tiles", -1, &t.s, nullptr);
  sqlite3_prepare_v2(to, "INSERT OR IGNORE INTO variant_tiles (id, tile) VALUES (?1, ?2)", -1, &ins.s, nullptr);
  sqlite3_prepare_v2(to, "SELECT num FROM variant_tiles WHERE id = ?1", -1, &get.s, nullptr);
  if (!t.s || !ins.s || !get.s) return false;
  while (sqlite3_step(t.s) == SQLITE_ROW) {
    sqlite3_reset(ins.s);
    sqlite3_reset(get.s);
    sqlite::bind(ins.s, 1, column_text(t.s, 1));
    sqlite::bind(ins.s, 2, column_text(t.s, 2));
    sqlite::bind(get.s, 1, column_text(t.s, 1));
    if (sqlite3_step(ins.s) != SQLITE_DONE || sqlite3_step(get.s) != SQLITE_ROW) return false;
    tile_of[sqlite3_column_int64(t.s, 0)] = sqlite3_column_int64(get.s, 0);
  }
  return true;
}

// Whether the input's row (`row`) replaces what `look` found of its key: only a strictly
// better record does (better verified, then newer, then holding more of the measurement: its
// calibration rows, then its whole result); on a tie the first read stays.
bool replaces(sqlite3_stmt* row, sqlite3_stmt* look) {
  if (sqlite3_step(look) != SQLITE_ROW) return true;  // a key the target does not hold
  const int theirs = sqlite3_column_int(row, verified_column), ours = sqlite3_column_int(look, 0);
  if (theirs != ours) return theirs > ours;
  const std::string their_date = canonical_iso_date(column_text(row, measured_at_column)),
                    our_date = canonical_iso_date(column_text(look, 1));
  if (their_date != our_date) return their_date > our_date;
  const int their_detail = (sqlite3_column_type(row, calibration_column) != SQLITE_NULL) +
                           (sqlite3_column_type(row, full_column) != SQLITE_NULL);
  return their_detail > sqlite3_column_int(look, 2);
}

}  // namespace

void tuning_db::check_records() const {
  statement q;
  if (sqlite3_prepare_v2(db_, "SELECT record, calibration, full, problem, problem_json FROM results", -1, &q.s,
                         nullptr) != SQLITE_OK)
    fail("cannot read it");
  int rc;
  while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) {
    const auto record = nlohmann::json::parse(inflated(q.s, 0), nullptr, false);
    const std::string calibration = inflated(q.s, 1), full = inflated(q.s, 2);
    const bool whole = record.is_object() &&
                       (calibration.empty() || nlohmann::json::parse(calibration, nullptr, false).is_array()) &&
                       (full.empty() || nlohmann::json::parse(full, nullptr, false).is_object());
    if (!whole)
      throw environment_error(fmt::format("tuning database {}: the stored record of \"{}\" is damaged (not JSON); give "
                                          "another database file",
                                          file_.string(), column_text(q.s, 3)));
    // The problem as list and export read it (its column), and as a look-up by key reads it (the record's).
    (void)stored_problem(column_text(q.s, 4), column_text(q.s, 3));
    (void)stored_problem(record.contains("problem") ? record["problem"].dump() : "", column_text(q.s, 3));
  }
  if (rc != SQLITE_DONE) fail("cannot read it");
}

// Copies one input's rows that win into this database (see merge_from), counting them in `counts`.
void tuning_db::merge_input(const tuning_db& in, std::size_t source, sqlite3_stmt* look, sqlite3_stmt* put,
                            std::unordered_map<std::string, std::size_t>& origin, merge_counts& counts) {
  std::unordered_map<long long, long long> tile_of;
  if (!map_tiles(in.db_, db_, tile_of)) in.fail("cannot merge its tiles");
  statement rows;
  if (sqlite3_prepare_v2(in.db_, fmt::format("SELECT {} FROM results", all_columns).c_str(), -1, &rows.s, nullptr) !=
      SQLITE_OK)
    in.fail("cannot read it");
  int rc;
  while ((rc = sqlite3_step(rows.s)) == SQLITE_ROW) {
    ++counts.read[source];
    sqlite3_reset(look);
    for (int c = 0; c < 6; ++c) sqlite3_bind_value(look, c + 1, sqlite3_column_value(rows.s, c));
    if (!replaces(rows.s, look)) continue;
    sqlite3_reset(put);
    for (int c = 0; c < column_count; ++c) sqlite3_bind_value(put, c + 1, sqlite3_column_value(rows.s, c));
    if (sqlite3_column_type(rows.s, calibration_column) != SQLITE_NULL) {
      // The calibration rows name tiles by the input's numbers: renumbered as this database files them.
      auto cal = nlohmann::json::parse(in.inflated(rows.s, calibration_column), nullptr, false);
      if (!cal.is_array()) in.fail("a record's calibration rows are not JSON");
      for (auto& r : cal) {
        const auto it = tile_of.find(r.at(0).get<long long>());
        if (it == tile_of.end()) in.fail("a calibration row names a tile the database does not hold");
        r[0] = it->second;
      }
      sqlite::bind_blob(put, calibration_column + 1, sqlite::deflate(cal.dump()));
    }
    if (sqlite3_step(put) != SQLITE_DONE) fail("cannot store a merged record");
    origin[record_key_of(rows.s)] = source;
  }
  if (rc != SQLITE_DONE) in.fail("cannot read it");
}

tuning_db::merge_counts tuning_db::merge_from(const std::vector<const tuning_db*>& inputs) {
  merge_counts counts;
  counts.read.assign(inputs.size() + 1, 0);
  counts.kept.assign(inputs.size() + 1, 0);
  std::unordered_map<std::string, std::size_t> origin;  // key -> the source its row came from
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) fail("cannot lock it");
  try {
    counts.read[0] = read_own_keys(db_, origin);
    if (counts.read[0] == static_cast<std::size_t>(-1)) fail("cannot read it");
    statement look, put;
    if (sqlite3_prepare_v2(db_,
                           fmt::format("SELECT verified, measured_at, (calibration IS NOT NULL) + (full IS NOT NULL) "
                                       "FROM results WHERE {}",
                                       sqlite::key_clause)
                               .c_str(),
                           -1, &look.s, nullptr) != SQLITE_OK ||
        sqlite3_prepare_v2(db_,
                           fmt::format("INSERT OR REPLACE INTO results ({}) VALUES ({})", all_columns,
                                       "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18")
                               .c_str(),
                           -1, &put.s, nullptr) != SQLITE_OK)
      fail("cannot write it");
    for (std::size_t i = 0; i < inputs.size(); ++i) merge_input(*inputs[i], i + 1, look.s, put.s, origin, counts);
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) fail("cannot commit");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  for (const auto& [key, source] : origin) ++counts.kept[source];
  return counts;
}

}  // namespace tiletune
