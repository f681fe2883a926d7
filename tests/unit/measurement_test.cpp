#include "core/measure/measurement.hpp"

#include <cstring>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/measure/host_data.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/device/device_spec.hpp"
#include "core/gemm/kernel_launch.hpp"
#include <array>
#include <stdexcept>
#include "core/gemm/families/mma/mma_family.hpp"

using namespace tiletune;

TEST(timing_stats, percentiles_interpolate) {
  const auto s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.samples, 5u);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.median_us, 3);
  EXPECT_DOUBLE_EQ(s.p20_us, 1.8);  // 0.2 * 4 = 0.8 between 1 and 2
  EXPECT_DOUBLE_EQ(s.p80_us, 4.2);
  EXPECT_NEAR(s.spread, 2.4 / 3, 1e-12);
  EXPECT_EQ(summarize({}).samples, 0u);
}

TEST(timing_stats, sampling_stops_on_low_noise_count_or_time) {
  sampling_policy p;
  p.min_samples = 5;
  p.max_samples = 8;
  p.target_spread = 0.01;
  p.time_cap_ms = 1;
  EXPECT_FALSE(enough_samples({10, 10, 10}, p));                         // under the minimum
  EXPECT_TRUE(enough_samples({10, 10, 10, 10, 10}, p));                  // quiet
  EXPECT_FALSE(enough_samples({10, 12, 10, 12, 10}, p));                 // noisy
  EXPECT_TRUE(enough_samples({10, 12, 10, 12, 10, 12, 10, 12}, p));      // at the maximum
  EXPECT_TRUE(enough_samples({600, 600}, p));                            // over the time cap
}

TEST(verification, errors_and_bounds) {
  const float ref[] = {1, -2, 3, 4};
  const float same[] = {1, -2, 3, 4};
  EXPECT_EQ(compare_outputs(same, ref, 4).rel_frobenius, 0);
  const float off[] = {1, -2, 3, 4.03f};
  const auto e = compare_outputs(off, ref, 4);
  EXPECT_NEAR(e.rel_frobenius, 0.03 / std::sqrt(30.0), 1e-6);
  EXPECT_TRUE(passes(e, dtype::bf16));
  EXPECT_FALSE(passes(e, dtype::tf32));
  EXPECT_FALSE(passes(e, dtype::f32));
  const float nan[] = {1, std::numeric_limits<float>::quiet_NaN(), 3, 4};
  const auto n = compare_outputs(nan, ref, 4);
  EXPECT_EQ(n.non_finite, 1u);
  EXPECT_FALSE(passes(n, dtype::bf16));  // NaN never passes
  EXPECT_LT(error_bound(dtype::f32), 1e-5);
  EXPECT_LE(error_bound(dtype::tf32), 2e-3);
}

// The worker's check: C as stored in its dtype, on many threads, against the
// reference's sums taken once. It must give the figures of the plain float
// comparison, find one wrong element among a million, and one NaN.
TEST(verification, stored_output_on_threads_matches_the_plain_comparison) {
  const std::size_t n = (1 << 20) + 3;  // a partial last stretch
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
    const host_matrix ref = random_matrix(dtype::f32, n, 7);
    host_matrix c = random_matrix(t, n, 7);  // the same values, rounded to t
    const reference_summary sums = summarize_reference(ref.values.data(), n);
    const auto plain = compare_outputs(to_floats(t, c.bytes.data(), n).data(), ref.values.data(), n);
    for (unsigned threads : {1u, 3u, 16u}) {
      const auto e = compare_stored_output(t, c.bytes.data(), ref.values.data(), n, sums, threads);
      EXPECT_NEAR(e.rel_frobenius, plain.rel_frobenius, 1e-12 + 1e-9 * plain.rel_frobenius) << to_string(t);
      EXPECT_EQ(e.max_rel_error, plain.max_rel_error) << to_string(t);
      EXPECT_TRUE(passes(e, t)) << to_string(t);
    }
    // One element far off, deep inside: caught.
    const std::size_t at = n - 5, width = element_bytes(t);
    const std::vector<unsigned char> good(c.bytes.begin() + at * width, c.bytes.begin() + (at + 1) * width);
    const float big = 1000.0f;
    if (width == 4) {
      std::memcpy(&c.bytes[at * 4], &big, 4);
    } else {
      const std::uint16_t b = t == dtype::f16 ? float_to_half_bits(big) : float_to_bf16_bits(big);
      std::memcpy(&c.bytes[at * 2], &b, 2);
    }
    EXPECT_FALSE(passes(compare_stored_output(t, c.bytes.data(), ref.values.data(), n, sums, 16), t)) << to_string(t);
    // A NaN (the poison) left anywhere: never passes.
    std::copy(good.begin(), good.end(), c.bytes.begin() + at * width);
    std::fill(c.bytes.begin() + 12345 * width, c.bytes.begin() + 12346 * width, 0xff);
    const auto nan = compare_stored_output(t, c.bytes.data(), ref.values.data(), n, sums, 16);
    EXPECT_EQ(nan.non_finite, 1u) << to_string(t);
    EXPECT_FALSE(passes(nan, t)) << to_string(t);
  }
}

TEST(host_data, half_and_bf16_round_to_nearest_even) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(1e6f), 0x7c00);          // overflow: Inf
  EXPECT_EQ(float_to_half_bits(5.96046448e-8f), 0x0001);  // the smallest subnormal
  EXPECT_EQ(float_to_half_bits(1.0f + 1.0f / 2048), 0x3c00);  // a tie rounds to even
  EXPECT_EQ(float_to_half_bits(1.0f + 3.0f / 2048), 0x3c02);
  EXPECT_FLOAT_EQ(half_bits_to_float(0x3555), 0.333251953125f);
  EXPECT_FLOAT_EQ(half_bits_to_float(0x0001), 5.96046448e-8f);
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 1.0f / 256), 0x3f80);  // tie to even
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_FLOAT_EQ(bf16_bits_to_float(0x4049), 3.140625f);
  for (float f : {0.1f, -0.7f, 0.015625f, 0.99f}) {
    EXPECT_NEAR(half_bits_to_float(float_to_half_bits(f)), f, std::abs(f) / 1024);
    EXPECT_NEAR(bf16_bits_to_float(float_to_bf16_bits(f)), f, std::abs(f) / 128);
  }
}

TEST(host_data, random_inputs_are_seeded_nonzero_and_rounded) {
  const auto a = random_matrix(dtype::bf16, 1000, 7), b = random_matrix(dtype::bf16, 1000, 7);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_NE(random_matrix(dtype::bf16, 1000, 8).bytes, a.bytes);
  int negative = 0;
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    EXPECT_GE(std::abs(a.values[i]), 1.0f / 64 - 1e-3f);
    EXPECT_LE(std::abs(a.values[i]), 1.0f);
    negative += a.values[i] < 0;
  }
  EXPECT_GT(negative, 400);
  EXPECT_LT(negative, 600);
  const auto back = to_floats(dtype::bf16, a.bytes.data(), a.values.size());
  EXPECT_EQ(back, a.values);
  const auto f = random_matrix(dtype::f32, 10, 1);
  EXPECT_EQ(to_floats(dtype::f32, f.bytes.data(), 10), f.values);
}

TEST(protocol, l2_flush_modes_by_name) {
  for (const auto m : {l2_flush_mode::write, l2_flush_mode::read, l2_flush_mode::none})
    EXPECT_EQ(l2_flush_mode_from_string(to_string(m)), m);
  EXPECT_EQ(l2_flush_mode_from_string("Read"), std::nullopt);
  EXPECT_EQ(l2_flush_mode_from_string(""), std::nullopt);
  EXPECT_EQ(worker_setup{}.l2_flush, l2_flush_mode::write);  // the default: how every recording was timed
}

TEST(protocol, messages_round_trip) {
  worker_setup s;
  s.problem.m = 17;
  s.problem.n = 33;
  s.problem.k = 65;
  s.problem.type = dtype::tf32;
  s.seed = 42;
  s.sampling.target_spread = 0.02;
  s.l2_flush = l2_flush_mode::read;
  const auto s2 = worker_setup_from_json(to_json(s));
  EXPECT_EQ(s2.problem.k, 65);
  EXPECT_EQ(s2.seed, 42u);
  EXPECT_EQ(s2.sampling.target_spread, 0.02);
  EXPECT_EQ(s2.l2_flush, l2_flush_mode::read);
  s.l2_flush = l2_flush_mode::none;
  EXPECT_EQ(worker_setup_from_json(to_json(s)).l2_flush, l2_flush_mode::none);
  nlohmann::json bad = to_json(s);
  bad["l2_flush"] = "memset";
  EXPECT_THROW(worker_setup_from_json(bad), std::invalid_argument);

  const tile_config c = mma_tile(128, 64, 32, 2, 2, 3);
  measure_request r;
  r.op = measure_op::variant;
  r.id = c.id();
  r.launch = c.family->describe_launch(c, s.problem, find_preset("h100-sxm"));
  EXPECT_EQ(r.launch.grid[0], 1);  // 17 rows in 128-row tiles
  EXPECT_EQ(r.launch.grid[1], 1);
  EXPECT_EQ(r.launch.block[0], 128);
  const auto r2 = measure_request_from_json(to_json(r));
  EXPECT_EQ(r2.launch.dynamic_smem_bytes, c.smem_bytes(dtype::tf32, s.problem.layout));
  EXPECT_EQ(r2.launch.grid, r.launch.grid);
  EXPECT_EQ(r2.launch.block, r.launch.block);
  // The worker binds what the family described, in order, values included.
  ASSERT_EQ(r2.launch.parameters.size(), r.launch.parameters.size());
  for (std::size_t i = 0; i < r.launch.parameters.size(); ++i) {
    EXPECT_EQ(r2.launch.parameters[i].name, r.launch.parameters[i].name);
    EXPECT_EQ(r2.launch.parameters[i].c_type, r.launch.parameters[i].c_type);
    EXPECT_EQ(r2.launch.parameters[i].value, r.launch.parameters[i].value);
  }
  const auto bound = bind_arguments(r2.launch);
  ASSERT_EQ(bound.size(), r.launch.parameters.size());
  EXPECT_EQ(bound[0].from, argument_binding::source::operand);
  EXPECT_EQ(bound[0].operand, 'A');
  EXPECT_EQ(bound[3].bytes.size(), 4u);  // M, an int

  measure_response m;
  m.id = "x";
  m.status = variant_status::incorrect;
  m.error.rel_frobenius = std::numeric_limits<double>::infinity();
  m.sm_clock_mhz = 1980;
  const auto m2 = measure_response_from_json(to_json(m));
  EXPECT_TRUE(std::isinf(m2.error.rel_frobenius));  // Inf survives as null
  EXPECT_EQ(*m2.sm_clock_mhz, 1980);
  EXPECT_EQ(m2.clusters_at_once, 0);
  m.clusters_at_once = 30;  // the driver's count, where the worker capped a cluster grid
  EXPECT_EQ(measure_response_from_json(to_json(m)).clusters_at_once, 30);
  // A grid its kernel walks by clusters says so to the worker, which may cap it; a plain one not.
  EXPECT_FALSE(r2.launch.clusters_walk_tiles);
  r.launch.cluster = {4, 1, 1};
  r.launch.clusters_walk_tiles = true;
  const auto r3 = measure_request_from_json(to_json(r));
  EXPECT_TRUE(r3.launch.clusters_walk_tiles);
  EXPECT_EQ(r3.launch.cluster[0], 4);
}

// The rate requests of `batch` carry their own sizes to the worker: without
// them the worker copied a default-sized buffer and `batch` divided a GiB by
// its time (1.7 PB/s on an H100, 2026-11-23).
TEST(protocol, rate_and_library_requests_carry_their_problem) {
  for (measure_op op : {measure_op::bandwidth, measure_op::launch, measure_op::library}) {
    measure_request r;
    r.op = op;
    r.problem.m = 1 << 14;
    r.problem.n = 1000;
    const auto back = measure_request_from_json(to_json(r));
    EXPECT_EQ(back.op, op);
    EXPECT_EQ(back.problem.m, 1 << 14) << to_string(op);
    EXPECT_EQ(back.problem.n, 1000) << to_string(op);
  }
  measure_request v;
  v.op = measure_op::variant;
  EXPECT_FALSE(to_json(v).contains("problem"));  // a variant runs on the setup's problem
}

// Split-K: batch x split_k on grid z, an fp32 slot per tile and slice, a counter
// per tile: scratch buffers the worker allocates from the request alone.
TEST(measure_protocol, split_k_launches_carry_their_workspace) {
  gemm_problem p;
  p.m = 20;
  p.n = 320;
  p.k = 5000;
  p.batch = 3;
  p.type = dtype::bf16;
  const device_spec& d = find_preset("h100-sxm");
  tile_config c = mma_tile(64, 64, 32, 2, 2, 3);
  EXPECT_EQ(scratch_bytes(c.family->describe_launch(c, p, d)), 0);
  EXPECT_EQ(c.family->scratch_bytes(c, p, d), 0);
  c.split_k = 8;
  measure_request r;
  r.op = measure_op::variant;
  r.id = c.id();
  r.launch = c.family->describe_launch(c, p, d);
  EXPECT_EQ(r.launch.grid, (std::array<std::int64_t, 3>{1, 5, 3 * 8}));
  const auto r2 = measure_request_from_json(to_json(r));
  std::vector<std::int64_t> scratch;
  for (const auto& b : bind_arguments(r2.launch))
    if (b.from == argument_binding::source::scratch) scratch.push_back(b.buffer_bytes);
  EXPECT_EQ(scratch, (std::vector<std::int64_t>{15 * 8 * 64 * 64 * 4, 1 * 5 * 3 * 4}));
  EXPECT_EQ(scratch_bytes(r2.launch), c.family->scratch_bytes(c, p, d));
}

// Binding refuses what no launcher can pass, naming the parameter.
TEST(measure_protocol, binding_names_a_parameter_it_cannot_bind) {
  kernel_launch l;
  l.parameters = {scalar_parameter("M", "int", "rows", 1LL << 40)};
  try {
    bind_arguments(l);
    ADD_FAILURE() << "an int of 2^40 was bound";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("M = 1099511627776"), std::string::npos) << e.what();
  }
  l.parameters = {scalar_parameter("x", "half", "a half", 1.0)};
  EXPECT_THROW(bind_arguments(l), std::invalid_argument);
  l.parameters = {{"tmap_a", "CUtensorMap", "tensor_map", "A's map", nullptr}};
  EXPECT_THROW(bind_arguments(l), std::invalid_argument);  // no tensor_maps entry
  l.parameters = {scalar_parameter("alpha", "float", "scale", 1.5)};
  const auto b = bind_arguments(l);
  float alpha = 0;
  std::memcpy(&alpha, b.at(0).bytes.data(), sizeof alpha);
  EXPECT_EQ(alpha, 1.5f);
}
