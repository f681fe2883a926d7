// The host emulation of the wgmma kernel's data path (kernels_templates/wgmma/), written from the
// PTX ISA and the CUDA driver API rather than from the kernel: element formats, TMA boxes into
// 128-byte-swizzled shared memory, wgmma's operand fetch from its descriptors and its fragments,
// and the whole kernel (emulate_kernel) as the rendered variant and its launch description say,
// with planted defects switched in by the tests only (`defects`). Shared by
// wgmma_datapath_emulation_test (the pieces, the default variants, stream-K) and
// wgmma_emulation_mechanisms_test (swap-AB, split-K in a cluster, TMA store, ping-pong, multicast).
// The pieces are in wgmma_emulation_parts.hpp; this header is the whole kernel.
#pragma once

#include <string>
#include <vector>

#include "wgmma_emulation_parts.hpp"

namespace wgmma_emu {

// ---- the whole kernel --------------------------------------------------------
struct emulation {
  std::vector<std::uint8_t> c;
  std::vector<int> writes;  // per element of C: how often the epilogue stored it
  std::vector<std::string> errors;
};

// Runs tiletune_gemm for variant c on problem p the way wgmma_gemm.cu does,
// CTA by CTA over a persistent grid of `sm_count`-limited size (fewer CTAs
// than tiles walks the stage ring across tiles), each CTA through its units of
// the schedule (wgmma_schedule.cuh). Producer and consumers run in lock step
// here: their interleavings are the ring model checker's business, the
// stream-K fixup's order the fixup model checker's; here every peer has
// published (into an emulated workspace, NaN until written) before its owner
// adds the partials, so what is checked is the data: which k-tiles each unit
// multiplies, where partials go and come from, and the sum the owner stores.
// The value of `#define NAME value` in a rendered kernel source (0 when it is not defined).
inline int rendered_macro(const std::string& source, const std::string& name) {
  const std::string key = "#define " + name + " ";
  const auto at = source.find(key);
  return at == std::string::npos ? 0 : std::stoi(source.substr(at + key.size()));
}

inline emulation emulate_kernel(const tile_config& c, const gemm_problem& p,
                         const std::vector<std::uint8_t>& a_in,
                         const std::vector<std::uint8_t>& b_in,
                         const std::vector<std::uint8_t>& c_in, int sm_count,
                         const defects& d = {}, int stream_k = 0, const problem_scales* scales = nullptr) {
  emulation out;
  auto& errors = out.errors;
  const dtype t = p.type;
  const int eb = element_bytes(t);  // A's and B's; C's are ceb, stored as c_store
  const dtype c_store = c_dtype(p);
  const int ceb = element_bytes(c_store);
  // What the kernel is told: its rendered macros (swap-AB, raster order) and its launch
  // description (which matrix each tensor map holds, the M and N it gets). With swap-AB the
  // kernel computes C^T: its A is the problem's B, its M the problem's N, and it stores C
  // transposed; everything below is in the kernel's terms.
  const std::string source = render_kernel_source(c, t, p.layout);
  const bool swap = rendered_macro(source, "TT_SWAP_AB") != 0;
  const bool tma_store = rendered_macro(source, "TT_TMA_STORE") != 0;
  const int raster_n = rendered_macro(source, "TT_RASTER_N");
  kernel_launch launch = c.family->describe_launch(c, p, find_preset("h100-sxm"));
  auto map_tensor = [&](const char* parameter) {
    for (const auto& m : launch.tensor_maps)
      if (m.parameter == parameter) return m.tensor;
    errors.push_back(fmt::format("the launch has no tensor map {}", parameter));
    return std::string("A");
  };
  const std::string a_tensor = map_tensor("tmap_a"), b_tensor = map_tensor("tmap_b");
  char a_matrix = a_tensor[0], b_matrix = b_tensor[0];
  if (d.swap_maps_in_problem_order) a_matrix = 'A', b_matrix = 'B';
  // K-major copies (TT_K_MAJOR_COPIES): the prologue's launches first, each writing its operand's
  // copy; a map whose tensor is the copy reads it. The kernel reads both operands K-major.
  const bool copies = rendered_macro(source, "TT_K_MAJOR_COPIES") != 0;
  std::vector<std::uint8_t> copy_of[2];
  if (copies != !launch.prologue.empty())
    errors.push_back(fmt::format("TT_K_MAJOR_COPIES {} with {} prologue launches", copies, launch.prologue.size()));
  for (const kernel_launch& before : launch.prologue) {
    const char operand = before.parameters.at(0).name.at(0);
    if (before.parameters.at(1).name != std::string(1, operand) + "_k_major")
      errors.push_back(fmt::format("{} writes {}, not {}'s copy", before.entry, before.parameters.at(1).name, operand));
    if (!d.copy_skipped)
      emulate_transpose(before, eb, operand == 'A' ? a_in : b_in, copy_of[operand - 'A'],
                        {d.copy_rows_of_cols, d.copy_unguarded, d.copy_pad_unwritten, d.copy_k_major_as_mn}, errors);
    else
      copy_of[operand - 'A'].assign(static_cast<std::size_t>(before.parameters.at(1).buffer_bytes), 0);
  }
  auto operand_memory = [&](char matrix, const std::string& tensor) -> const std::vector<std::uint8_t>& {
    if (tensor.size() > 1 && !d.copy_maps_operand) {
      if (copy_of[matrix - 'A'].empty()) errors.push_back(fmt::format("a map of {}, which no prologue writes", tensor));
      return copy_of[matrix - 'A'];
    }
    return matrix == 'B' ? b_in : a_in;
  };
  const std::vector<std::uint8_t>& ka_in = operand_memory(a_matrix, a_tensor);
  const std::vector<std::uint8_t>& kb_in = operand_memory(b_matrix, b_tensor);
  const int bm = swap ? c.block_n : c.block_m, bn = swap ? c.block_m : c.block_n, bk = c.block_k,
            stages = c.stages, consumers = wgmma_consumers(c);
  // Ping-pong: the consumer of a unit (tt_pingpong_mine) computes all its rows; the other passes.
  const bool pingpong = rendered_macro(source, "TT_PINGPONG") != 0;
  const int wg_m = pingpong ? bm : bm / consumers, mi_count = wg_m / 64;
  auto row_of = [&](int consumer) { return pingpong ? 0 : consumer * wg_m; };
  int only_consumer = -1;  // ping-pong: the consumer of the unit at hand
  const int mma_k = wgmma_instruction_k(t);
  // The kernel's TT_A_KMAJOR / TT_B_KMAJOR: A 'n' and B 't' are K-major; with swap-AB its A is
  // the problem's B (K-major when 't') and its B the problem's A (K-major when 'n').
  const layout kl = copies ? layout{false, true} : p.layout;
  const bool a_kmajor = swap ? kl.b_transposed : !kl.a_transposed;
  const bool b_kmajor = swap ? !kl.a_transposed : kl.b_transposed;
  // The instruction as the rendered source has it (its shape, transposes and operand types).
  wgmma_instruction ins = parse_instruction_text(source);
  if (d.mixed_types_unswapped && swap) std::swap(ins.a_type, ins.b_type);
  if (d.mixed_as_one_format) ins.b_type = ins.a_type;
  tensor_core tc_unit(ins, t);
  tc_unit.accumulator_bits = d.accumulator_mantissa_bits;
  // fp8 (TT_PROMOTE, wgmma_fp8.cuh): each interval's QGMMAs into a partial set, then added into acc.
  // Fast accumulation (TT_FAST_ACCUMULATION): fp8 without promotion, every QGMMA into acc.
  const int promote = rendered_macro(source, "TT_PROMOTE");
  const bool fast = rendered_macro(source, "TT_FAST_ACCUMULATION") != 0;
  if (is_fp8(t) != (promote > 0 || fast) || (promote > 0 && fast))
    errors.push_back(fmt::format("{} rendered with TT_PROMOTE {} and TT_FAST_ACCUMULATION {}", to_string(t), promote,
                                 fast));
  // fp8 scales (TT_SCALING 1 rowwise, 2 block), read through the kernel's index math; a read past
  // the caller's scale buffers is an error.
  const int scaling = rendered_macro(source, "TT_SCALING");
  if (scaling != (p.scaling == scaling_mode::rowwise ? 1 : p.scaling == scaling_mode::block ? 2 : 0) ||
      (scaling && (!scales || scales->a.empty())))
    errors.push_back(fmt::format("TT_SCALING {} for a problem scaled {}", scaling, to_string(p.scaling)));
  auto scale_at = [&](const std::vector<float>& v, long long i) {
    if (i < 0 || i >= static_cast<long long>(v.size())) {
      errors.push_back(fmt::format("a scale read at {} of {}", i, v.size()));
      return 0.0f;
    }
    return v[static_cast<std::size_t>(i)];
  };
  if (ins.n != bn || ins.k != mma_k || ins.a_mn_major != !a_kmajor || ins.b_mn_major != !b_kmajor)
    errors.push_back(
        fmt::format("instruction m64n{}k{} trans {}/{} does not fit the variant's operands", ins.n,
                    ins.k, ins.a_mn_major, ins.b_mn_major));
  const tensor_map_spec map_a = tensor_map_for(p, c, static_cast<char>(a_matrix - 'A' + 'a')),
                        map_b = tensor_map_for(p, c, static_cast<char>(b_matrix - 'A' + 'a'));

  // Dynamic shared memory starts wherever the driver puts it; the kernel
  // rounds up to 1024 within wgmma_smem_bytes' slack.
  const std::uint32_t raw = 0x230;
  shared_memory smem;
  smem.bytes.assign(raw + static_cast<std::size_t>(wgmma_smem_bytes(c, t)), 0xFF);
  const std::uint32_t base = raw + ((1024 - (raw & 1023)) & 1023);
  if (base + static_cast<std::uint32_t>(tt_smem_total(bm, bn, bk, eb, stages, swap ? 0 : consumers)) >
      smem.bytes.size())
    errors.push_back("the aligned layout does not fit wgmma_smem_bytes");
  const std::uint32_t a_stage = static_cast<std::uint32_t>(tt_smem_a_stage(bm, bk, eb));
  const std::uint32_t b_stage = static_cast<std::uint32_t>(tt_smem_b_stage(bn, bk, eb));
  const std::uint32_t a_base = base, b_base = base + stages * a_stage;
  const std::uint32_t epi_base =
      base + static_cast<std::uint32_t>(tt_smem_epilogue_offset(bm, bn, bk, eb, stages));
  // Block scales by TMA (TT_TMA_SCALES, wgmma_fp8.cuh): each stage's A scales after everything else,
  // inside what wgmma_smem_bytes sized.
  const bool tma_scales = rendered_macro(source, "TT_TMA_SCALES") != 0;
  const tt_smem_layout layout = {bm, bn, bk, eb, stages, swap || tma_store ? 0 : consumers, tma_store ? consumers : 0,
                                 std::max(1, rendered_macro(source, "TT_CLUSTER_SPLIT")), pingpong ? 1 : 0,
                                 tma_scales ? tt_scale_stage_bytes(bm) : 0};
  const std::uint32_t scale_stage = static_cast<std::uint32_t>(layout.scale_stage);
  const std::uint32_t scales_base = base + static_cast<std::uint32_t>(tt_smem_scales_offset(layout));
  if (tma_scales && (scaling != 2 || swap || scales_base % 16 != 0 ||
                     scales_base + stages * scale_stage > smem.bytes.size()))
    errors.push_back(fmt::format("TT_TMA_SCALES: scaling {}, swap-AB {}, the stages' scales at {:#x} + {} x {} in {} "
                                 "bytes", scaling, swap, scales_base, stages, scale_stage, smem.bytes.size()));

  const int M = static_cast<int>(parameter_named(launch, "M").value.get<std::int64_t>()),
            N = static_cast<int>(parameter_named(launch, "N").value.get<std::int64_t>()),
            ldc = static_cast<int>(p.ldc());
  const int m_tiles = (M + bm - 1) / bm, n_tiles = (N + bn - 1) / bn;
  const long long tiles = static_cast<long long>(m_tiles) * n_tiles * p.batch;
  const int k_tiles = static_cast<int>((p.k + bk - 1) / bk);
  const int grid = static_cast<int>(wgmma_grid_size(c, p, sm_count));
  const long long batch_stride_c = p.m * p.n;
  const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  // C is 16-byte aligned here, as the runtime's allocations are.
  const bool c_vectors = (ldc * ceb) % 16 == 0 && (batch_stride_c * ceb) % 16 == 0;
  const unsigned lbo_a = tt_operand_lbo(a_kmajor, bk), lbo_b = tt_operand_lbo(b_kmajor, bk);
  const unsigned sbo = tt_operand_sbo();
  auto desc = [&](unsigned addr, unsigned lbo) {
    std::uint64_t v =
        d.swap_lbo_sbo ? tt_wgmma_desc(addr, sbo, lbo) : tt_wgmma_desc(addr, lbo, sbo);
    if (d.descriptor_no_swizzle) v &= ~(3ull << 62);
    return v;
  };
  out.c = c_in;
  out.writes.assign(static_cast<std::size_t>(p.m * p.n * p.batch), 0);
  const int epi_n = 128 / ceb;  // TT_EPI_N

  // Cluster split-K: the launch's grid in clusters of `split` CTAs, which walk the tiles whole.
  const int split = std::max(1, rendered_macro(source, "TT_CLUSTER_SPLIT"));
  if (split > 1 && (launch.cluster[0] != split || launch.grid[0] % split != 0 || stream_k))
    errors.push_back(fmt::format("cluster split-K {} launched as grid {} in clusters of {}", split, launch.grid[0],
                                 launch.cluster[0]));
  // 2x1 clusters with TMA multicast: the grid's clusters walk pairs of M tiles (tt_multicast_*).
  const bool multicast = rendered_macro(source, "TT_CLUSTER_M") == 2;
  if (multicast && (launch.cluster[0] != 2 || launch.grid[0] % 2 != 0))
    errors.push_back(fmt::format("a 2x1 cluster launched as grid {} in clusters of {}", launch.grid[0], launch.cluster[0]));
  const int sm_grid = split > 1 || multicast ? static_cast<int>(launch.grid[0]) : stream_k ? sm_count : grid;
  const int cluster_size = multicast ? 2 : split;
  const tt_schedule sched =
      multicast ? tt_make_schedule(tt_multicast_pairs(m_tiles, n_tiles, static_cast<int>(p.batch)), k_tiles, sm_grid / 2, 8, 0)
                : tt_make_schedule(tiles, k_tiles, sm_grid / split, 8, split > 1 ? 0 : stream_k);
  // The leaders' buffers: slot s of the i-th tile of cluster c, NaN until a peer writes it.
  std::map<std::array<int, 3>, std::vector<float>> split_slots;
  const int consumer_threads = 128 * consumers, slot_floats = bm * bn;
  std::vector<float> workspace(static_cast<std::size_t>(sched.sk_workers) * slot_floats,
                               std::numeric_limits<float>::quiet_NaN());
  // A consumer thread's accumulator `value` (the kernel's mi * BN/2 + i) in a unit's accumulators.
  auto acc_value = [&](std::vector<accumulators>& acc, int ct, int value) -> float& {
    const int consumer = ct / 128, warp = ct / 32 % 4, lane = ct % 32;
    return acc[static_cast<std::size_t>(consumer * mi_count + value / (bn / 2))].at(warp, lane, value % (bn / 2));
  };
  struct waiting_owner {
    tt_work_unit u;
    tt_tile_coord tc;
    std::vector<accumulators> acc;
  };
  std::vector<waiting_owner> owners;
  // f(value, row, column) for every accumulator of the unit's consumers (ping-pong: its one), at the
  // kernel's row and column as the kernel's fragment map (tt_acc_*) places them.
  auto each_accumulator = [&](std::vector<accumulators>& acc, int m0, int n0, const auto& f) {
    for (int consumer = 0; consumer < consumers; ++consumer)
      if (only_consumer < 0 || consumer == only_consumer)
        for (int mi = 0; mi < mi_count; ++mi)
          for (int warp = 0; warp < 4; ++warp)
            for (int lane = 0; lane < 32; ++lane)
              for (int j = 0; j < bn / 8; ++j)
                for (int h = 0; h < 2; ++h)
                  for (int e = 0; e < 2; ++e)
                    f(acc[static_cast<std::size_t>(consumer * mi_count + mi)].at(warp, lane, tt_acc_index(j, h, e)),
                      m0 + row_of(consumer) + mi * 64 + tt_acc_warp_row0(warp) + tt_acc_row(lane, h),
                      n0 + tt_acc_col(lane, j, e));
  };
  std::function<void(const tt_tile_coord&, std::vector<accumulators>&)> epilogue;
  epilogue = [&](const tt_tile_coord& tc, std::vector<accumulators>& acc) {
    const int m0 = tc.m_tile * bm, n0 = tc.n_tile * bn;
    if (scaling == 1)  // tt_scale_rows_columns: every accumulator times its row's and its column's scale
      each_accumulator(acc, m0, n0, [&](float& v, int r, int col) {
        // The kernel's rows and columns (M, N its parameters): with swap-AB C's columns and rows,
        // so its row scales are B's and its column scales A's.
        const std::vector<float>& rows = swap && !d.swap_scales_unswapped ? scales->b : scales->a;
        const std::vector<float>& cols = swap && !d.swap_scales_unswapped ? scales->a : scales->b;
        const float sb = d.rowwise_without_b ? 1.0f : scale_at(cols, std::min(col, N - 1));
        v *= scale_at(rows, std::min(r, M - 1)) * sb;
      });
    if (tma_store) {
      // The TMA-c_store epilogue (tt_epilogue_tma): per consumer, m64 tile and 64-column chunk, each
      // warp's stmatrix .m8n8.x4 as the PTX ISA defines it (lane 8m + r gives the address of row r
      // of matrix m; thread t's register m holds row t / 4, columns 2(t % 4) and +1) into a
      // 64-row x 128-byte staging buffer, then the bulk tensor c_store of the box at (column, row,
      // batch) through C's tensor map: read through the driver's 128-byte swizzle, written only
      // where the map's dimensions hold the element.
      const tensor_map_spec map_c = tensor_map_for(p, c, 'c');
      const long long cbatch_bytes = static_cast<long long>(tc.batch) * static_cast<long long>(map_c.strides_bytes[1]);
      for (int consumer = 0; consumer < consumers && errors.empty(); ++consumer)
        if (only_consumer < 0 || consumer == only_consumer)
        for (int mi = 0; mi < mi_count; ++mi)
          for (int chunk = 0; chunk < bn / 64; ++chunk) {
            std::vector<std::uint8_t> staging(TT_TMA_STORE_BUFFER_BYTES, 0xFF);
            const long long row0 = m0 + row_of(consumer) + mi * 64, col0 = n0 + 64 * chunk;
            if (beta != 0.0f) {
              // The leader's TMA load of C's box through the same map: swizzled like the store's
              // read, elements outside C zero-filled.
              const long long load_col0 = col0 + (d.tma_c_load_next_chunk ? 64 : 0);
              for (int row = 0; row < static_cast<int>(map_c.box[1]); ++row)
                for (int col = 0; col < static_cast<int>(map_c.box[0]); ++col) {
                  const long long gr = row0 + row, gc = load_col0 + col;
                  const auto at = static_cast<std::uint32_t>(row * 128 + col * ceb);
                  std::uint8_t* dst = staging.data() + (d.tma_c_load_no_swizzle ? at : swizzle_128b(at));
                  if (gc < static_cast<long long>(map_c.dims[0]) && gr < static_cast<long long>(map_c.dims[1]))
                    std::memcpy(dst, out.c.data() + (cbatch_bytes / ceb + gr * static_cast<long long>(map_c.strides_bytes[0]) / ceb + gc) * ceb,
                                static_cast<std::size_t>(ceb));
                  else
                    std::memset(dst, 0, static_cast<std::size_t>(ceb));
                }
            }
            for (int warp = 0; warp < 4; ++warp) {
              accumulators& a = acc[static_cast<std::size_t>(consumer * mi_count + mi)];
              for (int jj = 0; jj < 8; jj += 2) {
                const int j = chunk * 8 + jj;
                auto reg = [&](int t, int i, int e) {
                  return alpha * a.at(warp, t, tt_stmatrix_acc(i, j, e));
                };
                for (int m = 0; m < 4; ++m)
                  for (int r = 0; r < 8; ++r) {
                    const int lane = 8 * m + r;
                    const int row = 16 * warp + (d.tma_stmatrix_rows_off_by_8 ? (lane & 7) : tt_stmatrix_row(lane));
                    const int block = tt_stmatrix_block(lane, jj);
                    const unsigned addr = d.tma_staging_no_swizzle ? static_cast<unsigned>(row * 128 + block * 16)
                                                                   : tt_staging_offset(row, block);
                    // With beta != 0, ldmatrix x4 from the same addresses first: thread t's
                    // register m holds the same two elements it then writes.
                    for (int t = 4 * r; t < 4 * r + 4; ++t)
                      for (int e = 0; e < 2; ++e) {
                        std::uint8_t* at = staging.data() + addr + 4 * (t % 4) + 2 * e;
                        float v = reg(t, m, e);
                        if (beta != 0.0f) v += beta * load_element(at, c_store);
                        store_element(at, c_store, v);
                      }
                  }
              }
            }
            for (int row = 0; row < static_cast<int>(map_c.box[1]); ++row)
              for (int col = 0; col < static_cast<int>(map_c.box[0]); ++col) {
                const long long gr = row0 + row, gc = col0 + col;
                const bool inside = gc < static_cast<long long>(map_c.dims[0]) && gr < static_cast<long long>(map_c.dims[1]);
                if (!inside && !d.tma_store_unclipped) continue;
                const long long byte = cbatch_bytes + gr * static_cast<long long>(map_c.strides_bytes[0]) + gc * ceb;
                const long long at = byte / ceb;
                if (at < 0 || at >= static_cast<long long>(out.writes.size())) {
                  errors.push_back(fmt::format("the TMA store writes outside C (element {})", at));
                  return;
                }
                std::memcpy(out.c.data() + at * ceb, staging.data() + swizzle_128b(static_cast<std::uint32_t>(row * 128 + col * ceb)),
                            static_cast<std::size_t>(ceb));
                ++out.writes[static_cast<std::size_t>(at)];
              }
          }
      return;
    }
    if (swap) {
      // Swap-AB (tt_epilogue_transposed): the value at the kernel's row r and column c goes
      // to C[c][r] straight from the accumulators; the kernel's columns at or past N (C's rows
      // past M, which TMA zero-filled) and rows at or past M are never stored.
      const long long cbatch = tc.batch * batch_stride_c;
      each_accumulator(acc, m0, n0, [&](float& a, int r, int kernel_col) {
        const int col = kernel_col + (d.fragment_col_off_by_one ? 1 : 0);
        if (!errors.empty() || r >= M || (col >= N && !d.swap_stores_padded_rows)) return;
        const long long at = cbatch + (d.swap_store_untransposed ? static_cast<long long>(r) * ldc + col
                                                                 : static_cast<long long>(col) * ldc + r);
        if (at < 0 || at >= static_cast<long long>(out.writes.size())) {
          errors.push_back(fmt::format("the epilogue stores outside C (element {})", at));
          return;
        }
        std::uint8_t* cp = out.c.data() + at * ceb;
        float v = alpha * a;
        if (beta != 0.0f) v += beta * load_element(cp, c_store);
        store_element(cp, c_store, v);
        ++out.writes[static_cast<std::size_t>(at)];
      });
      return;
    }
    // Epilogue (tt_epilogue): each warp stages 16 rows x 128 bytes of C in its
    // own shared buffer and copies them out as 16-byte vectors, or element by
    // element at the edges and for unaligned C.
  for (int consumer = 0; consumer < consumers && errors.empty(); ++consumer)
        if (only_consumer < 0 || consumer == only_consumer)
    for (int mi = 0; mi < mi_count; ++mi)
      for (int warp = 0; warp < 4; ++warp) {
        accumulators& a = acc[static_cast<std::size_t>(consumer * mi_count + mi)];
        const std::uint32_t stage_buf =
            epi_base +
            static_cast<std::uint32_t>((consumer * 4 + warp) * 16 * TT_EPI_ROW_BYTES);
        const int row0 = m0 + row_of(consumer) + mi * 64 + tt_acc_warp_row0(warp);
        const long long cbatch = tc.batch * batch_stride_c;
        auto c_at = [&](int gr, int gc) {
          return out.c.data() + (cbatch + static_cast<long long>(gr) * ldc + gc) * ceb;
        };
        for (int chunk = 0; chunk < bn / epi_n; ++chunk) {
          const int cc0 = n0 + chunk * epi_n;
          std::fill_n(smem.bytes.begin() + stage_buf, 16 * TT_EPI_ROW_BYTES, 0xFF);
          for (int lane = 0; lane < 32; ++lane)
            for (int j = 0; j < epi_n / 8; ++j) {
              const int jj = chunk * (epi_n / 8) + j;
              for (int h = 0; h < 2; ++h) {
                const int r = tt_acc_row(lane, h);
                const int col = tt_acc_col(lane, j, 0) + (d.fragment_col_off_by_one ? 1 : 0);
                float v0 = alpha * a.at(warp, lane, tt_acc_index(jj, h, 0));
                float v1 = alpha * a.at(warp, lane, tt_acc_index(jj, h, 1));
                if (beta != 0.0f) {
                  const int gr = row0 + r, gc = cc0 + col;
                  if (gr < M && gc < N) v0 += beta * load_element(c_at(gr, gc), c_store);
                  if (gr < M && gc + 1 < N) v1 += beta * load_element(c_at(gr, gc + 1), c_store);
                }
                std::uint8_t* s =
                    smem.bytes.data() + stage_buf + r * TT_EPI_ROW_BYTES + col * ceb;
                store_element(s, c_store, v0);
                store_element(s + ceb, c_store, v1);
              }
            }
          for (int lane = 0; lane < 32; ++lane)
            for (int pass = 0; pass < 4; ++pass) {
              const int r = tt_epi_copy_row(pass, lane), v = tt_epi_copy_vector(lane);
              const int gr = row0 + r, gc = cc0 + v * (16 / ceb);
              const std::uint8_t* x =
                  smem.bytes.data() + stage_buf + r * TT_EPI_ROW_BYTES + v * 16;
              if (gr >= M) continue;
              const int count =
                  (c_vectors && gc + 16 / ceb <= N) ? 16 / ceb : std::min(16 / ceb, N - gc);
              for (int i = 0; i < count; ++i) {
                std::memcpy(c_at(gr, gc + i), x + i * ceb, static_cast<std::size_t>(ceb));
                ++out.writes[static_cast<std::size_t>(
                    cbatch + static_cast<long long>(gr) * ldc + gc + i)];
              }
            }
        }
      }
  };

  for (int cta = 0; cta < sm_grid && errors.empty(); ++cta) {
    int p_stage = 0, c_stage = 0;  // the producer's and the consumers' walk of the ring
    unsigned p_phase = 0, c_phase = 0;
    const int cluster = cta / cluster_size, rank = cta % cluster_size;
    for (int ui = 0; ui < tt_units_of(sched, cluster) && errors.empty(); ++ui) {
      const tt_work_unit u = tt_split_unit(tt_unit(sched, cluster, ui), d.split_same_k_slice ? 0 : rank, split);
      only_consumer = pingpong ? (tt_pingpong_mine(ui, 0) ? 0 : 1) : -1;
      const tt_tile_coord tc =
          multicast ? tt_pair_tile(tt_tile_of(u.tile, (m_tiles + 1) / 2, n_tiles, c.raster_group, raster_n), rank)
                    : tt_tile_of(u.tile, m_tiles, n_tiles, c.raster_group, raster_n);
      const int m0 = tc.m_tile * bm, n0 = tc.n_tile * bn;
      std::vector<accumulators> acc(static_cast<std::size_t>(consumers * mi_count),
                                    accumulators(bn));
      std::vector<accumulators> part = acc;
      for (int kt = u.k_begin; kt < u.k_end && errors.empty(); ++kt) {
        // Producer: the stage was released; poison it so that bytes TMA does not write show.
        const std::uint32_t sa = a_base + p_stage * a_stage, sb = b_base + p_stage * b_stage;
        ++smem.generation;
        std::fill_n(smem.bytes.begin() + sa, a_stage, 0xFF);
        std::fill_n(smem.bytes.begin() + sb, b_stage, 0xFF);
        std::int64_t credited =
            load_operand(a_kmajor, bm, bk, sa, map_a, ka_in, smem, kt * bk, m0, tc.batch, d, errors);
        if (!multicast) {
          credited += load_operand(b_kmajor, bn, bk, sb, map_b, kb_in, smem, kt * bk, n0, tc.batch, d, errors);
        } else {
          // tt_load_half_multicast of both CTAs: each half lands in this CTA's stage as well.
          for (int half = 0; half < 2; ++half) {
            if (half != rank && d.multicast_own_half_only) continue;
            const int place = d.multicast_same_offset ? 0 : half;
            if (b_kmajor) {
              credited += tma_copy_box(map_b, kb_in, smem, sb + tt_multicast_kmajor_offset(bn, place), kt * bk,
                                       n0 + tt_multicast_first_row(bn, half), tc.batch, d, errors);
            } else {
              for (int j = 0; j < bn / 128; ++j) {
                const int box = tt_multicast_first_box(bn, half) + j;
                const int at = tt_multicast_first_box(bn, place) + j;
                credited += tma_copy_box(map_b, kb_in, smem, sb + static_cast<std::uint32_t>(at * bk * 128),
                                         n0 + 64 * box, kt * bk, tc.batch, d, errors);
              }
            }
          }
        }
        std::uint32_t announced = tt_stage_tx_bytes(bm, bn, bk, eb);
        if (tma_scales) {
          // The bulk copy of A's scales of this k-block (cp.async.bulk: 16-byte units from a 16-byte
          // aligned address, scale_a's buffer being aligned so), into the poisoned stage.
          const std::uint32_t ss = scales_base + p_stage * scale_stage;
          std::fill_n(smem.bytes.begin() + ss, scale_stage, 0xFF);
          const int kb = kt + (d.scale_k_block_off_by_one ? 1 : 0);
          const std::uint32_t bytes = d.scale_copy_whole_tile ? 4u * static_cast<std::uint32_t>(bm)
                                                              : tt_scale_a_copy_bytes(m0, bm, M);
          const long long first = tt_block_scale_a_index(kb, m0, M);
          if (bytes % 16 != 0 || (first * 4) % 16 != 0)
            errors.push_back(fmt::format("a bulk copy of {} bytes of scale_a from float {}: not 16-byte units", bytes, first));
          else if (bytes > 0 && (first < 0 || first + bytes / 4 > static_cast<long long>(scales->a.size())))
            errors.push_back(fmt::format("a bulk copy of scale_a's floats {}..{} of {}", first, first + bytes / 4,
                                         scales->a.size()));
          else if (bytes > 0)
            std::memcpy(smem.bytes.data() + ss, scales->a.data() + first, bytes);
          credited += bytes;
          announced += d.scale_copy_unannounced ? 0 : tt_scale_a_copy_bytes(m0, bm, M);
        }
        if (credited != announced)
          errors.push_back(fmt::format("TMA credits {} bytes, expect_tx announces {}", credited, announced));
        p_phase = tt_ring_advance(p_stage, p_phase, stages);
        // Consumers: the k-steps of this k-tile, as the kernel's loop builds them.
        const std::uint32_t ca = a_base + c_stage * a_stage, cb = b_base + c_stage * b_stage;
        for (int consumer = 0; consumer < consumers; ++consumer)
          if (only_consumer < 0 || consumer == only_consumer)
          for (int kk = 0; kk < bk; kk += mma_k) {
            const int kq = d.half_k_step ? kk / 2 : kk;
            const std::uint64_t db = desc(cb + tt_operand_offset(b_kmajor, 0, kq, bk, eb), lbo_b);
            for (int mi = 0; mi < mi_count; ++mi) {
              const std::uint64_t da = desc(
                  ca + tt_operand_offset(a_kmajor, row_of(consumer) + mi * 64, kq, bk, eb), lbo_a);
              const std::size_t at = static_cast<std::size_t>(consumer * mi_count + mi);
              if (!promote) {
                emulate_wgmma(tc_unit, smem, da, db, kt > u.k_begin || kk > 0, acc[at], errors);
                continue;
              }
              const bool scale_d = d.part_never_reset ? true
                                   : d.no_promotion   ? kt > u.k_begin || kk > 0
                                                      : tt_part_scale_d(kt, u.k_begin, promote, kk) != 0;
              emulate_wgmma(tc_unit, smem, da, db, scale_d, part[at], errors);
            }
          }
        if (promote) {
          const bool now = d.no_promotion              ? kt + 1 == u.k_end
                           : d.promote_only_on_interval ? (kt - u.k_begin + 1) % promote == 0
                                                        : tt_promotes_after(kt, u.k_begin, u.k_end, promote);
          const int n_blocks = (N + TT_SCALE_BLOCK - 1) / TT_SCALE_BLOCK;
          const int kb = kt + (d.scale_k_block_off_by_one ? 1 : 0);
          if (now)
            for (int consumer = 0; consumer < consumers; ++consumer)
              for (int mi = 0; mi < mi_count; ++mi)
                for (int warp = 0; warp < 4; ++warp)
                  for (int lane = 0; lane < 32; ++lane)
                    for (int r = 0; r < bn / 2; ++r) {
                      const std::size_t at = static_cast<std::size_t>(consumer * mi_count + mi);
                      float& a = acc[at].at(warp, lane, r);
                      const float pv = part[at].at(warp, lane, r);
                      if (scaling != 2) {
                        a += pv;
                        continue;
                      }
                      // The kernel's register r: 8-column block r / 4, row half (r / 2) % 2.
                      const int row = m0 + row_of(consumer) + mi * 64 + tt_acc_warp_row0(warp) + tt_acc_row(lane, (r >> 1) & 1);
                      float s = 0;
                      if (swap) {
                        // The kernel's rows are the weights' (B's blocks of 128 rows, M of them), its
                        // columns the tokens' (A's k-block scales, N of them).
                        const int col = n0 + tt_acc_col(lane, r >> 2, r & 1);
                        const int m_blocks = (M + TT_SCALE_BLOCK - 1) / TT_SCALE_BLOCK;
                        const std::vector<float>& rows = d.swap_scales_unswapped ? scales->a : scales->b;
                        const std::vector<float>& cols = d.swap_scales_unswapped ? scales->b : scales->a;
                        s = scale_at(rows, tt_block_scale_b_index(kb, row / TT_SCALE_BLOCK, m_blocks)) *
                            scale_at(cols, tt_block_scale_a_index(kb, col, N));
                      } else {
                        const int half = d.scale_b_first_block_only ? 0 : tt_scale_b_half(n0, r >> 2);
                        float sa = 0;
                        if (tma_scales) {  // tt_read_stage_scales: the row's scale in the stage
                          const int read_stage = d.scale_copy_next_stage ? (c_stage + 1) % stages : c_stage;
                          std::memcpy(&sa, smem.bytes.data() + scales_base + read_stage * scale_stage + 4 * (row - m0), 4);
                        } else {
                          sa = scale_at(scales->a, tt_block_scale_a_index(kb, row, M));
                        }
                        s = sa * scale_at(scales->b, tt_block_scale_b_index(kb, n0 / TT_SCALE_BLOCK + half, n_blocks));
                      }
                      a = d.scale_after_add ? (a + pv) * s : a + pv * s;
                    }
        }
        c_phase = tt_ring_advance(c_stage, c_phase, stages);
      }
      if (p_stage != c_stage || p_phase != c_phase)
        errors.push_back("producer and consumers left the ring apart");
      if (split > 1) {  // tt_split_publish, or the leader waits for its peers (tt_split_gather)
        if (rank == 0) {
          owners.push_back({u, tc, std::move(acc)});
          owners.back().u.worker = cluster;
          owners.back().u.first_peer = ui;  // the leader's i-th tile
          continue;
        }
        const int slot = rank - 1 + (d.split_peer_in_next_slot ? 1 : 0);
        std::vector<float>& buffer = split_slots[{cluster, ui, slot}];
        buffer.assign(static_cast<std::size_t>(slot_floats), std::numeric_limits<float>::quiet_NaN());
        for (int ct = 0; ct < consumer_threads; ++ct)
          for (int value = 0; value < mi_count * bn / 2; ++value)
            buffer[static_cast<std::size_t>(tt_sk_workspace_index(0, value, ct, consumer_threads, slot_floats))] =
                acc_value(acc, ct, value);
        continue;
      }
      if (u.worker >= 0 && !u.owner) {  // tt_sk_publish
        const int slot = u.worker + (d.peer_publishes_next_slot ? 1 : 0);
        for (int ct = 0; ct < consumer_threads; ++ct)
          for (int value = 0; value < mi_count * bn / 2; ++value) {
            const long long at = tt_sk_workspace_index(slot, value, ct, consumer_threads, slot_floats);
            if (at < 0 || at >= static_cast<long long>(workspace.size())) {
              errors.push_back(fmt::format("worker {} writes past the workspace", u.worker));
              break;
            }
            workspace[static_cast<std::size_t>(at)] = acc_value(acc, ct, value);
          }
        continue;
      }
      if (u.worker >= 0 && u.first_peer <= u.last_peer) {
        owners.push_back({u, tc, std::move(acc)});
        continue;
      }
      epilogue(tc, acc);
    }
  }
  // tt_sk_gather: each owner adds its peers' partials in worker order, then stores C.
  for (waiting_owner& w : owners) {
    if (split > 1) {  // tt_split_gather: slots 0 .. split - 2 in rank order
      const int last = split - 2 - (d.split_skips_last_peer ? 1 : 0);
      for (int slot = 0; slot <= last && errors.empty(); ++slot) {
        const auto at = split_slots.find({w.u.worker, w.u.first_peer, slot});
        if (at == split_slots.end()) {
          errors.push_back(fmt::format("cluster {} tile {}: slot {} was never written", w.u.worker, w.u.first_peer, slot));
          break;
        }
        for (int ct = 0; ct < consumer_threads; ++ct)
          for (int value = 0; value < mi_count * bn / 2; ++value)
            acc_value(w.acc, ct, value) += at->second[static_cast<std::size_t>(
                tt_sk_workspace_index(0, value, ct, consumer_threads, slot_floats))];
      }
      epilogue(w.tc, w.acc);
      continue;
    }
    const int last = w.u.last_peer - (d.fixup_skips_last_peer ? 1 : 0);
    for (int peer = w.u.first_peer; peer <= last; ++peer)
      for (int ct = 0; ct < consumer_threads; ++ct)
        for (int value = 0; value < mi_count * bn / 2; ++value)
          acc_value(w.acc, ct, value) += workspace[static_cast<std::size_t>(
              tt_sk_workspace_index(peer, value, ct, consumer_threads, slot_floats))];
    epilogue(w.tc, w.acc);
  }
  return out;
}

inline gemm_problem problem(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, dtype t,
                     const char* l) {
  gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.type = t;
  p.scaling = default_scaling(t);
  p.layout = parse_layout(l);
  return p;
}

// The tests' other helpers: the GPU the family targets, a problem with fp8 scales, a variant
// with K-major copies.
inline const device_spec& h100() { return find_preset("h100-sxm"); }
inline gemm_problem scaled(gemm_problem p, scaling_mode s) {
  p.scaling = s;
  return p;
}
inline tile_config copies(tile_config c) {
  set_wgmma_k_major_copies(c, true);
  return c;
}

// Emulates and compares; returns "" when the emulated kernel is right.
inline std::string run_and_compare(const tile_config& c, const prepared& x, double alpha, double beta,
                            int sm_count, const defects& d = {}, int stream_k = 0) {
  gemm_problem p = x.p;
  p.alpha = alpha;
  p.beta = beta;
  const emulation e = emulate_kernel(c, p, x.a, x.b, beta == 0.0 ? x.c_nan : x.c, sm_count, d, stream_k, &x.scales);
  if (!e.errors.empty()) return "emulation error: " + e.errors.front();
  const compare_result r = compare_with_host_gemm(x, alpha, beta, e.c, e.writes);
  if (r.mismatches || r.unwritten_or_rewritten)
    return fmt::format("{} mismatches, {} elements not written exactly once; first: {}",
                       r.mismatches, r.unwritten_or_rewritten, r.first);
  return "";
}

struct case_layout {
  dtype t;
  const char* layout;
};
const case_layout all_layouts[] = {{dtype::f16, "nn"},  {dtype::f16, "nt"},  {dtype::f16, "tn"},
                                   {dtype::f16, "tt"},  {dtype::bf16, "nn"}, {dtype::bf16, "nt"},
                                   {dtype::bf16, "tn"}, {dtype::bf16, "tt"}, {dtype::tf32, "nt"}};


}  // namespace wgmma_emu
