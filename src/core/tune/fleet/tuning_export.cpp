#include "core/tune/fleet/tuning_export.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/utf8.hpp"
#include "core/tune/fleet/tuning_merge.hpp"
#include "core/gemm/family.hpp"
#include "core/tune/gemm_tuner.hpp"

namespace tiletune {

namespace {

// The recommended tile of a record; without one, why: no variant could run the problem, or the
// stored tile is one this tiletune cannot read (a record imported before import checked it).
// Such a record is listed without a config; the others are exported all the same.
struct recommended {
  std::optional<tile_config> tile;
  std::string why;
};
recommended recommended_tile(const tuning_record& r) {
  const auto rec = r.result.value("recommendation", nlohmann::json());
  if (!rec.is_object() || !rec.contains("tile")) return {std::nullopt, "no variant could run this problem"};
  try {
    return {recommended_tile_from_json(rec), ""};
  } catch (const nlohmann::json::exception&) {
    return {std::nullopt, "its stored tile is unreadable (a size missing or not a whole number)"};
  } catch (const std::exception& e) {
    return {std::nullopt, fmt::format("its stored tile is unreadable ({})", e.what())};
  }
}

double number_or(const nlohmann::json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

// Triton's matmul tutorial names the tile BLOCK_SIZE_M/N/K and the grouped
// launch order GROUP_SIZE_M (1: row by row, no grouping); tiletune's own JSON
// (triton_config, J here) says BLOCK_M/N/K.
nlohmann::json triton_tutorial_names(const nlohmann::json& j) {
  nlohmann::json out = nlohmann::json::object();
  out["BLOCK_SIZE_M"] = j["BLOCK_M"];
  out["BLOCK_SIZE_N"] = j["BLOCK_N"];
  out["BLOCK_SIZE_K"] = j["BLOCK_K"];
  // The tutorial's kernel groups block rows only, and takes no other name (a GROUP_SIZE_N would be
  // an unexpected keyword to it): a tile grouped along N gets its mirror, the same group along M
  // (triton_grouping_note says so beside it).
  out["GROUP_SIZE_M"] = j.value("GROUP_SIZE_M", j.value("GROUP_SIZE_N", 1));
  if (j.contains("SPLIT_K")) out["SPLIT_K"] = j["SPLIT_K"];
  return out;
}

// Where the tutorial's names cannot say the tile's launch order: "" for most tiles.
std::string triton_grouping_note(const tile_config& c) {
  return c.raster_group > 0 && c.raster_along_n
             ? fmt::format("tiletune grouped {} tiles along N; the tutorial's kernel groups along M only, so "
                           "GROUP_SIZE_M {} is its mirror image",
                           c.raster_group, c.raster_group)
             : "";
}

// What the tutorial's config changes of the tile, in words: "" for most tiles. A tile rounded up to
// Triton's blocks (and its stages fewer) had been exported as the rounded config with nothing said.
std::string triton_notes(const tile_config& c) {
  const std::string grouping = triton_grouping_note(c), rounding = triton_rounding(c);
  return grouping.empty() || rounding.empty() ? grouping + rounding : grouping + "; " + rounding;
}

// A Python string literal of any stored text, whatever it holds: quotes and backslashes escaped,
// control characters as \xNN and every character past ASCII as \uNNNN or \UNNNNNNNN, so the file
// is ASCII (a stored GPU name or driver comes from files and databases a user merged; it must never
// become code). A byte that is not UTF-8 is \xNN too.
std::string python_string(const std::string& s) {
  std::string out = "'";
  for (std::size_t i = 0; i < s.size();) {
    const std::optional<utf8_char> ch = utf8_at(s, i);
    if (!ch) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    const char32_t code = ch->code;
    if (code == '\\' || code == '\'') out += {'\\', static_cast<char>(code)};
    else if (code < 0x20 || code == 0x7f) out += fmt::format("\\x{:02x}", static_cast<unsigned>(code));
    else if (code < 0x80) out += static_cast<char>(code);
    else if (code <= 0xffff) out += fmt::format("\\u{:04x}", static_cast<unsigned>(code));
    else out += fmt::format("\\U{:08x}", static_cast<unsigned>(code));
    i += ch->length;
  }
  return out + "'";
}

// Stored text in a Python comment: printable ASCII on one line (no line break ends the comment
// early; no NUL or byte that is not UTF-8 stops Python reading the file), anything else a '?'.
std::string python_comment(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return s;
}

std::string python_value(const nlohmann::json& v) { return v.is_string() ? python_string(v.get<std::string>()) : v.dump(); }

}  // namespace

std::vector<tuning_record> best_per_problem(const std::vector<tuning_record>& records) {
  std::map<std::string, const tuning_record*> best;
  for (const auto& r : records) {
    const std::string k = r.key.device_model + "\x1f" + tuning_problem_key(r.key.problem);
    auto [it, fresh] = best.emplace(k, &r);
    if (!fresh && better_record(r, *it->second)) it->second = &r;
  }
  std::vector<tuning_record> out;
  for (const auto& [k, r] : best) out.push_back(*r);  // by GPU model, then problem key
  return out;
}

nlohmann::json export_json(const std::vector<tuning_record>& best, const std::string& database,
                           const std::string& date) {
  nlohmann::json j = {{"schema", "tiletune.tuning-export/1"}, {"database", database}, {"date", date},
                      {"configs", nlohmann::json::array()}, {"no_config", nlohmann::json::array()}};
  for (const auto& r : best) {
    const auto [tile, why] = recommended_tile(r);
    nlohmann::json e = {{"device_model", r.key.device_model},
                        {"problem", to_json(r.key.problem)},
                        {"key", tuning_problem_key(r.key.problem)},
                        {"mode", is_measured(r) ? "measured" : "predicted"},
                        {"verified", verification_rank(r) == 2},
                        {"measured_at", r.measured_at},
                        {"driver", r.key.driver},
                        {"tool_version", r.key.tool_version},
                        {"compiler", r.key.compiler}};
    if (!tile) {
      e["why"] = why;
      j["no_config"].push_back(std::move(e));
      continue;
    }
    const auto& rec = r.result["recommendation"];
    e["id"] = tile->id();
    e["family"] = rec.value("family", "");
    e["tile"] = tile_to_json(*tile);
    const nlohmann::json t = triton_config(*tile, r.key.problem.type);
    e["triton"] = triton_tutorial_names(t);
    e["triton"]["num_warps"] = t["num_warps"];
    e["triton"]["num_stages"] = t["num_stages"];
    if (const std::string note = triton_notes(*tile); !note.empty()) e["triton_note"] = note;
    e["cutlass"] = cutlass_shape(*tile, r.key.problem.type);
    e["tflops"] = rec.value("tflops", nlohmann::json());
    e[is_measured(r) ? "median_us" : "predicted_us"] =
        rec.value(is_measured(r) ? "median_us" : "predicted_us", nlohmann::json());
    j["configs"].push_back(std::move(e));
  }
  return j;
}

const char* const grouped_left_out =
    "a grouped GEMM (mixture of experts), left out: Triton's matmul tutorial and cutlass_profiler's universal GEMM "
    "rows have no groups; its config is in --format json";

std::size_t grouped_records(const std::vector<tuning_record>& best) {
  return static_cast<std::size_t>(
      std::count_if(best.begin(), best.end(), [](const tuning_record& r) { return r.key.problem.grouped(); }));
}

std::string export_triton(const std::vector<tuning_record>& best, const std::string& database,
                          const std::string& date) {
  std::string out = fmt::format(
      "# Written by `tiletune db export --format triton` from {} on {}.\n"
      "# The best tile tiletune recorded per GPU model and problem, as triton.Config in the names of\n"
      "# Triton's matmul tutorial (BLOCK_SIZE_M/N/K, GROUP_SIZE_M; SPLIT_K where K is split).\n"
      "# Keys: (gpu, m, n, k, batch, dtype, layout, alpha, beta); layout gives A then B, t = transposed;\n"
      "# dtype e4m3 is torch.float8_e4m3fn and e5m2 torch.float8_e5m2 (A and B; C bf16); e4m3_e5m2 is A\n"
      "# float8_e4m3fn and B float8_e5m2, e5m2_e4m3 the other way round.\n"
      "# Use one list as @triton.autotune(configs=CONFIGS[key], key=['M', 'N', 'K']).\n"
      "import triton\n\nCONFIGS = {{\n",
      python_comment(database), python_comment(date));
  for (const auto& r : best) {
    const auto& p = r.key.problem;
    const std::string key = fmt::format("({}, {}, {}, {}, {}, '{}', '{}', {}, {})", python_string(r.key.device_model),
                                        p.m, p.n, p.k, p.batch, to_string(p.type), p.layout.name(),
                                        nlohmann::json(p.alpha).dump(), nlohmann::json(p.beta).dump());
    // A grouped GEMM's key would be the plain GEMM's of its total rows (the dict had kept whichever came
    // last, handing a plain GEMM the grouped kernel's config): the tutorial has no grouped kernel.
    if (p.grouped()) {
      out += fmt::format("    # {}: {}\n", python_comment(r.key.device_model + " " + p.describe()), grouped_left_out);
      continue;
    }
    const auto [tile, why] = recommended_tile(r);
    if (!tile) {
      out += fmt::format("    # {}: {}\n", key, python_comment(why));
      continue;
    }
    std::string fields;
    const nlohmann::json t = triton_config(*tile, p.type);
    const nlohmann::json names = triton_tutorial_names(t);
    // In the tutorial's order (a JSON object sorts its keys).
    for (const char* k : {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "SPLIT_K"})
      if (names.contains(k)) fields += fmt::format("{}'{}': {}", fields.empty() ? "" : ", ", k, python_value(names[k]));
    const std::string ctas = t.contains("num_ctas") ? fmt::format(", num_ctas={}", t["num_ctas"].get<int>()) : "";
    const double tflops = number_or(r.result["recommendation"], "tflops", 0);
    out += fmt::format("    # {} {}, {:.1f} TFLOP/s ({}, {})\n", tile->id(),
                       verification_rank(r) == 2 ? "measured and verified"
                       : is_measured(r)          ? "measured"
                                                 : "predicted by the model",
                       tflops, python_comment(r.measured_at),
                       r.key.driver == predicted_driver ? "offline plan" : "driver " + python_comment(r.key.driver));
    if (const std::string note = triton_notes(*tile); !note.empty()) out += fmt::format("    # {}\n", note);
    out += fmt::format("    {}: [triton.Config({{{}}}, num_warps={}, num_stages={}{})],\n", key, fields,
                       t["num_warps"].get<int>(), t["num_stages"].get<int>(), ctas);
  }
  out += "}\n";
  return out;
}

std::string export_cutlass_csv(const std::vector<tuning_record>& best) {
  // The columns of cutlass_profiler's GEMM CSV report (--output=FILE.csv), as
  // in NVIDIA/cutlass media/docs/profiler.md ("CSV Results") and written by
  // tools/profiler/src/performance_report.cpp: Problem, Provider, OperationKind,
  // Operation, Disposition, Status, then the GEMM's arguments, then Bytes,
  // Flops, Flops/Byte, Runtime (ms), GB/s, GFLOPs. Operand types are
  // "dtype:row|column"; tiletune's C is row-major.
  std::string out =
      "Problem,Provider,OperationKind,Operation,Disposition,Status,gemm_kind,m,n,k,A,B,C,alpha,beta,"
      "split_k_slices,batch_count,op_class,accum,cta_m,cta_n,cta_k,stages,warps_m,warps_n,warps_k,inst_m,inst_n,"
      "inst_k,min_cc,max_cc,Bytes,Flops,Flops/Byte,Runtime,GB/s,GFLOPs\n";
  static const std::regex instruction(R"(InstructionShape<(\d+),(\d+),(\d+)>)");
  int index = 0;
  for (const auto& r : best) {
    const auto tile = recommended_tile(r).tile;
    // A grouped GEMM is no row of the universal kind these columns describe (its m, n, k would be a plain
    // GEMM's of its total rows): left out, as the CLI says.
    if (!tile || r.key.problem.grouped()) continue;
    const auto& p = r.key.problem;
    const auto& rec = r.result["recommendation"];
    const std::string shape = cutlass_shape(*tile, p.type);
    std::smatch inst;
    std::regex_search(shape, inst, instruction);
    const std::string op_class(tile->family->cutlass_op_class());
    // CUDA-core kernels: CUTLASS lists an instruction of 1x1x1.
    const bool fma = op_class != "tensorop";
    // A row-major M x K is "row"; stored transposed (t) it is column-major.
    const char* a = p.layout.name()[0] == 'n' ? "row" : "column";
    const char* b = p.layout.name()[1] == 'n' ? "row" : "column";
    // CUTLASS's names: fp8 is fe4m3 / fe5m2 (C bf16); the others are tiletune's.
    const std::string type = is_fp8(p.type) ? fmt::format("f{}", to_string(p.elements().a)) : std::string(to_string(p.type));
    const std::string b_type = is_fp8(p.type) ? fmt::format("f{}", to_string(p.elements().b)) : type;
    const std::string c_type = is_fp8(p.type) ? std::string(to_string(p.elements().c)) : type;
    const double runtime_ms = number_or(rec, is_measured(r) ? "median_us" : "predicted_us", 0) / 1000.0;
    const double bytes = static_cast<double>(p.operand_bytes()), flops = p.flops();
    const nlohmann::json tj = tile_to_json(*tile);
    const int warps_m = tj.value("warps_m", 0), warps_n = tj.value("warps_n", 0);
    const int cc = r.result.value("device", nlohmann::json::object()).value("compute_capability", 0);
    const auto fmt_number = [](double v) { return v > 0 ? fmt::format("{:.6g}", v) : std::string(); };
    out += fmt::format(
        "{},tiletune,gemm,{},{},success,universal,{},{},{},{}:{},{}:{},{}:row,{},{},{},{},{},f32,{},{},{},{},{},{},1,"
        "{},{},{},{},{},{:.0f},{:.0f},{},{},{},{}\n",
        ++index, tile->id(), verification_rank(r) == 2 ? "passed" : "not_verified", p.m, p.n, p.k, type, a, b_type, b,
        c_type, nlohmann::json(p.alpha).dump(), nlohmann::json(p.beta).dump(), tile->split_k > 1 ? tile->split_k : 1,
        p.batch, op_class, tile->block_m, tile->block_n, tile->block_k, tile->stages,
        warps_m ? std::to_string(warps_m) : std::to_string(tile->family->threads(*tile) / 32),
        warps_n ? std::to_string(warps_n) : "1", fma ? "1" : inst.size() == 4 ? inst[1].str() : "",
        fma ? "1" : inst.size() == 4 ? inst[2].str() : "", fma ? "1" : inst.size() == 4 ? inst[3].str() : "",
        cc ? std::to_string(cc) : "", cc ? std::to_string(cc) : "", bytes, flops, fmt::format("{:.0f}", flops / bytes),
        fmt_number(runtime_ms), runtime_ms > 0 ? fmt_number(bytes / (runtime_ms * 1e-3) / 1e9) : "",
        runtime_ms > 0 ? fmt_number(flops / (runtime_ms * 1e-3) / 1e9) : "");
  }
  return out;
}

}  // namespace tiletune
