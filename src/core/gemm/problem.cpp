#include "core/gemm/problem.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"

namespace tiletune {

std::string layout::name() const {
  return std::string{a_transposed ? 't' : 'n'} + (b_transposed ? 't' : 'n');
}

layout parse_layout(std::string_view text) {
  auto letter = [&](char c) {
    if (c == 'n') return false;
    if (c == 't') return true;
    throw usage_error(
        fmt::format("unknown layout '{}': expected nn, nt, tn or tt (A then B; n = as stored, "
                    "t = transposed)",
                    text));
  };
  if (text.size() != 2) letter('?');
  return layout{letter(text[0]), letter(text[1])};
}

std::int64_t gemm_groups::valid_rows() const {
  std::int64_t sum = 0;
  for (int g = 0; g < count(); ++g) sum += valid(g);
  return sum;
}

int gemm_groups::computed() const {
  int n = 0;
  for (int g = 0; g < count(); ++g) n += valid(g) > 0;
  return n;
}

std::int64_t gemm_groups::m_tiles(std::int64_t bm) const {
  std::int64_t tiles = 0;
  for (int g = 0; g < count(); ++g) tiles += (valid(g) + bm - 1) / bm;
  return tiles;
}

std::int64_t gemm_groups::held_rows() const {
  return layout == group_layout::masked ? stride * count() : valid_rows();
}

std::string gemm_groups::distribution() const {
  if (routing != "given") return fmt::format("{} t{} k{}", routing, tokens, top_k);
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a of the rows as 8-byte words
  for (std::int64_t r : rows)
    for (int i = 0; i < 8; ++i) h = (h ^ ((static_cast<std::uint64_t>(r) >> (8 * i)) & 0xff)) * 1099511628211ull;
  return fmt::format("rows#{:08x}", static_cast<std::uint32_t>(h ^ (h >> 32)));
}

gemm_groups groups_of_rows(std::vector<std::int64_t> rows, group_layout l) {
  gemm_groups g;
  g.layout = l;
  if (l == group_layout::masked && !rows.empty()) g.stride = std::max<std::int64_t>(1, *std::max_element(rows.begin(), rows.end()));
  g.rows = std::move(rows);
  return g;
}

gemm_groups groups_of_routing(std::int64_t tokens, int top_k, int experts, const expert_routing& r, group_layout l) {
  gemm_groups g = groups_of_rows(routed_rows(tokens, top_k, experts, r), l);
  g.routing = r.name();
  g.tokens = tokens;
  g.top_k = top_k;
  return g;
}

std::optional<element_type> normal_output(dtype t, element_type out) {
  if (out == row_of(t).c) return std::nullopt;
  return out;
}

gemm_problem grouped_problem(gemm_groups g, std::int64_t n, std::int64_t k, dtype t, tiletune::layout l) {
  gemm_problem p;
  p.m = g.held_rows();
  p.n = n;
  p.k = k;
  p.type = t;
  p.scaling = default_scaling(t);
  p.layout = l;
  p.groups = std::move(g);
  return p;
}

operand_types gemm_problem::elements() const {
  const dtype_row& r = row_of(type);
  return {r.a, r.b, out.value_or(r.c), r.accumulator};
}

double gemm_problem::flops() const {
  return 2.0 * static_cast<double>(useful_rows()) * static_cast<double>(n) * static_cast<double>(k);
}

std::int64_t gemm_problem::operand_bytes() const {
  const operand_types e = elements();
  return a_elements() * element_bytes(e.a) + b_elements() * element_bytes(e.b) + c_elements() * element_bytes(e.c);
}

// Grouped: the valid rows of A and C only (a masked group's padding is neither read nor written),
// and the B of the groups with rows.
std::int64_t gemm_problem::least_traffic_bytes() const {
  const operand_types e = elements();
  const std::int64_t rows = useful_rows();
  return rows * k * element_bytes(e.a) + b_elements_read() * element_bytes(e.b) +
         rows * n * element_bytes(e.c) * (beta != 0.0 ? 2 : 1);
}

std::int64_t gemm_problem::lda() const { return layout.a_transposed ? m : k; }
std::int64_t gemm_problem::ldb() const { return layout.b_transposed ? k : n; }

std::string gemm_problem::describe() const {
  std::string s = fmt::format("{}x{}x{}", m, n, k);
  if (groups)
    s += fmt::format(" in {} group{} ({}, {})", groups->count(), groups->count() == 1 ? "" : "s",
                     groups->routing == "given" ? "rows given" : groups->distribution(), to_string(groups->layout));
  if (batch != 1) s += fmt::format(" batch {}", batch);
  s += fmt::format(" {} {}", to_string(type), layout.name());
  // A scaling other than the dtype's own (fp8's rowwise or block scales) is a different problem.
  if (scaling != default_scaling(type)) s += fmt::format(" {}-scaled", to_string(scaling));
  if (out && *out != row_of(type).c) s += fmt::format(", {} out", to_string(*out));
  // C = alpha * A * B + beta * C: other scalars than 1 and 0 are another problem (beta reads C).
  if (alpha != 1.0 || beta != 0.0) s += fmt::format(" alpha {} beta {}", alpha, beta);
  return s;
}

namespace {
constexpr int max_groups = 4096;

void validate_groups(const gemm_problem& p) {
  const gemm_groups& g = *p.groups;
  if (g.count() < 1 || g.count() > max_groups)
    throw usage_error(fmt::format("--groups {} is invalid: 1 to {} groups", g.count(), max_groups));
  if (p.batch != 1)
    throw usage_error(fmt::format("--batch {} with --groups: a grouped GEMM is one batch of groups", p.batch));
  if (p.layout.a_transposed)
    throw usage_error(fmt::format("--layout {} with --groups: a grouped GEMM's A is stored as its rows, token "
                                  "by token (layout nn or nt)",
                                  p.layout.name()));
  static constexpr std::int64_t most_rows = std::numeric_limits<std::int32_t>::max();
  for (int i = 0; i < g.count(); ++i)
    if (g.rows[i] < 0 || g.rows[i] > most_rows)
      throw usage_error(fmt::format("group {} has {} rows: 0 to {}", i, g.rows[i], most_rows));
  if (g.stride < 0 || g.stride > most_rows)
    throw usage_error(fmt::format("group stride {} is invalid: 0 to {}", g.stride, most_rows));
  if (g.valid_rows() < 1) throw usage_error("every group has 0 rows: nothing to compute");
  const std::int64_t most = *std::max_element(g.rows.begin(), g.rows.end());
  if (g.layout == group_layout::masked && g.stride < std::max<std::int64_t>(most, 1))
    throw usage_error(fmt::format("masked groups of stride {} cannot hold a group of {} rows", g.stride, most));
  if (g.layout == group_layout::contiguous && g.stride != 0)
    throw usage_error(fmt::format("contiguous groups have no stride, not {}", g.stride));
  if (p.m != g.held_rows())
    throw usage_error(fmt::format("m {} is not the {} rows the groups hold", p.m, g.held_rows()));
}
}  // namespace

void validate(const gemm_problem& p) {
  static constexpr std::int64_t max_dim = std::numeric_limits<std::int32_t>::max();
  auto positive = [](std::string_view flag, std::int64_t v) {
    if (v < 1) throw usage_error(fmt::format("--{} {} is invalid: it must be at least 1", flag, v));
    if (v > max_dim)
      throw usage_error(fmt::format("--{} {} is too large: at most {}", flag, v, max_dim));
  };
  if (p.groups) validate_groups(p);  // first: a grouped problem's m comes from its groups
  positive("m", p.m);
  positive("n", p.n);
  positive("k", p.k);
  positive("batch", p.batch);
  if (p.batch > 65535) {
    throw usage_error(fmt::format("--batch {} is too large: at most 65535", p.batch));
  }
  // Each matrix is indexed with 32-bit offsets inside one batch entry.
  auto elements = [&](std::string_view what, std::int64_t rows, std::int64_t cols) {
    if (rows > max_dim / cols) {
      throw usage_error(fmt::format("{} of {}x{} has more than 2^31-1 elements ({}x{}x{}): "
                                    "not supported",
                                    what, rows, cols, p.m, p.n, p.k));
    }
  };
  elements("A", p.m, p.k);
  elements("B", p.k, p.n);
  elements("C", p.m, p.n);
  // The kernels take alpha and beta as 32-bit floats: past FLT_MAX they are infinite, and a value
  // below the smallest float that is not 0 is 0 (alpha 1e-50 would compute C = beta C).
  for (const auto& [flag, v] : {std::pair{"alpha", p.alpha}, std::pair{"beta", p.beta}}) {
    if (!std::isfinite(v)) throw usage_error(fmt::format("--{} {} is not finite", flag, v));
    if (std::fabs(v) > FLT_MAX)
      throw usage_error(fmt::format("--{} {} is past a float's range (the kernel takes it as a 32-bit float)", flag, v));
    if (v != 0 && std::fabs(v) < std::numeric_limits<float>::denorm_min())
      throw usage_error(fmt::format("--{} {} is 0 as a 32-bit float, which the kernel takes it as", flag, v));
  }
  if (p.out && *p.out != row_of(p.type).c) {
    const auto outs = other_outputs(p.type);
    if (std::find(outs.begin(), outs.end(), *p.out) == outs.end()) {
      std::string allowed;
      for (element_type e : outs) allowed += fmt::format("{}{}", allowed.empty() ? "" : ", ", to_string(e));
      throw usage_error(fmt::format("--out-dtype {} is not offered for dtype {} ({})", to_string(*p.out),
                                    to_string(p.type),
                                    allowed.empty() ? fmt::format("its C is {}", to_string(row_of(p.type).c))
                                                    : "it takes: " + allowed));
    }
  }
  if (!allows(row_of(p.type), p.scaling)) {
    std::string allowed;
    for (scaling_mode s : row_of(p.type).scalings) allowed += fmt::format("{}{}", allowed.empty() ? "" : ", ", to_string(s));
    throw usage_error(fmt::format("scaling mode '{}' is not supported for dtype {} (it takes: {})", to_string(p.scaling),
                                  to_string(p.type), allowed));
  }
}

// The scaling mode is written only when there is one, so unscaled problems read as before.
nlohmann::json to_json(const gemm_problem& p) {
  nlohmann::json j = {{"m", p.m},         {"n", p.n},
          {"k", p.k},         {"batch", p.batch},
          {"dtype", to_string(p.type)}, {"layout", p.layout.name()},
          {"alpha", p.alpha}, {"beta", p.beta}};
  if (p.scaling != scaling_mode::none) j["scaling"] = to_string(p.scaling);
  if (p.out && *p.out != row_of(p.type).c) j["out_dtype"] = to_string(*p.out);
  if (p.groups) {
    const gemm_groups& g = *p.groups;
    nlohmann::json& out = j["groups"] = {{"count", g.count()}, {"rows", g.rows},
                                         {"layout", to_string(g.layout)}, {"routing", g.routing}};
    if (g.layout == group_layout::masked) out["stride"] = g.stride;
    if (g.routing != "given") {
      out["tokens"] = g.tokens;
      out["top_k"] = g.top_k;
    }
  }
  return j;
}

gemm_problem gemm_problem_from_json(const nlohmann::json& j) {
  gemm_problem p;
  p.m = j.at("m").get<std::int64_t>();
  p.n = j.at("n").get<std::int64_t>();
  p.k = j.at("k").get<std::int64_t>();
  p.batch = j.value("batch", std::int64_t{1});
  p.type = parse_dtype(j.at("dtype").get<std::string>());
  p.layout = parse_layout(j.value("layout", std::string{"nn"}));
  p.alpha = j.value("alpha", 1.0);
  p.beta = j.value("beta", 0.0);
  // Absent: the dtype's own (none, or tensor for fp8), as problems written before fp8 read.
  p.scaling = j.contains("scaling") ? parse_scaling_mode(j.at("scaling").get<std::string>()) : default_scaling(p.type);
  if (j.contains("out_dtype")) p.out = normal_output(p.type, parse_output_type(j.at("out_dtype").get<std::string>()));
  if (j.contains("groups")) {
    const nlohmann::json& in = j.at("groups");
    gemm_groups g;
    g.rows = in.at("rows").get<std::vector<std::int64_t>>();
    g.layout = parse_group_layout(in.value("layout", std::string{"contiguous"}));
    g.stride = in.value("stride", std::int64_t{0});
    g.routing = in.value("routing", std::string{"given"});
    g.tokens = in.value("tokens", std::int64_t{0});
    g.top_k = in.value("top_k", 0);
    p.groups = std::move(g);
    validate(p);  // rows and stride bound every sum and tile count computed from them
  }
  return p;
}

}  // namespace tiletune
