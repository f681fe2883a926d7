// Every dtype row is read by every consumer: a row added to the table without
// what a consumer needs fails here, not on a GPU.
#include "core/gemm/dtype_table.hpp"

#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/compile/kernel_templates.hpp"
#include "core/device/device_spec.hpp"
#include "core/errors.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/problem.hpp"
#include "core/measure/host_data.hpp"
#include "core/measure/measurement.hpp"

using namespace tiletune;

namespace {
// Written here, not read from the table, so that a wrong byte count there fails.
const std::map<std::string, int> stored_bytes_of{{"f32", 4},  {"tf32", 4}, {"f16", 2},
                                              {"bf16", 2}, {"e4m3", 1}, {"e5m2", 1}};

std::string dtype_usage_message(const gemm_problem& p) {
  try {
    validate(p);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

TEST(dtype_table, every_row_parses_back_and_is_named_once) {
  std::set<std::string_view> names;
  for (const dtype_row& r : dtype_table()) {
    EXPECT_EQ(parse_dtype(r.name), r.type) << r.name;
    EXPECT_EQ(to_string(r.type), r.name);
    EXPECT_EQ(&row_of(r.type), &r) << r.name;
    EXPECT_TRUE(names.insert(r.name).second) << r.name << " twice";
    EXPECT_NE(dtype_names(" | ").find(r.name), std::string::npos) << r.name;
  }
}

TEST(dtype_table, element_bytes_are_the_stored_sizes) {
  for (const element_info& e : element_table()) {
    ASSERT_TRUE(stored_bytes_of.count(std::string(e.name))) << e.name << " has no expected size here";
    EXPECT_EQ(e.bytes, stored_bytes_of.at(std::string(e.name))) << e.name;
  }
  for (const dtype_row& r : dtype_table()) {
    gemm_problem p;
    p.m = 2, p.n = 3, p.k = 5, p.batch = 7, p.type = r.type;
    const auto bytes = [](element_type e) { return stored_bytes_of.at(std::string(to_string(e))); };
    EXPECT_EQ(p.operand_bytes(), 7 * (2 * 5 * bytes(r.a) + 5 * 3 * bytes(r.b) + 2 * 3 * bytes(r.c))) << r.name;
  }
}

TEST(dtype_table, every_template_code_is_the_one_the_kernel_templates_define) {
  const std::string common(template_text("common/gemm_common.cuh"));
  std::set<int> codes;
  for (const dtype_row& r : dtype_table()) {
    EXPECT_NE(common.find(fmt::format("#define TT_{} {}\n", upper(r.name), r.template_code)), std::string::npos)
        << r.name << " code " << r.template_code;
    EXPECT_TRUE(codes.insert(r.template_code).second) << r.name;
  }
}

TEST(dtype_table, host_data_stores_and_reads_back_every_element_type) {
  for (const element_info& e : element_table()) {
    const host_matrix m = random_matrix(e.type, 257, 3);
    EXPECT_EQ(m.bytes.size(), 257u * static_cast<std::size_t>(stored_bytes_of.at(std::string(e.name)))) << e.name;
    EXPECT_EQ(to_floats(e.type, m.bytes.data(), 257), m.values) << e.name;
    const auto exact = compare_stored_output(e.type, m.bytes.data(), m.values.data(), 257,
                                             summarize_reference(m.values.data(), 257), 2);
    EXPECT_EQ(exact.rel_frobenius, 0.0) << e.name;
    EXPECT_FALSE(element_c_type(e.type).empty()) << e.name;
    EXPECT_EQ(e.cuda_data_type.substr(0, 7), "CUDA_R_") << e.name;
  }
}

TEST(dtype_table, every_row_has_an_error_bound_a_peak_and_a_library_compute_type) {
  const device_spec& h100 = find_preset("h100-sxm");
  for (const dtype_row& r : dtype_table()) {
    EXPECT_TRUE(r.error_bound > 0 && r.error_bound < 0.1) << r.name;
    EXPECT_EQ(error_bound(r.type), r.error_bound) << r.name;
    error_metrics just_over;
    just_over.rel_frobenius = r.error_bound * 1.01;
    EXPECT_FALSE(passes(just_over, r.type)) << r.name;
    EXPECT_GT(h100.peak_tflops(r.type), 0) << r.name;
    EXPECT_EQ(r.cublas_compute.substr(0, 15), "CUBLAS_COMPUTE_") << r.name;
    EXPECT_FALSE(r.scalings.empty()) << r.name;
  }
}

TEST(dtype_table, validate_refuses_a_scaling_mode_the_row_does_not_allow) {
  for (const dtype_row& r : dtype_table()) {
    for (scaling_mode s : {scaling_mode::none, scaling_mode::tensor, scaling_mode::rowwise, scaling_mode::block}) {
      gemm_problem p;
      p.m = p.n = p.k = 64;
      p.type = r.type;
      p.scaling = s;
      const std::string message = dtype_usage_message(p);
      if (allows(r, s)) {
        EXPECT_EQ(message, "") << r.name << " " << to_string(s);
      } else {
        EXPECT_NE(message.find(fmt::format("'{}'", to_string(s))), std::string::npos) << message;
        EXPECT_NE(message.find(r.name), std::string::npos) << message;
      }
    }
    // fp8 is scaled (per tensor today), every other row unscaled; each row's default it allows.
    EXPECT_EQ(allows(r, scaling_mode::none), !is_fp8(r.type)) << r.name;
    EXPECT_EQ(allows(r, scaling_mode::tensor), is_fp8(r.type)) << r.name;
    EXPECT_TRUE(allows(r, default_scaling(r.type))) << r.name;
  }
}

TEST(dtype_table, json_omits_no_scaling_reads_one_and_names_an_unknown_one) {
  gemm_problem p;
  p.m = p.n = p.k = 64;
  nlohmann::json j = to_json(p);
  EXPECT_FALSE(j.contains("scaling"));
  EXPECT_EQ(gemm_problem_from_json(j).scaling, scaling_mode::none);
  j["scaling"] = "tensor";
  EXPECT_EQ(gemm_problem_from_json(j).scaling, scaling_mode::tensor);
  // An fp8 problem with no scaling named reads as its dtype's default, and writes it.
  nlohmann::json fp8 = to_json(p);
  fp8["dtype"] = "e4m3";
  EXPECT_EQ(gemm_problem_from_json(fp8).scaling, scaling_mode::tensor);
  EXPECT_EQ(to_json(gemm_problem_from_json(fp8)).at("scaling"), "tensor");
  p.scaling = scaling_mode::block;
  EXPECT_EQ(to_json(p).at("scaling"), "block");
  j["scaling"] = "per_row";
  try {
    gemm_problem_from_json(j);
    FAIL() << "per_row was read";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("'per_row'"), std::string::npos) << e.what();
  }
}

// The OCP fp8 formats, value by value from their definitions (not from the codec under test).
TEST(dtype_table, fp8_codes_decode_as_the_formats_define_them) {
  const element_type e4 = element_type::e4m3, e5 = element_type::e5m2;
  EXPECT_EQ(fp8_bits_to_float(e4, 0x7e), 448.0f);       // S.1111.110: the largest
  EXPECT_TRUE(std::isnan(fp8_bits_to_float(e4, 0x7f)));  // S.1111.111: the only NaN
  EXPECT_TRUE(std::isnan(fp8_bits_to_float(e4, 0xff)));
  EXPECT_EQ(fp8_bits_to_float(e4, 0x78), 256.0f);       // S.1111.000 is finite: no infinity
  EXPECT_EQ(fp8_bits_to_float(e4, 0x38), 1.0f);         // exponent 7 = bias
  EXPECT_EQ(fp8_bits_to_float(e4, 0x08), 1.0f / 64);    // the smallest normal, 2^-6
  EXPECT_EQ(fp8_bits_to_float(e4, 0x01), 1.0f / 512);   // the smallest subnormal, 2^-9
  EXPECT_EQ(fp8_bits_to_float(e4, 0xb9), -1.125f);
  EXPECT_EQ(fp8_bits_to_float(e5, 0x7b), 57344.0f);     // S.11110.11: the largest
  EXPECT_EQ(fp8_bits_to_float(e5, 0x7c), INFINITY);
  EXPECT_EQ(fp8_bits_to_float(e5, 0xfc), -INFINITY);
  EXPECT_TRUE(std::isnan(fp8_bits_to_float(e5, 0x7d)));
  EXPECT_EQ(fp8_bits_to_float(e5, 0x3c), 1.0f);
  EXPECT_EQ(fp8_bits_to_float(e5, 0x01), std::ldexp(1.0f, -16));
  // Every code: the encoder gives it back (NaNs aside: one NaN each, and -0 stays -0).
  for (element_type e : {e4, e5})
    for (int b = 0; b < 256; ++b) {
      const float v = fp8_bits_to_float(e, static_cast<std::uint8_t>(b));
      if (std::isnan(v) || std::isinf(v)) continue;
      EXPECT_EQ(float_to_fp8_bits(e, v), b) << to_string(e) << " code " << b;
    }
  // Rounding: to nearest, ties to even, saturating; NaN stays NaN.
  EXPECT_EQ(fp8_bits_to_float(e4, float_to_fp8_bits(e4, 1.0625f)), 1.0f);    // tie: even mantissa 000
  EXPECT_EQ(fp8_bits_to_float(e4, float_to_fp8_bits(e4, 1.1875f)), 1.25f);   // tie: even mantissa 010
  EXPECT_EQ(fp8_bits_to_float(e4, float_to_fp8_bits(e4, 1.07f)), 1.125f);
  EXPECT_EQ(fp8_bits_to_float(e4, float_to_fp8_bits(e4, 1e6f)), 448.0f);
  EXPECT_EQ(fp8_bits_to_float(e4, float_to_fp8_bits(e4, -INFINITY)), -448.0f);
  EXPECT_EQ(fp8_bits_to_float(e5, float_to_fp8_bits(e5, 1e6f)), 57344.0f);
  EXPECT_TRUE(std::isnan(fp8_bits_to_float(e4, float_to_fp8_bits(e4, NAN))));
  EXPECT_TRUE(std::isnan(fp8_bits_to_float(e5, float_to_fp8_bits(e5, NAN))));
}

// fp8's scales as the verification reference folds them into exact bf16 copies
// (host_data: random_scales, scaled_values), element by element from their layouts: rowwise
// scale_a[m] and scale_b[n] (a grouped problem's B: scale_b[g][n], each group its own), block
// scale_a[kb][m] and scale_b[kb][n / 128].
TEST(dtype_table, fp8_scales_fold_into_each_element_by_their_layouts) {
  auto problem = [](scaling_mode s) {
    gemm_problem p;
    p.m = 5, p.n = 130, p.k = 260;
    p.type = dtype::e4m3;
    p.layout = parse_layout("nt");
    p.scaling = s;
    return p;
  };
  auto check = [](const gemm_problem& p, char operand, std::int64_t matrices, auto scale_of) {
    const problem_scales s = random_scales(p, 7);
    const std::int64_t rows = operand == 'a' ? p.m : p.n;
    std::vector<float> ones(static_cast<std::size_t>(matrices * rows * p.k), 1.0f);
    const std::vector<float> got = scaled_values(p, operand, ones, s);
    int wrong = 0;
    for (std::int64_t g = 0; g < matrices; ++g)
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t k = 0; k < p.k; ++k)
          wrong += got[static_cast<std::size_t>((g * rows + r) * p.k + k)] != scale_of(s, g, r, k);
    EXPECT_EQ(wrong, 0) << operand << " " << p.describe();
  };
  const gemm_problem rowwise = problem(scaling_mode::rowwise);
  EXPECT_EQ(random_scales(rowwise, 7).b.size(), 130u);
  check(rowwise, 'a', 1, [](const problem_scales& s, std::int64_t, std::int64_t r, std::int64_t) { return s.a[r]; });
  check(rowwise, 'b', 1, [](const problem_scales& s, std::int64_t, std::int64_t r, std::int64_t) { return s.b[r]; });
  const gemm_problem block = problem(scaling_mode::block);
  EXPECT_EQ(random_scales(block, 7).a.size(), 3u * 5);  // ceil(260 / 128) k-blocks
  EXPECT_EQ(random_scales(block, 7).b.size(), 3u * 2);  // x ceil(130 / 128) column blocks
  check(block, 'a', 1,
        [](const problem_scales& s, std::int64_t, std::int64_t r, std::int64_t k) { return s.a[k / 128 * 5 + r]; });
  check(block, 'b', 1, [](const problem_scales& s, std::int64_t, std::int64_t r, std::int64_t k) {
    return s.b[k / 128 * 2 + r / 128];
  });
  gemm_problem grouped = grouped_problem(groups_of_rows({3, 0, 2}, group_layout::contiguous), 130, 260, dtype::e4m3,
                                         parse_layout("nt"));
  grouped.scaling = scaling_mode::rowwise;
  const problem_scales gs = random_scales(grouped, 7);
  EXPECT_EQ(gs.a.size(), 5u);        // every row A holds
  EXPECT_EQ(gs.b.size(), 3u * 130);  // each group's B its own
  check(grouped, 'a', 1, [](const problem_scales& s, std::int64_t, std::int64_t r, std::int64_t) { return s.a[r]; });
  check(grouped, 'b', 3,
        [](const problem_scales& s, std::int64_t g, std::int64_t r, std::int64_t) { return s.b[g * 130 + r]; });
}

// The same scales in every layout: an MN-major operand (A stored K x M under 't', B K x N under
// 'n') holds element (row, k) at k * rows + row (the mma family's fp8 _kc copies verify so).
TEST(dtype_table, fp8_scales_fold_in_every_layout) {
  for (const char* name : {"nt", "nn", "tn", "tt"})
    for (const scaling_mode mode : {scaling_mode::rowwise, scaling_mode::block}) {
      gemm_problem p;
      p.m = 5, p.n = 130, p.k = 260;
      p.type = dtype::e4m3;
      p.layout = parse_layout(name);
      p.scaling = mode;
      const problem_scales s = random_scales(p, 11);
      for (const char operand : {'a', 'b'}) {
        const bool is_a = operand == 'a';
        const std::int64_t rows = is_a ? p.m : p.n;
        const bool k_major = is_a ? !p.layout.a_transposed : p.layout.b_transposed;
        std::vector<float> ones(static_cast<std::size_t>(rows * p.k), 1.0f);
        const std::vector<float> got = scaled_values(p, operand, ones, s);
        int wrong = 0;
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t k = 0; k < p.k; ++k) {
            const float want = mode == scaling_mode::rowwise ? (is_a ? s.a[r] : s.b[r])
                               : is_a                        ? s.a[k / 128 * 5 + r]
                                                             : s.b[k / 128 * 2 + r / 128];
            wrong += got[static_cast<std::size_t>(k_major ? r * p.k + k : k * rows + r)] != want;
          }
        EXPECT_EQ(wrong, 0) << operand << " " << p.describe();
      }
    }
}

// A grouped problem's block scales: scale_b[g][kb][n / 128], each group's B its own.
TEST(dtype_table, grouped_block_scales_fold_per_group) {
  gemm_problem p = grouped_problem(groups_of_rows({3, 0, 2}, group_layout::contiguous), 130, 260, dtype::e4m3,
                                   parse_layout("nt"));
  p.scaling = scaling_mode::block;
  const problem_scales s = random_scales(p, 9);
  ASSERT_EQ(s.a.size(), 3u * 5);      // 3 k-blocks x every row A holds
  ASSERT_EQ(s.b.size(), 3u * 3 * 2);  // 3 groups x 3 k-blocks x 2 column blocks
  std::vector<float> ones(static_cast<std::size_t>(3 * 130 * 260), 1.0f);
  const std::vector<float> got = scaled_values(p, 'b', ones, s);
  int wrong = 0;
  for (int g = 0; g < 3; ++g)
    for (int n = 0; n < 130; ++n)
      for (int k = 0; k < 260; ++k)
        wrong += got[static_cast<std::size_t>((g * 130 + n) * 260 + k)] !=
                 s.b[static_cast<std::size_t>((g * 3 + k / 128) * 2 + n / 128)];
  EXPECT_EQ(wrong, 0);
}
