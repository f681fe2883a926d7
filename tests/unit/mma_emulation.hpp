#pragma once
// The mma kernel family (kernels_templates/mma/) run end to end on the
// host, one block after another: every cp.async of every stage, every
// ldmatrix (or tf32 shared load), every mma.sync, the epilogue's staging and
// its stores of C, and split-K's workspace, counters and reduction. Every
// index comes from the kernel's own functions (tile_addressing.cuh, included
// below as host code); the PTX instructions are emulated from the PTX ISA
// (sections named where they are). C is compared with a plain host GEMM for
// every default mma variant of h100-sxm and a100-sxm-80gb (with the split-K
// and grouped-raster copies the search adds), f16/bf16/tf32, layouts nn, nt,
// tn, tt, and of l40s and rtx-4090 for the four fp8 types (C bf16; layout nt, and nn, tn, tt on
// K-major copies after the emulated pre-pass; with rowwise scales in nt and tn), on small shapes with
// partial tiles, batch 2, alpha and beta. Planted
// defects, injected here and not in the kernel, show that the comparison fails
// when the data path is wrong.
//
// The emulator (namespace mma_emu) is in three headers: mma_emulation_parts.hpp (formats, macros,
// defects, memories, PTX instructions), mma_emulation_kernel.hpp (the kernel block by block) and
// this one (the reference, run_case, the recipes and variants). The tests that run it:
// mma_datapath_emulation_test.cpp (16-bit and tf32, the lane maps), mma_fp8_emulation_test.cpp
// (fp8, fp8 on K-major copies and with rowwise scales), mma_planted_defects_test.cpp.
#include "mma_emulation_kernel.hpp"

namespace mma_emu {

// ---- The reference and the comparison ----------------------------------------------------
// C = alpha * op(A) op(B) + beta * C in double, from the operands' values
// (operand_value: tf32's rounded) and C as stored. The
// tolerance is the fp32 accumulation bound, gamma_K * sum |alpha a b| (+ the
// beta term's rounding), and one unit of the output type; with these inputs
// every fp32 partial sum is exact, so the result is also checked to be the
// exact one correctly rounded.
inline void compare(const kernel_macros& k, const gemm_case& g, const operands& o, const std::vector<int>& c_writes, report& r) {
  const dtype t = k.c_type(), at = k.a_type(), bt = k.b_type();
  const double u = std::ldexp(1.0, -24), gamma = g.k * u / (1 - g.k * u);
  std::vector<double> a(static_cast<std::size_t>(g.m) * g.k), b(static_cast<std::size_t>(g.k) * g.n);  // op(A), op(B)^T
  for (int batch = 0; batch < g.batch; ++batch) {
    for (int m = 0; m < g.m; ++m)
      for (int kk = 0; kk < g.k; ++kk)
        a[static_cast<std::size_t>(m) * g.k + kk] = operand_value(
            at, get(o.a.bytes, at, batch * g.stride_a + (k.a_t ? static_cast<long long>(kk) * g.lda + m : static_cast<long long>(m) * g.lda + kk)));
    for (int n = 0; n < g.n; ++n)
      for (int kk = 0; kk < g.k; ++kk)
        b[static_cast<std::size_t>(n) * g.k + kk] = operand_value(
            bt, get(o.b.bytes, bt, batch * g.stride_b + (k.b_t ? static_cast<long long>(n) * g.ldb + kk : static_cast<long long>(kk) * g.ldb + n)));
    for (int m = 0; m < g.m; ++m)
      for (int n = 0; n < g.n; ++n) {
        double s = 0, sabs = 0;
        const double* ar = &a[static_cast<std::size_t>(m) * g.k];
        const double* bc = &b[static_cast<std::size_t>(n) * g.k];
        for (int kk = 0; kk < g.k; ++kk) {
          const double p = ar[kk] * bc[kk];
          s += p;
          sabs += std::fabs(p);
        }
        const long long ci = batch * g.stride_c + static_cast<long long>(m) * g.ldc + n;
        const double c0 = g.beta != 0.0f ? decode(t, get(o.c_initial, t, ci)) : 0.0;
        const double scale = g.rowwise ? static_cast<double>(scale_a_at(m)) * scale_b_at(n) : 1.0;
        const double scaled = g.alpha * scale * s;
        const double want = g.beta != 0.0f ? scaled + g.beta * c0 : scaled;  // C unread at beta 0
        const double got = decode(t, get(o.c.bytes, t, ci));
        const double tol = gamma * std::fabs(g.alpha) * scale * sabs + u * std::fabs(g.beta * c0) + output_ulp(t, want);
        const double err = std::fabs(got - want);
        ++r.checked;
        if (!(err <= tol)) ++r.mismatches;
        if (std::isnan(err) || err > r.max_error) r.max_error = std::isnan(err) ? INFINITY : std::max(r.max_error, err);
        if (!(got == decode(t, encode(t, static_cast<float>(want))))) ++r.not_exact;  // -0 == +0
        if (c_writes[static_cast<std::size_t>(ci)] != 1)
          r.note(fmt::format("C({}, {}) of batch {} written {} times", m, n, batch, c_writes[static_cast<std::size_t>(ci)]));
      }
  }
  // C's padding and any other element outside M x N: untouched.
  for (std::size_t e = 0; e < o.c_inside.size(); ++e)
    if (!o.c_inside[e] && get(o.c.bytes, t, static_cast<long long>(e)) != get(o.c_initial, t, static_cast<long long>(e)))
      r.note(fmt::format("C element {} outside M x N was changed", e));
}

// Emulates variant c on case g and compares; the launch shape is tiletune's own.
inline report run_case(const tile_config& c, dtype t, layout l, const gemm_case& g, const defects& d = {}, std::uint32_t seed = 1) {
  report r;
  kernel_macros k = macros_for(c, t, l);
  gemm_problem p;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.batch = g.batch;
  p.type = t;
  p.layout = l;
  if (g.rowwise) p.scaling = scaling_mode::rowwise;
  const device_spec& dev = find_preset(is_fp8(t) ? "l40s" : "h100-sxm");  // fp8 mma.sync: sm_89
  if (const auto v = check_constraints(c, p, dev)) {
    r.note(fmt::format("{} cannot run {}: {}", c.id(), g.label, v->message));
    return r;
  }
  const launch_shape s = launch_shape_for(c, p);
  if (s.dynamic_smem_bytes != k.smem_bytes() || s.threads != k.threads())
    r.note(fmt::format("launch asks {} bytes / {} threads, the template uses {} / {}", s.dynamic_smem_bytes, s.threads,
                       k.smem_bytes(), k.threads()));
  operands o = make_operands(k, g, seed);
  // The scratch buffers as the family's launch asks the worker for them.
  const kernel_launch launch = c.family->describe_launch(c, p, dev);
  std::int64_t workspace = 0, counters = 0;
  for (const auto& kp : launch.parameters) {
    if (kp.name == "workspace") workspace = kp.buffer_bytes;
    if (kp.name == "tile_counters") counters = kp.buffer_bytes;
  }
  // K-major copies (_kc): the prologue's pre-pass launches write the copies, and the GEMM runs as
  // its rendered source says (TT_A_T and TT_B_T redefined) on what its launch's A and B name.
  const std::string source = render_kernel_source(c, t, l);
  const bool copies = source.find("#define TT_K_MAJOR_COPIES 1\n") != std::string::npos;
  // Rowwise scales: the rendered source applies them (TT_SCALING 1), the launch passes the buffers.
  k.scaling = source.find("#define TT_SCALING 1\n") != std::string::npos ? 1 : 0;
  int scale_parameters = 0;
  for (const auto& kp : launch.parameters)
    scale_parameters += (kp.name == "scale_a" || kp.name == "scale_b") && kp.kind == "pointer";
  if (k.scaling != (g.rowwise ? 1 : 0) || scale_parameters != (g.rowwise ? 2 : 0))
    r.note(fmt::format("TT_SCALING {} and {} scale parameters for a problem {} rowwise scales", k.scaling,
                       scale_parameters, g.rowwise ? "with" : "without"));
  if (copies != !launch.prologue.empty())
    r.note(fmt::format("TT_K_MAJOR_COPIES {} with {} prologue launches", copies, launch.prologue.size()));
  if (!copies) {
    mma_kernel_emulator emu(k, g, o, d, r, static_cast<unsigned>(s.grid_x), static_cast<unsigned>(s.grid_y),
                            static_cast<unsigned>(s.grid_z), workspace / 4, counters / 4);
    emu.launch(seed * 7919u + 13u);
    compare(k, g, o, emu.c_writes(), r);
    return r;
  }
  auto last_define = [&](const std::string& name) {
    const std::size_t at = source.rfind("#define " + name + " ");
    return at == std::string::npos ? -1 : std::stoi(source.substr(at + name.size() + 9));
  };
  kernel_macros kk = k;
  kk.a_t = last_define("TT_A_T");
  kk.b_t = last_define("TT_B_T");
  operands run = o;  // what the GEMM reads: a copy, or the operand as stored
  std::vector<std::string> errors;
  for (const kernel_launch& before : launch.prologue) {
    const char operand = before.parameters.at(0).name.at(0);
    global_buffer& copy = operand == 'A' ? run.a : run.b;
    copy.name = before.parameters.at(1).name;
    if (d.kc_skipped)
      copy.bytes.assign(static_cast<std::size_t>(before.parameters.at(1).buffer_bytes), 0);
    else
      tiletune_test::emulate_transpose(before, operand == 'A' ? element_bytes(k.a_type()) : element_bytes(k.b_type()),
                                       (operand == 'A' ? o.a : o.b).bytes, copy.bytes,
                                       {d.kc_rows_of_cols, d.kc_unguarded, d.kc_pad_unwritten, d.kc_k_major_as_mn},
                                       errors);
  }
  for (const std::string& e : errors) r.note(e);
  gemm_case kg = g;  // the GEMM's K and strides as its launch gives them (K padded to 16 bytes)
  for (const kernel_parameter& kp : launch.parameters) {
    if (kp.name == "K") kg.k = kp.value.get<int>();
    if (kp.name == "lda") kg.lda = kp.value.get<int>();
    if (kp.name == "ldb") kg.ldb = kp.value.get<int>();
    if (kp.name == "batch_stride_a") kg.stride_a = kp.value.get<long long>();
    if (kp.name == "batch_stride_b") kg.stride_b = kp.value.get<long long>();
    if ((kp.name == "A" || kp.name == "B") && kp.kind == "pointer")  // reads the operand, not a copy
      (kp.name == "A" ? run.a : run.b) = kp.name == "A" ? o.a : o.b;
  }
  if (d.kc_reads_operand) run.a = o.a, run.b = o.b;
  mma_kernel_emulator emu(kk, kg, run, d, r, static_cast<unsigned>(s.grid_x), static_cast<unsigned>(s.grid_y),
                          static_cast<unsigned>(s.grid_z), workspace / 4, counters / 4);
  emu.launch(seed * 7919u + 13u);
  o.c = run.c;
  compare(k, g, o, emu.c_writes(), r);
  return r;
}

// ---- Shapes -------------------------------------------------------------------------------
inline int round_up(int x, int to) { return (x + to - 1) / to * to; }

// A case with leading dimensions: packed (as tiletune launches) or padded to
// pad_to elements plus pad_to (16-byte aligned rows, partial chunks at the edges).
inline gemm_case make_case(std::string label, const kernel_macros& k, int m, int n, int kdim, int batch, int pad_to,
                    float alpha, float beta) {
  gemm_case g;
  g.label = std::move(label);
  g.m = m;
  g.n = n;
  g.k = kdim;
  g.batch = batch;
  auto ld = [pad_to](int extent) { return pad_to ? round_up(extent, pad_to) + pad_to : extent; };
  g.lda = ld(k.a_t ? m : kdim);
  g.ldb = ld(k.b_t ? kdim : n);
  g.ldc = ld(n);
  g.stride_a = static_cast<long long>(g.lda) * (k.a_t ? kdim : m);
  g.stride_b = static_cast<long long>(g.ldb) * (k.b_t ? n : kdim);
  g.stride_c = static_cast<long long>(g.ldc) * m;
  g.alpha = alpha;
  g.beta = beta;
  return g;
}

// The recipes: partial tiles at every edge, aligned and unaligned rows, both
// C paths, alpha and beta, batch 2, a k-loop longer than the pipeline and one
// shorter; split-K with a short last slice, and with empty slices.
inline gemm_case recipe(int which, const kernel_macros& k) {
  const int s = k.split_k;
  const int a8 = k.eb() == 1 ? 16 : 8;  // elements that keep rows 16-byte aligned (fp8: 16)
  if (s > 1) {
    if (which % 2 == 0)  // 2s-1 k-tiles: per slice 2, the last slice 1 (partial): rows 16-byte aligned
      return make_case("split, short last slice", k, 19, k.bn + 24, (2 * s - 1) * k.bk - a8, 2, 0, 0.75f, -1.25f);
    // s+1 k-tiles: the last slices are empty; odd sizes, unaligned rows
    return make_case("split, empty slices", k, 21, k.bn - 3, (s + 1) * k.bk - 5, 1, 0, 1.5f, 0.0f);
  }
  switch (which) {
    case 0:  // stages+1 whole k-tiles (the ring wraps), every size a multiple of 8: cp.async, 16-byte C
             // stores; block (0, 0) lies inside the matrices and copies without bounds, the others with
      return make_case("aligned edges", k, k.bm + 24, k.bn + 8, (k.stages + 1) * k.bk, 1, 0, 0.75f, 0.0f);
    case 1:  // odd sizes in padded rows: partial cp.async chunks zero-filled, C element-wise at the edge
      return make_case("padded rows, odd edges", k, k.bm - 13, k.bn + 11, 2 * k.bk + 5, 1, a8, 1.5f, -1.25f);
    case 2:  // odd packed rows: the element-wise copy path, element-wise C, batch 2
      return make_case("unaligned rows, batch 2", k, 37, k.bn + k.bn / 2 + 1, k.bk + 3, 2, 0, -1.0f, 0.5f);
    case 3:  // a few elements; K = 7, under one 16-byte chunk of the 16-bit types
      return make_case("tiny", k, 5, 9, 7, 2, 0, 1.0f, 0.0f);
    default:  // block (0, 0) inside M and N, but its last k-tile short: it copies with bounds
      return make_case("inside, short k-tile", k, k.bm + 8, k.bn + 8, 2 * k.bk + a8, 1, 0, 1.0f, 0.0f);
  }
}

// The variants: every default mma variant that runs a 4096^3 or a 16x4096x4096
// problem on h100-sxm or a100-sxm-80gb (fp8: l40s and rtx-4090, with the problem's scaling), with
// the split-K and grouped-raster copies problem_search_space adds for them.
inline std::vector<tile_config> variants_under_test(dtype t, layout l, scaling_mode scaling = scaling_mode::none) {
  std::vector<tile_config> out;
  std::set<std::string> seen;
  for (const char* gpu : is_fp8(t) ? std::vector<const char*>{"l40s", "rtx-4090"}
                                    : std::vector<const char*>{"h100-sxm", "a100-sxm-80gb"}) {
    const device_spec& d = find_preset(gpu);
    for (const std::int64_t m : {std::int64_t{4096}, std::int64_t{16}}) {
      gemm_problem p;
      p.m = m;
      p.n = p.k = 4096;
      p.type = t;
      p.layout = l;
      p.scaling = scaling;
      for (const tile_config& c : problem_search_space(family_named("mma"), p, d))
        if (!check_constraints(c, p, d) && seen.insert(c.id()).second) out.push_back(c);
    }
  }
  return out;
}

inline const std::vector<dtype> dtypes = {dtype::f16, dtype::bf16, dtype::tf32};
inline const std::vector<const char*> layouts = {"nn", "nt", "tn", "tt"};

inline std::string name(const tile_config& c, dtype t, layout l, const gemm_case& g) {
  return fmt::format("{} {} {} {}x{}x{} batch {} ({})", c.id(), to_string(t), l.name(), g.m, g.n, g.k, g.batch, g.label);
}

inline tile_config split_variant(int bm, int bn, int bk, int wm, int wn, int stages, int split) {
  tile_config c = mma_tile(bm, bn, bk, wm, wn, stages);
  c.split_k = split;
  return c;
}

}  // namespace mma_emu
