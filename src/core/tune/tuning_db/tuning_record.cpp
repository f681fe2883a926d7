// A tuning record: made from a result, made small for the database, and how
// two records of one key compare.
#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/iso_date.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"
#include "core/plan_mode.hpp"

namespace tiletune {

std::string tuning_problem_key(const gemm_problem& p) {
  // A scaling mode is keyed only where there is one, so unscaled keys read as before.
  const std::string scaling =
      p.scaling == scaling_mode::none ? "" : fmt::format(" s{}", to_string(p.scaling));
  // A grouped problem: its group count, layout and the rows' distribution class (plain keys read as before).
  const std::string groups =
      p.groups ? fmt::format(" g{} {} {}", p.groups->count(), to_string(p.groups->layout), p.groups->distribution())
               : "";
  // So is another C type (fp8's --out-dtype).
  const std::string out = p.out ? fmt::format(" o{}", to_string(*p.out)) : "";
  return fmt::format("{}x{}x{} b{} {} {} a{} b{}{}{}{}", p.m, p.n, p.k, p.batch, to_string(p.type), p.layout.name(),
                     p.alpha, p.beta, scaling, groups, out);
}

namespace {
bool has_number(const nlohmann::json& j, const char* key) { return j.contains(key) && j[key].is_number(); }
}  // namespace

nlohmann::json compact_result(const nlohmann::json& result) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : result.items())
    if (k != "variants") out[k] = v;
  const auto& variants = result.value("variants", nlohmann::json::array());
  // The recommended row first, then the fastest measured, then the best ranked by the model.
  const auto rec = result.value("recommendation", nlohmann::json());
  const std::string recommended = rec.is_object() ? rec.value("id", "") : "";
  std::vector<std::size_t> order(variants.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto sort_key = [&](std::size_t i) {
    const auto& v = variants[i];
    const bool is_rec = !recommended.empty() && v.value("id", "") == recommended;
    const bool timed = is_ok_variant(v) && has_number(v, "median_us");
    const double rank = has_number(v, "rank") ? v["rank"].get<double>() : 1e18;
    return std::make_tuple(is_rec ? 0 : timed ? 1 : 2, timed ? v["median_us"].get<double>() : rank, i);
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return sort_key(a) < sort_key(b); });
  nlohmann::json kept = nlohmann::json::array();
  for (std::size_t i = 0; i < order.size() && kept.size() < compact_variant_rows; ++i)
    if (status_of(variants[order[i]]) != variant_status::pruned) kept.push_back(variants[order[i]]);
  // Counted as --top counts what it leaves out; a result --top already cut keeps its total.
  const auto listed = result.value("variants_listed", nlohmann::json::object());
  out["variants_listed"] = {{"listed", kept.size()},
                            {"of", listed.value("of", variants.size())},
                            {"by", "tuning database (gemm --db-full keeps every row)"}};
  out["variants"] = std::move(kept);
  return out;
}

tuning_record record_from_result(const nlohmann::json& result, const nlohmann::json& header, bool allow_predicted) {
  const auto& h = header.is_object() && header.contains("device") ? header : result;
  const bool predicted = allow_predicted && mode_of(h) == plan_mode::predicted;
  if (!is_measured_result(h) && !predicted)
    throw usage_error("only measured results go into the tuning database; this one is \"" + h.value("mode", "?") + "\"");
  if (!result.contains("problem") || !result.contains("variants"))
    throw usage_error("not a tiletune gemm result: it has no problem or variants");
  tuning_record r;
  const auto& dev = h.at("device");
  const auto& tool = h.value("tool", nlohmann::json::object());
  r.device_name = dev.value("name", "");
  // A GPU without a preset has "preset": null (device_spec's to_json): it is filed under its name.
  r.key.device_model = dev.contains("preset") && dev["preset"].is_string() ? dev["preset"].get<std::string>() : "";
  if (r.key.device_model.empty()) r.key.device_model = r.device_name;
  r.key.driver = tool.value("driver", std::string("unknown"));
  r.key.cuda = tool.value("cuda_runtime", std::string("unknown"));
  r.key.tool_version = tool.value("version", std::string("unknown"));
  r.key.compiler = tool.value("nvrtc", std::string("unknown"));
  r.key.problem = gemm_problem_from_json(result.at("problem"));
  // Stored in one form, so that dates compare as strings in time order.
  r.measured_at = canonical_iso_date(tool.value("date", std::string()));
  if (predicted) r.key.driver = r.key.cuda = predicted_driver;
  // A stored plan searched nothing: the model ranked every variant.
  r.strategy = result.contains("search") ? result["search"].value("strategy", "") : predicted ? "model" : "exhaustive";
  const auto& rec = result.value("recommendation", nlohmann::json());
  if (rec.is_object()) {
    r.recommended = rec.value("id", "");
    if (rec.contains("tflops") && rec["tflops"].is_number()) r.tflops = rec["tflops"].get<double>();
  }
  // The whole result as one file would hold it: header and body.
  r.result = result;
  for (const char* k : {"schema", "tool", "device", "mode"})
    if (h.contains(k)) r.result[k] = h[k];
  r.result["schema"] = "tiletune.gemm/1";
  return r;
}

bool is_measured(const tuning_record& r) { return is_measured_result(r.result); }

int verification_rank(const tuning_record& r) {
  if (r.verified >= 0) return r.verified;
  if (!is_measured(r)) return 0;
  if (r.recommended.empty()) return 1;
  for (const auto& v : r.result.value("variants", nlohmann::json::array()))
    if (v.is_object() && v.value("id", "") == r.recommended) {
      // A recommended tile that failed its check (an edited file) ranks below every measured answer.
      if (is_incorrect_variant(v)) return 0;
      return is_ok_variant(v) && v.contains("max_rel_error") && v["max_rel_error"].is_number() ? 2 : 1;
    }
  return 1;
}

bool better_record(const tuning_record& a, const tuning_record& b) {
  const int ra = verification_rank(a), rb = verification_rank(b);
  if (ra != rb) return ra > rb;
  return canonical_iso_date(a.measured_at) > canonical_iso_date(b.measured_at);  // also records stored before
}

}  // namespace tiletune
