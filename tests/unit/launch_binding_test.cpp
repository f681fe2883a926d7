// The measuring worker launches every family the same way: it binds the
// parameters a family's describe_launch lists (bind_arguments). That holds only
// if the list is the kernel's signature, so this test reads the signature of
// every family's rendered source and holds each description to it: same names
// in the same order, pointers where the kernel takes pointers, tensor maps where
// it takes tensor maps, and scalars of the C type the kernel declares (the
// binding writes that many bytes).
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "core/compile/kernel_templates.hpp"
#include "core/device/device_spec.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/family.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/search_space.hpp"

namespace tiletune {
namespace {

struct declared {
  std::string name;
  std::string kind;    // "pointer" | "tensor_map" | "scalar"
  std::string scalar;  // a scalar's C type: "int", "long long", "float", ...
};

// A parameter list with its `#if MACRO` ... `#endif` lines resolved as the rendered source
// defines the macro (`#define MACRO 1` present or not), as the preprocessor would.
std::string resolve_conditionals(const std::string& list, const std::string& source) {
  static const std::regex leading("^\\s+"), trailing("\\s+$");  // built once (each build is costly)
  std::string out, line;
  std::vector<bool> active{true};
  std::istringstream in(list);
  while (std::getline(in, line)) {
    const std::string trimmed = std::regex_replace(line, leading, "");
    if (trimmed.rfind("#if ", 0) == 0) {
      const std::string macro = std::regex_replace(trimmed.substr(4), trailing, "");
      active.push_back(active.back() && source.find("#define " + macro + " 1") != std::string::npos);
    } else if (trimmed.rfind("#endif", 0) == 0) {
      active.pop_back();
    } else if (active.back()) {
      out += line + "\n";
    }
  }
  return out;
}

// The parameters of `extern "C" ... tiletune_gemm(...)` (or another entry's) in a rendered source.
std::vector<declared> signature(const std::string& source, const std::string& name = kernel_entry_name) {
  const std::size_t entry = source.find(name + "(");
  EXPECT_NE(entry, std::string::npos);
  const std::size_t open = source.find('(', entry), close = source.find(')', open);
  std::string list = resolve_conditionals(source.substr(open + 1, close - open - 1), source);
  static const std::regex spaces("\\s+"), ends("^ | $"), qualifiers("const |__restrict__|__grid_constant__ "),
      padding("^ +| +$");
  std::vector<declared> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    std::string p = std::regex_replace(list.substr(at, comma - at), spaces, " ");
    p = std::regex_replace(p, ends, "");
    at = comma + 1;
    if (p.empty()) continue;
    const std::size_t name_at = p.find_last_of(" *");
    declared d;
    d.name = p.substr(name_at + 1);
    std::string type = p.substr(0, name_at + 1);
    type = std::regex_replace(std::regex_replace(type, qualifiers, ""), padding, "");
    if (type.find('*') != std::string::npos)
      d.kind = "pointer";
    else if (type.find("tensor_map") != std::string::npos || type.find("CUtensorMap") != std::string::npos)
      d.kind = "tensor_map";
    else
      d.kind = "scalar", d.scalar = type;
    out.push_back(d);
  }
  return out;
}

// Every problem-shaped difference the launch may depend on: odd sizes, a batch, beta.
gemm_problem binding_odd_problem(dtype t) {
  gemm_problem p;
  p.m = 1000;
  p.n = 776;
  p.k = 520;
  p.batch = 3;
  p.beta = 0.5;
  p.type = t;
  p.layout = parse_layout("nt");
  return p;
}

void expect_matches(const kernel_launch& l, const std::vector<declared>& sig, const std::string& what) {
  ASSERT_EQ(l.parameters.size(), sig.size()) << what;
  for (std::size_t i = 0; i < sig.size(); ++i) {
    const kernel_parameter& k = l.parameters[i];
    EXPECT_EQ(k.name, sig[i].name) << what << ", parameter " << i;
    EXPECT_EQ(k.kind, sig[i].kind) << what << ", " << k.name;
    if (sig[i].kind == "scalar") {
      EXPECT_EQ(k.c_type, sig[i].scalar) << what << ", " << k.name;
    }
  }
  EXPECT_NO_THROW(bind_arguments(l)) << what;
}

TEST(launch_binding, every_family_describes_its_kernels_signature) {
  const device_spec& d = find_preset("h100-sxm");
  int checked = 0, served = 0;
  for (const gemm_family* f : all_families()) {
    for (dtype t : {dtype::f32, dtype::tf32, dtype::f16, dtype::bf16}) {
      if (!f->serves(t)) continue;
      ++served;
      const gemm_problem p = binding_odd_problem(t);
      for (tile_config c : f->problem_space(p, d)) {
        if (check_constraints(c, p, d)) continue;
        const std::string what = c.id() + " " + std::string(to_string(t));
        expect_matches(f->describe_launch(c, p, d), signature(render_kernel_source(c, t, p.layout)), what);
        EXPECT_EQ(scratch_bytes(f->describe_launch(c, p, d)), f->scratch_bytes(c, p, d)) << what;
        ++checked;
        break;  // one variant per family, dtype and split: the signature is the template's
      }
    }
  }
  EXPECT_EQ(checked, served);  // every family on every dtype it serves
  EXPECT_GE(checked, 7);
}

// A stream-K wgmma variant takes one more parameter, the fixup's workspace (behind #if
// TT_STREAM_K in the template): its description has it, and the rendered signature too.
TEST(launch_binding, a_stream_k_variant_describes_its_workspace_parameter) {
  const device_spec& d = find_preset("h100-sxm");
  gemm_problem p = binding_odd_problem(dtype::bf16);
  p.m = 16;
  p.k = 8192;
  int checked = 0;
  for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d)) {
    if (!wgmma_stream_k(c) || check_constraints(c, p, d)) continue;
    const kernel_launch l = c.family->describe_launch(c, p, d);
    expect_matches(l, signature(render_kernel_source(c, p.type, p.layout)), c.id());
    // The last parameter, or the one before the TMA store's map of C.
    const kernel_parameter& w = l.parameters[l.parameters.size() - (wgmma_tma_store(c) ? 2 : 1)];
    EXPECT_EQ(w.name, "workspace") << c.id();
    EXPECT_GT(w.buffer_bytes, 0) << c.id();
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// K-major copies (_kc): the GEMM's description and each prologue kernel's match their signatures
// in the one rendered source, and every copy a map reads is one a prologue writes.
TEST(launch_binding, a_prologue_kernel_is_described_as_its_signature_says) {
  const device_spec& d = find_preset("h100-sxm");
  int checked = 0;
  for (dtype t : {dtype::tf32, dtype::e4m3}) {
    gemm_problem p = binding_odd_problem(t);
    p.layout = parse_layout("tn");
    for (const tile_config& c : problem_search_space(family_named("wgmma"), p, d)) {
      if (check_constraints(c, p, d)) continue;
      ASSERT_TRUE(wgmma_k_major_copies(c)) << c.id();
      const std::string source = render_kernel_source(c, t, p.layout);
      const kernel_launch l = c.family->describe_launch(c, p, d);
      expect_matches(l, signature(source), c.id());
      ASSERT_EQ(l.prologue.size(), 2u) << c.id();
      std::set<std::string> written;
      for (const kernel_launch& k : l.prologue) {
        // One kernel serves either operand: its src and dst are described as the operand and its
        // copy (what the worker binds), the rest by their own names.
        std::vector<declared> sig = signature(source, k.entry);
        ASSERT_GE(sig.size(), 2u);
        EXPECT_EQ(sig[0].name, "src");
        EXPECT_EQ(sig[1].name, "dst");
        const std::string operand = k.parameters.at(0).name;
        sig[0].name = operand;
        sig[1].name = operand + "_k_major";
        expect_matches(k, sig, c.id() + " " + k.entry);
        written.insert(k.parameters.at(1).name);
      }
      for (const tensor_map_description& m : l.tensor_maps) {
        if (m.tensor.size() > 1) {
          EXPECT_TRUE(written.count(m.tensor)) << c.id() << " maps " << m.tensor;
        }
      }
      EXPECT_EQ(written.size(), 2u);
      EXPECT_EQ(scratch_bytes(l), c.family->scratch_bytes(c, p, d)) << c.id();
      ++checked;
    }
  }
  EXPECT_GT(checked, 10);
}

// fp8 with rowwise scales on Ada (the mma family's _rw): scale_a and scale_b after split-K's
// buffers (behind #if TT_SCALING), with and without split-K and K-major copies.
TEST(launch_binding, an_mma_variant_with_rowwise_scales_describes_them) {
  const device_spec& d = find_preset("l40s");
  int checked = 0;
  for (const char* l : {"nt", "tn"}) {
    gemm_problem p = binding_odd_problem(dtype::e4m3);
    p.layout = parse_layout(l);
    p.scaling = scaling_mode::rowwise;
    p.m = 16;  // split-K variants join the space
    p.k = 8192;
    std::set<int> splits;
    for (const tile_config& c : problem_search_space(family_named("mma"), p, d)) {
      if (check_constraints(c, p, d) || !splits.insert(c.split_k > 1).second) continue;
      const kernel_launch launch = c.family->describe_launch(c, p, d);
      // On K-major copies (tn) the kernel's A and B are described as the copies the worker binds.
      std::vector<declared> sig = signature(render_kernel_source(c, p.type, p.layout));
      for (std::size_t i = 0; i < std::min(sig.size(), launch.parameters.size()); ++i)
        if (launch.parameters[i].name == sig[i].name + "_k_major") sig[i].name = launch.parameters[i].name;
      expect_matches(launch, sig, c.id());
      EXPECT_EQ(launch.parameters.back().name, "scale_b") << c.id();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4);
}

// Scratch buffers: every variant of a problem space asks the worker for the
// bytes its family's scratch_bytes (the JSON's workspace_bytes) reports.
TEST(launch_binding, scratch_buffers_are_what_the_family_reports) {
  const device_spec& d = find_preset("h100-sxm");
  int with_scratch = 0;
  for (const gemm_family* f : all_families()) {
    const dtype t = f->serves(dtype::bf16) ? dtype::bf16 : dtype::f32;
    gemm_problem p = binding_odd_problem(t);
    p.m = 16;  // a skinny problem, where split-K variants join the space
    p.k = 8192;
    for (const tile_config& c : f->problem_space(p, d)) {
      if (check_constraints(c, p, d)) continue;
      const kernel_launch l = f->describe_launch(c, p, d);
      EXPECT_EQ(scratch_bytes(l), f->scratch_bytes(c, p, d)) << c.id();
      with_scratch += scratch_bytes(l) > 0;
    }
  }
  EXPECT_GT(with_scratch, 0);
}

// The check itself: a description with two parameters swapped, or a scalar of
// the wrong width, is caught.
TEST(launch_binding, the_check_catches_a_swapped_or_mistyped_parameter) {
  const std::vector<declared> sig = {{"A", "pointer", ""}, {"M", "scalar", "int"}, {"s", "scalar", "long long"}};
  kernel_launch good;
  good.parameters = {{"A", "const float*", "pointer", "", nullptr},
                     scalar_parameter("M", "int", "", 1),
                     scalar_parameter("s", "long long", "", 2)};
  expect_matches(good, sig, "good");
  kernel_launch swapped = good;
  std::swap(swapped.parameters[1], swapped.parameters[2]);
  kernel_launch narrow = good;
  narrow.parameters[2].c_type = "int";
  for (const kernel_launch* bad : {&swapped, &narrow}) {
    ::testing::TestPartResultArray failures;
    {
      ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
      expect_matches(*bad, sig, "bad");
    }
    EXPECT_GT(failures.size(), 0);
  }
  const auto parsed = signature(std::string("extern \"C\" __global__ void ") + kernel_entry_name +
                                "(const float* __restrict__ A, int M,\n long long s) {}");
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[0].kind, "pointer");
  EXPECT_EQ(parsed[2].scalar, "long long");
}

}  // namespace
}  // namespace tiletune
