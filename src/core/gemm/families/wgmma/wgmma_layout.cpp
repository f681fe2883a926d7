#include "core/gemm/families/wgmma/wgmma_layout.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/gemm/families/wgmma/wgmma_family.hpp"

// The template's own layout code, compiled for the host so the two cannot drift.
#define TT_HOST_DEVICE inline
#include "wgmma/wgmma_tile_math.cuh"
#include "wgmma/wgmma_schedule.cuh"

namespace tiletune {

std::int64_t wgmma_smem_bytes(const tile_config& c, dtype t) {
  return 1024 + tt_smem_total(c.block_m, c.block_n, c.block_k, element_bytes(t), c.stages, wgmma_consumers(c));
}

int wgmma_instruction_k(dtype t) { return element_bytes(t) == 2 ? 16 : 8; }

std::string wgmma_instruction_source(dtype t, int n, layout l) {
  const int regs = n / 2;
  std::string outs;
  for (int i = 0; i < regs; ++i) outs += fmt::format("{}%{}", i ? "," : "", i);
  std::string type;
  std::string immediates;  // scale-a, scale-b, then the 16-bit types' transposes
  switch (t) {
    case dtype::f16: type = "f16.f16"; break;
    case dtype::bf16: type = "bf16.bf16"; break;
    default: type = "tf32.tf32"; break;
  }
  if (element_bytes(t) == 2) {
    // A 't' (stored K x M) and B 'n' (stored K x N) are MN-major: transposed.
    immediates = fmt::format("1, 1, {}, {}", l.a_transposed ? 1 : 0, l.b_transposed ? 0 : 1);
  } else {
    immediates = "1, 1";
  }
  std::string s = "__device__ __forceinline__ void tt_wgmma(float* d, unsigned long long desc_a,\n"
                  "                                         unsigned long long desc_b, int scale_d) {\n"
                  "  asm volatile(\n";
  s += "      \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + std::to_string(regs + 2) + ", 0;\\n\"\n";
  s += fmt::format("      \"wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{} {{{}}}, %{}, %{}, p, {};\\n}}\\n\"\n",
                   n, wgmma_instruction_k(t), type, outs, regs, regs + 1, immediates);
  s += "      : ";
  for (int i = 0; i < regs; ++i) s += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
  s += "\n      : \"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d));\n}\n";
  return s;
}

namespace {
std::int64_t output_tiles(const tile_config& c, const gemm_problem& p) {
  return ((p.m + c.block_m - 1) / c.block_m) * ((p.n + c.block_n - 1) / c.block_n) * p.batch;
}
}  // namespace

std::int64_t wgmma_grid_size(const tile_config& c, const gemm_problem& p, int sm_count) {
  const std::int64_t sms = std::max(sm_count, 1);
  if (wgmma_stream_k(c)) return sms;
  return std::max<std::int64_t>(1, std::min<std::int64_t>(output_tiles(c, p), sms));
}

wgmma_stream_k_plan wgmma_stream_k_schedule(const tile_config& c, const gemm_problem& p, int sm_count) {
  const int k_tiles = static_cast<int>((p.k + c.block_k - 1) / c.block_k);
  const tt_schedule s = tt_make_schedule(output_tiles(c, p), k_tiles, static_cast<int>(wgmma_grid_size(c, p, sm_count)),
                                         wgmma_stream_k_min_unit, wgmma_stream_k(c) ? 1 : 0);
  return {s.tiles, s.dp_tiles, s.sk_iters, s.k_tiles, s.ctas, s.sk_workers};
}

std::int64_t wgmma_stream_k_workspace_bytes(const tile_config& c, const gemm_problem& p, int sm_count) {
  if (!wgmma_stream_k(c)) return 0;
  return tt_sk_workspace_bytes(wgmma_stream_k_schedule(c, p, sm_count).sk_workers, c.block_m * c.block_n);
}

}  // namespace tiletune
