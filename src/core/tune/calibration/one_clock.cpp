#include "core/tune/calibration/one_clock.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace tiletune {

namespace {

// The stages in the order the search ran them (search.stages), the model's cut left out.
std::vector<std::string> stage_order(const nlohmann::json& result) {
  std::vector<std::string> out;
  if (!result.contains("search") || !result["search"].contains("stages")) return out;
  for (const auto& s : result["search"]["stages"])
    if (s.value("timed", 0) > 0) out.push_back(s.value("name", ""));
  return out;
}

// A margin named in `text` just before `tail` ("... 1.0% slower, ..."), as a fraction; < 0: none.
double percent_before(const std::string& text, const std::string& tail) {
  const std::size_t at = text.find(tail);
  if (at == std::string::npos) return -1;
  std::size_t from = at;
  while (from > 0 && (std::isdigit(static_cast<unsigned char>(text[from - 1])) || text[from - 1] == '.')) --from;
  if (from == at) return -1;
  return std::strtod(text.substr(from, at - from).c_str(), nullptr) / 100;
}

// The recommended variant's time among the finalists. After the search it was timed again beside
// cuBLASLt for the ratio (reference.first_median_us says so), and that pair's time replaced its
// search figure in `measured`: a later, often hotter timing than its peers' (the H100's
// 4096x4096x14336, 2026-11-23: 705.6 us at 1,440 MHz for the variant the search had found fastest, its
// peers 601-658 us at 1,620-1,980). Its search figure where the result keeps it (in_search); else
// the search's own verdict: no slower than the fastest other finalist, or the margin its note gives
// ("recommended X over the fastest Y: 1.0% slower, within the measured noise ...", as gemm_measure.cpp's
// recommend_leanest words it); where the pair's
// time is lower than every other finalist's, that time (a decode kernel's, whose clock stays put).
// nullopt: no recommendation timed again.
std::optional<double> recommended_in_search(const nlohmann::json& result, const std::map<std::string, double>& measured,
                                            const std::string& recommended,
                                            const std::function<bool(const std::string&)>& finalist) {
  const auto& rec = result.contains("recommendation") ? result["recommendation"] : nlohmann::json();
  if (rec.is_object() && rec.contains("in_search") && rec["in_search"].is_object() &&
      rec["in_search"].contains("median_us") && rec["in_search"]["median_us"].is_number())
    return rec["in_search"]["median_us"].get<double>();
  const auto& ref = result.contains("reference") ? result["reference"] : nlohmann::json();
  if (!ref.is_object() || !ref.contains("first_median_us")) return std::nullopt;  // not timed again
  if (result.contains("notes") && result["notes"].is_array())
    for (const auto& n : result["notes"]) {
      if (!n.is_string()) continue;
      const std::string note = n.get<std::string>(), head = "recommended " + recommended + " over the fastest ";
      if (note.rfind(head, 0) != 0) continue;
      const std::size_t colon = note.find(':', head.size());
      const auto fastest = colon == std::string::npos ? measured.end() : measured.find(note.substr(head.size(), colon - head.size()));
      const double margin = percent_before(note, "% slower");
      if (fastest != measured.end() && margin >= 0) return fastest->second * (1 + margin);
    }
  // The search found it no slower than any other finalist; its later time stands where it is lower still.
  double best = measured.at(recommended);
  for (const auto& [id, us] : measured)
    if (id != recommended && finalist(id)) best = std::min(best, us);
  return best;
}

}  // namespace

double behind_the_leader(const nlohmann::json& variant) {
  if (variant.contains("behind_leader") && variant["behind_leader"].is_number())
    return variant["behind_leader"].get<double>();
  return percent_before(variant.value("reason", ""), "% behind the leader");
}

double slowdown_at_one_clock(const nlohmann::json& result, const std::string& id,
                             const std::map<std::string, double>& recorded) {
  if (!recorded.count(id)) return 0;
  const std::vector<std::string> order = stage_order(result);
  auto depth = [&](const std::string& stage) {
    return static_cast<int>(std::find(order.begin(), order.end(), stage) - order.begin());
  };
  std::map<std::string, const nlohmann::json*> variant;
  int deepest = -1;
  for (const auto& v : result.at("variants")) {
    const std::string vid = v.value("id", "");
    if (!recorded.count(vid) || !v.contains("search_stage") || !v["search_stage"].is_string()) continue;
    variant[vid] = &v;
    const int d = depth(v["search_stage"].get<std::string>());
    if (d < static_cast<int>(order.size())) deepest = std::max(deepest, d);
  }
  auto finalist = [&](const std::string& vid) {
    if (order.size() < 2) return true;  // no stages: every variant was timed alike
    const auto it = variant.find(vid);
    return it != variant.end() && depth((*it->second)["search_stage"].get<std::string>()) == deepest;
  };
  std::map<std::string, double> measured = recorded;
  const auto& rec = result.contains("recommendation") ? result["recommendation"] : nlohmann::json();
  const std::string recommended = rec.is_object() ? rec.value("id", "") : "";
  if (measured.count(recommended) && finalist(recommended))
    if (const auto t = recommended_in_search(result, recorded, recommended, finalist)) measured[recommended] = *t;
  const double mine = measured.at(id);
  auto ratio_to_fastest = [&](const auto& counts) {
    double fastest = mine;
    for (const auto& [vid, us] : measured)
      if (counts(vid)) fastest = std::min(fastest, us);
    return mine / fastest;
  };
  const auto every = [](const std::string&) { return true; };
  if (order.size() < 2 || deepest < 0 || !variant.count(id)) return ratio_to_fastest(every);
  if (finalist(id)) return ratio_to_fastest(finalist);
  const double margin = behind_the_leader(*variant.at(id));
  return margin >= 0 ? 1 + margin : ratio_to_fastest(every);
}

}  // namespace tiletune
