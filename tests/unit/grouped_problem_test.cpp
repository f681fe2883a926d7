// A grouped GEMM as a problem (core/gemm/problem.hpp, group_slices.hpp): its sizes, checks,
// JSON and tuning key; the per-group GEMMs of the reference loop against a brute-force owner
// of every row; and how the wgmma family plans, describes and launches it (other families refuse).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <numeric>

#include "core/errors.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"
#include "core/gemm/group_slices.hpp"
#include "core/gemm/kernel_launch.hpp"
#include "core/gemm/search_space.hpp"
#include "core/gemm/tensor_map_spec.hpp"
#include "core/compile/kernel_templates.hpp"
#include "core/tune/perf_model.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"

using namespace tiletune;

namespace {
// Empty groups, a single row, one under, at and over a 128-row tile.
const std::vector<std::int64_t> odd_rows = {0, 1, 127, 128, 129, 0, 517, 64};

gemm_problem grouped(std::vector<std::int64_t> rows, group_layout l, std::int64_t n = 4096, std::int64_t k = 1024) {
  return grouped_problem(groups_of_rows(std::move(rows), l), n, k, dtype::bf16, parse_layout("nt"));
}

// Who owns each row of C, worked out row by row: (group, row within it), or -1 for a masked pad.
std::vector<std::pair<int, std::int64_t>> owners(const gemm_problem& p) {
  const gemm_groups& g = *p.groups;
  std::vector<std::pair<int, std::int64_t>> out;
  for (int i = 0; i < g.count(); ++i) {
    const std::int64_t held = g.layout == group_layout::masked ? g.stride : g.rows[i];
    for (std::int64_t r = 0; r < held; ++r) out.emplace_back(r < g.rows[i] ? i : -1, r);
  }
  return out;
}
}  // namespace

TEST(grouped_problem, sizes_count_valid_rows_and_every_group_of_b) {
  const gemm_problem c = grouped(odd_rows, group_layout::contiguous);
  const std::int64_t valid = std::accumulate(odd_rows.begin(), odd_rows.end(), std::int64_t{0});
  EXPECT_EQ(valid, 966);
  EXPECT_EQ(c.m, valid);
  EXPECT_EQ(c.batch, 1);
  EXPECT_NO_THROW(validate(c));
  EXPECT_DOUBLE_EQ(c.flops(), 2.0 * valid * 4096 * 1024);
  EXPECT_EQ(c.b_elements(), 8LL * 1024 * 4096);
  EXPECT_EQ(c.operand_bytes(), (valid * 1024 + 8LL * 1024 * 4096 + valid * 4096) * 2);
  // The traffic: the B of the 6 groups with rows; an empty group has no tile and its B is not read.
  EXPECT_EQ(c.groups->computed(), 6);
  EXPECT_EQ(c.least_traffic_bytes(), (valid * 1024 + 6LL * 1024 * 4096 + valid * 4096) * 2);

  const gemm_problem m = grouped(odd_rows, group_layout::masked);
  EXPECT_EQ(m.groups->stride, 517);
  EXPECT_EQ(m.m, 8 * 517);
  EXPECT_EQ(m.useful_rows(), valid);
  EXPECT_DOUBLE_EQ(m.flops(), c.flops());  // padding is not work
  EXPECT_EQ(m.least_traffic_bytes(), c.least_traffic_bytes());
  EXPECT_GT(m.operand_bytes(), c.operand_bytes());  // but it is memory
  EXPECT_EQ(m.groups->m_tiles(128), 0 + 1 + 1 + 1 + 2 + 0 + 5 + 1);
}

TEST(grouped_problem, validate_names_what_is_wrong) {
  auto message = [](const gemm_problem& p) {
    try {
      validate(p);
    } catch (const usage_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  gemm_problem p = grouped({4, 0}, group_layout::contiguous);
  p.batch = 2;
  EXPECT_NE(message(p).find("--batch 2"), std::string::npos);
  p = grouped({4, 0}, group_layout::contiguous);
  p.layout = parse_layout("tn");
  EXPECT_NE(message(p).find("--layout tn"), std::string::npos);
  EXPECT_NE(message(grouped({0, 0}, group_layout::contiguous)).find("every group has 0 rows"), std::string::npos);
  EXPECT_NE(message(grouped({4, -1}, group_layout::contiguous)).find("group 1 has -1 rows"), std::string::npos);
  EXPECT_NE(message(grouped(std::vector<std::int64_t>(4097, 1), group_layout::contiguous)).find("--groups 4097"),
            std::string::npos);
  p = grouped({4, 9}, group_layout::masked);
  p.groups->stride = 8;
  EXPECT_NE(message(p).find("stride 8 cannot hold a group of 9"), std::string::npos);
  p = grouped({4, 9}, group_layout::contiguous);
  p.m = 12;
  EXPECT_NE(message(p).find("m 12"), std::string::npos);
}

TEST(grouped_problem, json_round_trips_and_the_key_names_the_distribution) {
  const gemm_problem routed = grouped_problem(groups_of_routing(4096, 2, 8, parse_routing("zipf:1.2"),
                                                                group_layout::masked),
                                              14336, 4096, dtype::bf16, parse_layout("nt"));
  const gemm_problem back = gemm_problem_from_json(to_json(routed));
  ASSERT_TRUE(back.groups);
  EXPECT_EQ(*back.groups, *routed.groups);
  EXPECT_EQ(back.m, routed.m);
  EXPECT_EQ(tuning_problem_key(back), tuning_problem_key(routed));
  EXPECT_NE(tuning_problem_key(routed).find(" g8 masked zipf:1.2 t4096 k2"), std::string::npos)
      << tuning_problem_key(routed);

  // Given rows key by a hash of the rows: two routings of the same total differ.
  const gemm_problem a = grouped({100, 28}, group_layout::contiguous), b = grouped({28, 100}, group_layout::contiguous);
  EXPECT_EQ(a.m, b.m);
  EXPECT_NE(tuning_problem_key(a), tuning_problem_key(b));
  EXPECT_EQ(tuning_problem_key(a), tuning_problem_key(gemm_problem_from_json(to_json(a))));
  // A plain problem's key and JSON are as before (no groups written).
  gemm_problem plain;
  plain.m = plain.n = plain.k = 64;
  plain.type = dtype::bf16;
  EXPECT_EQ(tuning_problem_key(plain), "64x64x64 b1 bf16 nn a1 b0");
  EXPECT_FALSE(to_json(plain).contains("groups"));
  EXPECT_NE(routed.describe().find("in 8 groups (zipf:1.2 t4096 k2, masked)"), std::string::npos) << routed.describe();
}

TEST(group_slices, every_valid_row_in_exactly_one_slice_at_its_offsets) {
  for (group_layout l : {group_layout::contiguous, group_layout::masked}) {
    const gemm_problem p = grouped(odd_rows, l, 256, 64);
    const auto own = owners(p);
    ASSERT_EQ(static_cast<std::int64_t>(own.size()), p.m);
    std::vector<int> seen(own.size(), 0);
    for (const group_slice& s : group_slices(p)) {
      EXPECT_GT(s.problem.m, 0) << "an empty group makes no GEMM";
      EXPECT_FALSE(s.problem.groups);
      EXPECT_EQ(s.a_offset, s.first_row * p.k);
      EXPECT_EQ(s.c_offset, s.first_row * p.n);
      EXPECT_EQ(s.b_offset, s.group * p.k * p.n);
      for (std::int64_t r = 0; r < s.problem.m; ++r) {
        ASSERT_EQ(own[s.first_row + r], (std::pair<int, std::int64_t>{s.group, r}));
        ++seen[s.first_row + r];
      }
    }
    for (std::size_t r = 0; r < own.size(); ++r) EXPECT_EQ(seen[r], own[r].first >= 0 ? 1 : 0) << "row " << r;
    // The rows written are the owned ones, merged into ranges.
    std::vector<int> written(own.size(), 0);
    for (const auto& [b, e] : written_row_ranges(p))
      for (std::int64_t r = b; r < e; ++r) ++written[r];
    EXPECT_EQ(written, seen);
  }
  EXPECT_TRUE(group_slices(gemm_problem{}).empty());
}

TEST(group_slices, padding_rows_must_stay_as_they_were) {
  const std::vector<row_range> ranges = {{1, 2}, {4, 6}};
  std::vector<unsigned char> c(7 * 2, 0xff);
  for (std::int64_t r : {1, 4, 5}) c[r * 2] = c[r * 2 + 1] = static_cast<unsigned char>(r);
  EXPECT_EQ(first_touched_row(c.data(), nullptr, 2, ranges, 7), -1);
  EXPECT_EQ(gather_rows(c.data(), 2, ranges), (std::vector<unsigned char>{1, 1, 4, 4, 5, 5}));
  c[6 * 2 + 1] = 0;  // the last pad row, past every range
  EXPECT_EQ(first_touched_row(c.data(), nullptr, 2, ranges, 7), 6);
  c[6 * 2 + 1] = 0xff;
  c[3 * 2] = 7;
  EXPECT_EQ(first_touched_row(c.data(), nullptr, 2, ranges, 7), 3);
  const std::vector<unsigned char> expected = c;  // beta != 0: compared with the old C instead
  EXPECT_EQ(first_touched_row(c.data(), expected.data(), 2, ranges, 7), -1);
}

TEST(grouped_wgmma, plans_the_grouped_kernel_and_other_families_refuse) {
  const device_spec& h100 = find_preset("h100-sxm");
  const gemm_problem p = grouped(odd_rows, group_layout::contiguous);
  for (kernel_family f : families_for(p.type)) {
    for (const tile_config& c : problem_search_space(f, p, h100)) {
      const auto v = check_constraints(c, p, h100);
      if (f->runs_grouped()) {
        EXPECT_TRUE(wgmma_grouped(c)) << c.id();
        EXPECT_NE(c.id().find("_grp"), std::string::npos);
        if (v) {
          EXPECT_NE(v->constraint, "grouped") << c.id();
        }
      } else {
        ASSERT_TRUE(v) << c.id();
        EXPECT_EQ(v->constraint, "grouped");
      }
    }
  }
  tile_config c = wgmma_tile(128, 128, 64, 1, 4);
  auto v = check_constraints(c, p, h100);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->constraint, "grouped");  // the plain kernel cannot run groups
  set_wgmma_grouped(c, true);
  EXPECT_FALSE(check_constraints(c, p, h100));
  gemm_problem plain = p;
  plain.groups.reset();
  v = check_constraints(c, plain, h100);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->constraint, "grouped");  // nor the grouped one a plain problem
  v = check_constraints(c, grouped(std::vector<std::int64_t>(257, 2), group_layout::contiguous), h100);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->constraint, "groups");
  // The group table's static shared memory counts: on a GPU whose limit lies 2 KB above the tile's
  // dynamic shared memory, the plain tile fits and the grouped one does not.
  tile_config big = wgmma_tile(128, 256, 64, 2, 4);
  device_spec tight = h100;
  tight.smem_per_block_optin_bytes = wgmma_smem_bytes(big, dtype::bf16) + 2048;
  gemm_problem plain_p = p;
  plain_p.groups.reset();
  plain_p.m = 4096;
  EXPECT_FALSE(check_constraints(big, plain_p, tight));
  set_wgmma_grouped(big, true);
  v = check_constraints(big, p, tight);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->constraint, "shared_memory");
  EXPECT_FALSE(check_constraints(big, p, h100));
  EXPECT_EQ(tile_from_json(tile_to_json(c)), c);
  EXPECT_NE(render_kernel_source(c, p.type, p.layout).find("#define TT_GROUPED 1\n"), std::string::npos);
}

TEST(grouped_wgmma, output_tiles_are_the_groups_m_tiles_as_the_model_counts_them) {
  for (group_layout l : {group_layout::contiguous, group_layout::masked}) {
    const gemm_problem p = grouped(odd_rows, l, 1000);
    for (int bm : {64, 128, 256}) {
      tile_config c = wgmma_tile(bm, 128, 64, bm == 64 ? 1 : 2, 4);
      set_wgmma_grouped(c, true);
      std::int64_t brute = 0;
      for (std::int64_t r : odd_rows) brute += (r + bm - 1) / bm;
      EXPECT_EQ(wgmma_output_tiles(c, p), brute * 8) << bm;  // ceil(1000 / 128) = 8 N tiles
      EXPECT_EQ(p.groups->m_tiles(bm), brute);
    }
  }
}

TEST(grouped_wgmma, launch_passes_rows_and_maps_b_per_group) {
  const device_spec& h100 = find_preset("h100-sxm");
  for (group_layout l : {group_layout::contiguous, group_layout::masked}) {
    const gemm_problem p = grouped(odd_rows, l);
    for (bool sk : {false, true}) {
      tile_config c = wgmma_tile(128, 128, 64, 2, 4);
      set_wgmma_grouped(c, true);
      set_wgmma_stream_k(c, sk);
      const kernel_launch k = c.family->describe_launch(c, p, h100);
      ASSERT_EQ(k.parameters.size(), sk ? 14u : 13u);
      EXPECT_EQ(k.parameters[10].name, "beta");
      EXPECT_EQ(k.parameters[11].name, "group_rows");
      EXPECT_EQ(k.parameters[11].value, nlohmann::json(odd_rows));
      EXPECT_EQ(k.parameters[12].name, "group_stride");
      EXPECT_EQ(k.parameters[12].value, l == group_layout::masked ? 517 : 0);
      EXPECT_EQ(parameter_named(const_cast<kernel_launch&>(k), "batch").value, 8);
      if (sk) {
        EXPECT_EQ(k.parameters[13].name, "workspace");
      }
      const auto bound = bind_arguments(k);
      EXPECT_EQ(bound[11].from, argument_binding::source::group_rows);
      EXPECT_EQ(k.grid[0], std::min<std::int64_t>(sk ? h100.sm_count : wgmma_output_tiles(c, p), h100.sm_count));
      const tensor_map_spec a = tensor_map_for(p, c, 'a'), b = tensor_map_for(p, c, 'b');
      EXPECT_EQ(a.dims, (std::array<std::uint64_t, 3>{1024, static_cast<std::uint64_t>(p.m), 1}));
      EXPECT_EQ(b.dims, (std::array<std::uint64_t, 3>{1024, 4096, 8}));
      EXPECT_EQ(b.strides_bytes[1], 1024u * 4096 * 2);
    }
  }
}

TEST(grouped_model, predicts_the_groups_tiles_and_a_library_loop) {
  const device_spec& h100 = find_preset("h100-sxm");
  const gemm_problem p = grouped(odd_rows, group_layout::contiguous);
  tile_config c = wgmma_tile(128, 128, 64, 2, 4);
  set_wgmma_grouped(c, true);
  const occupancy_estimate occ = estimate_occupancy(h100, c.threads(), 168, c.smem_bytes(p.type, p.layout));
  const prediction r = predict(h100, p, c, occ, 0.75);
  EXPECT_EQ(r.blocks, wgmma_output_tiles(c, p));  // the model's blocks are the tiles a persistent grid runs
  EXPECT_GT(r.time_us, 0);
  // The loop: one library GEMM per group with rows, summed.
  const prediction loop = predict_library_gemm(h100, p);
  double sum = 0;
  for (const group_slice& s : group_slices(p)) sum += predict_library_gemm(h100, s.problem).time_us;
  EXPECT_DOUBLE_EQ(loop.time_us, sum);
  EXPECT_NEAR(loop.tflops, p.flops() / (sum * 1e-6) / 1e12, 1e-9);
  // Experts that got no token cost nothing: 56 more empty groups (a decode step's 60 experts of
  // which 4 got rows) read no more and take no longer. They were counted whole: 8-15x too slow.
  std::vector<std::int64_t> more = odd_rows;
  more.resize(odd_rows.size() + 56, 0);
  const gemm_problem q = grouped(more, group_layout::contiguous);
  const prediction rq = predict(h100, q, c, occ, 0.75);
  EXPECT_DOUBLE_EQ(rq.dram_bytes, r.dram_bytes);
  EXPECT_NEAR(rq.time_us, r.time_us, 1e-9 * r.time_us);
  EXPECT_EQ(q.least_traffic_bytes(), p.least_traffic_bytes());
}
