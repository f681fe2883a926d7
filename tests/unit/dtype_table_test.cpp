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
const std::map<std::string, int> stored_bytes{{"f32", 4}, {"tf32", 4}, {"f16", 2}, {"bf16", 2}};

std::string usage_message(const gemm_problem& p) {
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
    ASSERT_TRUE(stored_bytes.count(std::string(e.name))) << e.name << " has no expected size here";
    EXPECT_EQ(e.bytes, stored_bytes.at(std::string(e.name))) << e.name;
  }
  for (const dtype_row& r : dtype_table()) {
    gemm_problem p;
    p.m = 2, p.n = 3, p.k = 5, p.batch = 7, p.type = r.type;
    const auto bytes = [](element_type e) { return stored_bytes.at(std::string(to_string(e))); };
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
    EXPECT_EQ(m.bytes.size(), 257u * static_cast<std::size_t>(stored_bytes.at(std::string(e.name)))) << e.name;
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
    for (scaling_mode s : {scaling_mode::none, scaling_mode::per_tensor, scaling_mode::block}) {
      gemm_problem p;
      p.m = p.n = p.k = 64;
      p.type = r.type;
      p.scaling = s;
      const std::string message = usage_message(p);
      if (allows(r, s)) {
        EXPECT_EQ(message, "") << r.name << " " << to_string(s);
      } else {
        EXPECT_NE(message.find(fmt::format("'{}'", to_string(s))), std::string::npos) << message;
        EXPECT_NE(message.find(r.name), std::string::npos) << message;
      }
    }
    EXPECT_TRUE(allows(r, scaling_mode::none)) << r.name;  // today's rows are all unscaled
    EXPECT_FALSE(allows(r, scaling_mode::block)) << r.name;
  }
}

TEST(dtype_table, json_omits_no_scaling_reads_one_and_names_an_unknown_one) {
  gemm_problem p;
  p.m = p.n = p.k = 64;
  nlohmann::json j = to_json(p);
  EXPECT_FALSE(j.contains("scaling"));
  EXPECT_EQ(gemm_problem_from_json(j).scaling, scaling_mode::none);
  j["scaling"] = "per_tensor";
  EXPECT_EQ(gemm_problem_from_json(j).scaling, scaling_mode::per_tensor);
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
