#include "core/compile/cubin_resources.hpp"

#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "core/tune/gemm_tuner.hpp"
#include "core/compile/kernel_templates.hpp"

using namespace tiletune;

namespace {

std::string read_test_cubin(const std::string& name) {
  std::ifstream in(std::string(TILETUNE_SOURCE_DIR) + "/tests/data/cubins/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const char* const all_cubins[] = {"plain_sm80", "plain_sm90", "local_sm90", "spill_sm90", "mma_sm90"};

}  // namespace

TEST(cubin_resources, figures_equal_the_ptxas_report) {
  for (const std::string name : all_cubins) {
    kernel_resources report;
    ASSERT_TRUE(parse_ptxas_report(read_test_cubin(name + ".ptxas.txt"), report)) << name;
    cubin_resources c;
    std::string error;
    ASSERT_TRUE(read_cubin_resources(read_test_cubin(name + ".cubin"), kernel_entry_name, c, error))
        << name << ": " << error;
    EXPECT_EQ(c.registers, report.registers) << name;
    EXPECT_EQ(c.static_smem_bytes, report.static_smem_bytes) << name;
    EXPECT_EQ(c.frame_bytes, report.stack_bytes) << name;
  }
}

TEST(cubin_resources, known_figures) {
  cubin_resources c;
  std::string error;
  ASSERT_TRUE(read_cubin_resources(read_test_cubin("spill_sm90.cubin"), kernel_entry_name, c, error)) << error;
  EXPECT_EQ(c.registers, 32);
  EXPECT_EQ(c.frame_bytes, 584);
  ASSERT_TRUE(read_cubin_resources(read_test_cubin("plain_sm90.cubin"), kernel_entry_name, c, error)) << error;
  EXPECT_EQ(c.static_smem_bytes, 1024);
  EXPECT_EQ(c.frame_bytes, 0);
}

TEST(cubin_resources, a_wrong_entry_name_or_a_non_elf_is_an_error_naming_it) {
  cubin_resources c;
  std::string error;
  EXPECT_FALSE(read_cubin_resources(read_test_cubin("plain_sm80.cubin"), "other_kernel", c, error));
  EXPECT_NE(error.find(".text.other_kernel"), std::string::npos) << error;
  EXPECT_FALSE(read_cubin_resources("cubin", kernel_entry_name, c, error));
  EXPECT_NE(error.find("not an ELF"), std::string::npos) << error;
  EXPECT_FALSE(read_cubin_resources("", kernel_entry_name, c, error));
}

TEST(cubin_resources, damaged_files_never_crash_the_reader) {
  // Every truncation and, at each position, a few byte values: an error or figures, nothing else.
  const std::string cubin = read_test_cubin("plain_sm90.cubin");
  cubin_resources c;
  std::string error;
  for (std::size_t n = 0; n < cubin.size(); ++n) read_cubin_resources(cubin.substr(0, n), kernel_entry_name, c, error);
  for (std::size_t i = 0; i < cubin.size(); ++i) {
    for (unsigned char v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::string damaged = cubin;
      damaged[i] = static_cast<char>(v);
      if (read_cubin_resources(damaged, kernel_entry_name, c, error)) {
        EXPECT_GE(c.registers, 0);
        EXPECT_GE(c.static_smem_bytes, 0);
      } else {
        EXPECT_FALSE(error.empty());
      }
    }
  }
}

TEST(complete_resources, a_cubin_without_a_report_gives_the_cubins_figures) {
  compiled_kernel k;
  k.ok = true;
  k.cubin = read_test_cubin("mma_sm90.cubin");
  complete_resources(k, kernel_entry_name);
  ASSERT_TRUE(k.ok) << k.log;
  EXPECT_FALSE(k.resources.from_ptxas_report);
  EXPECT_EQ(k.resources.registers, 241);
  EXPECT_EQ(k.resources.stack_bytes, 0);

  k.log = read_test_cubin("mma_sm90.ptxas.txt");
  complete_resources(k, kernel_entry_name);
  EXPECT_TRUE(k.resources.from_ptxas_report);
  EXPECT_EQ(k.resources.registers, 241);
}

TEST(complete_resources, an_unreadable_cubin_without_a_report_is_an_internal_failure) {
  compiled_kernel k;
  k.ok = true;
  k.cubin = "not a cubin";
  complete_resources(k, kernel_entry_name);
  EXPECT_FALSE(k.ok);
  EXPECT_TRUE(k.internal_failure);
  EXPECT_NE(k.log.find("no ptxas report"), std::string::npos) << k.log;
}

namespace {
// NVRTC as seen on a machine whose driver cache answered: a real cubin, an empty log.
class silent_compiler : public kernel_compiler {
 public:
  std::string local_id;
  compiled_kernel compile(const compile_job& job) override {
    compiled_kernel k;
    k.ok = true;
    k.cubin = read_test_cubin(job.name == local_id ? "local_sm90.cubin" : "mma_sm90.cubin");
    complete_resources(k, kernel_entry_name);
    return k;
  }
  std::string version() const override { return "silent 1"; }
};
}  // namespace

TEST(complete_resources, a_plan_from_cubins_without_reports_is_ok_and_rejects_local_memory) {
  gemm_problem p;
  p.m = p.n = p.k = 4096;
  p.type = dtype::bf16;
  p.layout = parse_layout("tt");
  silent_compiler c;
  c.local_id = "mma_128x128x32_w2x2_s3";
  plan_options o;
  o.jobs = 2;
  o.only = {"mma_256x128x32_w4x2_s4", c.local_id};
  const gemm_plan plan = plan_gemm(p, find_preset("h100-sxm"), c, o);
  int seen = 0;
  for (const auto& v : plan.variants) {
    if (v.config.id() == "mma_256x128x32_w4x2_s4") {
      ++seen;
      EXPECT_EQ(v.status, variant_status::ok) << v.reason;
      EXPECT_EQ(v.resources.registers, 241);
    } else if (v.config.id() == c.local_id) {
      ++seen;
      EXPECT_EQ(v.status, variant_status::resource_limit);
      EXPECT_EQ(v.constraint, "local_memory");
      EXPECT_NE(v.reason.find("256 bytes"), std::string::npos) << v.reason;
    }
  }
  EXPECT_EQ(seen, 2);
}
