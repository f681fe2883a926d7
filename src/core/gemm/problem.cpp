#include "core/gemm/problem.hpp"

#include <cmath>
#include <limits>

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

operand_types gemm_problem::elements() const {
  const dtype_row& r = row_of(type);
  return {r.a, r.b, r.c, r.accumulator};
}

double gemm_problem::flops() const {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
         static_cast<double>(batch);
}

std::int64_t gemm_problem::operand_bytes() const {
  const operand_types e = elements();
  return (m * k * element_bytes(e.a) + k * n * element_bytes(e.b) + m * n * element_bytes(e.c)) * batch;
}

std::int64_t gemm_problem::least_traffic_bytes() const {
  return operand_bytes() + (beta != 0.0 ? m * n * element_bytes(elements().c) * batch : 0);
}

std::int64_t gemm_problem::lda() const { return layout.a_transposed ? m : k; }
std::int64_t gemm_problem::ldb() const { return layout.b_transposed ? k : n; }

std::string gemm_problem::describe() const {
  std::string s = fmt::format("{}x{}x{}", m, n, k);
  if (batch != 1) s += fmt::format(" batch {}", batch);
  return s + fmt::format(" {} {}", to_string(type), layout.name());
}

void validate(const gemm_problem& p) {
  static constexpr std::int64_t max_dim = std::numeric_limits<std::int32_t>::max();
  auto positive = [](std::string_view flag, std::int64_t v) {
    if (v < 1) throw usage_error(fmt::format("--{} {} is invalid: it must be at least 1", flag, v));
    if (v > max_dim)
      throw usage_error(fmt::format("--{} {} is too large: at most {}", flag, v, max_dim));
  };
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
  if (!std::isfinite(p.alpha)) throw usage_error(fmt::format("--alpha {} is not finite", p.alpha));
  if (!std::isfinite(p.beta)) throw usage_error(fmt::format("--beta {} is not finite", p.beta));
  if (!allows(row_of(p.type), p.scaling)) {
    throw usage_error(fmt::format("scaling mode '{}' is not supported for dtype {}", to_string(p.scaling),
                                  to_string(p.type)));
  }
}

// The scaling mode is written only when there is one, so unscaled problems read as before.
nlohmann::json to_json(const gemm_problem& p) {
  nlohmann::json j = {{"m", p.m},         {"n", p.n},
          {"k", p.k},         {"batch", p.batch},
          {"dtype", to_string(p.type)}, {"layout", p.layout.name()},
          {"alpha", p.alpha}, {"beta", p.beta}};
  if (p.scaling != scaling_mode::none) j["scaling"] = to_string(p.scaling);
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
  if (j.contains("scaling")) p.scaling = parse_scaling_mode(j.at("scaling").get<std::string>());
  return p;
}

}  // namespace tiletune
