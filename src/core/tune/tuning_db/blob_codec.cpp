// The tuning database's compressed columns (see sqlite_statement.hpp).
#include <zlib.h>

#include <cstdint>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/tune/tuning_db/sqlite_statement.hpp"

namespace tiletune::sqlite {

std::string deflate(const std::string& text) {
  uLongf bound = compressBound(static_cast<uLong>(text.size()));
  std::string out(4 + bound, '\0');
  const auto n = static_cast<std::uint32_t>(text.size());
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  if (compress2(reinterpret_cast<Bytef*>(out.data() + 4), &bound, reinterpret_cast<const Bytef*>(text.data()),
                static_cast<uLong>(text.size()), 6) != Z_OK)
    throw environment_error("cannot compress a record for the tuning database");
  out.resize(4 + bound);
  return out;
}

std::string inflate(const void* blob, int bytes) {
  const auto* b = static_cast<const unsigned char*>(blob);
  if (bytes < 4 || b == nullptr) throw environment_error("a stored record is damaged (too short)");
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<std::uint32_t>(b[i]) << (8 * i);
  if (n > (1u << 30)) throw environment_error(fmt::format("a stored record is damaged (says {} bytes)", n));
  std::string out(n, '\0');
  uLongf got = n;
  if (uncompress(reinterpret_cast<Bytef*>(out.data()), &got, b + 4, static_cast<uLong>(bytes - 4)) != Z_OK || got != n)
    throw environment_error("a stored record is damaged (it does not decompress)");
  return out;
}

std::string column_inflated(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return "";
  const void* blob = sqlite3_column_blob(s, i);
  return inflate(blob, sqlite3_column_bytes(s, i));
}

}  // namespace tiletune::sqlite
