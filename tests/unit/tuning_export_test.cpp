#include "core/tune/fleet/tuning_export.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "core/results/json_file.hpp"

using namespace tiletune;
namespace fs = std::filesystem;

namespace {

// The measured H100 results of 2026-11-22 (profiles/measured/), as database records.
tuning_record measured_record(const std::string& name) {
  const auto j = read_json_file(fs::path(TILETUNE_SOURCE_DIR) / "profiles/measured/h100-2026-11-22/gemm" / name);
  return record_from_result(j, nlohmann::json());
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream s(line);
  for (std::string f; std::getline(s, f, sep);) out.push_back(f);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

}  // namespace

TEST(tuning_export, picks_the_best_record_per_gpu_model_and_problem) {
  auto verified = measured_record("16x4096x4096-bf16-nt.json");
  auto newer_unverified = verified;
  newer_unverified.key.driver = "999.0";
  newer_unverified.measured_at = "2099-01-01T00:00:00Z";
  newer_unverified.recommended = "";
  auto other_gpu = verified;
  other_gpu.key.device_model = "a100-sxm-80gb";
  const auto best =
      best_per_problem({newer_unverified, verified, other_gpu, measured_record("4096x4096x4096-f32-nn.json")});
  ASSERT_EQ(best.size(), 3u);
  for (const auto& r : best)
    if (r.key.device_model == "h100-sxm" && r.key.problem.m == 16) {
      EXPECT_EQ(r.measured_at, verified.measured_at);
    }
}

TEST(tuning_export, json_and_triton_give_the_recommended_tile_in_each_tools_names) {
  const auto best =
      best_per_problem({measured_record("16x4096x4096-bf16-nt.json"), measured_record("4096x4096x4096-f32-nn.json")});
  const auto j = export_json(best, "db.sqlite", "2026-11-24T00:00:00Z");
  EXPECT_EQ(j["schema"], "tiletune.tuning-export/1");
  ASSERT_EQ(j["configs"].size(), 2u);
  const auto& c = j["configs"][0].value("key", "").rfind("16x", 0) == 0 ? j["configs"][0] : j["configs"][1];
  EXPECT_EQ(c["id"], "mma_64x64x64_w2x2_s3");
  EXPECT_EQ(c["verified"], true);
  EXPECT_EQ(c["mode"], "measured");
  EXPECT_EQ(c["triton"]["BLOCK_SIZE_M"], 64);
  EXPECT_EQ(c["triton"]["GROUP_SIZE_M"], 1);
  EXPECT_EQ(c["triton"]["num_warps"], 4);
  EXPECT_EQ(c["triton"]["num_stages"], 3);
  const std::string py = export_triton(best, "db.sqlite", "2026-11-24T00:00:00Z");
  EXPECT_NE(py.find("import triton"), std::string::npos);
  EXPECT_NE(py.find("('h100-sxm', 16, 4096, 4096, 1, 'bf16', 'nt', 1.0, 0.0): [triton.Config({'BLOCK_SIZE_M': 64, "
                    "'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 64, 'GROUP_SIZE_M': 1}, num_warps=4, num_stages=3)],"),
            std::string::npos)
      << py;
  EXPECT_NE(py.find("'f32', 'nn'"), std::string::npos) << py;
  EXPECT_EQ(py.find("'SPLIT_K'"), std::string::npos) << "no split-K tile here";
}

TEST(tuning_export, triton_names_split_k_and_grouping_when_the_tile_has_them) {
  auto r = measured_record("16x4096x4096-bf16-nt.json");
  auto& tile = r.result["recommendation"]["tile"];
  tile["split_k"] = 4;
  tile["raster_group"] = 8;
  const std::string py = export_triton({r}, "db", "now");
  EXPECT_NE(py.find("'SPLIT_K': 4"), std::string::npos) << py;
  EXPECT_NE(py.find("'GROUP_SIZE_M': 8"), std::string::npos) << py;
}

// The database's file name in the header comment is stored text too: a name with a line break had
// become a line of Python that ran when the configs were imported.
TEST(tuning_export, the_database_name_in_the_header_never_becomes_code) {
  const auto r = measured_record("16x4096x4096-bf16-nt.json");
  const std::string py = export_triton({r}, "shard\nprint('injected')\n#.sqlite", "now\nrm");
  EXPECT_EQ(py.find("\nprint('injected')"), std::string::npos) << py;
  EXPECT_EQ(py.find("\nrm"), std::string::npos) << py;
  EXPECT_NE(py.find("from shard?print('injected')?#.sqlite on now?rm."), std::string::npos) << py;
}

// Triton's tutorial kernel takes GROUP_SIZE_M and no GROUP_SIZE_N (an unexpected keyword would fail
// its autotune): a tile grouped along N gets the same group along M, and a note says so.
TEST(tuning_export, a_tile_grouped_along_n_gets_the_tutorials_mirror_and_says_so) {
  auto r = measured_record("16x4096x4096-bf16-nt.json");
  auto& tile = r.result["recommendation"]["tile"];
  tile["raster_group"] = 8;
  tile["raster_along_n"] = true;
  const std::string py = export_triton({r}, "db", "now");
  EXPECT_NE(py.find("'GROUP_SIZE_M': 8"), std::string::npos) << py;
  EXPECT_EQ(py.find("GROUP_SIZE_N"), std::string::npos) << py;
  EXPECT_NE(py.find("# tiletune grouped 8 tiles along N"), std::string::npos) << py;
  const auto j = export_json({r}, "db", "now");
  ASSERT_EQ(j["configs"].size(), 1u);
  EXPECT_EQ(j["configs"][0]["triton"]["GROUP_SIZE_M"], 8);
  EXPECT_FALSE(j["configs"][0]["triton"].contains("GROUP_SIZE_N"));
  EXPECT_NE(j["configs"][0].value("triton_note", "").find("along N"), std::string::npos);
  tile["raster_along_n"] = false;
  EXPECT_FALSE(export_json({r}, "db", "now")["configs"][0].contains("triton_note"));
}

// A tile Triton's blocks round up (192 columns to 256) is exported with as many stages as fit where the
// tile's own did, and both exports say what changed: the JSON's tile 192 wide beside BLOCK_SIZE_N 256 in
// 5 stages had asked Triton for 240 KB of shared memory on an H100, with nothing said.
TEST(tuning_export, a_tile_rounded_to_tritons_blocks_keeps_within_its_shared_memory_and_says_so) {
  auto r = measured_record("16x4096x4096-bf16-nt.json");
  auto& tile = r.result["recommendation"]["tile"];
  tile = {{"family", "wgmma"}, {"block_m", 128}, {"block_n", 192}, {"block_k", 64}, {"stages", 5}, {"consumers", 2},
          {"threads", 384}, {"split_k", 1}, {"cluster_m", 1}, {"cluster_n", 1}, {"raster_group", 8}};
  r.result["recommendation"]["id"] = "wgmma_128x192x64_c2_s5_cl1x1_g8m";
  const auto j = export_json({r}, "db", "now");
  ASSERT_EQ(j["configs"].size(), 1u) << j.dump();
  const auto& c = j["configs"][0];
  EXPECT_EQ(c["triton"]["BLOCK_SIZE_N"], 256);
  EXPECT_EQ(c["triton"]["num_stages"], 4);
  EXPECT_NE(c.value("triton_note", "").find("BLOCK_N 192 -> 256"), std::string::npos) << c.dump();
  EXPECT_NE(c.value("triton_note", "").find("num_stages 5 -> 4"), std::string::npos) << c.dump();
  const std::string py = export_triton({r}, "db", "now");
  EXPECT_NE(py.find("'BLOCK_SIZE_N': 256"), std::string::npos) << py;
  EXPECT_NE(py.find("num_stages=4"), std::string::npos) << py;
  EXPECT_NE(py.find("# BLOCK_N 192 -> 256"), std::string::npos) << py;
}

// A grouped GEMM's record is left out of the Triton file and the CSV, whose keys and rows have no groups:
// filed under the plain GEMM of its total rows, it had replaced that GEMM's config in the dict.
TEST(tuning_export, a_grouped_record_is_left_out_of_the_triton_file_and_the_csv_not_filed_as_a_plain_gemm) {
  const auto plain = measured_record("16x4096x4096-bf16-nt.json");
  auto grouped = plain;
  grouped.key.problem = grouped_problem(groups_of_rows({8, 8}, group_layout::contiguous), 4096, 4096, dtype::bf16,
                                        plain.key.problem.layout);
  ASSERT_EQ(grouped.key.problem.m, plain.key.problem.m);
  EXPECT_EQ(grouped_records({plain, grouped}), 1u);
  const std::string py = export_triton({plain, grouped}, "db", "now");
  std::size_t keys = 0;
  for (std::size_t at = py.find("('h100-sxm', 16, 4096"); at != std::string::npos; at = py.find("('h100-sxm', 16, 4096", at + 1))
    ++keys;
  EXPECT_EQ(keys, 1u) << py;
  EXPECT_NE(py.find("a grouped GEMM (mixture of experts), left out"), std::string::npos) << py;
  const std::string csv = export_cutlass_csv({plain, grouped});
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2) << csv;  // the header and the plain GEMM
  EXPECT_EQ(export_json({plain, grouped}, "db", "now")["configs"].size(), 2u);
}

// A stored record whose tile this tiletune cannot read (imported before import checked it) is
// listed without a config, saying why; every other record is exported as before.
TEST(tuning_export, an_unreadable_stored_tile_is_listed_without_a_config_and_the_rest_export) {
  auto bad = measured_record("16x4096x4096-bf16-nt.json");
  bad.result["recommendation"]["tile"].erase("block_m");
  const auto good = measured_record("4096x4096x4096-f32-nn.json");
  const auto j = export_json({bad, good}, "db", "now");
  ASSERT_EQ(j["configs"].size(), 1u);
  ASSERT_EQ(j["no_config"].size(), 1u);
  EXPECT_NE(j["no_config"][0]["why"].get<std::string>().find("stored tile is unreadable"), std::string::npos);
  const std::string py = export_triton({bad, good}, "db", "now");
  EXPECT_NE(py.find("its stored tile is unreadable"), std::string::npos) << py;
  EXPECT_NE(py.find("'f32', 'nn', 1.0, 0.0): [triton.Config("), std::string::npos) << py;
  bad.result["recommendation"]["tile"]["block_m"] = 64;
  bad.result["recommendation"]["tile"]["family"] = "nope";
  EXPECT_NE(export_json({bad}, "db", "now")["no_config"][0]["why"].get<std::string>().find("no kernel family named 'nope'"),
            std::string::npos);
  std::stringstream csv(export_cutlass_csv({bad, good}));
  int lines = 0;
  for (std::string line; std::getline(csv, line);) ++lines;
  EXPECT_EQ(lines, 2);  // the header and the readable record
}

TEST(tuning_export, cutlass_csv_has_the_profilers_columns_and_one_row_per_problem) {
  const auto best =
      best_per_problem({measured_record("16x4096x4096-bf16-nt.json"), measured_record("4096x4096x4096-f32-nn.json"),
                        measured_record("4096x4096x4096-f16-nn.json")});
  const std::string csv = export_cutlass_csv(best);
  std::stringstream s(csv);
  std::string header, line;
  std::getline(s, header);
  EXPECT_EQ(header.rfind("Problem,Provider,OperationKind,Operation,Disposition,Status,gemm_kind,m,n,k,A,B,C,", 0), 0u);
  const auto columns = split(header, ',');
  EXPECT_EQ(columns.back(), "GFLOPs");
  int rows = 0;
  bool saw_nt = false, saw_simt = false;
  while (std::getline(s, line)) {
    ++rows;
    const auto f = split(line, ',');
    ASSERT_EQ(f.size(), columns.size()) << line;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < f.size(); ++i) row[columns[i]] = f[i];
    EXPECT_EQ(row["Disposition"], "passed") << line;
    EXPECT_EQ(row["C"].substr(row["C"].find(':')), ":row");
    EXPECT_GT(std::stod(row["GFLOPs"]), 0) << line;
    if (row["m"] == "16") {
      saw_nt = true;
      EXPECT_EQ(row["A"], "bf16:row");  // nt: A as written (row-major M x K), B transposed
      EXPECT_EQ(row["B"], "bf16:column");
      EXPECT_EQ(row["op_class"], "tensorop");
      EXPECT_EQ(row["inst_k"], "16");
      EXPECT_EQ(row["cta_m"], "64");
      EXPECT_EQ(row["min_cc"], "90");
      // 50.05 us measured for 2*16*4096*4096 flops: 10.7 TFLOP/s, as the record says.
      EXPECT_NEAR(std::stod(row["GFLOPs"]), 10727, 5);
    }
    if (row["Operation"].rfind("simt_", 0) == 0) {
      saw_simt = true;
      EXPECT_EQ(row["op_class"], "simt");
      EXPECT_EQ(row["A"], "f32:row");
    }
  }
  EXPECT_EQ(rows, 3);
  EXPECT_TRUE(saw_nt && saw_simt);
}

// A stored GPU name, driver or date is text from files and databases a user merged: the Triton file
// writes it as a Python literal (quotes and backslashes escaped, control and non-ASCII characters as
// escapes, the file ASCII) or in a comment kept to its line, never as code.
TEST(tuning_export, stored_text_stays_a_python_literal_or_a_comment) {
  auto r = measured_record("16x4096x4096-bf16-nt.json");
  r.key.device_model = "x', 1): [], **({} if __import__('os').system('echo PWNED') else {}), ('y\\\n\xc3\xa9\xff";
  r.key.driver = "13.0)\n__import__('os').system('echo PWNED') #";
  const std::string py = export_triton({r}, "db", "now");
  EXPECT_NE(py.find("    ('x\\', 1): [], **({} if __import__(\\'os\\').system(\\'echo PWNED\\') else {}), "
                    "(\\'y\\\\\\x0a\\u00e9\\xff', 16, 4096, 4096, 1, 'bf16', 'nt', 1.0, 0.0): [triton.Config("),
            std::string::npos)
      << py;
  EXPECT_NE(py.find("driver 13.0)?__import__('os').system('echo PWNED') #)"), std::string::npos) << py;
  std::stringstream lines(py);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_NE(line.rfind("__import__", 0), 0u) << line;
    for (const char c : line) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << line;
  }
}
