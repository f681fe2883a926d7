#include "core/gemm/families/simt/simt_family.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/compile/kernel_templates.hpp"
#include "core/export/kernel_export.hpp"

namespace tiletune {

namespace {

class simt : public gemm_family {
 public:
  std::string_view name() const override { return "simt"; }
  std::string_view summary() const override {
    return "CUDA-core FFMA, per-thread register tiles; f32 on any GPU";
  }
  bool serves(dtype t) const override { return !is_tensor_core_dtype(t); }

  std::vector<tile_config> default_space(dtype) const override {
    std::vector<tile_config> out;
    for (int bm : {32, 64, 128})
      for (int bn : {32, 64, 128})
        for (int bk : {8, 16})
          for (int tm : {4, 8})
            for (int tn : {4, 8}) out.push_back(simt_tile(bm, bn, bk, tm, tn));
    return out;
  }

  std::optional<constraint_violation> check(const tile_config& c, const gemm_problem& p,
                                            const device_spec&) const override {
    if (c.split_k != 1)
      return violation("split_k", fmt::format("the simt family has no split-K (asked {})", c.split_k));
    if (p.type != dtype::f32)
      return violation("dtype", fmt::format("the simt family runs f32, not {}", to_string(p.type)));
    if (c.block_m % simt_thread_m(c) || c.block_n % simt_thread_n(c))
      return violation("thread_tile", "the thread tile does not divide the block tile");
    const int threads = c.threads();
    // Fewer than 2 warps cannot hide latency; more than 8 leave too few registers per thread.
    if (threads < 64 || threads > 256)
      return violation("threads_per_block",
                       fmt::format("{} threads per block; the simt family uses 64 to 256", threads));
    const int per_load = threads * simt_vector_width(c);
    if ((c.block_m * c.block_k) % per_load || (c.block_n * c.block_k) % per_load)
      return violation("load_balance",
                       fmt::format("{} threads with {}-wide loads do not evenly load a {}x{} and a "
                                   "{}x{} tile",
                                   threads, simt_vector_width(c), c.block_m, c.block_k, c.block_k, c.block_n));
    return std::nullopt;
  }

  // An FFMA's two fp32 factors (an element of A and one of B) beside the accumulators.
  int operand_registers(const tile_config&) const override { return 2; }
  int threads(const tile_config& c) const override {
    return (simt_thread_m(c) && simt_thread_n(c)) ? (c.block_m / simt_thread_m(c)) * (c.block_n / simt_thread_n(c)) : 0;
  }
  std::int64_t smem_bytes(const tile_config& c, dtype) const override {
    // Two buffers of As[BK][BM] and Bs[BK][BN], fp32.
    const std::int64_t bm = c.block_m, bn = c.block_n, bk = c.block_k;
    return 2 * (bk * bm + bk * bn) * 4;
  }
  std::string id_suffix(const tile_config& c) const override {
    std::string s = fmt::format("_t{}x{}_v{}", simt_thread_m(c), simt_thread_n(c), simt_vector_width(c)) + split_k_id_suffix(c);
    if (c.raster_group > 0) s += raster_id_suffix(c);
    return s;
  }
  void to_json(const tile_config& c, nlohmann::json& j) const override {
    j["thread_m"] = simt_thread_m(c);
    j["thread_n"] = simt_thread_n(c);
    j["vector_width"] = simt_vector_width(c);
  }
  // Older records name no family; a tile without warps is this one's.
  bool claims_json(const nlohmann::json& j) const override { return !j.contains("warps_m"); }
  void from_json(const nlohmann::json& j, tile_config& c) const override {
    simt_thread_m(c) = j.at("thread_m").get<int>();
    simt_thread_n(c) = j.at("thread_n").get<int>();
    simt_vector_width(c) = j.at("vector_width").get<int>();
  }

  std::string render(const tile_config& c, dtype, layout) const override {
    std::string s = fmt::format("#define TT_TM {}\n#define TT_TN {}\n#define TT_VEC {}\n", simt_thread_m(c),
                                simt_thread_n(c), simt_vector_width(c));
    s.reserve(32 * 1024);
    s += fmt::format("#define TT_SPLIT_K {}\n#define TT_RASTER_GROUP {}\n#define TT_RASTER_ALONG_N {}\n", c.split_k,
                     c.raster_group, c.raster_along_n ? 1 : 0);
    for (const char* name : {"common/gemm_common.cuh", "common/tile_addressing.cuh", "simt/simt_addressing.cuh",
                             "simt/simt_gemm.cu"})
      append_template(s, name);
    return s;
  }

  kernel_launch describe_launch(const tile_config& c, const gemm_problem& p, const device_spec&) const override {
    return tile_grid_launch(c, p);
  }

  // The template's last change (8ce6b07); since then it only moved between files: the same variants
  // measured alike on the H200 on 2026-11-26 and 2026-12-04 (1.00, docs/model.md).
  static constexpr std::string_view revision = "2026-11-22T11:22:52Z";
  std::string_view revised(const tile_config&) const override { return revision; }
  std::string_view newest_revision() const override { return revision; }

  double attainable_efficiency(int) const override { return 0.85; }
  // A warp's FFMA holds its sub-partition's FP32 lanes for 128 / (lanes per SM) clocks (1 on an
  // H100 or an RTX 4090, 2 on an A100); every other instruction of the loop takes an issue slot.
  double issue_factor(const tile_config& c, dtype, const device_spec& d) const override {
    const double lanes = d.peak_tflops_f32 * 1e12 / (d.sm_count * d.boost_clock_mhz * 1e6 * 2);
    const simt_loop_mix mix = simt_loop_instructions(c);
    if (!(lanes > 0) || !(mix.total() > 0)) return 1.0;
    return std::min(1.0, mix.ffma * (128 / lanes) / mix.total());
  }
  // Per warp and k: its FFMA against the wavefronts (128 bytes each) its float4 reads take
  // (simt_read_wavefronts).
  smem_traffic shared_memory_traffic(const tile_config& c, dtype) const override {
    return {2.0 * simt_thread_m(c) * simt_thread_n(c) * 32, 128.0 * simt_read_wavefronts(c)};
  }

  std::string_view cutlass_op_class() const override { return "simt"; }
  std::string cutlass_shape(const tile_config& c, dtype) const override {
    return fmt::format("ThreadblockShape<{},{},{}> (SIMT, {} threads, thread tile {}x{})", c.block_m, c.block_n,
                       c.block_k, c.threads(), simt_thread_m(c), simt_thread_n(c));
  }
};

}  // namespace

const gemm_family& simt_family() {
  static const simt family;
  return family;
}

int simt_read_wavefronts(const tile_config& c) {
  const int tm = simt_thread_m(c), tn = simt_thread_n(c);
  if (tm <= 0 || tn <= 0 || c.block_n % tn) return 0;
  const int columns = c.block_n / tn;  // threads along a row of the block: tc = tid % columns
  // One float4 read of every lane of warp 0 (all warps alike): lane -> its 16-byte chunk. A
  // quarter's distinct chunks, counted by their group of 4 banks (8 chunk positions in 128 bytes).
  auto wavefronts = [&](auto chunk_of) {
    int total = 0;
    for (int quarter = 0; quarter < 4; ++quarter) {
      std::array<int, 8> chunks{}, per_group{};
      for (int l = 0; l < 8; ++l) chunks[l] = chunk_of(8 * quarter + l);
      std::sort(chunks.begin(), chunks.end());
      const auto distinct = std::unique(chunks.begin(), chunks.end());
      for (auto it = chunks.begin(); it != distinct; ++it) ++per_group[*it % 8];
      total += *std::max_element(per_group.begin(), per_group.end());
    }
    return total;
  };
  int total = 0;
  for (int i = 0; i < tm; i += 4) total += wavefronts([&](int lane) { return (lane / columns) * tm / 4 + i / 4; });
  for (int j = 0; j < tn; j += 4) total += wavefronts([&](int lane) { return (lane % columns) * tn / 4 + j / 4; });
  return total;
}

simt_loop_mix simt_loop_instructions(const tile_config& c) {
  simt_loop_mix m;
  const int threads = c.threads(), vec = simt_vector_width(c);
  if (threads <= 0 || vec <= 0) return m;
  const double tm = simt_thread_m(c), tn = simt_thread_n(c), bk = c.block_k;
  const double loads = static_cast<double>(c.block_m + c.block_n) * bk / (threads * vec);
  m.ffma = tm * tn * bk;
  m.lds = (tm + tn) / 4 * bk;
  m.other = std::max(0.0, 64 * loads - 10);
  return m;
}

tile_config simt_tile(int block_m, int block_n, int block_k, int thread_m, int thread_n, int vector_width) {
  tile_config c;
  c.family = kernel_family{&simt_family()};
  c.block_m = block_m;
  c.block_n = block_n;
  c.block_k = block_k;
  simt_thread_m(c) = thread_m;
  simt_thread_n(c) = thread_n;
  simt_vector_width(c) = vector_width;
  c.stages = 2;  // registers -> shared double buffering
  return c;
}

}  // namespace tiletune
