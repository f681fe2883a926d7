#pragma once
// What the tuning database's files share about SQLite: a statement that
// finalizes itself, and a column read as text.
#include <sqlite3.h>

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
