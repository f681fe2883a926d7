#include "core/gemm/grouped_rows.hpp"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/comma_list.hpp"
#include "core/errors.hpp"

namespace tiletune {

std::string_view to_string(group_layout l) { return l == group_layout::masked ? "masked" : "contiguous"; }

group_layout parse_group_layout(std::string_view text) {
  if (text == "contiguous") return group_layout::contiguous;
  if (text == "masked") return group_layout::masked;
  throw usage_error(fmt::format("--group-layout {} is unknown: use contiguous or masked", text));
}

std::string expert_routing::name() const { return zipf ? fmt::format("zipf:{}", exponent) : "uniform"; }

expert_routing parse_routing(std::string_view text) {
  if (text == "uniform") return {};
  if (text.starts_with("zipf:")) {
    const std::string s(text.substr(5));
    char* end = nullptr;
    const double e = std::strtod(s.c_str(), &end);
    // Digits, a point and an exponent only: strtod also reads spaces, signs and hexadecimal (0x1).
    const bool plain = !s.empty() && std::isdigit(static_cast<unsigned char>(s[0])) &&
                       s.find_first_not_of("0123456789.eE-+") == std::string::npos;
    if (plain && end == s.c_str() + s.size() && std::isfinite(e) && e > 0 && e <= 10) return {true, e};
  }
  throw usage_error(fmt::format("--routing {} is invalid: use uniform or zipf:S with 0 < S <= 10 (e.g. zipf:1.2)", text));
}

namespace {
// Expected rows per expert, each at most `cap`: shares in proportion to the weights, and the
// share capped experts cannot take goes to the rest in proportion (water-filling).
std::vector<double> capped_shares(const std::vector<double>& weight, double total, double cap) {
  std::vector<double> rows(weight.size(), 0.0);
  std::vector<bool> capped(weight.size(), false);
  for (;;) {
    double open_weight = 0, left = total;
    for (std::size_t i = 0; i < weight.size(); ++i) (capped[i] ? left -= cap : open_weight += weight[i]);
    bool changed = false;
    for (std::size_t i = 0; i < weight.size(); ++i) {
      if (capped[i]) continue;
      rows[i] = left * weight[i] / open_weight;
      if (rows[i] > cap) {
        capped[i] = changed = true;
        rows[i] = cap;
      }
    }
    if (!changed) return rows;
  }
}
}  // namespace

std::vector<std::int64_t> routed_rows(std::int64_t tokens, int top_k, int experts, const expert_routing& r) {
  if (experts < 1) throw usage_error(fmt::format("{} experts: at least 1", experts));
  if (top_k < 1 || top_k > experts)
    throw usage_error(fmt::format("--top-k {} is invalid: each token picks 1 to {} (the experts) distinct experts",
                                  top_k, experts));
  if (tokens < 1) throw usage_error(fmt::format("--tokens {} is invalid: at least 1", tokens));
  std::vector<double> weight(experts, 1.0);
  if (r.zipf)
    for (int i = 0; i < experts; ++i) weight[i] = 1.0 / std::pow(i + 1.0, r.exponent);
  const std::int64_t total = tokens * top_k;
  const auto share = capped_shares(weight, static_cast<double>(total), static_cast<double>(tokens));
  // Whole rows: the floors, then one more to the largest remainders (ties to the lower expert).
  std::vector<std::int64_t> rows(experts);
  std::int64_t given = 0;
  for (int i = 0; i < experts; ++i) given += rows[i] = static_cast<std::int64_t>(std::floor(share[i] + 1e-9));
  std::vector<int> order(experts);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return share[a] - static_cast<double>(rows[a]) > share[b] - static_cast<double>(rows[b]);
  });
  for (std::size_t j = 0; given < total; j = (j + 1) % order.size())
    if (rows[order[j]] < tokens) ++rows[order[j]], ++given;
  return rows;
}

std::vector<std::int64_t> parse_group_rows(std::string_view text) {
  std::vector<std::int64_t> rows;
  for (const std::string& item : split_commas(text)) {
    std::int64_t v = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 0)
      throw usage_error(fmt::format("--m-per-group {}: entry {} (\"{}\") is not a row count (0 or more)", text,
                                    rows.size() + 1, item));
    rows.push_back(v);
  }
  return rows;
}

}  // namespace tiletune
