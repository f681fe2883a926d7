// gemm --suite S --devices: the CLI end to end with stand-in GPUs and the
// stand-in worker (tests/support/fake_worker, which crashes or hangs per device
// on request), injected by tiletune_standins (--standin-gpus, --standin-worker).
// No real GPU is involved: this checks the dealing, not the measuring.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_json.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace {

struct scoped_env {
  std::string name;
  scoped_env(std::string n, const std::string& value) : name(std::move(n)) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  ~scoped_env() { unsetenv(name.c_str()); }
};

// f32 problems (simt: the quickest to compile); m of each from the list.
fs::path suite_file(const std::string& tag, const std::vector<int>& ms) {
  const fs::path suite = tmp_dir() / (tag + "-suite.json");
  nlohmann::json j = {
      {"schema", "tiletune.suite/1"}, {"name", tag}, {"problems", nlohmann::json::array()}};
  for (std::size_t i = 0; i < ms.size(); ++i)
    j["problems"].push_back({{"name", "p" + std::to_string(i)},
                             {"m", ms[i]},
                             {"n", 64},
                             {"k", 64},
                             {"dtype", "f32"},
                             {"layout", "nn"}});
  std::ofstream(suite) << j.dump();
  return suite;
}

// tiletune_standins' flags: these presets as the local GPUs, measured by fake_worker.
std::vector<std::string> stand_ins(const std::string& gpus) {
  return {"--standin-gpus", gpus, "--standin-worker", TILETUNE_FAKE_WORKER};
}

const char* one_variant =
    "simt_64x64x8_t8x8_v4";  // --only: one compile a problem keeps the test short

}  // namespace

TEST(gemm_devices, a_bad_list_exits_2_naming_the_value) {
  const std::string suite = suite_file("bad", {64}).string();
  auto with = [&](std::vector<std::string> extra, const std::string& gpus = "h100-sxm,h100-sxm") {
    std::vector<std::string> args{"gemm", "--suite", suite};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_with_standins(stand_ins(gpus), args);
  };
  for (const auto& [list, words] : std::vector<std::pair<std::string, std::string>>{
           {"0,0", "device 0 is named twice"},
           {"9", "device 9 does not exist: this machine has 2 GPU(s)"},
           {"x", "'x' is not a device number"},
           {"0,", "'' is not a device number"}}) {
    const auto r = with({"--devices", list});
    EXPECT_EQ(r.code, 2) << list << "\n" << r.err;
    EXPECT_NE(r.err.find("--devices " + list), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
  }
  const auto offline = with({"--devices", "all", "--gpu", "h100-sxm"});
  EXPECT_EQ(offline.code, 2);
  EXPECT_NE(offline.err.find("--devices all and --gpu h100-sxm exclude each other"),
            std::string::npos)
      << offline.err;
  const auto no_suite = run_with_standins(
      stand_ins("h100-sxm,h100-sxm"), {"gemm", "--m", "64", "--n", "64", "--k", "64", "--devices", "all"});
  EXPECT_EQ(no_suite.code, 2);
  EXPECT_NE(no_suite.err.find("give --suite FILE"), std::string::npos) << no_suite.err;
  const auto two_models = with({"--devices", "all"}, "h100-sxm,a100-sxm-80gb");
  EXPECT_EQ(two_models.code, 2);
  EXPECT_NE(two_models.err.find("tune one model per run"), std::string::npos) << two_models.err;
}

// Four GPUs, one whose worker crashes and one whose worker hangs: both are
// retired, their problems dealt to the two healthy ones, every problem answered once.
TEST(gemm_devices, retires_a_crashing_and_a_hanging_device_and_answers_every_problem) {
  const scoped_env crash("TILETUNE_FAKE_CRASH_DEVICE", "1");
  const scoped_env hang("TILETUNE_FAKE_HANG_DEVICE", "2");
  const fs::path out = tmp_dir() / "devices-deal.json";
  const auto r = run_with_standins(
      stand_ins("h100-sxm,h100-sxm,h100-sxm,h100-sxm"),
      {"gemm", "--suite", suite_file("deal", {64, 96, 128, 160, 192}).string(), "--devices", "all",
       "--only", one_variant, "--variant-timeout", "3", "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = read_json(out);
  ASSERT_EQ(j["results"].size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    const auto& res = j["results"][i];
    EXPECT_EQ(res["name"], "p" + std::to_string(i));  // suite order, whatever the finishing order
    const int dev = res["ran_on"]["device"];
    EXPECT_TRUE(dev == 0 || dev == 3) << res["ran_on"].dump();
    EXPECT_EQ(res["mode"], "measured");
  }
  ASSERT_EQ(j["devices"].size(), 4u);
  EXPECT_FALSE(j["devices"][0]["retired"]);
  EXPECT_FALSE(j["devices"][3]["retired"]);
  ASSERT_TRUE(j["devices"][1]["retired"]);
  EXPECT_NE(j["devices"][1]["why"].get<std::string>().find("cuBLASLt failed"), std::string::npos)
      << j["devices"][1];
  ASSERT_TRUE(j["devices"][2]["retired"]);
  EXPECT_NE(j["devices"][2]["why"].get<std::string>().find("hung"), std::string::npos)
      << j["devices"][2];
  EXPECT_EQ(j["devices"][0]["answered"].get<int>() + j["devices"][3]["answered"].get<int>(), 5);
  // The problems first dealt to the bad devices say so.
  std::set<int> faulted_on;
  for (const auto& res : j["results"])
    for (const auto& f : res["ran_on"]["faults"]) faulted_on.insert(f["device"].get<int>());
  EXPECT_EQ(faulted_on, (std::set<int>{1, 2}));
  EXPECT_TRUE(j["complete"]);
  EXPECT_TRUE(j["failed"].empty());
  EXPECT_NE(r.err.find("--standin-gpus h100-sxm,h100-sxm,h100-sxm,h100-sxm: stand-in devices for "
                       "tests, not this machine's GPUs"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[dev 3] "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[dev 1] RETIRED"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[dev 2] RETIRED: hung"), std::string::npos) << r.err;
}

// A problem that crashes every GPU ends failed after 2 attempts, not in a loop; the rest are
// answered.
TEST(gemm_devices, a_problem_that_kills_every_device_is_failed_and_the_run_exits_3) {
  const scoped_env poison("TILETUNE_FAKE_CRASH_M", "777");
  const fs::path out = tmp_dir() / "devices-poison.json";
  const auto r = run_with_standins(
      stand_ins("h100-sxm,h100-sxm,h100-sxm"),
      {"gemm", "--suite", suite_file("poison", {64, 777, 96}).string(), "--devices", "0,1,2",
       "--only", one_variant, "--out", out.string(), "--quiet"});
  EXPECT_EQ(r.code, 3) << r.err;
  const auto j = read_json(out);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["name"], "p0");
  EXPECT_EQ(j["results"][1]["name"], "p2");
  ASSERT_EQ(j["failed"].size(), 1u);
  EXPECT_EQ(j["failed"][0]["name"], "p1");
  EXPECT_EQ(j["failed"][0]["faults"].size(), 2u);
  EXPECT_FALSE(j["complete"]);
  int retired = 0;
  for (const auto& d : j["devices"]) retired += d["retired"].get<bool>();
  EXPECT_EQ(retired, 2);
  EXPECT_NE(r.err.find("p1 (777x64x64"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("FAILED"), std::string::npos) << r.err;
}

// The whole search on two stand-in GPUs into one database; the same command then answers from it.
TEST(gemm_devices, results_of_every_device_land_in_one_database) {
  const fs::path db = tmp_dir() / "devices.sqlite", out = tmp_dir() / "devices-db.json";
  fs::remove(db);
  const std::vector<std::string> args{
      "gemm",      "--suite", suite_file("db", {64, 96, 128}).string(),
      "--devices", "all",     "--db",
      db.string(), "--out",   out.string()};
  const auto first = run_with_standins(stand_ins("h100-sxm,h100-sxm"), args);
  ASSERT_EQ(first.code, 0) << first.err;
  std::set<std::string> stored;
  const auto first_json = read_json(out);
  ASSERT_EQ(first_json["results"].size(), 3u);
  for (const auto& res : first_json["results"]) {
    EXPECT_TRUE(res["tuning_db"]["stored"].get<bool>());
    stored.insert(res["name"]);
  }
  EXPECT_EQ(stored.size(), 3u);
  const auto list = run({"db", "list", "--db", db.string(), "--json"});  // the shipped binary
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_EQ(nlohmann::json::parse(list.out)["records"].size(), 3u) << list.out;
  const auto again = run_with_standins(stand_ins("h100-sxm,h100-sxm"), args);
  ASSERT_EQ(again.code, 0) << again.err;
  const auto again_json = read_json(out);
  ASSERT_EQ(again_json["results"].size(), 3u);
  for (const auto& res : again_json["results"]) {
    EXPECT_TRUE(res["tuning_db"]["answered"].get<bool>()) << res["name"];
    EXPECT_FALSE(res.contains("ran_on")) << res["name"];  // nothing ran on a GPU this time
  }
  EXPECT_NE(
      again.err.find("dealing 0 problem(s) to 2 device(s) (3 answered from the tuning database)"),
      std::string::npos)
      << again.err;
}

// The shipped binary has no test hook (DESIGN.md, Tests): the variables that named stand-ins
// before tiletune_standins do nothing. With these two presets standing in it would refuse the
// mixed models; here it sees this machine's GPUs (on the CPU machine: none, exit 3).
TEST(gemm_devices, the_shipped_binary_reads_no_stand_ins_from_the_environment) {
  const scoped_env gpus("TILETUNE_TEST_DEVICES", "h100-sxm,a100-sxm-80gb");
  const scoped_env worker("TILETUNE_TEST_WORKER", TILETUNE_FAKE_WORKER);
  const auto r = run({"gemm", "--suite", suite_file("shipped", {64}).string(), "--devices", "all",
                      "--only", one_variant, "--quiet"});
  EXPECT_EQ(r.err.find("stand-in"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("tune one model per run"), std::string::npos) << r.err;
  if (r.code == 3) {
    EXPECT_NE(r.err.find("no CUDA GPU is available here"), std::string::npos) << r.err;
  }
}

TEST(gemm_devices, help_gives_the_flag_with_an_example) {
  const auto r = run({"gemm", "--help"});
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--devices"), std::string::npos);
  EXPECT_NE(r.out.find("tiletune gemm --suite profiles/suites/llm.json --devices all"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("never on real GPUs"), std::string::npos);
}
