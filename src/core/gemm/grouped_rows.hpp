#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tiletune {

// A grouped GEMM (mixture-of-experts): G problems that share N and K, group g with rows[g]
// rows of A and C. Contiguous: the groups' rows one after another, unpadded; masked: each
// group owns the same block of rows (the largest group's), its first rows[g] valid.
enum class group_layout { contiguous, masked };
std::string_view to_string(group_layout l);
group_layout parse_group_layout(std::string_view text);  // usage_error naming a bad value

// How a router spreads tokens over experts. uniform: every expert the same share; zipf:S:
// expert r (from 1) takes a share proportional to 1 / r^S, the skew measured routers show.
struct expert_routing {
  bool zipf = false;
  double exponent = 0;  // zipf's S
  std::string name() const;  // "uniform" or "zipf:1.2", what parse_routing reads back
};
expert_routing parse_routing(std::string_view text);  // usage_error naming a bad value

// The rows each of `experts` experts gets when `tokens` tokens each pick `top_k` distinct
// experts: the expected counts under the routing, as whole rows that sum to tokens x top_k,
// none above tokens (an expert sees a token at most once; a share past that goes to the
// others in proportion). Deterministic: the same arguments give the same rows.
std::vector<std::int64_t> routed_rows(std::int64_t tokens, int top_k, int experts, const expert_routing& r);

// Rows given one per group ("128,0,517"); usage_error naming the bad entry.
std::vector<std::int64_t> parse_group_rows(std::string_view text);

}  // namespace tiletune
