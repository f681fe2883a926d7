// The tuning database at scale (issue 41): compact records, calibration from
// them, filtered streaming, the best record per problem, and schema 1 upgraded
// in place.
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "core/tune/calibration/model_calibration.hpp"
#include "core/tune/fleet/tuning_export.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"

using namespace tiletune;
namespace fs = std::filesystem;

namespace {

struct db_scale_scratch {
  fs::path dir = fs::temp_directory_path() / ("tiletune-dbscale-" + std::to_string(getpid()));
  db_scale_scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~db_scale_scratch() { fs::remove_all(dir); }
};

// The H200's recorded measurements: single-problem results with every variant,
// one per problem.
std::vector<nlohmann::json> recorded_h200_keys() {
  std::vector<nlohmann::json> out;
  const fs::path dir = fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h200-2026-11-26/gemm";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json" && e.path().filename().string().find("alone") == std::string::npos)
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::set<std::string> keys;  // one result per key (a problem measured twice is one record)
  for (const auto& f : files) {
    std::ifstream in(f);
    auto j = nlohmann::json::parse(in);
    if (keys.insert(tuning_problem_key(record_from_result(j, nlohmann::json()).key.problem)).second)
      out.push_back(std::move(j));
  }
  return out;
}

std::size_t file_bytes(const fs::path& f) {
  std::size_t n = fs::file_size(f);
  std::error_code ec;
  const auto wal = fs::path(f.string() + "-wal");
  if (fs::exists(wal, ec)) n += fs::file_size(wal);
  return n;
}

// The mean bytes of a record's stored columns (with the whole result where kept).
double file_stored_bytes(const fs::path& file, bool with_full) {
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open(file.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  const std::string sql = std::string("SELECT avg(length(record) + coalesce(length(calibration), 0) + ") +
                          "length(problem_json) + coalesce(length(recommendation), 0)" +
                          (with_full ? " + coalesce(length(full), 0)" : "") + ") FROM results";
  sqlite3_prepare_v2(raw, sql.c_str(), -1, &q, nullptr);
  const double bytes = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_double(q, 0) : 0;
  sqlite3_finalize(q);
  sqlite3_close(raw);
  return bytes;
}

void exec(const fs::path& file, const std::string& sql) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &raw), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(raw);
}

}  // namespace

// A stored measurement is a few KB, keeps its recommended row, and answers as before;
// --db-full keeps every row.
TEST(tuning_db_scale, a_record_is_compact_unless_full_results_are_kept) {
  db_scale_scratch s;
  const auto results = recorded_h200_keys();
  ASSERT_GE(results.size(), 10u);
  const auto r = record_from_result(results[0], nlohmann::json());
  const std::size_t whole = r.result.dump().size();
  {
    tuning_db db(s.dir / "compact.sqlite3");
    for (const auto& j : results) db.store(record_from_result(j, nlohmann::json()));
    const auto found = db.find(r.key);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->recommended, r.recommended);
    EXPECT_EQ(verification_rank(*found), verification_rank(r));
    const auto& variants = found->result["variants"];
    ASSERT_LE(variants.size(), compact_variant_rows);
    EXPECT_EQ(variants[0]["id"], r.recommended);  // the recommended row first
    EXPECT_EQ(found->result["variants_listed"]["of"], r.result["variants"].size());
    EXPECT_EQ(found->result["recommendation"], r.result["recommendation"]);
    EXPECT_LT(found->result.dump().size(), whole / 5);
  }
  {
    tuning_db db(s.dir / "full.sqlite3");
    db.keep_full_results(true);
    for (const auto& j : results) db.store(record_from_result(j, nlohmann::json()));
    EXPECT_EQ(db.find(r.key)->result["variants"].size(), r.result["variants"].size());
  }
  // What a record adds (its row's columns; the file's fixed pages and the shared tiles aside).
  const double per_record = file_stored_bytes(s.dir / "compact.sqlite3", false);
  const double per_full = file_stored_bytes(s.dir / "full.sqlite3", true);
  std::printf("bytes per record: compact %.0f, with the whole result %.0f (the whole result's JSON %zu)\n",
              per_record, per_full, whole);
  EXPECT_LT(per_record, 8000);
  EXPECT_GT(per_full, 2 * per_record);
}

// Calibration from the compact records fits what it fitted from the whole results.
TEST(tuning_db_scale, calibration_from_compact_records_equals_calibration_from_whole_results) {
  db_scale_scratch s;
  const auto results = recorded_h200_keys();
  tuning_db db(s.dir / "t.sqlite3");
  for (const auto& j : results) db.store(record_from_result(j, nlohmann::json()));
  const auto inputs = db.calibration_inputs("h200");
  ASSERT_EQ(inputs.size(), results.size());
  const auto whole = to_json(fit_calibration(results));
  const auto compact = to_json(fit_calibration(inputs));
  EXPECT_EQ(whole.dump(), compact.dump());
  EXPECT_TRUE(db.calibration_inputs("h100-sxm").empty());
}

// db list's filters and limit read only the rows they select; count ignores the limit.
TEST(tuning_db_scale, rows_stream_newest_first_through_filters_and_a_limit) {
  db_scale_scratch s;
  const auto results = recorded_h200_keys();
  tuning_db db(s.dir / "t.sqlite3");
  std::size_t day = 10;
  for (const auto& j : results) {
    auto r = record_from_result(j, nlohmann::json());
    r.measured_at = fmt::format("2026-11-{:02d}T00:00:00Z", day++);
    db.store(r);
  }
  EXPECT_EQ(db.count({}), results.size());
  std::vector<std::string> dates;
  db.for_each_row({"h200", "", "", 3}, [&](const tuning_row& r) { dates.push_back(r.measured_at); });
  ASSERT_EQ(dates.size(), 3u);
  EXPECT_GT(dates[0], dates[1]);
  EXPECT_EQ(db.count({"", "", "2026-11-12", 0}), results.size() - 2);
  EXPECT_EQ(db.count({"h100-sxm", "", "", 0}), 0u);
  const std::string key = tuning_problem_key(record_from_result(results[0], nlohmann::json()).key.problem);
  std::size_t hits = 0;
  db.for_each_row({"", key, "", 0}, [&](const tuning_row& r) {
    EXPECT_EQ(tuning_problem_key(r.key.problem), key);
    EXPECT_TRUE(r.measured);
    ++hits;
  });
  EXPECT_EQ(hits, 1u);
  EXPECT_EQ(db.device_models(), std::vector<std::string>{"h200"});
}

// Export's best record per problem, read by SQL, is the one better_record picks from every record.
TEST(tuning_db_scale, best_per_problem_in_one_pass_matches_better_record) {
  db_scale_scratch s;
  const auto results = recorded_h200_keys();
  tuning_db db(s.dir / "t.sqlite3");
  std::vector<tuning_record> all;
  for (const auto& j : results) {
    auto r = record_from_result(j, nlohmann::json());
    all.push_back(r);
    auto newer = r;  // the same problem under another driver, newer, and without a verified answer
    newer.key.driver = "999.0";
    newer.measured_at = "2099-01-01T00:00:00Z";
    newer.recommended.clear();
    all.push_back(newer);
    auto planned = r;  // a stored plan, newest of all
    planned.key.driver = planned.key.cuda = predicted_driver;
    planned.measured_at = "2099-12-31T00:00:00Z";
    planned.result["mode"] = "predicted";
    all.push_back(planned);
  }
  db.store_all(all);
  const auto expected = best_per_problem(all);
  const auto got = db.best_per_problem();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].key.driver, expected[i].key.driver) << tuning_problem_key(got[i].key.problem);
    EXPECT_EQ(got[i].measured_at, expected[i].measured_at);
    EXPECT_EQ(verification_rank(got[i]), verification_rank(expected[i]));
  }
  const auto json = export_json(got, "t.sqlite3", "2026-11-26");
  EXPECT_EQ(json["configs"].size(), results.size());
}

// A schema 1 file (the whole result per record) is upgraded in place when opened to write, read
// from an upgraded copy when opened to read;
// one whose records cannot be read is refused naming it, and left as it was.
TEST(tuning_db_scale, a_schema_1_file_is_upgraded_in_place_or_refused_unchanged) {
  db_scale_scratch s;
  const auto results = recorded_h200_keys();
  const std::string v1_schema =
      "CREATE TABLE tiletune_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "INSERT INTO tiletune_meta VALUES ('schema', 'tiletune.tuning-db/1');"
      "CREATE TABLE results (device_model TEXT NOT NULL, driver TEXT NOT NULL, cuda TEXT NOT NULL,"
      " tool_version TEXT NOT NULL, compiler TEXT NOT NULL, problem TEXT NOT NULL, device_name TEXT, strategy TEXT,"
      " measured_at TEXT, recommended TEXT, tflops REAL, result TEXT NOT NULL,"
      " PRIMARY KEY (device_model, driver, cuda, tool_version, compiler, problem));";
  auto insert_v1 = [](const tuning_record& r, const std::string& result_text) {
    auto quote = [](const std::string& t) {
      std::string q = "'";
      for (char c : t) q += c == '\'' ? std::string("''") : std::string(1, c);
      return q + "'";
    };
    return fmt::format("INSERT INTO results VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});",
                       quote(r.key.device_model), quote(r.key.driver), quote(r.key.cuda), quote(r.key.tool_version),
                       quote(r.key.compiler), quote(tuning_problem_key(r.key.problem)), quote(r.device_name),
                       quote(r.strategy), quote(r.measured_at), quote(r.recommended), r.tflops, quote(result_text));
  };
  const fs::path old = s.dir / "v1.sqlite3";
  std::string sql = v1_schema;
  for (const auto& j : results) {
    const auto r = record_from_result(j, nlohmann::json());
    sql += insert_v1(r, r.result.dump());
  }
  exec(old, sql);
  {
    // Opened to read, it is read through an upgraded temporary copy, and left byte for byte as it was.
    std::ifstream in(old, std::ios::binary);
    const std::string v1_bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // The copy is this process's own file in the temporary folder (other tests write there too).
    const std::string own = "tiletune-" + std::to_string(getpid()) + "-";
    auto copies = [&] {
      int n = 0;
      for (const auto& e : fs::directory_iterator(fs::temp_directory_path())) {
        const std::string name = e.path().filename().string();
        n += name.rfind(own, 0) == 0 && name.find("schema1-read") != std::string::npos;
      }
      return n;
    };
    {
      tuning_db db(old, tuning_db::open_mode::read);
      EXPECT_EQ(db.count({}), results.size());
      EXPECT_EQ(db.calibration_inputs("h200").size(), results.size());
      EXPECT_EQ(copies(), 1);
    }
    std::ifstream again(old, std::ios::binary);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>()), v1_bytes)
        << "opening schema 1 to read changed it";
    EXPECT_EQ(copies(), 0) << "the upgraded temporary copy was left behind";
  }
  {
    tuning_db db(old, tuning_db::open_mode::existing);
    EXPECT_EQ(db.count({}), results.size());
    EXPECT_EQ(db.calibration_inputs("h200").size(), results.size());
    const auto r = record_from_result(results[1], nlohmann::json());
    EXPECT_EQ(db.find(r.key)->recommended, r.recommended);
  }
  EXPECT_NO_THROW(tuning_db(old, tuning_db::open_mode::existing));  // now schema 2: opened as it is

  const fs::path bad = s.dir / "v1-bad.sqlite3";
  exec(bad, v1_schema + insert_v1(record_from_result(results[0], nlohmann::json()), "not json"));
  const auto before = file_bytes(bad);
  try {
    tuning_db db(bad);
    FAIL() << "a schema 1 file with an unreadable record was upgraded";
  } catch (const environment_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(bad.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  sqlite3_prepare_v2(raw, "SELECT value FROM tiletune_meta WHERE key = 'schema'", -1, &q, nullptr);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(q, 0)), "tiletune.tuning-db/1");  // rolled back
  sqlite3_finalize(q);
  sqlite3_close(raw);
  EXPECT_GT(before, 0u);
}
