#include "core/gemm/dtype_table.hpp"

#include <array>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"

namespace tiletune {

namespace {

using et = element_type;

constexpr std::array<element_info, 6> elements{{
    {et::f32, "f32", 4, "float", "", "CUDA_R_32F"},
    {et::tf32, "tf32", 4, "float", "", "CUDA_R_32F"},
    {et::f16, "f16", 2, "unsigned short", "__half", "CUDA_R_16F"},
    {et::bf16, "bf16", 2, "unsigned short", "__nv_bfloat16", "CUDA_R_16BF"},
    {et::e4m3, "e4m3", 1, "unsigned char", "__nv_fp8_e4m3", "CUDA_R_8F_E4M3"},
    {et::e5m2, "e5m2", 1, "unsigned char", "__nv_fp8_e5m2", "CUDA_R_8F_E5M2"},
}};

constexpr std::array<scaling_mode, 1> unscaled{scaling_mode::none};
// fp8 runs with per-tensor scales (alpha carries their product), rowwise or block scales (the
// kernel reads them).
constexpr std::array<scaling_mode, 3> fp8_scalings{scaling_mode::tensor, scaling_mode::rowwise, scaling_mode::block};

// Error bounds: f32 sees only summation order (~1e-7); tf32 rounds inputs to
// 10 mantissa bits (unit roundoff 4.9e-4); f16 and bf16 round inputs and the
// output (bf16's unit roundoff is 3.9e-3). fp8 inputs are exact (both sides read the same bytes):
// what remains is the bf16 output and the tensor core's short running sum, promoted to fp32
// registers every few k-blocks by the kernel (its family's emulation bounds it at K 16384).
constexpr std::array<dtype_row, 8> rows{{
    {dtype::f32, "f32", et::f32, et::f32, et::f32, et::f32, false, unscaled, et::f32, 0, "CUBLAS_COMPUTE_32F", 2e-6},
    {dtype::tf32, "tf32", et::tf32, et::tf32, et::f32, et::f32, true, unscaled, et::tf32, 1,
     "CUBLAS_COMPUTE_32F_FAST_TF32", 2e-3},
    {dtype::f16, "f16", et::f16, et::f16, et::f16, et::f32, true, unscaled, et::f16, 2, "CUBLAS_COMPUTE_32F", 1e-2},
    {dtype::bf16, "bf16", et::bf16, et::bf16, et::bf16, et::f32, true, unscaled, et::bf16, 3, "CUBLAS_COMPUTE_32F",
     1e-2},
    {dtype::e4m3, "e4m3", et::e4m3, et::e4m3, et::bf16, et::f32, true, fp8_scalings, et::e4m3, 4, "CUBLAS_COMPUTE_32F",
     1e-2},
    {dtype::e5m2, "e5m2", et::e5m2, et::e5m2, et::bf16, et::f32, true, fp8_scalings, et::e5m2, 5, "CUBLAS_COMPUTE_32F",
     1e-2},
    // Mixed fp8 (A of one format, B of the other): the same rates and bound.
    {dtype::e4m3_e5m2, "e4m3_e5m2", et::e4m3, et::e5m2, et::bf16, et::f32, true, fp8_scalings, et::e4m3, 6,
     "CUBLAS_COMPUTE_32F", 1e-2},
    {dtype::e5m2_e4m3, "e5m2_e4m3", et::e5m2, et::e4m3, et::bf16, et::f32, true, fp8_scalings, et::e4m3, 7,
     "CUBLAS_COMPUTE_32F", 1e-2},
}};

constexpr std::array<std::string_view, 4> scaling_names{"none", "tensor", "rowwise", "block"};

}  // namespace

std::span<const dtype_row> dtype_table() { return rows; }
std::span<const element_info> element_table() { return elements; }

const dtype_row& row_of(dtype t) {
  for (const dtype_row& r : rows)
    if (r.type == t) return r;
  throw std::logic_error(fmt::format("dtype {} has no row", static_cast<int>(t)));
}

const element_info& info_of(element_type e) {
  for (const element_info& i : elements)
    if (i.type == e) return i;
  throw std::logic_error(fmt::format("element type {} has no row", static_cast<int>(e)));
}

std::string_view to_string(dtype t) { return row_of(t).name; }
std::string_view to_string(element_type e) { return info_of(e).name; }
std::string_view to_string(scaling_mode s) { return scaling_names.at(static_cast<std::size_t>(s)); }

std::string dtype_names(std::string_view sep) {
  std::string s;
  for (const dtype_row& r : rows) {
    if (!s.empty()) s.append(sep);
    s.append(r.name);
  }
  return s;
}

dtype parse_dtype(std::string_view text) {
  for (const dtype_row& r : rows)
    if (text == r.name) return r.type;
  throw usage_error(fmt::format("unknown dtype '{}': expected one of {}", text, dtype_names(", ")));
}

scaling_mode parse_scaling_mode(std::string_view text) {
  for (std::size_t i = 0; i < scaling_names.size(); ++i)
    if (text == scaling_names[i]) return static_cast<scaling_mode>(i);
  throw usage_error(
      fmt::format("unknown scaling mode '{}': expected one of {}", text, fmt::join(scaling_names, ", ")));
}

int element_bytes(element_type e) { return info_of(e).bytes; }
int element_bytes(dtype t) { return element_bytes(row_of(t).a); }
bool is_tensor_core_dtype(dtype t) { return row_of(t).tensor_cores; }

bool allows(const dtype_row& r, scaling_mode s) {
  for (scaling_mode m : r.scalings)
    if (m == s) return true;
  return false;
}

scaling_mode default_scaling(dtype t) { return row_of(t).scalings.front(); }

std::span<const element_type> other_outputs(dtype t) {
  static constexpr std::array<element_type, 3> fp8_outputs{et::bf16, et::f16, et::f32};
  if (is_fp8(t)) return fp8_outputs;
  return {};
}

element_type parse_element_type(std::string_view text) {
  for (const element_info& i : elements)
    if (text == i.name) return i.type;
  std::string names;
  for (const element_info& i : elements) names += fmt::format("{}{}", names.empty() ? "" : ", ", i.name);
  throw usage_error(fmt::format("unknown element type '{}': expected one of {}", text, names));
}
element_type parse_output_type(std::string_view text) {
  for (const element_type e : {et::bf16, et::f16, et::f32})
    if (text == to_string(e)) return e;
  throw usage_error(fmt::format("'{}' is not an element type C can take: bf16, f16 or f32 (--out-dtype, a suite "
                                "problem's out_dtype)",
                                text));
}

bool is_fp8(dtype t) { return element_bytes(t) == 1; }

}  // namespace tiletune
