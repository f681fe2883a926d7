// gemm --l2-flush: how each timed sample finds the L2 (written, read or left as it was), told to
// the worker, said in the result, kept out of the tuning database, and never set against a timing
// that emptied it otherwise (compare, check, db import). Stand-in GPUs and the stand-in worker
// (tests/support/fake_worker), which logs what its setup asked of it: no GPU is involved, so what
// the read flush does to a kernel's time is the GPU issue's to measure.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_json.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace l2_flush_test {

struct scoped_env {
  std::string name;
  scoped_env(std::string n, const std::string& value) : name(std::move(n)) { setenv(name.c_str(), value.c_str(), 1); }
  ~scoped_env() { unsetenv(name.c_str()); }
};

const std::vector<std::string> stand_in_h100 = {"--standin-gpus", "h100-sxm", "--standin-worker", TILETUNE_FAKE_WORKER};

fs::path dir() {
  const fs::path d = tmp_dir() / "l2-flush";
  fs::create_directories(d);
  return d;
}

// A measured f32 64^3 run on the stand-in H100 (simt: the quickest to compile), with `extra` flags.
result measured_run(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"gemm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "f32", "--layout", "nn"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_with_standins(stand_in_h100, args);
}

// A recorded H100 measurement (no "l2_flush": timed before the option, by writes), and a copy of it
// that says FLUSH.
nlohmann::json recorded() {
  return read_json(fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json");
}
fs::path recorded_with(const nlohmann::json& flush, const std::string& name) {
  nlohmann::json j = recorded();
  if (!flush.is_null()) j["l2_flush"] = flush;
  const fs::path p = dir() / name;
  std::ofstream(p) << j.dump();
  return p;
}

TEST(l2_flush_cli, a_run_is_timed_as_asked_says_so_and_stays_out_of_the_database) {
  const fs::path log = dir() / "setups.log", db = dir() / "tuning.sqlite3";
  fs::remove(log);
  fs::remove(db);
  const scoped_env logging("TILETUNE_FAKE_SETUP_LOG", log.string());
  const fs::path read_out = dir() / "read.json";
  const result read = measured_run({"--l2-flush", "READ", "--db", db.string(), "--out", read_out.string()});  // any case
  ASSERT_EQ(read.code, 0) << read.err;
  const std::string told = slurp(log);
  EXPECT_NE(told.find("l2_flush read"), std::string::npos) << told;
  EXPECT_EQ(told.find("l2_flush write"), std::string::npos) << "every worker of the run reads: " << told;
  const nlohmann::json j = read_json(read_out);
  EXPECT_EQ(j.value("l2_flush", ""), "read") << j.dump().substr(0, 400);
  EXPECT_NE(j["notes"].dump().find("timed with --l2-flush read"), std::string::npos) << j["notes"].dump();
  EXPECT_NE(read.out.find("timed with --l2-flush read"), std::string::npos) << read.out;
  EXPECT_FALSE(fs::exists(db)) << "a read-flushed run went into the database";
  EXPECT_NE(read.err.find("--l2-flush read: the tuning database is neither read nor written"), std::string::npos)
      << read.err;

  // The default: written, said, and stored.
  fs::remove(log);
  const fs::path write_out = dir() / "write.json";
  const result write = measured_run({"--db", db.string(), "--out", write_out.string()});
  ASSERT_EQ(write.code, 0) << write.err;
  EXPECT_NE(slurp(log).find("l2_flush write"), std::string::npos) << slurp(log);
  EXPECT_EQ(read_json(write_out).value("l2_flush", ""), "write");
  EXPECT_TRUE(fs::exists(db));

  fs::remove(log);
  const result none = measured_run({"--l2-flush", "none", "--no-db", "--out", (dir() / "none.json").string()});
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_NE(slurp(log).find("l2_flush none"), std::string::npos) << slurp(log);
  EXPECT_EQ(read_json(dir() / "none.json").value("l2_flush", ""), "none");
  EXPECT_EQ(none.err.find("neither read nor written"), std::string::npos) << "--no-db: no database to speak of";
}

// The default flush is noted where it can rank the kernels: a memory-bound problem that moves a
// tenth of the L2 or more (16x4096x4096 f32: 67.6 MB), not the 64^3 above (core/measure/l2_flush_note).
TEST(l2_flush_cli, a_memory_bound_run_timed_by_the_default_flush_says_what_it_costs) {
  const fs::path out = dir() / "decode-write.json";
  const result decode = run_with_standins(stand_in_h100, {"gemm", "--m", "16", "--n", "4096", "--k", "4096", "--dtype",
                                                          "f32", "--layout", "nn", "--only", "simt_64x32x16_t8x4_v4",
                                                          "--no-db", "--out", out.string()});
  ASSERT_EQ(decode.code, 0) << decode.err;
  const std::string notes = read_json(out)["notes"].dump();
  EXPECT_NE(notes.find("memory-bound (67.6 MB at least through DRAM): timed with the L2 flushed by writes"),
            std::string::npos)
      << notes;
  EXPECT_NE(decode.out.find("time it with --l2-flush read"), std::string::npos) << decode.out;
  const fs::path small = dir() / "small-write.json";
  ASSERT_EQ(measured_run({"--no-db", "--out", small.string()}).code, 0);
  EXPECT_EQ(read_json(small)["notes"].dump().find("memory-bound"), std::string::npos);
}

TEST(l2_flush_cli, an_unknown_flush_or_one_with_nothing_timed_is_refused_naming_it) {
  const result bogus = measured_run({"--l2-flush", "memset"});
  EXPECT_EQ(bogus.code, 2) << bogus.err;
  EXPECT_NE(bogus.err.find("--l2-flush memset is unknown: use write, read or none"), std::string::npos) << bogus.err;
  const result offline = run({"gemm", "--gpu", "h100-sxm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "f32",
                              "--l2-flush", "read"});
  EXPECT_EQ(offline.code, 2) << offline.err;
  EXPECT_NE(offline.err.find("--l2-flush read says how samples are timed, and this run times none (an offline plan "
                             "for --gpu"),
            std::string::npos)
      << offline.err;
  const result dry = measured_run({"--dry-run", "--l2-flush", "none"});
  EXPECT_EQ(dry.code, 2) << dry.err;
  EXPECT_NE(dry.err.find("this run times none (--dry-run)"), std::string::npos) << dry.err;
  const result verify = measured_run({"--verify-only", "--l2-flush", "read"});
  EXPECT_EQ(verify.code, 2) << verify.err;
  EXPECT_NE(verify.err.find("this run times none (--verify-only)"), std::string::npos) << verify.err;
  // The default, said aloud, is no refusal.
  EXPECT_EQ(run({"gemm", "--gpu", "h100-sxm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "f32", "--l2-flush",
                 "write", "--quiet"})
                .code,
            0);
}

TEST(l2_flush_cli, compare_refuses_timings_that_emptied_the_l2_differently) {
  const fs::path before = recorded_with(nullptr, "recorded.json");  // says nothing: by writes
  const fs::path by_write = recorded_with("write", "write.json");
  const fs::path by_read = recorded_with("read", "read.json");
  const fs::path by_read_too = recorded_with("read", "read-too.json");
  EXPECT_EQ(run({"compare", before.string(), by_write.string()}).code, 0);
  EXPECT_EQ(run({"compare", by_read.string(), by_read_too.string()}).code, 0);
  for (const auto& [base, fresh, base_flush, new_flush] :
       {std::tuple{before, by_read, "write", "read"}, std::tuple{by_read, by_write, "read", "write"}}) {
    const result r = run({"compare", base.string(), fresh.string()});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(fmt::format("{} timed it with --l2-flush {}, {} with --l2-flush {}", base.string(), base_flush,
                                     fresh.string(), new_flush)),
              std::string::npos)
        << r.err;
  }
  const fs::path bad = recorded_with(5, "bad.json");
  const result r = run({"compare", before.string(), bad.string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(bad.string() + ": \"l2_flush\" is 5, not \"write\", \"read\" or \"none\""), std::string::npos)
      << r.err;
}

TEST(l2_flush_cli, check_times_each_problem_as_its_baseline_was_timed) {
  const fs::path log = dir() / "check-setups.log";
  fs::remove(log);
  const scoped_env logging("TILETUNE_FAKE_SETUP_LOG", log.string());
  const fs::path baseline = dir() / "check-baseline.json";
  ASSERT_EQ(measured_run({"--l2-flush", "read", "--no-db", "--out", baseline.string()}).code, 0);
  fs::remove(log);
  const result r = run_with_standins(stand_in_h100, {"check", "--baseline", baseline.string()});
  // A verdict (0 or 1: the stand-in times every kernel alike), not the refusal a timing by writes
  // would have met against this baseline.
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.out << r.err;
  const std::string told = slurp(log);
  EXPECT_NE(told.find("l2_flush read"), std::string::npos) << told;
  EXPECT_EQ(told.find("l2_flush write"), std::string::npos) << told;
}

TEST(l2_flush_cli, the_report_says_how_the_samples_found_the_l2) {
  for (const auto& [flush, words] : {std::pair{nlohmann::json(), "the L2 emptied by writing a buffer twice its size"},
                                     std::pair{nlohmann::json("read"), "the L2 emptied by reading a buffer"},
                                     std::pair{nlohmann::json("none"), "the L2 left as the last sample left it"}}) {
    const std::string name = flush.is_null() ? "unsaid" : flush.get<std::string>();
    const fs::path in = recorded_with(flush, "report-" + name + ".json"), out = dir() / ("report-" + name + ".html");
    const result r = run({"report", in.string(), "--out", out.string()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(slurp(out).find(words), std::string::npos) << name;
  }
}

TEST(l2_flush_cli, db_import_leaves_out_a_run_timed_with_another_flush) {
  const fs::path db = dir() / "import.sqlite3";
  fs::remove(db);
  const fs::path by_read = recorded_with("read", "import-read.json");
  const fs::path before = recorded_with(nullptr, "import-recorded.json");
  const result r = run({"db", "import", "--db", db.string(), by_read.string(), before.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 1 measured result(s) from 2 file(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 run(s) timed with another L2 flush left out"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find(by_read.string() + ": 4096x4096x4096 bf16 nt left out: timed with --l2-flush read"),
            std::string::npos)
      << r.err;
  const result only_read = run({"db", "import", "--db", (dir() / "import-none.sqlite3").string(), by_read.string()});
  EXPECT_EQ(only_read.code, 0) << only_read.err;
  EXPECT_NE(only_read.out.find("imported 0 measured result(s)"), std::string::npos) << only_read.out;
  // A flush no run writes is refused, as compare refuses it, and nothing is stored.
  const fs::path bad = recorded_with(5, "import-bad.json"), bad_db = dir() / "import-bad.sqlite3";
  fs::remove(bad_db);
  const result refused = run({"db", "import", "--db", bad_db.string(), bad.string()});
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find(bad.string() + ": \"l2_flush\" is 5, not \"write\", \"read\" or \"none\""),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(bad_db));
}

}  // namespace l2_flush_test
