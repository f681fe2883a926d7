// The tuning database's reads at scale: `db list`'s rows, calibration's
// inputs, export's best records and db merge, each through an index or one
// streamed pass, none reading JSON it does not return.
#include <map>
#include <sstream>
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

// The problem text of a filter in the key's words: what db list prints (gemm_problem::describe) reads
// "batch 8" for b8 (the word after the shape), "alpha 0.5 beta 1" for a0.5 b1, "rowwise-scaled" for
// srowwise, ", bf16 out" for obf16 and "in 4 groups (uniform t64 k2, contiguous)" for g4 and the
// distribution's words ("rows given" has no word in the key, which holds a hash of the rows).
struct key_words {
  std::vector<std::string> words;  // each a whole word of the key
  std::string batch;               // "b8": the key's second word
};

key_words key_words_of(const std::string& text) {
  std::string cleaned = text;
  for (char& c : cleaned)
    if (c == ',' || c == '(' || c == ')') c = ' ';
  std::vector<std::string> in;
  std::istringstream words(cleaned);
  for (std::string w; words >> w;) in.push_back(w);
  key_words out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::string& w = in[i];
    const bool has_next = i + 1 < in.size();
    if (w == "batch" && has_next) {
      out.batch = "b" + in[++i];
    } else if (w == "alpha" && has_next) {
      std::string pair = "a" + in[++i];
      if (i + 2 < in.size() && in[i + 1] == "beta") pair += " b" + in[i += 2];
      out.words.push_back(pair);
    } else if (w == "beta" && has_next) {
      out.words.push_back("b" + in[++i]);
    } else if (w.size() > 7 && w.ends_with("-scaled")) {
      out.words.push_back("s" + w.substr(0, w.size() - 7));
    } else if (has_next && in[i + 1] == "out") {
      out.words.push_back("o" + w);
      ++i;
    } else if (w == "in" && i + 2 < in.size() && (in[i + 2] == "groups" || in[i + 2] == "group")) {
      out.words.push_back("g" + in[i + 1]);
      i += 2;
    } else if (w == "rows" && has_next && in[i + 1] == "given") {
      ++i;
    } else {
      out.words.push_back(w);
    }
  }
  return out;
}

// The WHERE clause of a filter and its arguments, in order.
std::string where_of(const tuning_filter& f, std::vector<std::string>& args) {
  std::vector<std::string> terms;
  if (!f.device_model.empty()) {
    args.push_back(f.device_model);
    terms.push_back(fmt::format("device_model = ?{}", args.size()));
  }
  // Each word of the problem text is a whole word of the key: "4096x4096x4096 bf16 nt" (as db list
  // prints a problem) matches "4096x4096x4096 b1 bf16 nt a1 b0".
  const key_words words = key_words_of(f.problem);
  for (const std::string& w : words.words) {
    args.push_back(" " + w + " ");
    terms.push_back(fmt::format("instr(' ' || problem || ' ', ?{}) > 0", args.size()));
  }
  if (!words.batch.empty()) {  // the word after the shape, not a beta of the same figure
    args.push_back(" " + words.batch + " ");
    terms.push_back(fmt::format("instr(problem || ' ', ?{0}) > 0 AND instr(problem || ' ', ?{0}) = instr(problem, ' ')",
                                args.size()));
  }
  if (!f.since.empty()) {
    args.push_back(canonical_iso_date(f.since));  // the form records are stored in
    terms.push_back(fmt::format("measured_at >= ?{}", args.size()));
  }
  return terms.empty() ? "" : fmt::format("WHERE {}", fmt::join(terms, " AND "));
}

}  // namespace

gemm_problem tuning_db::stored_problem(const std::string& json_text, const std::string& key) const {
  try {
    return gemm_problem_from_json(nlohmann::json::parse(json_text));
  } catch (const std::exception&) {
    throw environment_error(fmt::format("tuning database {}: a stored record ({}) has no readable problem; give "
                                        "another database file",
                                        file_.string(), key));
  }
}

void tuning_db::for_each_row(const tuning_filter& f, const std::function<void(const tuning_row&)>& each) const {
  std::vector<std::string> args;
  const std::string sql = fmt::format(
      "SELECT device_model, driver, cuda, tool_version, compiler, device_name, strategy, measured_at, recommended, "
      "tflops, measured, verified, problem_json, problem FROM results {} "
      "ORDER BY measured_at DESC{}",
      where_of(f, args), sqlite::limit_clause(f.limit));
  statement q;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &q.s, nullptr) != SQLITE_OK) fail("cannot read it");
  for (std::size_t i = 0; i < args.size(); ++i) sqlite::bind(q.s, static_cast<int>(i + 1), args[i]);
  int rc;
  while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) {
    tuning_row r;
    sqlite::read_record_head(q.s, r);
    r.measured = sqlite3_column_int(q.s, 10) != 0;
    r.verified = sqlite3_column_int(q.s, 11);
    r.key.problem = stored_problem(column_text(q.s, 12), column_text(q.s, 13));
    each(r);
  }
  if (rc != SQLITE_DONE) fail("cannot read it");
}

std::size_t tuning_db::count(const tuning_filter& f) const {
  std::vector<std::string> args;
  const std::string sql = fmt::format("SELECT count(*) FROM results {}", where_of(f, args));
  statement q;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &q.s, nullptr) != SQLITE_OK) fail("cannot read it");
  for (std::size_t i = 0; i < args.size(); ++i) sqlite::bind(q.s, static_cast<int>(i + 1), args[i]);
  if (sqlite3_step(q.s) != SQLITE_ROW) fail("cannot read it");
  return static_cast<std::size_t>(sqlite3_column_int64(q.s, 0));
}

std::vector<tuning_record> tuning_db::records(const tuning_filter& f) const {
  std::vector<std::string> args;
  const std::string where = where_of(f, args);
  return query(where, args, /*full=*/true, f.limit);
}

void tuning_db::vacuum() {
  if (sqlite3_exec(db_, "VACUUM", nullptr, nullptr, nullptr) != SQLITE_OK) fail("cannot vacuum it");
}

std::vector<std::string> tuning_db::device_models() const {
  statement q;
  // The primary key's index starts with the GPU model: a skip through it, not a scan of the records.
  if (sqlite3_prepare_v2(db_, "SELECT DISTINCT device_model FROM results ORDER BY device_model", -1, &q.s, nullptr) !=
      SQLITE_OK)
    fail("cannot read it");
  std::vector<std::string> out;
  while (sqlite3_step(q.s) == SQLITE_ROW) out.push_back(column_text(q.s, 0));
  return out;
}

std::string tuning_db::calibration_fingerprint(const std::string& device_model) const {
  statement q;
  if (sqlite3_prepare_v2(db_,
                         "SELECT count(*), coalesce(max(measured_at), ''), coalesce(sum(rowid), 0), "
                         "(SELECT count(*) FROM variant_tiles) FROM results WHERE device_model = ?1 AND measured = 1 "
                         "AND calibration IS NOT NULL",
                         -1, &q.s, nullptr) != SQLITE_OK)
    fail("cannot read it");
  sqlite::bind(q.s, 1, device_model);
  if (sqlite3_step(q.s) != SQLITE_ROW) fail("cannot read it");
  return fmt::format("{} records, newest {}, rows {}, tiles {}", sqlite3_column_int64(q.s, 0), column_text(q.s, 1),
                     sqlite3_column_int64(q.s, 2), sqlite3_column_int64(q.s, 3));
}

std::vector<nlohmann::json> tuning_db::calibration_inputs(const std::string& device_model) const {
  std::map<long long, nlohmann::json> tiles;
  {
    statement t;
    if (sqlite3_prepare_v2(db_, "SELECT num, id, tile FROM variant_tiles", -1, &t.s, nullptr) != SQLITE_OK)
      fail("cannot read it");
    while (sqlite3_step(t.s) == SQLITE_ROW)
      tiles[sqlite3_column_int64(t.s, 0)] = {{"id", column_text(t.s, 1)},
                                             {"tile", nlohmann::json::parse(column_text(t.s, 2), nullptr, false)}};
  }
  statement q;
  if (sqlite3_prepare_v2(db_,
                         "SELECT record, calibration FROM results WHERE device_model = ?1 AND measured = 1 AND "
                         "calibration IS NOT NULL ORDER BY measured_at DESC",
                         -1, &q.s, nullptr) != SQLITE_OK)
    fail("cannot read it");
  sqlite::bind(q.s, 1, device_model);
  std::vector<nlohmann::json> out;
  int rc;
  while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) {
    auto r = nlohmann::json::parse(inflated(q.s, 0), nullptr, false);
    const auto rows = nlohmann::json::parse(inflated(q.s, 1), nullptr, false);
    if (!r.is_object() || !rows.is_array()) fail("a stored record is not JSON");
    nlohmann::json variants = nlohmann::json::array();
    for (const auto& row : rows) {
      const auto it = tiles.find(row.at(0).get<long long>());
      if (it == tiles.end()) fail("a calibration row names a tile the database does not hold");
      variants.push_back({{"id", it->second["id"]},
                          {"status", "ok"},
                          {"tile", it->second["tile"]},
                          {"resources", {{"registers", row.at(2)}, {"smem_bytes", row.at(3)}}},
                          {"median_us", row.at(1)}});
      if (row.size() >= 6 && row[4].is_string()) {  // its search stage and margin behind the leader
        variants.back()["search_stage"] = row[4];
        if (row[5].is_number() && row[5].get<double>() >= 0) variants.back()["behind_leader"] = row[5];
      }
      if (row.size() >= 7 && row[6].is_number()) variants.back()["sm_clock_mhz"] = row[6];  // the clock it ran at
    }
    r["variants"] = std::move(variants);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) fail("cannot read it");
  return out;
}

std::vector<tuning_record> tuning_db::best_per_problem(const std::string& device_model) const {
  // Ordered so the first row of each (GPU model, problem) is its best: better verified, then newer.
  const std::string sql = fmt::format(
      "SELECT device_model, driver, cuda, tool_version, compiler, device_name, strategy, measured_at, recommended, "
      "tflops, problem, problem_json, measured, recommendation, verified FROM results {} "
      "ORDER BY device_model, problem, verified DESC, measured_at DESC",
      device_model.empty() ? "" : "WHERE device_model = ?1");
  statement q;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &q.s, nullptr) != SQLITE_OK) fail("cannot read it");
  if (!device_model.empty()) sqlite::bind(q.s, 1, device_model);
  std::vector<tuning_record> out;
  std::string last_model, last_problem;
  int rc;
  while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) {
    const std::string model = column_text(q.s, 0), problem = column_text(q.s, 10);
    if (!out.empty() && model == last_model && problem == last_problem) continue;
    last_model = model;
    last_problem = problem;
    tuning_record r;
    sqlite::read_record_head(q.s, r);
    r.key.problem = stored_problem(column_text(q.s, 11), problem);
    r.result = {{"problem", nlohmann::json::parse(column_text(q.s, 11))},
                {"mode", sqlite3_column_int(q.s, 12) ? "measured" : "predicted"}};
    if (sqlite3_column_type(q.s, 13) != SQLITE_NULL)
      r.result["recommendation"] = nlohmann::json::parse(column_text(q.s, 13), nullptr, false);
    r.verified = sqlite3_column_int(q.s, 14);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) fail("cannot read it");
  return out;
}

}  // namespace tiletune
