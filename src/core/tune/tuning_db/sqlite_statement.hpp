#pragma once
// What the tuning database's files share about SQLite: a statement that
// finalizes itself, and a column read as text.
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace tiletune::sqlite {

struct statement {
  sqlite3_stmt* s = nullptr;
  statement() = default;
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;
  ~statement() { sqlite3_finalize(s); }
};

inline std::string column_text(sqlite3_stmt* s, int i) {
  const auto* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

inline void bind(sqlite3_stmt* s, int i, const std::string& text) {
  sqlite3_bind_text(s, i, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

// " LIMIT n" for a query of at most n rows (0: all); SQLite's limit is an int64, so a larger n is all.
inline std::string limit_clause(std::size_t n) {
  return n ? " LIMIT " + std::to_string(std::min<std::size_t>(n, INT64_MAX)) : "";
}

// The WHERE clause that finds one record by its key: ?1..?6 bound to the device model, driver,
// CUDA, tool version, compiler and problem key (bind_key binds them in that order).
constexpr const char* key_clause =
    "device_model = ?1 AND driver = ?2 AND cuda = ?3 AND tool_version = ?4 AND compiler = ?5 AND problem = ?6";

// One record's key as one string (the six key columns in key_clause's order, joined by a byte
// no field holds): how an import and a merge tell records of the same key apart in memory.
inline std::string joined_key(const std::string (&columns)[6]) {
  std::string k;
  for (int i = 0; i < 6; ++i) {
    if (i) k += '\x1f';
    k += columns[i];
  }
  return k;
}

inline void bind_blob(sqlite3_stmt* s, int i, const std::string& bytes) {
  sqlite3_bind_blob(s, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
}

}  // namespace tiletune::sqlite

namespace tiletune::sqlite {

// A record's JSON as the database stores it: zlib, after the text's length
// (4 bytes, little-endian). inflate throws environment_error on a damaged blob.
std::string deflate(const std::string& text);
std::string inflate(const void* blob, int bytes);
// The column, inflated (empty for NULL).
std::string column_inflated(sqlite3_stmt* s, int i);

}  // namespace tiletune::sqlite

namespace tiletune::sqlite {

// The ten columns every record query starts with (device_model, driver, cuda, tool_version,
// compiler, device_name, strategy, measured_at, recommended, tflops) into a tuning_record or
// tuning_row.
template <class Record>
void read_record_head(sqlite3_stmt* s, Record& r) {
  r.key.device_model = column_text(s, 0);
  r.key.driver = column_text(s, 1);
  r.key.cuda = column_text(s, 2);
  r.key.tool_version = column_text(s, 3);
  r.key.compiler = column_text(s, 4);
  r.device_name = column_text(s, 5);
  r.strategy = column_text(s, 6);
  r.measured_at = column_text(s, 7);
  r.recommended = column_text(s, 8);
  r.tflops = sqlite3_column_double(s, 9);
}

}  // namespace tiletune::sqlite
