#include "core/tune/calibration/one_clock.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
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

// The margin in a dropped variant's reason ("... 3.4% behind the leader"), as a fraction; < 0: none.
double margin_in(const std::string& reason) {
  const std::string tail = "% behind the leader";
  const std::size_t at = reason.find(tail);
  if (at == std::string::npos) return -1;
  std::size_t from = at;
  while (from > 0 && (std::isdigit(static_cast<unsigned char>(reason[from - 1])) || reason[from - 1] == '.')) --from;
  if (from == at) return -1;
  return std::strtod(reason.substr(from, at - from).c_str(), nullptr) / 100;
}

}  // namespace

double behind_the_leader(const nlohmann::json& variant) {
  if (variant.contains("behind_leader") && variant["behind_leader"].is_number())
    return variant["behind_leader"].get<double>();
  return margin_in(variant.value("reason", ""));
}

double slowdown_at_one_clock(const nlohmann::json& result, const std::string& id,
                             const std::map<std::string, double>& measured) {
  const auto mine = measured.find(id);
  if (mine == measured.end() || measured.empty()) return 0;
  double fastest = mine->second;
  for (const auto& [other, us] : measured) fastest = std::min(fastest, us);
  const double plain = mine->second / fastest;
  const std::vector<std::string> order = stage_order(result);
  if (order.size() < 2) return plain;
  auto depth = [&](const std::string& stage) {
    return static_cast<int>(std::find(order.begin(), order.end(), stage) - order.begin());
  };
  std::map<std::string, const nlohmann::json*> variant;
  int deepest = -1;
  for (const auto& v : result.at("variants")) {
    const std::string vid = v.value("id", "");
    if (!measured.count(vid) || !v.contains("search_stage")) continue;
    variant[vid] = &v;
    const int d = depth(v["search_stage"].get<std::string>());
    if (d < static_cast<int>(order.size())) deepest = std::max(deepest, d);
  }
  const auto it = variant.find(id);
  if (it == variant.end() || deepest < 0) return plain;
  const int d = depth((*it->second)["search_stage"].get<std::string>());
  if (d == deepest) {
    double best_finalist = mine->second;
    for (const auto& [vid, v] : variant)
      if (depth((*v)["search_stage"].get<std::string>()) == deepest)
        best_finalist = std::min(best_finalist, measured.at(vid));
    return mine->second / best_finalist;
  }
  const double margin = behind_the_leader(*it->second);
  return margin >= 0 ? 1 + margin : plain;
}

}  // namespace tiletune
