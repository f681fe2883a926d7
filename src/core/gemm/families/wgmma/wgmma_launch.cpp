#include "core/gemm/families/wgmma/wgmma_parts.hpp"

#include <fmt/format.h>

#include "core/compile/kernel_templates.hpp"
#include "core/gemm/families/wgmma/wgmma_family.hpp"
#include "core/gemm/families/wgmma/wgmma_layout.hpp"
#include "core/gemm/families/wgmma/wgmma_tensor_map.hpp"
#include "core/measure/measure_protocol.hpp"

namespace tiletune {

namespace {

// The CUtensorMap the host encodes for one wgmma operand (src/cuda/tensor_map.cpp does the same).
// `parameter` is the kernel's: with swap-AB, tmap_a holds B's map.
tensor_map_description tensor_map_description_of(const gemm_problem& p, const tile_config& c, char operand,
                                                 const char* parameter) {
  const tensor_map_spec s = wgmma_tensor_map_for(p, c, operand);
  tensor_map_description t;
  t.parameter = parameter;
  t.tensor = std::string(1, static_cast<char>(operand - 'a' + 'A')) +
             (operand != 'c' && wgmma_k_major_copy_bytes(c, p, operand) > 0 ? "_k_major" : "");
  t.data_type = s.type == tensor_map_spec::element::f16    ? "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"
                : s.type == tensor_map_spec::element::bf16 ? "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
                : s.type == tensor_map_spec::element::u8   ? "CU_TENSOR_MAP_DATA_TYPE_UINT8"
                                                           : "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
  for (int i = 0; i < s.rank; ++i) {
    t.global_dims.push_back(static_cast<std::int64_t>(s.dims[i]));
    t.box_dims.push_back(s.box[i]);
    t.element_strides.push_back(s.element_strides[i]);
    if (i > 0) t.global_strides_bytes.push_back(static_cast<std::int64_t>(s.strides_bytes[i - 1]));
  }
  t.swizzle = s.swizzle_bytes == 128 ? "CU_TENSOR_MAP_SWIZZLE_128B" : "CU_TENSOR_MAP_SWIZZLE_NONE";
  t.l2_promotion = "CU_TENSOR_MAP_L2_PROMOTION_L2_256B";
  t.oob_fill = s.oob_fill_zero ? "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE" : "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA";
  return t;
}

// A grouped problem: batch is the group count, the rows per group and the masked stride follow beta.
void add_group_parameters(kernel_launch& l, const gemm_problem& p) {
  const gemm_groups& g = *p.groups;
  parameter_named(l, "M").meaning = "rows A and C hold, every group's (not read by the grouped kernel)";
  parameter_named(l, "batch_stride_c").value = 0;
  parameter_named(l, "batch").value = g.count();
  parameter_named(l, "batch").meaning = "number of groups (at most 256)";
  kernel_parameter rows{"group_rows", "const int*", "pointer",
                        "device pointer to the rows of each group, one int per group, read once per launch (value: "
                        "this problem's)",
                        g.rows};
  l.parameters.push_back(std::move(rows));
  l.parameters.push_back(scalar_parameter(
      "group_stride", "int",
      "masked layout: rows each group owns (group g from row g * stride); 0: contiguous, group after group",
      g.layout == group_layout::masked ? g.stride : 0));
}

}  // namespace

// wgmma (kernels_templates/wgmma/wgmma_gemm.cu): a persistent grid over the SMs,
// operands through TMA tensor maps passed by value, C by pointer.
kernel_launch wgmma_launch(const tile_config& c, const gemm_problem& p, const device_spec& d) {
  const launch_shape s = launch_shape_for(c, p, d.sm_count);
  kernel_launch l;
  l.entry = kernel_entry_name;
  l.grid = {s.grid_x, s.grid_y, s.grid_z};
  l.block = {s.threads, 1, 1};
  l.cluster = {s.cluster_x, s.cluster_y, s.cluster_z};
  l.dynamic_smem_bytes = s.dynamic_smem_bytes;
  l.grid_rule = c.cluster_m == 2
                    ? fmt::format("(2 x min(pairs of M tiles = batch * ceil(ceil(M / {}) / 2) * ceil(N / {}), SM count "
                                  "{} / 2), 1, 1) in clusters of (2, 1, 1): the two CTAs of a cluster take M tiles 2p "
                                  "and 2p + 1 and share B's tile by TMA multicast",
                                  c.block_m, c.block_n, d.sm_count)
                : c.split_k > 1
                    ? fmt::format("({} x min(output tiles = batch * ceil(M / {}) * ceil(N / {}), SM count {} / {}), 1, "
                                  "1) in clusters of ({}, 1, 1): each cluster's CTAs share its tiles' k-tiles",
                                  c.split_k, c.block_m, c.block_n, d.sm_count, c.split_k, c.split_k)
                : p.grouped()
                    ? fmt::format("(min(output tiles = the groups' M tiles of {} rows each summed, times ceil(N / {}), "
                                  "SM count {}){}, 1, 1): a persistent grid over the groups' tiles; other rows per "
                                  "group need the grid recomputed (or every SM)",
                                  c.block_m, c.block_n, d.sm_count, wgmma_stream_k(c) ? ", every SM with stream-K" : "")
                : wgmma_stream_k(c)
                    ? fmt::format("(SM count {}, 1, 1): a persistent grid, every CTA resident at once; the tiles "
                                  "of whole waves (batch * ceil(M / {}) * ceil(N / {}) rounded down to a multiple "
                                  "of the grid) go whole, the k-tiles of the rest are shared out (stream-K)",
                                  d.sm_count, c.block_m, c.block_n)
                    : fmt::format("(min(output tiles = batch * ceil(M / {}) * ceil(N / {}), SM count {}), 1, 1): "
                                  "a persistent grid that loops over the tiles",
                                  c.block_m, c.block_n, d.sm_count);
  // Swap-AB: the rule's M and N are the problem's, which the parameters M and N carry exchanged.
  if (wgmma_swap_ab(c)) l.grid_rule += "; M and N here are the problem's (the parameters M and N hold them exchanged)";
  const std::string elem = element_c_type(p.elements().c);  // C's: bf16 for fp8 inputs
  const std::string map_type = "const __grid_constant__ CUtensorMap";
  const bool swap = wgmma_swap_ab(c);
  l.parameters = {
      {"tmap_a", map_type, "tensor_map",
       swap ? "B's tensor map (tensor_maps[0]; swap-AB: the kernel's A is B), passed by value"
            : "A's tensor map (tensor_maps[0]), passed by value",
       nullptr},
      {"tmap_b", map_type, "tensor_map",
       swap ? "A's tensor map (tensor_maps[1]; swap-AB: the kernel's B is A), passed by value"
            : "B's tensor map (tensor_maps[1]), passed by value",
       nullptr},
      {"C", elem + "*", "pointer", "device pointer to C stored M x N row-major; read only when beta != 0", nullptr},
      swap ? scalar_parameter("M", "int", "swap-AB: the kernel's rows, the columns of C and op(B) (the problem's N)", p.n)
           : scalar_parameter("M", "int", "rows of C and op(A)", p.m),
      swap ? scalar_parameter("N", "int", "swap-AB: the kernel's columns, the rows of C and op(A) (the problem's M)", p.m)
           : scalar_parameter("N", "int", "columns of C and op(B)", p.n),
      scalar_parameter("K", "int", "the reduction dimension", p.k),
      scalar_parameter("ldc", "int", "elements between rows of C", p.ldc()),
      scalar_parameter("batch_stride_c", "long long", "elements between the batch's C matrices", p.m * p.n),
      scalar_parameter("batch", "int", "number of GEMMs", p.batch),
      scalar_parameter("alpha", "float", "scale of op(A) * op(B)", static_cast<float>(p.alpha)),
      scalar_parameter("beta", "float", "scale of the old C (0: C is not read)", static_cast<float>(p.beta)),
  };
  if (p.grouped()) add_group_parameters(l, p);
  if (wgmma_stream_k(c)) {
    kernel_parameter w{"workspace", "float*", "pointer",
                       "stream-K fixup: one fp32 BM x BN slot per worker, then one 32-bit flag per worker; "
                       "zeroed once before the first launch, every launch leaves the flags zero",
                       nullptr};
    w.buffer_bytes = wgmma_stream_k_workspace_bytes(c, p, d.sm_count);
    l.parameters.push_back(std::move(w));
  }
  l.tensor_maps = {tensor_map_description_of(p, c, swap ? 'b' : 'a', "tmap_a"),
                   tensor_map_description_of(p, c, swap ? 'a' : 'b', "tmap_b")};
  if (wgmma_k_major_copies(c)) l.prologue = k_major_copy_launches(p);
  if (wgmma_tma_store(c)) {
    l.parameters.push_back({"tmap_c", map_type, "tensor_map",
                            "C's tensor map (tensor_maps[2]; the TMA-store epilogue writes C through it), passed by "
                            "value",
                            nullptr});
    l.tensor_maps.push_back(tensor_map_description_of(p, c, 'c', "tmap_c"));
  }
  if (wgmma_scales(c) == scaling_mode::rowwise) {
    l.parameters.push_back({"scale_a", "const float*", "pointer",
                            "rowwise scales of A: M floats, one per row (C = alpha * scale_a[m] * scale_b[n] * "
                            "sum_k op(A) op(B))",
                            nullptr});
    l.parameters.push_back({"scale_b", "const float*", "pointer",
                            std::string("rowwise scales of B: N floats, one per column of C") +
                                (p.grouped() ? "; grouped: G x N, group g's B its own at g N (scale_a: every row A holds)"
                                             : ""),
                            nullptr});
  } else if (wgmma_scales(c) == scaling_mode::block) {
    l.parameters.push_back({"scale_a", "const float*", "pointer",
                            "block scales of A: ceil(K / 128) x M floats, k-block major (scale_a[kb * M + m] scales "
                            "A[m][128 kb .. 128 kb + 127])",
                            nullptr});
    l.parameters.push_back({"scale_b", "const float*", "pointer",
                            std::string("block scales of B: ceil(K / 128) x ceil(N / 128) floats, k-block major "
                                        "(scale_b[kb * ceil(N / 128) + nb] scales the 128 x 128 block of op(B) at "
                                        "k-block kb, columns 128 nb ..)") +
                                (p.grouped() ? "; grouped: G such sets, group g's B its own at g ceil(K / 128) "
                                               "ceil(N / 128) (scale_a: every row A holds)"
                                             : ""),
                            nullptr});
  }
  l.requirements = {
      "an sm_90a GPU (H100, H200): wgmma and TMA exist on no other architecture",
      "encode each tensor map with cuTensorMapEncodeTiled from tensor_maps (global address: the matrix's device "
      "pointer); the maps carry M, N, K, the strides and the batch, so another shape needs new maps and grid",
      "A's and B's pointers and row strides must be 16-byte aligned (TMA)",
      "set cudaFuncAttributeMaxDynamicSharedMemorySize (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) to "
      "dynamic_smem_bytes before the launch",
      "a launch outside tiletune has not been tried: tiletune's own launch of this family, bound from this "
      "description, ran correct on an H200 (2026-11-26)",
  };
  if (p.grouped())
    l.requirements.push_back(
        "grouped (_grp): upload group_rows (G ints) before the launch; A and C hold the groups' rows as the "
        "problem's groups.layout says, B one matrix per group stored as the layout says (K x N for n, N x K for "
        "t); at most 256 groups; ran correct on an H200 (2026-12-04, tiletune's own launch)");
  if (wgmma_tma_store(c))
    l.requirements.push_back(
        "TMA-store epilogue (_tmas): C's pointer and row stride 16-byte aligned; beta != 0 loads C's boxes through "
        "the same tensor map; ran correct on an H200 (2026-12-04, tiletune's own launch)");
  if (wgmma_pingpong(c))
    l.requirements.push_back(
        "ping-pong (_pp): two consumers alternate tiles; ran correct on an H200 (2026-12-04, tiletune's own "
        "launch)");
  if (c.cluster_m == 2)
    l.requirements.push_back(
        "2x1 cluster (_cl2x1): launch with cluster dimensions (2, 1, 1) (cudaLaunchKernelEx); B's tensor map boxes "
        "hold half of B's tile (each CTA multicasts its half into both); ran correct on an H200 (2026-12-04, "
        "tiletune's own launch)");
  if (c.split_k > 1)
    l.requirements.push_back(fmt::format(
        "split-K inside a cluster (_k{0}): launch with cluster dimensions ({0}, 1, 1) (cudaLaunchKernelEx, "
        "cudaLaunchAttributeClusterDimension) and every CTA of a cluster resident; the grid may hold fewer clusters "
        "(the kernel walks the tiles by the clusters it is given, %nclusterid): launch at most as many as "
        "cudaOccupancyMaxActiveClusters gives, or those past it run as a second wave; ran correct on an H200 "
        "(2026-12-04, tiletune's own launch)",
        c.split_k));
  if (wgmma_promotion(c) > 0 || wgmma_fast_accumulation(c))
    l.requirements.push_back(fmt::format(
        "fp8 ({}): A and B one byte each (e4m3 or e5m2), which the GEMM reads K-major (layout nt{}), C {}; {}ran "
        "correct on an H200 (2026-12-04, tiletune's own launch)",
        wgmma_fast_accumulation(c)
            ? fmt::format("_fa: fast accumulation, no promotion; verified to a relative error of {:.2g} at this K, "
                          "not the dtype's {:.2g}",
                          wgmma_fast_accumulation_bound(p.type, p.k), row_of(p.type).error_bound)
            : fmt::format("_p{}", wgmma_promotion(c)),
        wgmma_k_major_copies(c) ? ": the _kc copies of this problem's operands" : "", to_string(p.elements().c),
        wgmma_scales(c) == scaling_mode::rowwise ? "scale_a and scale_b hold the rowwise scales; "
        : wgmma_scales(c) == scaling_mode::block ? "scale_a and scale_b hold the block scales (1 x 128 of A, 128 x 128 of B); "
                               : "per-tensor scales go into alpha; "));
  if (wgmma_tma_scales(c))
    l.requirements.push_back(
        "scales by TMA (_ts): scale_a 16-byte aligned (its k-blocks' rows are copied in 16-byte units: M a multiple "
        "of 4), scale_b 4-byte aligned; ran correct on an H200 (2026-12-04, tiletune's own launch)");
  if (wgmma_k_major_copies(c))
    l.requirements.push_back(
        "K-major copies (_kc): launch each prologue kernel (the launch's prologue entries, named as the GEMM's "
        "with _transpose) before the GEMM, on the same "
        "stream, into one buffer per copied operand that the GEMM's tensor map addresses; the maps describe the "
        "copies (layout nt); ran correct on an H200 (2026-12-04, tiletune's own launch)");
  if (swap)
    l.requirements.push_back(
        "swap-AB (_swab): pass B's tensor map first and A's second, N as M and M as N (C stays M x N row-major); "
        "ran correct on an H200 (2026-12-04, tiletune's own launch)");
  l.all_resident = wgmma_stream_k(c);
  l.clusters_walk_tiles = l.cluster[0] * l.cluster[1] * l.cluster[2] > 1;  // wgmma_gemm.cu's tt_cluster_special(2)
  if (wgmma_stream_k(c)) {
    l.requirements.push_back(
        "stream-K (_sk): the grid is every SM and an owner CTA waits for its peers' partials, so every CTA must be "
        "resident at once: no other kernel may hold an SM while it runs (tiletune's own launches ran correct on "
        "an H200, 2026-11-26)");
    // The workspace's size and zeroing, which the host header prints from here (as mma's split-K
    // workspace): a caller of the header alone passed a buffer of no stated size, not zeroed.
    l.requirements.push_back(fmt::format(
        "stream-K: workspace of {} bytes for this problem on {} SMs (one fp32 {}x{} slot per stream-K worker, then "
        "one 32-bit flag per worker), zeroed once before the first launch (every launch leaves the flags zero)",
        wgmma_stream_k_workspace_bytes(c, p, d.sm_count), d.sm_count, c.block_m, c.block_n));
  }
  return l;
}

}  // namespace tiletune
