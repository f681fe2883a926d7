// db import's checks of what it stores and the truth of its summary line; db list's and show's
// --problem in any case.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace db_import_test {

// A recorded measurement whose recommended variant was verified against cuBLASLt (2026-11-23T09:06:19Z).
nlohmann::json recorded() {
  return nlohmann::json::parse(
      slurp(fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json"));
}

fs::path write(const nlohmann::json& j, const std::string& name) {
  const fs::path p = tmp_dir() / "db-import" / name;
  fs::create_directories(p.parent_path());
  std::ofstream(p) << j.dump();
  return p;
}

// The same run a week later, its recommended variant's error against cuBLASLt left out: newer, but
// less well verified than the recording.
nlohmann::json newer_unverified() {
  nlohmann::json j = recorded();
  j["tool"]["date"] = "2026-11-30T09:06:19Z";
  for (auto& v : j["variants"])
    if (v["id"] == j["recommendation"]["id"]) v.erase("max_rel_error");
  return j;
}

fs::path fresh_db(const std::string& name) {
  const fs::path db = tmp_dir() / "db-import" / name;
  fs::create_directories(db.parent_path());
  fs::remove(db);
  return db;
}

result import(const fs::path& db, const std::vector<fs::path>& files) {
  std::vector<std::string> args = {"db", "import", "--db", db.string()};
  for (const auto& f : files) args.push_back(f.string());
  return run(args);
}

std::string measured_at(const fs::path& db) {
  const result r = run({"db", "list", "--db", db.string(), "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["records"].size(), 1u) << r.out;
  return j["records"].empty() ? "" : j["records"][0]["measured_at"].get<std::string>();
}

void expect_refused(const result& r, const fs::path& file, const std::string& words) {
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(file.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("cannot use value()"), std::string::npos) << r.err;
}

}  // namespace db_import_test

using namespace db_import_test;

// Without a recommendation although variants ran ok, a result was stored as "no variant could run".
TEST(db_import_cli, a_result_without_its_recommendation_is_refused_naming_the_field) {
  nlohmann::json missing = recorded();
  missing.erase("recommendation");
  nlohmann::json null = recorded();
  null["recommendation"] = nullptr;
  const fs::path db = fresh_db("norec.sqlite3");
  for (const auto& [j, name, words] :
       {std::tuple{missing, "norec.json", "no \"recommendation\" field"},
        std::tuple{null, "nullrec.json", "\"recommendation\" is null (no variant could run), but 109 variant(s) ran ok"}}) {
    const fs::path file = write(j, name);
    expect_refused(import(db, {file}), file, words);
    EXPECT_FALSE(fs::exists(db)) << name;
  }
}

// gemm writes "recommendation": null where no variant ran ok: that result is stored as such.
TEST(db_import_cli, a_null_recommendation_where_no_variant_ran_ok_is_stored) {
  nlohmann::json none = recorded();
  nlohmann::json pruned = nlohmann::json::array();
  for (const auto& v : none["variants"])
    if (v["status"] == "pruned") pruned.push_back(v);
  ASSERT_FALSE(pruned.empty());
  none["variants"] = pruned;
  none["recommendation"] = nullptr;
  none["summary"]["ok"] = 0;
  const fs::path db = fresh_db("none-ran.sqlite3"), file = write(none, "none-ran.json");
  const result r = import(db, {file});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 1 measured result(s)"), std::string::npos) << r.out;
  const result list = run({"db", "list", "--db", db.string()});
  EXPECT_NE(list.out.find(" none "), std::string::npos) << list.out;
}

// Two results of one problem into an empty database: one record, the better verified, and no stored
// record was kept (there was none); the same whatever the files' order.
TEST(db_import_cli, two_results_of_one_problem_into_an_empty_database_are_counted_once) {
  const fs::path older = write(recorded(), "verified.json"), newer = write(newer_unverified(), "newer-unverified.json");
  for (const bool newer_first : {false, true}) {
    const fs::path db = fresh_db(newer_first ? "pair-newer-first.sqlite3" : "pair-older-first.sqlite3");
    const result r = import(db, newer_first ? std::vector<fs::path>{newer, older} : std::vector<fs::path>{older, newer});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("imported 1 measured result(s) from 2 file(s)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("; 1 of the same problem and setup as another result here"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(", 1 record(s) from these files"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("kept the stored record"), std::string::npos) << r.out;
    EXPECT_EQ(measured_at(db), "2026-11-23T09:06:19Z") << (newer_first ? "newer first" : "older first");
  }
}

// A stored record kept: the reason given is the one that kept it.
TEST(db_import_cli, a_kept_stored_record_is_kept_for_the_reason_given) {
  const fs::path verified = write(recorded(), "verified.json"), unverified = write(newer_unverified(), "newer-unverified.json");
  nlohmann::json earlier = recorded();
  earlier["tool"]["date"] = "2026-11-20T09:06:19Z";
  const fs::path older = write(earlier, "older-verified.json");

  // Better verified, though the file's result is a week newer.
  fs::path db = fresh_db("kept-verified.sqlite3");
  ASSERT_EQ(import(db, {verified}).code, 0);
  result r = import(db, {unverified});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 0 measured result(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; 1 kept the stored record, better verified though older than the file's result"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("at least as new"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("same problem and setup"), std::string::npos) << r.out;
  EXPECT_EQ(measured_at(db), "2026-11-23T09:06:19Z");

  // The other way round the better-verified file replaces the newer record.
  db = fresh_db("replaced-unverified.sqlite3");
  ASSERT_EQ(import(db, {unverified}).code, 0);
  r = import(db, {verified});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 1 measured result(s)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("kept the stored record"), std::string::npos) << r.out;
  EXPECT_EQ(measured_at(db), "2026-11-23T09:06:19Z");

  // As well verified and newer.
  db = fresh_db("kept-newer.sqlite3");
  ASSERT_EQ(import(db, {verified}).code, 0);
  r = import(db, {older});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("; 1 kept the stored record, as well verified and newer"), std::string::npos) << r.out;

  // The same file again: as well verified, as new and holding as much.
  r = import(db, {verified});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 0 measured result(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; 1 kept the stored record, as well verified, as new and holding as much"), std::string::npos)
      << r.out;

  // Two of one problem beside a stored record: one counted as kept, one as a repeat.
  r = import(db, {older, verified});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 0 measured result(s) from 2 file(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; 1 kept the stored record, as well verified, as new and holding as much"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("; 1 of the same problem and setup as another result here"), std::string::npos) << r.out;
}

// --problem's words in any case, as --gpu's; all of them must match.
TEST(db_import_cli, problem_words_match_in_any_case_and_all_of_them) {
  const fs::path dir = fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm";
  const fs::path db = fresh_db("case.sqlite3");
  ASSERT_EQ(import(db, {dir / "4096x4096x4096-bf16-nt.json", dir / "4096x4096x4096-f32-nn.json"}).code, 0);
  for (const char* words : {"f32 nn", "F32 NN", "F32 nn"}) {
    const result r = run({"db", "list", "--db", db.string(), "--problem", words});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find(": 1 record(s)"), std::string::npos) << words << ": " << r.out;
  }
  const result none = run({"db", "list", "--db", db.string(), "--problem", "F32 NT"});
  EXPECT_NE(none.out.find(": 0 record(s)"), std::string::npos) << none.out;
  const result show = run({"db", "show", "--db", db.string(), "--problem", "4096x4096x4096 BF16 NT", "--json"});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_EQ(nlohmann::json::parse(show.out)["records"].size(), 1u) << show.out;
  const result help = run({"db", "list", "--help"});
  EXPECT_NE(help.out.find("all of these words, in any case"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("any of them"), std::string::npos) << help.out;
}

// Damaged numbers are named by their field: a negative count, a null time.
TEST(db_import_cli, a_negative_count_or_a_null_recommended_time_is_refused_naming_it) {
  const fs::path db = fresh_db("damaged.sqlite3");
  nlohmann::json negative = recorded();
  negative["summary"]["incorrect"] = -1;
  fs::path file = write(negative, "negative-incorrect.json");
  expect_refused(import(db, {file}), file, "\"summary\": \"incorrect\" is -1, not a count");

  nlohmann::json untimed = recorded();
  untimed["recommendation"]["median_us"] = nullptr;
  file = write(untimed, "null-median.json");
  result r = import(db, {file});
  expect_refused(r, file, "\"recommendation\": \"median_us\" is null");
  EXPECT_EQ(r.err.find("tflops"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(db));
}

// A tuning database given where a result file goes is named as one, not as malformed JSON.
TEST(db_import_cli, an_sqlite_database_is_not_a_result_file) {
  const fs::path db = fresh_db("source.sqlite3"), target = fresh_db("target.sqlite3");
  const fs::path verified = write(recorded(), "verified.json");
  ASSERT_EQ(import(db, {verified}).code, 0);
  const result r = import(target, {db});
  expect_refused(r, db, "is an SQLite database (a tuning database?), not a JSON file: db import reads result files");
  EXPECT_EQ(r.err.find("malformed JSON"), std::string::npos) << r.err;
  const result c = run({"compare", db.string(), verified.string()});
  EXPECT_EQ(c.code, 2) << c.err;
  EXPECT_NE(c.err.find("is an SQLite database"), std::string::npos) << c.err;
  EXPECT_EQ(c.err.find("malformed JSON"), std::string::npos) << c.err;
}

// A --db that is not there is a mistyped name, for db list as for show and export: exit 2 naming it,
// not an empty listing that a CI step would read as "nothing measured".
TEST(db_import_cli, db_list_of_a_missing_db_file_is_refused_naming_it) {
  const fs::path missing = tmp_dir() / "no-such-db.sqlite3";
  fs::remove(missing);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"db", "list", "--db", missing.string()}, {"db", "list", "--db", missing.string(), "--json"},
        {"db", "--db", missing.string(), "list"}}) {
    const result r = run(args);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find("--db " + missing.string() + ": no such file"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(missing));
}

// A "schema" that is not a string is named as compare and report name it, not a library's type error
// (exit 70): import's own walk of the results had read it as a string first.
TEST(db_import_cli, a_schema_that_is_not_a_string_is_refused_naming_it) {
  for (const nlohmann::json& schema : {nlohmann::json(5), nlohmann::json(nullptr), nlohmann::json::array()}) {
    nlohmann::json j = recorded();
    j["schema"] = schema;
    const fs::path file = write(j, "schema-not-a-string.json"), db = fresh_db("schema-not-a-string.sqlite3");
    expect_refused(import(db, {file}), file, "\"schema\"");
    EXPECT_FALSE(fs::exists(db));
  }
}

// A "tuning_db" whose "answered" is not true or false is named (it was a raw library exception,
// exit 70), in a result and in a suite's result.
TEST(db_import_cli, a_tuning_db_answer_that_is_not_a_boolean_is_refused_naming_it) {
  const fs::path db = fresh_db("answered.sqlite3");
  for (const nlohmann::json& bad : {nlohmann::json("yes"), nlohmann::json(1), nlohmann::json::object()}) {
    nlohmann::json j = recorded();
    j["tuning_db"] = {{"answered", bad}};
    const fs::path file = write(j, "answered-" + std::string(bad.type_name()) + ".json");
    expect_refused(import(db, {file}), file, "\"tuning_db\": \"answered\"");
  }
  EXPECT_FALSE(fs::exists(db));
}

// Strings a record brings into the database (a device name, a driver, a tool version from an
// imported file) reach the terminal escaped: db show and a gemm answered from the database print
// them, and neither forges a line nor sends an escape sequence.
TEST(db_import_cli, a_records_strings_are_shown_escaped_by_show_and_by_an_answer) {
  const fs::path db = fresh_db("control.sqlite3");
  nlohmann::json j = recorded();
  const std::string forged = "\ntiletune: FORGED\x1b[31m\r";
  j["device"]["name"] = j["device"]["name"].get<std::string>() + forged;
  j["tool"]["driver"] = "580" + forged;
  j["tool"]["version"] = j["tool"]["version"].get<std::string>() + forged;
  const fs::path file = write(j, "control.json");
  const result imported = import(db, {file});
  ASSERT_EQ(imported.code, 0) << imported.err;
  const result shown = run({"db", "show", "--db", db.string(), "--problem", "4096x4096x4096"});
  const result answered = run({"gemm", "--m", "4096", "--n", "4096", "--k", "4096", "--dtype", "bf16", "--layout",
                               "nt", "--gpu", "h100-sxm", "--dry-run", "--db", db.string()});
  for (const result* r : {&shown, &answered}) {
    EXPECT_EQ(r->code, 0) << r->err;
    EXPECT_EQ(r->out.find("\ntiletune: FORGED"), std::string::npos) << r->out;
    EXPECT_EQ(r->out.find('\x1b'), std::string::npos) << r->out;
    EXPECT_EQ(r->out.find('\r'), std::string::npos) << r->out;
    EXPECT_NE(r->out.find("\\x0atiletune: FORGED\\x1b[31m\\x0d"), std::string::npos) << r->out;
  }
}
