// Issue 39, "silent input, exit codes, messages": names match in any case, a
// missing file or field is named, and every refusal exits 2 naming the value.
#include <filesystem>
#include <tuple>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tiletune_process.hpp"

namespace fs = std::filesystem;
using namespace tiletune_test;

namespace {

void expect_refused(const std::vector<std::string>& args, const std::vector<std::string>& named) {
  const result r = run(args);
  EXPECT_EQ(r.code, 2) << r.err;
  for (const auto& n : named) EXPECT_NE(r.err.find(n), std::string::npos) << "message should name '" << n << "': " << r.err;
  // A raw library exception is not a message for a person.
  EXPECT_EQ(r.err.find("[json.exception"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("filesystem error"), std::string::npos) << r.err;
}

}  // namespace

TEST(input, model_presets_match_in_any_case_as_gpu_presets_do) {
  const std::vector<std::string> base{"batch", "--gpu", "H100-SXM", "--seq-len", "128", "--json", "--model"};
  auto with = [&](const std::string& model) {
    std::vector<std::string> a = base;
    a.push_back(model);
    return a;
  };
  const result lower = run(with("gpt2"));
  ASSERT_EQ(lower.code, 0) << lower.err;
  const auto expected = nlohmann::json::parse(lower.out)["model"]["parameters"];
  for (const char* name : {"GPT2", "Gpt2"}) {
    const result r = run(with(name));
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["model"]["parameters"], expected) << name;
  }
  const result llama = run(with("Llama-3.2-1B"));
  ASSERT_EQ(llama.code, 0) << llama.err;
  EXPECT_EQ(nlohmann::json::parse(llama.out)["model"]["name"], "llama-3.2-1b");
  // A name that is no preset in any case is still refused, naming it.
  expect_refused(with("GPT3"), {"GPT3", "gpt2"});
}

TEST(input, a_missing_config_file_says_no_such_file_naming_the_path) {
  const fs::path nope = tmp_dir() / "nope" / "config.json";
  fs::remove_all(nope.parent_path());
  expect_refused({"batch", "--gpu", "h100-sxm", "--model", nope.string()}, {"no such file", nope.string()});
  expect_refused({"batch", "--gpu", "h100-sxm", "--model", "./nope/config.json"}, {"no such file", "./nope/config.json"});
  expect_refused({"batch", "--gpu", "h100-sxm", "--model", "missing-config.json"}, {"no such file", "missing-config.json"});
  // A folder without a config.json names the file it looked for.
  const fs::path folder = tmp_dir() / "model-without-config";
  fs::create_directories(folder);
  expect_refused({"batch", "--gpu", "h100-sxm", "--model", folder.string()},
                 {"no such file", (folder / "config.json").string()});
  // A word that is neither a preset nor a file says both.
  expect_refused({"batch", "--gpu", "h100-sxm", "--model", "no-such-model"}, {"no-such-model", "no such file", "gpt2"});
  // An empty --model is named as such (gemm said "--tokens 16 needs --model").
  expect_refused({"batch", "--gpu", "h100-sxm", "--model", ""}, {"--model", "needs a value, not an empty string"});
  expect_refused({"gemm", "--gpu", "h100-sxm", "--model", "", "--tokens", "16"}, {"--model", "needs a value, not an empty string"});
  // An output under a file, not a folder, says so (it said the folder does not exist).
  const fs::path file = tmp_dir() / "a-plain-file";
  std::ofstream(file) << "x";
  expect_refused({"batch", "--gpu", "h100-sxm", "--model", "gpt2", "--out", (file / "plan.json").string()},
                 {file.string() + " is a file, not a folder"});
}

namespace {
fs::path write_suite(const std::string& name, const std::string& problems, const std::string& extra = "") {
  const fs::path p = tmp_dir() / name;
  std::ofstream(p) << R"({"schema": "tiletune.suite/1", )" << extra << R"("problems": [)" << problems << "]}";
  return p;
}
std::vector<std::string> suite_run(const fs::path& suite) {
  return {"gemm", "--gpu", "l4", "--dry-run", "--suite", suite.string()};
}
}  // namespace

TEST(input, a_suite_problem_missing_a_field_is_named_not_a_json_exception) {
  const std::string good = R"({"name": "good", "m": 64, "n": 64, "k": 64, "dtype": "f32"})";
  for (const char* field : {"m", "n", "k", "dtype"}) {
    nlohmann::json p = {{"name", "lacks"}, {"m", 64}, {"n", 64}, {"k", 64}, {"dtype", "f32"}};
    p.erase(field);
    const fs::path s = write_suite(std::string("lacks-") + field + ".json", good + ", " + p.dump());
    expect_refused(suite_run(s), {s.string(), "problem 1 (\"lacks\")", std::string("\"") + field + "\" is missing"});
  }
  // Fields of the wrong type are named too (nlohmann's type_error text before).
  const fs::path name_number = write_suite("name-number.json", R"({"name": 3, "m": 64, "n": 64, "k": 64, "dtype": "f32"})");
  expect_refused(suite_run(name_number), {"problem 0", "\"name\": 3 is not a string"});
  const fs::path dtype_number = write_suite("dtype-number.json", R"({"name": "d", "m": 64, "n": 64, "k": 64, "dtype": 16})");
  expect_refused(suite_run(dtype_number), {"problem 0 (\"d\")", "\"dtype\": 16 is not a string"});
  const fs::path layout_list = write_suite("layout-list.json", R"({"m": 64, "n": 64, "k": 64, "dtype": "f32", "layout": ["nt"]})");
  expect_refused(suite_run(layout_list), {"layout-list.json: problem 0: \"layout\""});  // not "problem 0 (\"problem 0\")"
  const fs::path suite_name = write_suite("suite-name.json", good, R"("name": 3, )");
  expect_refused(suite_run(suite_name), {"suite's \"name\": 3 is not a string"});
  // A problem without a name is optional (the schema says so): it is called by its place.
  const result unnamed = run({"gemm", "--gpu", "l4", "--dry-run", "--json", "--suite",
                              write_suite("unnamed.json", R"({"m": 64, "n": 64, "k": 64, "dtype": "f32"})").string()});
  ASSERT_EQ(unnamed.code, 0) << unnamed.err;
  EXPECT_EQ(nlohmann::json::parse(unnamed.out)["results"][0]["name"], "problem 0");
}

TEST(input, db_gpu_filters_refuse_an_unknown_gpu_naming_it_and_the_presets) {
  const fs::path db = tmp_dir() / "gpu-filter.sqlite3";
  fs::remove(db);
  const fs::path measured = fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-22/gemm/4096x4096x4096-bf16-nt.json";
  const result first = run({"db", "import", "--db", db.string(), measured.string()});
  ASSERT_EQ(first.code, 0) << first.err;
  // A GPU without a preset is filed under its own name: that name is a model the database holds.
  nlohmann::json other = nlohmann::json::parse(slurp(measured));
  other["device"]["name"] = "NVIDIA GeForce RTX 3090";
  other["device"]["preset"] = nullptr;
  const fs::path other_file = tmp_dir() / "rtx3090.json";
  std::ofstream(other_file) << other.dump();
  const result imported = run({"db", "import", "--db", db.string(), other_file.string()});
  ASSERT_EQ(imported.code, 0) << imported.err;

  for (const std::string sub : {"list", "export"}) {
    expect_refused({"db", sub, "--db", db.string(), "--gpu", "no-such-gpu"}, {"no-such-gpu", "h100-sxm", "rtx-4090"});
    // As gemm --gpu, a preset matches in any case.
    const result upper = run({"db", sub, "--db", db.string(), "--gpu", "H100-SXM", sub == "list" ? "--json" : "--format=json"});
    ASSERT_EQ(upper.code, 0) << sub << ": " << upper.err;
    EXPECT_NE(upper.out.find("4096x4096x4096"), std::string::npos) << sub << ": " << upper.out;
    const result own_name = run({"db", sub, "--db", db.string(), "--gpu", "NVIDIA GeForce RTX 3090"});
    EXPECT_EQ(own_name.code, 0) << sub << ": " << own_name.err;
    // A known preset without records is an empty answer, not an error.
    EXPECT_EQ(run({"db", sub, "--db", db.string(), "--gpu", "l4"}).code, 0) << sub;
  }
  expect_refused({"db", "calibrate", "--db", db.string(), "--gpu", "no-such-gpu"}, {"no-such-gpu", "h100-sxm"});
  // With no database yet, list still refuses the name rather than print an empty list.
  expect_refused({"db", "list", "--db", (tmp_dir() / "none.sqlite3").string(), "--gpu", "no-such-gpu"},
                 {"no-such-gpu", "h100-sxm"});
  // A known one passes, and the missing --db is named (no such file).
  expect_refused({"db", "list", "--db", (tmp_dir() / "none.sqlite3").string(), "--gpu", "h100-sxm"}, {"no such file"});
}

// A folder given as the database is a bad value, exit 2 as a folder given for --out, --into or any
// input file is, by every command that takes --db (it was exit 3 where the database opened it).
TEST(input, a_folder_as_the_database_is_refused_as_a_bad_value_by_every_command) {
  const fs::path folder = tmp_dir() / "db-folder";
  fs::create_directories(folder);
  const std::string measured =
      (fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json").string();
  using args = std::vector<std::string>;
  for (args a : {args{"db", "list"}, args{"db", "show", "--problem", "4096"}, args{"db", "export"},
                 args{"db", "calibrate", "--gpu", "h100-sxm"}, args{"db", "import", measured}, args{"db", "vacuum"},
                 args{"batch", "--model", "gpt2", "--gpu", "h100-sxm"},
                 args{"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm"}}) {
    a.insert(a.end(), {"--db", folder.string()});
    expect_refused(a, {"--db " + folder.string(), "is a directory"});
  }
  expect_refused({"db", "--db", folder.string(), "list"}, {"--db " + folder.string(), "is a directory"});
  expect_refused({"db", "merge", measured, "--into", folder.string()}, {"--into " + folder.string(), "is a directory"});
  EXPECT_TRUE(fs::is_empty(folder));
}

// Messages name only options the command has: check has --cache-dir but no --no-cache.
TEST(input, a_refusal_names_only_options_the_command_has) {
  const fs::path blocker = tmp_dir() / "a-file";
  std::ofstream(blocker) << "x";
  const std::string cache = (blocker / "cache").string();  // under a file: no folder can be made there
  const std::vector<std::string> stand_in_h100 = {"--standin-gpus", "h100-sxm", "--standin-worker", TILETUNE_FAKE_WORKER};
  const result check = run_with_standins(
      stand_in_h100, {"check", "--baseline", TILETUNE_SOURCE_DIR "/profiles/baselines/h100-sxm.json", "--cache-dir", cache});
  EXPECT_EQ(check.code, 2) << check.err;
  EXPECT_NE(check.err.find("--cache-dir " + cache), std::string::npos) << check.err;
  EXPECT_EQ(check.err.find("--no-cache"), std::string::npos) << "check has no --no-cache: " << check.err;
  // gemm has both, and says so.
  const result gemm = run_with_standins(
      stand_in_h100, {"gemm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "f32", "--cache-dir", cache});
  EXPECT_EQ(gemm.code, 2) << gemm.err;
  EXPECT_NE(gemm.err.find("--no-cache"), std::string::npos) << gemm.err;
}

// A suite's bad value is named by its field, not by gemm's flag: the value did not come from --m.
TEST(input, a_bad_suite_value_is_named_by_its_field_not_a_flag) {
  const fs::path zero = write_suite("m-zero.json", R"({"name": "z", "m": 0, "n": 64, "k": 64, "dtype": "f32"})");
  const result r = run(suite_run(zero));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("problem 0 (\"z\"): \"m\": 0 is invalid"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--m"), std::string::npos) << r.err;
  const fs::path big = write_suite("batch-big.json", R"({"name": "b", "m": 8, "n": 8, "k": 8, "batch": 100000, "dtype": "f32"})");
  const result b = run(suite_run(big));
  EXPECT_EQ(b.code, 2) << b.err;
  EXPECT_NE(b.err.find("\"batch\": 100000 is too large"), std::string::npos) << b.err;
  EXPECT_EQ(b.err.find("--batch"), std::string::npos) << b.err;
}

// check has no --allow-mode-mismatch: a predicted baseline is refused without suggesting it.
TEST(input, check_refuses_a_predicted_baseline_without_naming_an_option_it_lacks) {
  const fs::path predicted = tmp_dir() / "predicted-baseline.json";
  ASSERT_EQ(run({"gemm", "--gpu", "h100-sxm", "--dry-run", "--m", "64", "--n", "64", "--k", "64", "--dtype", "f32",
                 "--out", predicted.string()}).code, 0);
  const std::vector<std::string> stand_in_h100 = {"--standin-gpus", "h100-sxm", "--standin-worker", TILETUNE_FAKE_WORKER};
  const result r = run_with_standins(stand_in_h100, {"check", "--baseline", predicted.string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("measured baseline"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--allow-mode-mismatch"), std::string::npos) << r.err;
  // Refused before the GPU is looked for: no GPU here is exit 2 for it, not 3.
  expect_refused({"check", "--baseline", predicted.string()}, {"is predicted", "measured baseline"});
  // compare has the flag, and still names it.
  const result c = run({"compare", predicted.string(),
                        TILETUNE_SOURCE_DIR "/profiles/measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json"});
  EXPECT_EQ(c.code, 2) << c.err;
  EXPECT_NE(c.err.find("--allow-mode-mismatch"), std::string::npos) << c.err;
}

namespace {
fs::path write_config(const std::string& name, nlohmann::json edits, const std::string& type = "llama") {
  nlohmann::json j = {{"model_type", type},        {"hidden_size", 4096},         {"num_hidden_layers", 32},
                      {"num_attention_heads", 32}, {"num_key_value_heads", 8},    {"intermediate_size", 14336},
                      {"vocab_size", 128256}};
  if (type == "mixtral") j["num_local_experts"] = 8, j["num_experts_per_tok"] = 2;
  if (type == "olmoe") j["num_experts"] = 64, j["num_experts_per_tok"] = 8;
  j.update(edits);
  const fs::path p = tmp_dir() / name;
  std::ofstream(p) << j.dump();
  return p;
}
}  // namespace

// Hostile or absurd configs are refused naming the field, never planned with negative memory:
// counts past any model (which overflowed 64-bit byte counts into negative GiB), a model past
// what any cluster could train, a mixture-of-experts type without experts.
TEST(input, absurd_model_configs_are_refused_naming_the_field) {
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{{"hidden_size", 4096000000LL}}, "\"hidden_size\" 4096000000"},
      {{{"num_hidden_layers", 2000000000LL}}, "\"num_hidden_layers\""},
      {{{"vocab_size", 1LL << 40}}, "\"vocab_size\""},
      {{{"intermediate_size", 1LL << 40}}, "\"intermediate_size\""},
      {{{"hidden_size", 262144}, {"num_hidden_layers", 16384}, {"num_attention_heads", 1024}, {"num_key_value_heads", 1024}},
       "more than any cluster can train"}};
  int i = 0;
  for (const auto& [edit, named] : bad) {
    const fs::path p = write_config("absurd-" + std::to_string(i++) + ".json", edit);
    expect_refused({"batch", "--gpu", "h100-sxm", "--model", p.string()}, {named, p.string()});
  }
  expect_refused({"batch", "--gpu", "h100-sxm", "--model",
                  write_config("no-experts.json", {{"num_local_experts", 0}}, "mixtral").string()},
                 {"\"num_local_experts\" must be at least 1"});
  expect_refused({"batch", "--gpu", "h100-sxm", "--model",
                  write_config("no-experts-olmoe.json", {{"num_experts", 0}}, "olmoe").string()},
                 {"\"num_experts\" must be at least 1"});
  // Zero positions: a learned table of none (GPT-2's n_positions) or a rotary model's limit of 0.
  expect_refused({"batch", "--gpu", "h100-sxm", "--model",
                  write_config("no-positions.json", {{"max_position_embeddings", 0}}).string()},
                 {"\"max_position_embeddings\" must be at least 1"});
  const nlohmann::json gpt2 = {{"model_type", "gpt2"}, {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12},
                               {"vocab_size", 50257}, {"n_positions", 0}};
  const fs::path g = tmp_dir() / "gpt2-no-positions.json";
  std::ofstream(g) << gpt2.dump();
  expect_refused({"batch", "--gpu", "h100-sxm", "--model", g.string()}, {"\"n_positions\" must be at least 1"});
  // Each field named as GPT-2's config writes it (n_head had been named num_attention_heads).
  for (const char* field : {"n_head", "n_layer", "n_embd"}) {
    nlohmann::json zero = gpt2;
    zero["n_positions"] = 1024;
    zero[field] = 0;
    std::ofstream(g) << zero.dump();
    expect_refused({"batch", "--gpu", "h100-sxm", "--model", g.string()},
                   {std::string("\"") + field + "\" must be at least 1"});
  }
  // Large but real-sized: planned, every memory term non-negative (it fits nowhere on one GPU).
  const fs::path big = write_config("big.json", {{"hidden_size", 32768}, {"num_hidden_layers", 512},
                                                 {"num_attention_heads", 256}, {"num_key_value_heads", 16},
                                                 {"intermediate_size", 131072}, {"vocab_size", 262144}});
  const result r = run({"batch", "--gpu", "h100-sxm", "--model", big.string(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& [k, v] : j["memory"].items()) {
    if (!v.is_number()) continue;
    EXPECT_GE(v.get<double>(), 0) << k;
  }
  for (const auto& c : j["candidates"]) {
    if (!c.contains("peak_bytes")) continue;
    EXPECT_GE(c["peak_bytes"].get<double>(), 0);
  }
}

// A GPU slower on every figure is never predicted faster: the H100 PCIe card is planned with the
// H100 SXM's shipped calibration (one architecture) and its JSON names where it came from.
TEST(input, a_slower_part_of_one_architecture_is_planned_with_its_calibration_and_slower) {
  auto plan = [](const char* gpu) {
    const result r = run({"gemm", "--m", "4096", "--n", "4096", "--k", "4096", "--dtype", "f32", "--gpu", gpu,
                          "--dry-run", "--top", "1", "--json"});
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto sxm = plan("h100-sxm"), pcie = plan("h100-pcie");
  EXPECT_EQ(pcie["model"]["kind"], "calibrated");
  EXPECT_NE(pcie["model"]["calibration"].get<std::string>().find("applied to h100-pcie by architecture"),
            std::string::npos);
  EXPECT_GT(pcie["recommendation"]["predicted_us"].get<double>(), sxm["recommendation"]["predicted_us"].get<double>());
}

// Values that would otherwise be taken silently (a negative count wrapped to 2^64 - 1, infinity,
// NaN, an alpha no float holds, a date that is no date) are refused with exit 2 naming the option.
TEST(input, option_values_taken_silently_before_are_refused_naming_the_option) {
  const std::vector<std::string> tiny = {"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "l4", "--dry-run",
                                         "--no-db"};
  auto gemm = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = tiny;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const fs::path base = fs::path(TILETUNE_SOURCE_DIR) / "profiles/baselines/h100-sxm.json";
  const fs::path db = tmp_dir() / "limits.sqlite";
  fs::remove(db);
  ASSERT_EQ(run({"db", "import",
                 (fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm/16x4096x4096-bf16-nt.json")
                     .string(),
                 "--db", db.string()})
                .code,
            0);
  expect_refused(gemm({"--time-cap-ms", "1e309"}), {"--time-cap-ms", "1e309 is too large for a double"});
  expect_refused(gemm({"--alpha", "1e39"}), {"--alpha", "past a float's range"});
  expect_refused(gemm({"--beta", "nan"}), {"--beta", "a finite number"});
  expect_refused(gemm({"--seed", "99999999999999999999999"}), {"--seed", "past 18446744073709551615"});
  expect_refused(gemm({"--device", "-1"}), {"--device", "a whole number, 0 or more"});
  // A size past 64 bits is named as given (it was saturated to 9223372036854775807 and named so),
  // a fraction is not rounded; a size within 64 bits but past what a GEMM or a plan takes is named
  // with its range.
  const std::vector<std::string> offline{"gemm", "--gpu", "h100-sxm", "--dry-run", "--no-db", "--k", "8"};
  auto sized = [&](std::vector<std::string> mn) {
    std::vector<std::string> args = offline;
    args.insert(args.end(), mn.begin(), mn.end());
    return args;
  };
  expect_refused(sized({"--m", "99999999999999999999", "--n", "8"}), {"--m", "99999999999999999999 does not fit in 64 bits"});
  expect_refused(sized({"--m", "8", "--n", "8.5"}), {"--n", "a whole number, not 8.5"});
  expect_refused({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--global-batch", "99999999999999999999"},
                 {"--global-batch", "99999999999999999999 does not fit in 64 bits"});
  expect_refused({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--global-batch", "4294967297"},
                 {"--global-batch 4294967297 is invalid: 1 to 100000000"});
  expect_refused({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--micro-batch", "-99999999999999999999"},
                 {"--micro-batch", "does not fit in 64 bits"});
  expect_refused({"check", "--baseline", base.string(), "--tolerance", "-1"}, {"--tolerance", "from 0 up to"});
  // Past 1 too, as compare refuses it, before any GPU time is spent (exit 3 without a GPU before).
  expect_refused({"check", "--baseline", base.string(), "--tolerance", "3"},
                 {"--tolerance", "a fraction from 0 up to (not including) 1 (0.05 = 5%), not 3"});
  expect_refused({"compare", base.string(), base.string(), "--tolerance", "1"}, {"--tolerance", "not 1"});
  expect_refused({"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--dry-run", "-j", "-1"},
                 {"--jobs -1 is invalid: 0 (all cores) or more"});
  expect_refused({"check", "--baseline", base.string(), "--tolerance", "nan"}, {"--tolerance", "not nan"});
  expect_refused({"check", "--baseline", base.string(), "--device", "-1"}, {"--device"});
  expect_refused({"compare", base.string(), base.string(), "--tolerance", "-0.5"}, {"--tolerance"});
  expect_refused({"db", "list", "--db", db.string(), "--limit", "-1"}, {"--limit", "a whole number"});
  expect_refused({"db", "list", "--db", db.string(), "--since", "yesterday"}, {"--since", "YYYY-MM-DD"});
  expect_refused({"db", "list", "--db", db.string(), "--since", "2026-13-45"}, {"--since", "2026-13-45"});
  EXPECT_EQ(run({"db", "list", "--db", db.string(), "--since", "2026-11-01"}).code, 0);
  // gemm --model --fp8 sets each GEMM's scaling and C: --scaling and --out-dtype beside it are refused.
  expect_refused({"gemm", "--model", "gpt2", "--tokens", "64", "--gpu", "h100-sxm", "--dry-run", "--no-db", "--fp8",
                  "rowwise", "--scaling", "block"},
                 {"excludes --scaling"});  // (--model excludes it, with --fp8 or without)
}

// A truncated or mistyped input file is named with where it breaks, in words (no JSON library's
// "[json.exception...]" tag, which expect_refused checks for), and a result that names no GPU is
// refused as input (exit 2), not compared as another GPU's (exit 3).
TEST(input, broken_result_files_are_named_in_words_and_a_result_without_a_gpu_is_refused) {
  const fs::path dir = tmp_dir() / "broken-results";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path base = fs::path(TILETUNE_SOURCE_DIR) / "profiles/baselines/h100-sxm.json";
  const fs::path cut = dir / "cut.json", no_gpu = dir / "no-gpu.json";
  std::ofstream(cut) << "{";
  std::ifstream in(base);
  nlohmann::json j = nlohmann::json::parse(in);
  j["device"] = nlohmann::json::object();
  std::ofstream(no_gpu) << j.dump();
  expect_refused({"compare", base.string(), cut.string()}, {"cut.json: truncated JSON at line 1", "unexpected end"});
  expect_refused({"report", cut.string()}, {"cut.json: truncated JSON"});
  expect_refused({"check", "--baseline", cut.string()}, {"cut.json: truncated JSON"});
  expect_refused({"gemm", "--suite", cut.string(), "--gpu", "l4", "--dry-run"}, {"cut.json: truncated JSON"});
  expect_refused({"batch", "--model", cut.string(), "--gpu", "l4"}, {"cut.json: truncated JSON"});
  expect_refused({"compare", base.string(), no_gpu.string()}, {"no-gpu.json: the result names no GPU"});
  // Text a Windows editor saved as UTF-16 is named so, not a bad literal at byte 1; UTF-8's
  // byte-order mark is read through.
  const fs::path utf16 = dir / "utf16.json", bom8 = dir / "bom8.json";
  std::ofstream(utf16, std::ios::binary) << std::string("\xFF\xFE{\0}\0", 6);
  expect_refused({"report", utf16.string()}, {"utf16.json: is UTF-16 text (it starts with a byte-order mark)"});
  expect_refused({"batch", "--model", utf16.string(), "--gpu", "l4"}, {"utf16.json: is UTF-16 text"});
  std::ofstream(bom8, std::ios::binary) << "\xEF\xBB\xBF" << j.dump();
  expect_refused({"compare", base.string(), bom8.string()}, {"bom8.json: the result names no GPU"});
  // A key given twice in one object (JSON keeps the last) is refused naming it, in every file read.
  const fs::path twice = dir / "twice.json", config_twice = dir / "config-twice.json";
  std::ofstream(twice) << R"({"schema": "tiletune.suite/1", "name": "s", "problems": [], "problems": [
    {"name": "p", "m": 64, "n": 64, "k": 64, "dtype": "bf16", "layout": "nt"}]})";
  expect_refused({"gemm", "--suite", twice.string(), "--gpu", "l4", "--dry-run"},
                 {"twice.json: the key \"problems\" is given twice"});
  std::ofstream(config_twice) << R"({"model_type": "gpt2", "n_layer": 12, "n_layer": 48, "vocab_size": 50257,
    "n_embd": 768, "n_head": 12, "n_positions": 1024})";
  expect_refused({"batch", "--model", config_twice.string(), "--gpu", "l4"}, {"the key \"n_layer\" is given twice"});
  // Every reader of result files, db import too: a folder, an array and a cut file are named as such.
  const fs::path array = dir / "array.json", db = dir / "t.sqlite";
  std::ofstream(array) << "[]";
  using args = std::vector<std::string>;
  for (const args& readers : {args{"compare", base.string()}, args{"report"}, args{"check", "--baseline"},
                              args{"db", "import", "--db", db.string()}}) {
    auto with = [&](const fs::path& file) {
      std::vector<std::string> a = readers;
      a.push_back(file.string());
      return a;
    };
    expect_refused(with(dir), {dir.string() + ": is a directory"});
    expect_refused(with(array), {"array.json: not a tiletune result"});
    expect_refused(with(cut), {"cut.json: truncated JSON"});
  }
  EXPECT_FALSE(fs::exists(db));
  // A field of the wrong type is named with its place, by every reader, never a library's type
  // error (exit 70 before): GPU name, variants, recommendation, a problem's size, the tool's date.
  const fs::path measured =
      fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-23/gemm/4096x4096x4096-bf16-nt.json";
  const nlohmann::json good = nlohmann::json::parse(std::ifstream(measured));
  struct damage {
    nlohmann::json::json_pointer at;
    nlohmann::json value;
    std::string named;
  };
  const std::vector<damage> damages = {
      {nlohmann::json::json_pointer("/device/name"), 5, "\"device\": \"name\" is 5, not a string"},
      {nlohmann::json::json_pointer("/variants"), "x", "\"variants\" is \"x\", not a list"},
      {nlohmann::json::json_pointer("/variants/0"), 3, "\"variants\" holds 3, not a variant object"},
      {nlohmann::json::json_pointer("/recommendation"), nlohmann::json::array({1}), "\"recommendation\" is [1]"},
      {nlohmann::json::json_pointer("/problem/m"), "4096", "\"problem\": \"m\" is \"4096\", not a whole number"},
      {nlohmann::json::json_pointer("/tool/date"), 7, "\"tool\": \"date\" is 7, not a string"},
      // A date that is no date sorted after every real one: that record stayed against newer results.
      {nlohmann::json::json_pointer("/tool/date"), "not-a-date", "\"tool\": \"date\" must be a date as YYYY-MM-DD"},
      {nlohmann::json::json_pointer("/tool/date"), "2026-02-30T10:00:00Z",
       "\"tool\": \"date\" must be a date as YYYY-MM-DD (ISO 8601, optionally THH:MM[:SS][Z]), not "
       "2026-02-30T10:00:00Z (2026-02 has no day 30)"},
      // The kernels a result timed decide which of its timings calibration keeps (kernel_revisions.hpp):
      // no date, no judgement.
      {nlohmann::json::json_pointer("/tool/kernels_as_of"), "last week",
       "\"tool\": \"kernels_as_of\" must be a date as YYYY-MM-DD"},
      // A recommended tile tiletune cannot read back made every later db export of the database fail.
      {nlohmann::json::json_pointer("/recommendation/tile"), nullptr, "\"recommendation\": \"tile\" is null"},
      {nlohmann::json::json_pointer("/recommendation/tile/block_m"), "128",
       "\"recommendation\": \"tile\": \"block_m\" is \"128\", not a whole size"},
      {nlohmann::json::json_pointer("/recommendation/tile/family"), "nope",
       "\"recommendation\": \"tile\": no kernel family named 'nope'"}};
  // A field that names the problem, missing, is named too (was the library's "key 'dtype' not found",
  // and a missing layout compared as no problem at all).
  for (const char* field : {"dtype", "layout", "m"}) {
    nlohmann::json bad = good;
    bad["problem"].erase(field);
    const fs::path file = dir / fmt::format("no-{}.json", field);
    std::ofstream(file) << bad.dump();
    for (const args& readers : {args{"compare", measured.string()}, args{"report"}, args{"check", "--baseline"},
                                args{"db", "import", "--db", db.string()}}) {
      std::vector<std::string> a = readers;
      a.push_back(file.string());
      expect_refused(a, {file.filename().string() + ": \"problem\" has no \"" + field + "\""});
    }
  }
  // An empty file is named as empty, not as JSON cut at its first byte.
  const fs::path empty = dir / "empty.json";
  std::ofstream(empty).flush();
  for (const args& readers : {args{"compare", measured.string()}, args{"report"}, args{"check", "--baseline"},
                              args{"db", "import", "--db", db.string()}}) {
    std::vector<std::string> a = readers;
    a.push_back(empty.string());
    expect_refused(a, {"empty.json: the file is empty (0 bytes)"});
  }
  int n = 0;
  for (const damage& d : damages) {
    nlohmann::json bad = good;
    bad[d.at] = d.value;
    const fs::path file = dir / fmt::format("damaged-{}.json", n++);
    std::ofstream(file) << bad.dump();
    for (const args& readers : {args{"compare", measured.string()}, args{"report"}, args{"check", "--baseline"},
                                args{"db", "import", "--db", db.string()}}) {
      std::vector<std::string> a = readers;
      a.push_back(file.string());
      expect_refused(a, {file.filename().string() + ": " + d.named});
    }
  }
  EXPECT_FALSE(fs::exists(db));
}

// Messages name the options the user gave and the command has: a step's --tokens (not the --m it
// becomes), a grouped problem's rows by the flags that gave them, and no --no-db under db.
TEST(input, messages_name_the_options_given_and_only_those_the_command_has) {
  expect_refused({"gemm", "--model", "gpt2", "--tokens", "99999999999", "--gpu", "h100-sxm", "--dry-run", "--no-db"},
                 {"--tokens 99999999999 is too large"});
  expect_refused({"gemm", "--groups", "2", "--m-per-group", "2147483647,2147483647", "--n", "64", "--k", "64", "--gpu",
                  "h100-sxm", "--dry-run", "--no-db"},
                 {"--m-per-group 2147483647,2147483647: the groups hold 4294967294 rows"});
  const fs::path junk = tmp_dir() / "not-a-db.sqlite";
  std::ofstream(junk) << "not a database\n";
  for (const char* sub : {"list", "vacuum", "export"}) {
    const result r = run({"db", "--db", junk.string(), sub});
    EXPECT_EQ(r.code, 3) << sub << ": " << r.err;
    EXPECT_NE(r.err.find("give another database file"), std::string::npos) << sub << ": " << r.err;
    EXPECT_EQ(r.err.find("--no-db"), std::string::npos) << sub << ": " << r.err;
  }
  const result gemm = run({"gemm", "--m", "8", "--n", "8", "--k", "8", "--gpu", "l4", "--dry-run", "--db", junk.string()});
  EXPECT_EQ(gemm.code, 3) << gemm.err;
  EXPECT_NE(gemm.err.find("give another database file"), std::string::npos) << gemm.err;
  // db merge reads its inputs as arguments: no --db in what it says of a damaged one.
  const fs::path into = tmp_dir() / "merge-into.sqlite";
  fs::remove(into);
  const result merge = run({"db", "merge", junk.string(), "--into", into.string()});
  EXPECT_EQ(merge.code, 3) << merge.err;
  EXPECT_EQ(merge.err.find("--db"), std::string::npos) << merge.err;
  // Files left out are named with the command, not CLI11's "files is required".
  expect_refused({"db", "import"}, {"`tiletune db import` needs its files"});
  expect_refused({"db", "merge", "--into", into.string()}, {"`tiletune db merge` needs its files"});
  // A binary file's bytes are written as \xFF in the message, not sent raw to the terminal.
  const fs::path binary = tmp_dir() / "binary-suite.json";
  std::ofstream(binary) << "\xff\x01{";  // (\xff\xfe would be UTF-16's byte-order mark, named as such)
  const result bin = run({"gemm", "--suite", binary.string(), "--gpu", "h100-sxm", "--dry-run"});
  EXPECT_EQ(bin.code, 2) << bin.err;
  EXPECT_NE(bin.err.find("\\xFF"), std::string::npos) << bin.err;
  EXPECT_EQ(bin.err.find('\xff'), std::string::npos) << bin.err;
}

// C's element type is refused by what C can take (not the list of every element type), on the
// command line and in a suite; a size written as a float (1e20) is named as such.
TEST(input, an_output_type_c_cannot_take_and_a_size_written_as_a_float_are_named) {
  expect_refused({"gemm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "e4m3", "--out-dtype", "f64", "--gpu",
                  "h100-sxm", "--dry-run"},
                 {"'f64' is not an element type C can take: bf16, f16 or f32"});
  expect_refused({"gemm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "e4m3", "--out-dtype", "e5m2", "--gpu",
                  "h100-sxm", "--dry-run"},
                 {"'e5m2' is not an element type C can take"});
  const fs::path out = write_suite("out-f64.json", R"({"name": "o", "m": 8, "n": 8, "k": 16, "dtype": "e4m3",
                                                       "out_dtype": "tf32"})");
  expect_refused(suite_run(out), {"'tf32' is not an element type C can take"});
  const fs::path huge = write_suite("m-float.json", R"({"name": "h", "m": 1e20, "n": 64, "k": 64, "dtype": "f32"})");
  expect_refused(suite_run(huge), {"\"m\": 1e+20 is not a whole number written as one"});
}

// An offline plan stores nothing: it reads a database that exists and creates none (--store-plans
// does).
TEST(input, an_offline_plan_creates_no_database_unless_it_stores_plans) {
  const fs::path db = tmp_dir() / "offline-new.db";
  fs::remove(db);
  const std::vector<std::string> args{"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm",
                                      "--dry-run", "--quiet", "--db", db.string()};
  ASSERT_EQ(run(args).code, 0);
  EXPECT_FALSE(fs::exists(db));
  std::vector<std::string> store = args;
  store.push_back("--store-plans");
  ASSERT_EQ(run(store).code, 0);
  EXPECT_TRUE(fs::exists(db));
  // The database now exists: a plain offline plan reads it (and leaves it there).
  ASSERT_EQ(run(args).code, 0);
  EXPECT_TRUE(fs::exists(db));
}

namespace {

const std::vector<std::vector<std::string>> every_command = {
    {"gemm"},       {"batch"},        {"check"},        {"compare"},     {"report"},         {"devices"},
    {"db", "list"}, {"db", "import"}, {"db", "export"}, {"db", "merge"}, {"db", "calibrate"}, {"db", "vacuum"}};

struct help_option {
  std::string name, line;
  bool flag = false;
  std::string type;  // what it takes, as --help says it (INT, FLOAT, TEXT, N, ...); empty for a flag
};

// The options a command's --help lists (--help itself left out).
std::vector<help_option> options_of(const std::vector<std::string>& command) {
  std::vector<std::string> help = command;
  help.push_back("--help");
  const result h = run(help);
  EXPECT_EQ(h.code, 0) << h.err;
  // The option, then one space and what it takes, or else a flag (two spaces or the line's end).
  static const std::regex option(R"(^  +(--[a-z0-9-]+)(?: ([^ =]+)|  |$))");
  std::vector<help_option> out;
  std::istringstream lines(h.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, option) || m[1] == "--help") continue;
    out.push_back({m[1], line, !m[2].matched, m[2]});
  }
  return out;
}

}  // namespace

// Every option that takes a number, of every command, read from its --help: a value that is not one
// of the kind it takes (a fraction for a whole number, text, a whole number too large for it) is
// refused with exit 2 naming the option and what it takes, never CLI11's bare "Could not convert";
// a flag given a value that is not true or false says that it is a flag.
TEST(input, every_numeric_option_names_what_it_takes) {
  int numeric = 0, flags = 0;
  for (const auto& command : every_command) {
    for (const help_option& o : options_of(command)) {
      const std::string &name = o.name, &type = o.type, &line = o.line;
      std::vector<std::string> values;
      if (o.flag) {
        ++flags;
        values = {name + "=maybe"};
      } else if (type == "INT" || type == "UINT" || type == "FLOAT" || type == "N" || type == "G" || type == "K" ||
                 type == "S" || type == "MS") {
        ++numeric;
        values = {name, "1.5x"};
      } else {
        continue;
      }
      std::vector<std::string> args = command;
      args.insert(args.end(), values.begin(), values.end());
      const result r = run(args);
      EXPECT_EQ(r.code, 2) << line << "\n" << r.err;
      EXPECT_EQ(r.err.find("Could not convert"), std::string::npos) << line << "\n" << r.err;
      EXPECT_NE(r.err.find(name), std::string::npos) << line << "\n" << r.err;
      if (values.size() == 1) {
        EXPECT_NE(r.err.find("is a flag"), std::string::npos) << line << "\n" << r.err;
      }
    }
  }
  EXPECT_GT(numeric, 40);
  EXPECT_GT(flags, 10);
  // A fraction where a whole number is wanted, and a whole number past the option's type.
  const result fraction = run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--top", "1.5"});
  EXPECT_EQ(fraction.code, 2);
  EXPECT_NE(fraction.err.find("--top: a whole number, not 1.5"), std::string::npos) << fraction.err;
  const result large =
      run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--top", "99999999999"});
  EXPECT_EQ(large.code, 2);
  EXPECT_NE(large.err.find("--top 99999999999 is out of the range it takes"), std::string::npos) << large.err;
}

// A number is read in decimal by every numeric option of every command (CLI11 alone read 0256
// as octal 174 and 0x40 as 64): leading zeros are dropped, a base prefix is refused naming it.
TEST(input, every_numeric_option_reads_decimal_and_refuses_a_base_prefix) {
  int numeric = 0;
  for (const auto& command : every_command) {
    for (const help_option& o : options_of(command)) {
      if (o.flag || !(o.type == "INT" || o.type == "UINT" || o.type == "FLOAT" || o.type == "N" || o.type == "G" ||
                      o.type == "K"))
        continue;
      ++numeric;
      std::vector<std::string> args = command;
      args.insert(args.end(), {o.name, "0x10"});
      const result r = run(args);
      EXPECT_EQ(r.code, 2) << o.line << "\n" << r.err;
      EXPECT_NE(r.err.find(o.name), std::string::npos) << o.line << "\n" << r.err;
      EXPECT_NE(r.err.find("in decimal, not 0x10"), std::string::npos) << o.line << "\n" << r.err;
    }
  }
  EXPECT_GT(numeric, 40);
  // Zero-padded values are the numbers they read as in decimal.
  const result b = run({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--seq-len", "0256", "--global-batch", "064",
                        "--lora-rank", "016", "--json"});
  ASSERT_EQ(b.code, 0) << b.err;
  const auto plan = nlohmann::json::parse(b.out);
  EXPECT_EQ(plan["setup"]["seq_len"], 256);
  EXPECT_EQ(plan["setup"]["global_batch"], 64);
  EXPECT_EQ(plan["setup"]["lora_rank"], 16);
  const result g = run({"gemm", "--m", "0128", "--n", "00064", "--k", "0080", "--gpu", "h100-sxm", "--dry-run",
                        "--json", "--top", "01"});
  ASSERT_EQ(g.code, 0) << g.err;
  const auto gemm = nlohmann::json::parse(g.out);
  EXPECT_EQ(gemm["problem"]["m"], 128) << gemm["problem"].dump();
  EXPECT_EQ(gemm["problem"]["n"], 64);
  EXPECT_EQ(gemm["problem"]["k"], 80);
  expect_refused({"gemm", "--m", "-0128", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--dry-run"}, {"--m", "-128"});
}

// Every option of every command that takes a value refuses an empty one (`--db ''` was the default
// database, `--jobs ''` 0, `--safety-margin ''` 0.0), and every numeric one a number with a space.
TEST(input, every_option_refuses_an_empty_value_and_a_number_with_a_space) {
  int options = 0;
  for (const auto& command : every_command) {
    for (const help_option& o : options_of(command)) {
      if (o.flag || o.type.back() == ':') continue;  // a flag ("--no-db Excludes: --db" too)
      ++options;
      std::vector<std::string> args = command;
      args.insert(args.end(), {o.name, ""});
      const result r = run(args);
      EXPECT_EQ(r.code, 2) << o.line << "\n" << r.err;
      EXPECT_NE(r.err.find(o.name + ": needs a value, not an empty string"), std::string::npos) << o.line << "\n" << r.err;
      if (!(o.type == "INT" || o.type == "UINT" || o.type == "FLOAT" || o.type == "N" || o.type == "G" || o.type == "K"))
        continue;
      args.back() = " 1";
      const result space = run(args);
      EXPECT_EQ(space.code, 2) << o.line << "\n" << space.err;
      EXPECT_NE(space.err.find("without spaces"), std::string::npos) << o.line << "\n" << space.err;
    }
  }
  EXPECT_GT(options, 80);
}

// A name from a fixed list is read in any case, as --gpu and --model are; dates, GPU lists and the
// forms with a number inside are read strictly.
TEST(input, names_in_any_case_and_strict_dates_gpu_lists_and_forms) {
  const std::vector<std::string> gemm = {"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm",
                                         "--dry-run", "--no-db", "--json", "--top", "1"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = gemm;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const result lower = run(with({"--dtype", "f32", "--layout", "nt", "--search", "exhaustive"}));
  const result upper = run(with({"--dtype", "F32", "--layout", "NT", "--search", "Exhaustive"}));
  ASSERT_EQ(lower.code, 0) << lower.err;
  ASSERT_EQ(upper.code, 0) << upper.err;
  EXPECT_EQ(nlohmann::json::parse(upper.out)["problem"], nlohmann::json::parse(lower.out)["problem"]);
  const result hf = run({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--framework", "HF", "--precision",
                         "BF16-Mixed", "--optimizer", "AdamW", "--json"});
  EXPECT_EQ(hf.code, 0) << hf.err;
  for (const std::string since : {"2026-02-30", "2026-11-31", "2025-02-29", "2026-01-01T25:00", "2026-01-01T23:60",
                                   "2026-01-01T12:00:61Z"})
    expect_refused({"db", "list", "--since", since}, {"--since", since});
  // A real date passes: what is refused then is the missing --db.
  expect_refused({"db", "list", "--since", "2024-02-29T23:59:59Z", "--db", (tmp_dir() / "none.sqlite").string()},
                 {"none.sqlite: no such file"});
  for (const std::string devices : {"x", "-1", "0,0", "0,,1", ",1", "1,"}) {
    const result r = run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--devices", devices});
    EXPECT_EQ(r.code, 2) << devices << r.err;
    EXPECT_NE(r.err.find("--devices"), std::string::npos) << r.err;
  }
  for (const std::string routing : {"zipf: 1", "zipf:0x1", "zipf:+1", "zipf:1 "})
    expect_refused({"gemm", "--groups", "8", "--tokens", "64", "--top-k", "2", "--n", "64", "--k", "64", "--gpu",
                    "h100-sxm", "--dry-run", "--routing", routing},
                   {"--routing"});
  for (const std::string every : {"every- 2", "every-+2", "every-2 "})
    expect_refused({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--checkpointing", every}, {"--checkpointing"});
}

// A problem's name from a file, with a NUL or a terminal's escape sequence in it, is shown escaped in
// the tables: a NUL cut the table there, an escape drove the terminal.
TEST(input, control_characters_in_a_name_are_shown_escaped) {
  const fs::path suite = tmp_dir() / "control-names.json";
  std::ofstream(suite) << R"({"schema": "tiletune.suite/1", "name": "s", "problems": [
    {"name": "a\u0000b \u001b[31mred", "m": 64, "n": 64, "k": 64, "dtype": "bf16", "layout": "nt"}]})";
  const result r = run({"gemm", "--suite", suite.string(), "--gpu", "h100-sxm", "--dry-run", "--no-db"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find('\0'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a\\x00b \\x1b[31mred"), std::string::npos) << r.out;
  // The suite's own name heads its table: escaped too.
  const fs::path named = tmp_dir() / "control-suite-name.json";
  std::ofstream(named) << R"({"schema": "tiletune.suite/1", "name": "s\ntiletune: forged\u001b[31m", "problems": [
    {"name": "a", "m": 64, "n": 64, "k": 64, "dtype": "bf16", "layout": "nt"}]})";
  const result suite_named = run({"gemm", "--suite", named.string(), "--gpu", "h100-sxm", "--dry-run", "--no-db"});
  ASSERT_EQ(suite_named.code, 0) << suite_named.err;
  EXPECT_EQ(suite_named.out.find("\ntiletune: forged"), std::string::npos) << suite_named.out;
  EXPECT_EQ(suite_named.out.find('\x1b'), std::string::npos) << suite_named.out;
  EXPECT_NE(suite_named.out.find("suite s\\x0atiletune: forged\\x1b[31m on"), std::string::npos) << suite_named.out;
}

// A JSON file of gigabytes (a dump given by mistake) is refused by its size before it is read, by
// every command that reads one: config, suite, result, report.
TEST(input, a_json_file_past_the_size_cap_is_refused_before_it_is_read) {
  const fs::path huge = tmp_dir() / "huge.json";
  { std::ofstream(huge) << "{}"; }
  fs::resize_file(huge, (256ull << 20) + 1);  // sparse: no disk used
  const std::vector<std::vector<std::string>> runs{
      {"batch", "--gpu", "h100-sxm", "--model", huge.string()},
      {"gemm", "--gpu", "h100-sxm", "--dry-run", "--suite", huge.string()},
      {"compare", huge.string(), huge.string()},
      {"report", huge.string(), "--out", (tmp_dir() / "huge.html").string()}};
  for (const auto& args : runs) expect_refused(args, {huge.string(), "256.0 MiB", "JSON files up to 256 MiB"});
  fs::resize_file(huge, 256ull << 20);  // at the cap: read, and refused only as the JSON it is not
  const result at_cap = run({"compare", huge.string(), huge.string()});
  EXPECT_EQ(at_cap.err.find("JSON files up to"), std::string::npos) << at_cap.err;
  fs::remove(huge);
}

// Absurd limits are refused naming the option and its range (1e30 ms of sampling, a timeout whose
// milliseconds overflow the worker's deadline, a goal of 1e30 times cuBLAS), and a scale the kernel's
// 32-bit float cannot hold, from the command line and from a suite alike.
TEST(input, absurd_limits_and_scales_a_float_cannot_hold_are_refused_naming_them) {
  const std::vector<std::string> gemm{"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--dry-run",
                                      "--no-db"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = gemm;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  expect_refused(with({"--time-cap-ms", "1e30"}), {"--time-cap-ms 1e+30 is invalid", "up to 3600000 (an hour)"});
  expect_refused(with({"--variant-timeout", "1e13"}), {"--variant-timeout 10000000000000 is invalid", "up to 86400 (a day)"});
  expect_refused(with({"--budget-s", "1e30"}), {"--budget-s 1e+30 is invalid", "up to 604800 (a week)"});
  expect_refused(with({"--alpha", "1e-50"}), {"--alpha 1e-50 is 0 as a 32-bit float"});
  EXPECT_EQ(run(with({"--time-cap-ms", "3600000"})).code, 0);  // the limits themselves are taken
  EXPECT_EQ(run(with({"--alpha", "1e-40"})).code, 0);         // a float's denormal, not 0
  const fs::path baseline = fs::path(TILETUNE_SOURCE_DIR) / "profiles/baselines/h100-sxm.json";
  expect_refused({"report", baseline.string(), "--goal", "1e30", "--out", (tmp_dir() / "goal.html").string()},
                 {"--goal 1e+30 is invalid", "up to 100"});
  for (const auto& [field, value] : {std::pair{"alpha", "1e39"}, std::pair{"beta", "-1e300"}, std::pair{"alpha", "1e-50"}}) {
    const fs::path suite = write_suite(std::string("scale-") + field + value + ".json",
                                       std::string(R"({"name": "p", "m": 64, "n": 64, "k": 64, "dtype": "bf16", ")") +
                                           field + "\": " + value + "}");
    expect_refused(suite_run(suite), {suite.string(), std::string("\"") + field + "\": "});
  }
}

// A refusal quotes the value it refuses; a value with a line break or an escape sequence in it (from
// the command line, from a suite file, in a value CLI11 itself could not read) neither forges a line
// of its own on stderr nor drives the terminal: every line after the first is indented.
TEST(input, a_refused_value_with_control_characters_forges_no_line) {
  const std::string forged = "bf16\ntiletune: ok\r\x1b[2K";
  const fs::path suite = tmp_dir() / "forged-dtype.json";
  std::ofstream(suite) << R"({"schema": "tiletune.suite/1", "name": "s", "problems": [
    {"name": "p", "m": 64, "n": 64, "k": 64, "dtype": "bf16\ntiletune: ok\r\u001b[2K", "layout": "nt"}]})";
  const std::vector<std::vector<std::string>> runs{
      {"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--dry-run", "--dtype", forged},
      {"gemm", "--m", "64\ntiletune: ok", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--dry-run"},
      {"batch", "--model", "gpt2", "--gpu", "h100-sxm\ntiletune: ok"},
      {"gemm", "--suite", suite.string(), "--gpu", "h100-sxm", "--dry-run", "--no-db"}};
  for (const auto& args : runs) {
    const result r = run(args);
    EXPECT_EQ(r.code, 2) << args.back() << ": " << r.err;
    EXPECT_EQ(r.err.rfind("tiletune: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find("\ntiletune: ok"), std::string::npos) << "a forged line: " << r.err;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tiletune: ok"), std::string::npos) << "the value is quoted, escaped: " << r.err;
  }
}

// An option given twice is named in words, with what it takes, not CLI11's "At Most 1 required".
TEST(input, an_option_given_twice_is_named_in_words) {
  expect_refused({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--gpu", "h200"},
                 {"--gpu takes one value but was given 2 (h100-sxm and h200): give it once"});
  expect_refused({"gemm", "--m", "64", "--m", "128", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--dry-run"},
                 {"--m takes one value but was given 2"});
  // A group's option and its command's are two options to CLI11: the last won in silence.
  expect_refused({"db", "--db", "a.sqlite3", "list", "--db", "b.sqlite3"},
                 {"--db takes one value but was given 2 (a.sqlite3 and b.sqlite3)"});
  // The same file twice is one: what is refused then is that it is not there.
  expect_refused({"db", "--db", (tmp_dir() / "same.sqlite3").string(), "list", "--db", (tmp_dir() / "same.sqlite3").string()},
                 {"same.sqlite3: no such file"});
}

// An option the command does not have is named with the nearest of its own, and a word it has no
// place for is named; each exits 2 and points to --help. Every option of every command, misspelt
// by one swap of neighbours, is suggested back.
TEST(input, an_unknown_option_is_named_with_the_nearest_the_command_has) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"batch", "--model", "gpt2", "--seq", "5"}, "`tiletune batch` has no option --seq (did you mean --seq-len"},
      {{"gemm", "--m", "4", "--n", "4", "--k", "4", "--dtpye=bf16"}, "has no option --dtpye (did you mean --dtype?)"},
      {{"db", "list", "--gpus", "h100"}, "`tiletune db list` has no option --gpus (did you mean --gpu?)"},
      {{"db", "merge", "a.sqlite3", "--db", "out.sqlite3"},
       "`tiletune db merge` has no option --db (the merged database is --into FILE)"},
      {{"gemm", "--m", "4", "--n", "4", "--k", "4", "extra"}, "`tiletune gemm` takes no argument 'extra'"},
      {{"compare", "a.json", "b.json", "c.json"}, "`tiletune compare` takes no argument 'c.json'"},
      {{"gemm", "--xyzzy"}, "`tiletune gemm` has no option --xyzzy; `tiletune gemm --help` lists"}};
  for (const auto& [args, said] : cases) {
    const result r = run(args);
    EXPECT_EQ(r.code, 2) << said;
    EXPECT_NE(r.err.find(said), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("not expected"), std::string::npos) << r.err;
  }
  int misspelt = 0;
  for (const auto& command : every_command) {
    for (const help_option& o : options_of(command)) {
      std::string typo = o.name;
      std::size_t at = 3;  // after "--" and the first letter
      while (at + 1 < typo.size() && (typo[at] == typo[at + 1] || typo[at] == '-' || typo[at + 1] == '-')) ++at;
      if (at + 1 >= typo.size()) continue;
      std::swap(typo[at], typo[at + 1]);
      std::vector<std::string> args = command;
      args.push_back(typo + "=1");
      const result r = run(args);
      EXPECT_EQ(r.code, 2) << typo;
      EXPECT_NE(r.err.find("has no option " + typo + " (did you mean "), std::string::npos) << r.err;
      const std::size_t mean = r.err.find("did you mean");
      EXPECT_NE(r.err.find(o.name, mean), std::string::npos) << typo << " should suggest " << o.name << ": " << r.err;
      ++misspelt;
    }
  }
  EXPECT_GT(misspelt, 100);
}

// A problem no variant of any family can run on the GPU, whatever its tile (the B200: tcgen05 is not
// built, mma.sync's rate there unknown; a grouped GEMM before Hopper), was planned with every variant
// pruned, no table, and exit 0. By itself it is refused as an fp8 problem on an Ampere GPU is, naming
// each family's reason; in a model's step (or a suite) it is that problem's outcome and the rest are
// planned, unless none of them can run. A dtype some family runs there (f32: simt) still plans.
TEST(input, a_problem_no_variant_can_run_is_refused_naming_each_familys_reason) {
  expect_refused({"gemm", "--m", "256", "--n", "256", "--k", "256", "--gpu", "b200", "--dry-run"},
                 {"256x256x256 bf16 nt: no variant of any kernel family can run it on the NVIDIA B200 (sm_100)",
                  "mma variant(s) (architecture): mma.sync on sm_100", "tcgen05",
                  "wgmma variant(s) (architecture): the wgmma family needs sm_90"});
  expect_refused({"gemm", "--groups", "8", "--tokens", "64", "--top-k", "2", "--n", "128", "--k", "128", "--gpu",
                  "a100-sxm-80gb", "--dry-run"},
                 {"in 8 groups", "mma variant(s) (grouped): the mma family has no grouped kernel"});
  expect_refused({"gemm", "--model", "llama-3-8b", "--tokens", "16", "--gpu", "b200", "--dry-run"},
                 {"no GEMM of this model step can run on the NVIDIA B200; the first, 16x4096x4096 bf16 nt"});
  const result f32 = run({"gemm", "--m", "256", "--n", "256", "--k", "256", "--dtype", "f32", "--gpu", "b200",
                          "--dry-run", "--json"});
  ASSERT_EQ(f32.code, 0) << f32.err;
  EXPECT_EQ(nlohmann::json::parse(f32.out)["recommendation"]["family"], "simt");
  // Mixtral's routed experts are grouped GEMMs with --routing: an A100 plans the rest of the step.
  const result step = run({"gemm", "--model", TILETUNE_SOURCE_DIR "/tests/fuzz/seeds/model_config/mixtral-8x7b.json",
                           "--tokens", "64", "--phase", "decode", "--routing", "zipf:1.2", "--gpu", "a100-sxm-80gb",
                           "--dry-run", "--json"});
  ASSERT_EQ(step.code, 0) << step.err;
  std::size_t planned = 0, unrunnable = 0;
  const nlohmann::json planned_step = nlohmann::json::parse(step.out);
  for (const auto& r : planned_step["results"])
    ++(r["recommendation"].is_null() ? unrunnable : planned);
  EXPECT_EQ(unrunnable, 2u);
  EXPECT_GT(planned, 0u);
  // Each left out says why, as the problem alone would (it said only that no variant can run).
  EXPECT_NE(step.err.find("in 8 groups (zipf:1.2"), std::string::npos) << step.err;
  EXPECT_NE(step.err.find("the mma family has no grouped kernel"), std::string::npos) << step.err;
}

// A refusal gives the reason that applies: the value given, and the command's own usage.
TEST(input, a_refusal_gives_the_reason_that_applies) {
  expect_refused({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--virtual-stages", "-1"},
                 {"--virtual-stages -1 is invalid"});
  expect_refused({"gemm", "--groups", "2", "--tokens", "0", "--top-k", "1", "--n", "64", "--k", "64", "--gpu",
                  "h100-sxm", "--dry-run"},
                 {"--tokens 0 is invalid: at least 1"});
  const result r = run({"compare", "a.json"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("(tiletune compare BASE NEW)"), std::string::npos) << r.err;
}

// An offline plan says which of the given options shape only a measurement, rather than take them in silence.
TEST(input, an_offline_plan_names_the_measuring_options_it_does_not_use) {
  const result r = run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--no-db", "--seed", "3",
                        "--time-cap-ms", "5"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("--seed, --time-cap-ms have no effect on an offline plan (--gpu)"), std::string::npos) << r.err;
  const result plain = run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--no-db"});
  EXPECT_EQ(plain.err.find("no effect"), std::string::npos) << plain.err;
  // --search picks what a GPU times: offline nothing is (its plan was the same under each, in silence).
  const result search = run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--no-db", "--search",
                             "exhaustive"});
  EXPECT_EQ(search.code, 0) << search.err;
  EXPECT_NE(search.err.find("--search has no effect on an offline plan"), std::string::npos) << search.err;
  // --budget-s stops a suite between problems: on one problem it does nothing, and says so.
  const result budget = run({"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--no-db",
                             "--budget-s", "5"});
  EXPECT_EQ(budget.code, 0) << budget.err;
  EXPECT_NE(budget.err.find("--budget-s 5 has no effect on one problem"), std::string::npos) << budget.err;
}

// A model step's fp8 scaling and C come from --fp8's recipe: --scaling and --out-dtype beside --model
// are refused (they were ignored, a bf16 step taking --scaling rowwise without a word).
TEST(input, a_models_step_refuses_the_single_gemms_scaling_and_c_type) {
  for (const std::vector<std::string>& flag : {std::vector<std::string>{"--scaling", "rowwise"}, {"--out-dtype", "f32"}}) {
    std::vector<std::string> a = {"gemm", "--model", "gpt2", "--tokens", "16", "--phase", "decode", "--gpu", "h100-sxm",
                                  "--no-db", "--dtype", "e4m3"};
    a.insert(a.end(), flag.begin(), flag.end());
    expect_refused(a, {"--model excludes " + flag[0]});
  }
}

// A real number a double does not hold as written is refused, not read as inf or 0 and then judged.
TEST(input, a_real_number_past_a_doubles_range_is_refused) {
  const std::vector<std::string> gemm = {"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--dry-run"};
  for (const auto& [flag, value, words] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--alpha", "1e-400", "too small for a double"},
           {"--budget-s", "1e-400", "too small for a double"},
           {"--variant-timeout", "inf", "a finite number, not inf"},
           {"--time-cap-ms", "1e400", "too large for a double"}}) {
    std::vector<std::string> args = gemm;
    args.insert(args.end(), {flag, value});
    expect_refused(args, {flag, words});
  }
  expect_refused({"report", "x.json", "--goal", "inf"}, {"--goal", "a finite number, not inf"});
  // A whole number past 64 bits is named as given (CLI11 read it as 9223372036854775807).
  expect_refused({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--packing", "18446744073709551616"},
                 {"--packing", "18446744073709551616 does not fit in 64 bits"});
  expect_refused({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--safety-margin", "nan"}, {"--safety-margin"});
}

// An option that takes a value followed by another option: CLI11 took the second as the value
// (`--only --gpu h100-sxm` said no GPU and to give --gpu, exit 3; `--out --json` wrote a file named
// "--json"). Refused before anything runs, naming both.
TEST(input, an_option_given_no_value_before_another_option_is_refused) {
  const fs::path dir = tmp_dir() / "swallowed";
  fs::create_directories(dir);
  expect_refused({"gemm", "--m", "4", "--n", "4", "--k", "4", "--only", "--gpu", "h100-sxm"},
                 {"--only needs a value, but the next argument is the option --gpu"});
  const fs::path json_file = fs::current_path() / "--json";
  fs::remove(json_file);
  expect_refused({"gemm", "--m", "4", "--n", "4", "--k", "4", "--gpu", "h100-sxm", "--dry-run", "--out", "--json"},
                 {"--out needs a value", "--out=VALUE"});
  EXPECT_FALSE(fs::exists(json_file));
  expect_refused({"batch", "--model", "--gpu", "h100-sxm"}, {"--model needs a value"});
  // A value written with = is the user's: "--only=--gpu" is taken as a (here unknown) variant.
  EXPECT_EQ(run({"gemm", "--m", "4", "--n", "4", "--k", "4", "--gpu", "h100-sxm", "--dry-run", "--no-db", "--only=--gpu"})
                .err.find("needs a value"),
            std::string::npos);
}

// CLI11's other parse errors in tiletune's voice: prefixed, pointing at the command's help, never
// "Run with --help for more information.".
TEST(input, every_parse_error_speaks_as_tiletune_and_names_the_commands_help) {
  for (const auto& [args, words] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"gemm", "--m", "4", "--n", "4", "--k", "4", "--out"}, "tiletune: --out needs a value; `tiletune gemm --help`"},
           {{"gemm", "--m", "4", "--n", "4", "--k", "4", "--m-per-group", "1,2"}, "--m-per-group requires --groups"},
           {{"batch"}, "tiletune: --model is required; `tiletune batch --help`"},
           {{"check"}, "--baseline is required"}}) {
    const result r = run(args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("Run with --help"), std::string::npos) << r.err;
  }
}

// Options another option switches off are said to have no effect, not taken in silence.
TEST(input, an_option_another_switches_off_is_said_to_have_no_effect) {
  const std::vector<std::string> gemm = {"gemm", "--m", "64", "--n", "64", "--k", "64", "--gpu", "h100-sxm", "--quiet"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = gemm;
    a.insert(a.end(), extra.begin(), extra.end());
    return run(a);
  };
  const result retune = with({"--no-db", "--retune"});
  EXPECT_EQ(retune.code, 0) << retune.err;
  EXPECT_NE(retune.err.find("--retune has no effect with --no-db"), std::string::npos) << retune.err;
  const result cache = with({"--no-db", "--no-cache", "--cache-dir", (tmp_dir() / "unused-cache").string()});
  EXPECT_EQ(cache.code, 0) << cache.err;
  EXPECT_NE(cache.err.find("has no effect with --no-cache"), std::string::npos) << cache.err;
  EXPECT_EQ(with({"--no-db"}).err.find("no effect"), std::string::npos);
  const result predict = run({"batch", "--model", "gpt2", "--gpu", "h100-sxm", "--seq-len", "128", "--predict", "--json"});
  EXPECT_EQ(predict.code, 0) << predict.err;
  EXPECT_NE(predict.out.find("--predict has no effect: a plan for --gpu h100-sxm is predicted anyway"), std::string::npos);
}

// A db command reading the default database where none exists names it as the default, not as
// a --db the user never gave (every command that reads one: list says 0 records and exits 0).
TEST(input_cli, a_missing_default_database_is_named_as_the_default_not_as_a_db_option) {
  const fs::path cache = tmp_dir() / "no-default-db-cache";
  fs::remove_all(cache);
  for (const char* command : {"db show --problem bf16", "db export", "db calibrate --gpu h100-sxm"}) {
    const std::string script =
        "export XDG_CACHE_HOME='" + cache.string() + "' && exec '" + binary_path() + "' " + command;
    const result r = run_program("/bin/sh", {"-c", script});
    EXPECT_EQ(r.code, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find("the default tuning database"), std::string::npos) << command << ": " << r.err;
    EXPECT_EQ(r.err.find("tiletune: --db "), std::string::npos) << command << ": " << r.err;
  }
  // Named with --db, it is named so.
  const result named = run({"db", "show", "--problem", "bf16", "--db", (cache / "none.sqlite3").string()});
  EXPECT_EQ(named.code, 2);
  EXPECT_NE(named.err.find("tiletune: --db "), std::string::npos) << named.err;
}
