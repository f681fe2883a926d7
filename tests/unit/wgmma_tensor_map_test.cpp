#include "core/gemm/tensor_map_spec.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/measure/measure_protocol.hpp"
#include "core/gemm/search_space.hpp"
#include "core/export/kernel_export.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"
#include "core/gemm/families/mma/mma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"

using namespace tiletune;

namespace {
gemm_problem map_problem(std::int64_t m, std::int64_t n, std::int64_t k, dtype t, const char* l,
                         std::int64_t batch = 1) {
  gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.type = t;
  p.layout = parse_layout(l);
  return p;
}
using dims3 = std::array<std::uint64_t, 3>;
using box3 = std::array<std::uint32_t, 3>;
}  // namespace

TEST(wgmma_tensor_map, k_major_operands_copy_row_boxes) {
  // nt: A is M x K row-major, B is stored N x K; both K-major.
  const auto p = map_problem(4096, 1024, 512, dtype::bf16, "nt");
  const tile_config c = wgmma_tile(256, 128, 64, 2, 4);
  const auto a = tensor_map_for(p, c, 'a');
  EXPECT_EQ(a.type, tensor_map_spec::element::bf16);
  EXPECT_EQ(a.rank, 3);
  EXPECT_EQ(a.dims, (dims3{512, 4096, 1}));
  EXPECT_EQ(a.strides_bytes[0], 512u * 2);
  EXPECT_EQ(a.box, (box3{64, 256, 1}));
  EXPECT_EQ(a.swizzle_bytes, 128);
  EXPECT_TRUE(a.oob_fill_zero);
  EXPECT_FALSE(a.interleave);
  const auto b = tensor_map_for(p, c, 'b');
  EXPECT_EQ(b.dims, (dims3{512, 1024, 1}));
  EXPECT_EQ(b.strides_bytes[0], 512u * 2);
  EXPECT_EQ(b.box, (box3{64, 128, 1}));
}

TEST(wgmma_tensor_map, mn_major_operands_copy_64_wide_boxes) {
  const tile_config c = wgmma_tile(128, 256, 64, 2, 3);
  // tn: A stored K x M (M contiguous); nn: B stored K x N (N contiguous).
  const auto tn = map_problem(1000, 2048, 4096, dtype::f16, "tn");
  const auto a = tensor_map_for(tn, c, 'a');
  EXPECT_EQ(a.type, tensor_map_spec::element::f16);
  EXPECT_EQ(a.dims, (dims3{1000, 4096, 1}));
  EXPECT_EQ(a.strides_bytes[0], 1000u * 2);
  EXPECT_EQ(a.box, (box3{64, 64, 1}));
  const auto nn = map_problem(1000, 2048, 4096, dtype::f16, "nn");
  const auto b = tensor_map_for(nn, c, 'b');
  EXPECT_EQ(b.dims, (dims3{2048, 4096, 1}));
  EXPECT_EQ(b.strides_bytes[0], 2048u * 2);
  EXPECT_EQ(b.box, (box3{64, 64, 1}));
  // tt: both transposed; A MN-major, B K-major.
  const auto tt = map_problem(1000, 2048, 4096, dtype::f16, "tt");
  EXPECT_EQ(tensor_map_for(tt, c, 'a').box, (box3{64, 64, 1}));
  EXPECT_EQ(tensor_map_for(tt, c, 'b').box, (box3{64, 256, 1}));
  EXPECT_EQ(tensor_map_for(tt, c, 'b').dims, (dims3{4096, 2048, 1}));
}

TEST(wgmma_tensor_map, batch_is_the_third_dimension) {
  const auto p = map_problem(96, 80, 64, dtype::tf32, "nt", 5);
  const tile_config c = wgmma_tile(128, 128, 32, 2, 4);
  const auto a = tensor_map_for(p, c, 'a');
  EXPECT_EQ(a.type, tensor_map_spec::element::f32);
  EXPECT_EQ(a.dims, (dims3{64, 96, 5}));
  EXPECT_EQ(a.strides_bytes[0], 64u * 4);
  EXPECT_EQ(a.strides_bytes[1], 96u * 64 * 4);
  EXPECT_EQ(a.box, (box3{32, 128, 1}));
  const auto b = tensor_map_for(p, c, 'b');
  EXPECT_EQ(b.strides_bytes[1], 80u * 64 * 4);
  // One matrix: the unused batch stride is still a 16-byte multiple.
  const auto one = tensor_map_for(map_problem(3, 8, 8, dtype::bf16, "nt"), c, 'a');
  EXPECT_EQ(one.strides_bytes[1] % 16, 0u);
  EXPECT_EQ(to_json(a)["swizzle"], "128B");
  EXPECT_THROW(tensor_map_for(p, c, 'd'), std::invalid_argument);  // 'c': the TMA-store epilogue's C (wgmma_tma_store_test)
}

TEST(wgmma_constraints, named_and_pruned_where_wgmma_cannot_run) {
  const device_spec& h100 = find_preset("h100-sxm");
  const device_spec& a100 = find_preset("a100-sxm-80gb");
  const tile_config c = wgmma_tile(256, 128, 64, 2, 4);
  const auto ok = map_problem(4096, 4096, 4096, dtype::bf16, "nt");
  EXPECT_FALSE(check_constraints(c, ok, h100));
  EXPECT_EQ(check_constraints(c, ok, a100)->constraint, "architecture");
  // tf32 wgmma: K-major operands only.
  const tile_config t = wgmma_tile(256, 128, 32, 2, 4);
  EXPECT_FALSE(check_constraints(t, map_problem(4096, 4096, 4096, dtype::tf32, "nt"), h100));
  for (const char* l : {"nn", "tn", "tt"})
    EXPECT_EQ(check_constraints(t, map_problem(4096, 4096, 4096, dtype::tf32, l), h100)->constraint, "layout") << l;
  // lda 1001 bf16 is not 16-byte aligned: wgmma is pruned, mma answers.
  const auto odd = map_problem(4096, 4096, 1001, dtype::bf16, "nt");
  EXPECT_EQ(check_constraints(c, odd, h100)->constraint, "tma_alignment");
  EXPECT_FALSE(check_constraints(mma_tile(128, 128, 32, 2, 2, 3), odd, h100));
  // Odd batch strides too (7 x 8 bf16 = 112 bytes is aligned; 7 x 9 is not).
  EXPECT_EQ(check_constraints(c, map_problem(7, 16, 9, dtype::bf16, "tn", 2), h100)->constraint, "tma_alignment");
  EXPECT_EQ(check_constraints(wgmma_tile(256, 256, 64, 2, 3), ok, h100)->constraint, "accumulator_registers");
  EXPECT_EQ(check_constraints(wgmma_tile(64, 128, 64, 2, 3), ok, h100)->constraint, "warpgroup_tile");
  EXPECT_EQ(check_constraints(wgmma_tile(256, 128, 64, 2, 5), ok, h100)->constraint, "shared_memory");
  tile_config clustered = c;
  clustered.cluster_n = 2;
  EXPECT_EQ(check_constraints(clustered, ok, h100)->constraint, "cluster");
}

TEST(wgmma_constraints, default_space_size_per_dtype_and_layout) {
  const device_spec& h100 = find_preset("h100-sxm");
  for (dtype ty : {dtype::bf16, dtype::f16, dtype::tf32}) {
    const auto space = default_search_space(family_named("wgmma"), ty);
    EXPECT_EQ(space.size(), 54u);
    int kept = 0;
    for (const auto& c : space) kept += !check_constraints(c, map_problem(4096, 4096, 4096, ty, "nt"), h100);
    // 5 stages of 48 KiB do not fit for 256x128 and 128x256 (3 rasters each).
    EXPECT_EQ(kept, 48) << to_string(ty);
  }
}

TEST(wgmma_launch, persistent_grid_over_the_sms) {
  const auto p = map_problem(4096, 4096, 4096, dtype::bf16, "nt", 1);
  const tile_config c = wgmma_tile(256, 128, 64, 2, 4);
  const launch_shape s = launch_shape_for(c, p, 132);
  EXPECT_EQ(s.grid_x, 132);
  EXPECT_EQ(s.grid_y, 1);
  EXPECT_EQ(s.grid_z, 1);
  EXPECT_EQ(s.threads, 384);
  EXPECT_EQ(s.cluster_x, 1);
  EXPECT_EQ(s.dynamic_smem_bytes, c.smem_bytes(p.type, p.layout));
  // Fewer tiles than SMs: one CTA per tile.
  EXPECT_EQ(launch_shape_for(c, map_problem(300, 200, 64, dtype::bf16, "nt", 2), 132).grid_x, 2 * 2 * 2);
  // The old signature and other families are unchanged.
  const tile_config m = mma_tile(128, 128, 32, 2, 2, 3);
  EXPECT_EQ(launch_shape_for(m, p, 132).grid_x, launch_shape_for(m, p).grid_x);
  // A request carries the tile to the worker, and the tensor maps' operands.
  measure_request r;
  r.op = measure_op::variant;
  r.id = c.id();
  r.launch = c.family->describe_launch(c, p, find_preset("h100-sxm"));
  r.config = c;
  const measure_request back = measure_request_from_json(to_json(r));
  ASSERT_TRUE(back.config);
  EXPECT_EQ(*back.config, c);
  EXPECT_EQ(back.launch.cluster, (std::array<std::int64_t, 3>{1, 1, 1}));
  const auto bound = bind_arguments(back.launch);
  ASSERT_GE(bound.size(), 3u);
  EXPECT_EQ(bound[0].from, argument_binding::source::tensor_map);
  EXPECT_EQ(bound[0].operand, 'A');
  EXPECT_EQ(bound[1].operand, 'B');
  EXPECT_EQ(bound[2].from, argument_binding::source::operand);
  EXPECT_EQ(bound[2].operand, 'C');
}

TEST(wgmma_launch, export_says_how_to_launch_a_variant) {
  const auto p = map_problem(4096, 4096, 4096, dtype::bf16, "nt");
  const tile_config c = wgmma_tile(256, 128, 64, 2, 4);
  const device_spec& d = find_preset("h100-sxm");
  const kernel_launch l = describe_launch(c, p, d);
  EXPECT_EQ(l.grid[0], d.sm_count);
  EXPECT_EQ(l.block[0], 384);
  EXPECT_EQ(l.cluster[0], 1);
  EXPECT_EQ(l.dynamic_smem_bytes, c.smem_bytes(p.type, p.layout));
  ASSERT_EQ(l.parameters.size(), 11u);
  EXPECT_EQ(l.parameters[0].name, "tmap_a");
  EXPECT_EQ(l.parameters[0].kind, "tensor_map");
  EXPECT_EQ(l.parameters[10].name, "beta");
  ASSERT_EQ(l.tensor_maps.size(), 2u);
  EXPECT_EQ(l.tensor_maps[0].box_dims, (std::vector<std::int64_t>{64, 256, 1}));
  EXPECT_EQ(l.tensor_maps[1].global_dims, (std::vector<std::int64_t>{4096, 4096, 1}));
  EXPECT_EQ(l.tensor_maps[0].global_strides_bytes[0], 4096 * 2);
  EXPECT_EQ(l.tensor_maps[0].data_type, "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16");
}

// A stream-K export states its workspace in the requirements the host header prints: the size for
// this problem and GPU and that it is zeroed once (the header named the buffer only). A swap-AB
// export's grid rule says its M and N are the problem's, not the exchanged parameters'.
TEST(wgmma_launch, an_export_states_the_stream_k_workspace_and_the_swap_ab_rules_m_and_n) {
  const device_spec& d = find_preset("h100-sxm");
  const auto p = map_problem(512, 1024, 4096, dtype::bf16, "nt");
  tile_config sk = wgmma_tile(128, 128, 64, 1, 4);
  set_wgmma_stream_k(sk, true);
  const kernel_launch l = describe_launch(sk, p, d);
  const std::string size = fmt::format("stream-K: workspace of {} bytes for this problem on {} SMs",
                                       wgmma_stream_k_workspace_bytes(sk, p, d.sm_count), d.sm_count);
  bool stated = false;
  for (const auto& r : l.requirements) stated = stated || (r.find(size) != std::string::npos && r.find("zeroed once") != std::string::npos);
  EXPECT_TRUE(stated) << size;
  EXPECT_GT(wgmma_stream_k_workspace_bytes(sk, p, d.sm_count), 0);
  tile_config swab = wgmma_tile(64, 128, 64, 1, 4);
  set_wgmma_swap_ab(swab, true);
  EXPECT_NE(describe_launch(swab, map_problem(16, 4096, 4096, dtype::bf16, "nt"), d).grid_rule.find("the problem's"),
            std::string::npos);
  EXPECT_EQ(l.grid_rule.find("exchanged"), std::string::npos);
}
