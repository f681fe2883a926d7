// Padded copies in the mma family: a problem whose rows start off 16 bytes (K = 50257 in a
// vocabulary's backward, an odd N stored K x N) has each tile twice, copying those rows one element
// at a time and on K-major copies (_kc) padded to 16 bytes with zeros, which run the cp.async path;
// the model picks. Here: the space, the constraints, the launch, the model, and the whole data path
// through the host emulation (mma_emulation.hpp: the pre-pass, then the GEMM on the copies with the
// padded K) against a host GEMM, with planted defects.
#include "mma_emulation.hpp"

#include "core/tune/perf_model.hpp"
#include "problem_spaces.hpp"

using namespace tiletune;
using namespace mma_emu;

namespace {
const device_spec& a100() { return find_preset("a100-sxm-80gb"); }

gemm_problem problem(std::int64_t m, std::int64_t n, std::int64_t k, dtype t, const char* l) {
  return tiletune_test::problem_of(m, n, k, 1, t, l);
}

tile_config copies(tile_config c) {
  set_mma_k_major_copies(c, true);
  return c;
}

long long scalar(const kernel_launch& l, const char* name) {
  for (const kernel_parameter& k : l.parameters)
    if (k.name == name) return k.value.get<long long>();
  ADD_FAILURE() << l.entry << " has no parameter " << name;
  return -1;
}

// Cases whose rows are off 16 bytes in every layout used here (K odd: nt, nn and tt store a
// K-major operand), ending inside a 16-byte chunk, a transpose tile, a k-tile and a block tile.
std::vector<gemm_case> odd_cases(const kernel_macros& k, int split) {
  if (split > 1)
    return {make_case("split, odd K", k, 19, k.bn + 24, (2 * split - 1) * k.bk - 3, 2, 0, 0.75f, -1.25f)};
  return {make_case("odd K, batch 2", k, 37, k.bn + 11, 2 * k.bk + 5, 2, 0, 1.5f, -1.25f),
          make_case("odd K, inside tiles", k, k.bm + 8, k.bn - 3, (k.stages + 1) * k.bk + 1, 1, 0, 0.75f, 0.0f),
          make_case("tiny", k, 5, 9, 7, 2, 0, 1.0f, 0.0f)};
}
}  // namespace

TEST(mma_padded_copies, rows_off_16_bytes_plan_each_tile_both_ways) {
  for (const auto& [t, l, n, k] : {std::tuple{dtype::bf16, "nt", 3000, 777}, {dtype::f16, "nn", 3001, 776},
                                   {dtype::tf32, "tt", 3000, 777}}) {
    const gemm_problem p = problem(1000, n, k, t, l);
    const std::vector<tile_config> ok = tiletune_test::runnable_space(mma_family(), p, a100());
    std::size_t with = 0, without = 0;
    for (const tile_config& c : ok) (mma_k_major_copies(c) ? with : without) += 1;
    EXPECT_GT(with, 20u) << to_string(t) << " " << l;
    EXPECT_EQ(with, without) << to_string(t) << " " << l;
    // The copies' launch: every operand whose rows are off 16 bytes copied, the GEMM on K padded.
    const tile_config c = copies(mma_tile(128, 64, 32, 2, 2, 3));
    ASSERT_FALSE(check_constraints(c, p, a100())) << check_constraints(c, p, a100())->message;
    const kernel_launch launch = mma_family().describe_launch(c, p, a100());
    EXPECT_EQ(scalar(launch, "K"), k_major_copy_row(p));
    EXPECT_EQ(scalar(launch, "lda"), k_major_copy_row(p));
    EXPECT_EQ(scalar(launch, "ldb"), k_major_copy_row(p));
    EXPECT_EQ(launch.prologue.size(), k % 8 ? 2u : 1u) << to_string(t) << " " << l;
    for (const kernel_launch& pre : launch.prologue) EXPECT_EQ(scalar(pre, "row"), k_major_copy_row(p));
  }
  // Rows on 16 bytes: no copies for 16-bit types and tf32 (the family reads every layout).
  const gemm_problem even = problem(1000, 3000, 776, dtype::bf16, "nn");
  for (const tile_config& c : tiletune_test::runnable_space(mma_family(), even, a100()))
    EXPECT_FALSE(mma_k_major_copies(c)) << c.id();
  const auto v = check_constraints(copies(mma_tile(128, 64, 32, 2, 2, 3)), even, a100());
  ASSERT_TRUE(v);
  EXPECT_EQ(v->constraint, "k_major_copies");
}

// The model: the twin on copies pays the padding pass, not the serial copies; on a large GEMM
// with K 50257 (a GPT-2 vocabulary's backward) it is far faster, on a 16-row decode step it is not.
TEST(mma_padded_copies, the_model_charges_the_pass_not_the_serial_copies) {
  occupancy_estimate occ;
  occ.blocks_per_sm = 1;
  const tile_config plain = mma_tile(128, 128, 32, 2, 2, 3), kc = copies(plain);
  const gemm_problem big = problem(4096, 768, 50257, dtype::bf16, "nt");
  const prediction serial = predict(a100(), big, plain, occ), padded = predict(a100(), big, kc, occ);
  EXPECT_EQ(serial.prologue_us, 0);
  EXPECT_GT(padded.prologue_us, 0);
  EXPECT_LT(padded.time_us * 4, serial.time_us);
  const gemm_problem aligned = problem(4096, 768, 50264, dtype::bf16, "nt");
  EXPECT_NEAR(padded.time_us - padded.prologue_us, predict(a100(), aligned, plain, occ).time_us,
              0.01 * padded.time_us);
}

// Every a100 and h100 variant on copies of a bf16 nt problem with K 4095 (4096-row and 16-row
// problems' spaces), f16 nn and tf32 tt on a rotation of them: the pre-pass pads (and transposes),
// the GEMM runs the padded K, against the host GEMM of the operands as stored.
TEST(mma_padded_copies, emulated_padding_and_gemm_match_a_host_gemm) {
  std::vector<tile_config> variants;
  std::set<std::string> seen;
  for (const char* gpu : {"a100-sxm-80gb", "h100-sxm"})
    for (const std::int64_t m : {std::int64_t{4096}, std::int64_t{16}}) {
      const gemm_problem p = problem(m, 4096, 4095, dtype::bf16, "nt");
      for (const tile_config& c : problem_search_space(family_named("mma"), p, find_preset(gpu)))
        if (mma_k_major_copies(c) && !check_constraints(c, p, find_preset(gpu)) && seen.insert(c.id()).second)
          variants.push_back(c);
    }
  ASSERT_GT(variants.size(), 40u);
  int cases = 0;
  report::paths ran;
  const std::pair<dtype, const char*> runs[] = {{dtype::bf16, "nt"}, {dtype::f16, "nn"}, {dtype::tf32, "tt"}};
  for (std::size_t vi = 0; vi < variants.size(); ++vi) {
    const tile_config& c = variants[vi];
    auto [t, ln] = runs[vi % 3];
    // A tile another type does not take (tf32's depth, say) runs bf16 nt.
    if (check_constraints(c, problem(4096, 4096, 4095, t, ln), find_preset("a100-sxm-80gb")))
      t = dtype::bf16, ln = "nt";
    const layout l = parse_layout(ln);
    const std::vector<gemm_case> all = odd_cases(macros_for(c, t, l), c.split_k);
    const gemm_case& g = all[vi % all.size()];
    const report r = run_case(c, t, l, g, {}, static_cast<std::uint32_t>(cases + 11));
    EXPECT_TRUE(r.ok()) << name(c, t, l, g) << ": " << r.describe();
    ++cases;
    ran.add(r.ran);
  }
  std::printf("padded copies: %d cases\n", cases);
  EXPECT_GT(cases, 40);
  // The GEMM on the copies always reads aligned rows.
  EXPECT_EQ(ran.element_copies, 0);
  EXPECT_GT(ran.cp_async_full, 0);
  EXPECT_GT(ran.split_reductions, 0);
}

TEST(mma_padded_copies, planted_defects_are_caught) {
  const tile_config c = copies(mma_tile(128, 64, 32, 2, 2, 3));
  struct planted {
    const char* what;
    defects d;
    dtype t;
    const char* layout;
  };
  std::vector<planted> cases;
  auto add = [&](const char* what, auto set, std::vector<std::pair<dtype, const char*>> where) {
    defects d;
    set(d);
    for (const auto& [t, l] : where) cases.push_back({what, d, t, l});
  };
  add("the pad left as the buffer held it", [](defects& d) { d.kc_pad_unwritten = true; },
      {{dtype::bf16, "nt"}, {dtype::tf32, "nn"}});
  add("K-major rows read as if stored MN-major", [](defects& d) { d.kc_k_major_as_mn = true; },
      {{dtype::bf16, "nt"}, {dtype::f16, "tt"}});
  add("the GEMM reading the operands as stored, not the copies", [](defects& d) { d.kc_reads_operand = true; },
      {{dtype::bf16, "nt"}});
  add("the GEMM launched without its pre-pass", [](defects& d) { d.kc_skipped = true; }, {{dtype::f16, "nn"}});
  for (const planted& p : cases) {
    const layout l = parse_layout(p.layout);
    const gemm_case g = odd_cases(macros_for(c, p.t, l), 1)[0];
    const report clean = run_case(c, p.t, l, g);
    ASSERT_TRUE(clean.ok()) << name(c, p.t, l, g) << ": " << clean.describe();
    const report bad = run_case(c, p.t, l, g, p.d);
    EXPECT_FALSE(bad.ok()) << p.what << " passed on " << name(c, p.t, l, g);
  }
}
