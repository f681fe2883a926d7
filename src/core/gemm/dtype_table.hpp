#pragma once
#include <span>
#include <string>
#include <string_view>

namespace tiletune {

// The precision a user names for a GEMM; what it means lives in its row below.
// e4m3_e5m2 and e5m2_e4m3 are fp8 with A of the first format and B of the second (an fp8 training
// step's backward: e5m2 gradients against e4m3 weights or activations).
enum class dtype { f32, tf32, f16, bf16, e4m3, e5m2, e4m3_e5m2, e5m2_e4m3 };

// How one matrix's elements are stored and rounded (tf32 is stored as f32 bits; e4m3 and e5m2 are
// the OCP fp8 formats, one byte each: e4m3 has no infinity, its largest finite value is 448).
enum class element_type { f32, tf32, f16, bf16, e4m3, e5m2 };

// Scale factors applied to A and B: only narrow input types need them. tensor: one scale per
// operand (folded into alpha); rowwise: one per row of A and per column of B; block: one per
// 1 x 128 block of A (a row's k-block) and per 128 x 128 block of B.
enum class scaling_mode { none, tensor, rowwise, block };

struct element_info {
  element_type type;
  std::string_view name;
  int bytes;                           // as stored in memory
  std::string_view parameter_type;     // a kernel parameter's element type
  std::string_view device_type;        // the CUDA C++ type of its bits, empty when parameter_type is it
  std::string_view cuda_data_type;     // cudaDataType_t by name
};

// Everything tiletune knows about a dtype; adding one is adding a row.
struct dtype_row {
  dtype type;
  std::string_view name;
  element_type a, b, c, accumulator;
  bool tensor_cores;
  std::span<const scaling_mode> scalings;  // allowed scaling modes, the default first
  element_type peak;                       // whose device peak bounds it
  int template_code;                       // TT_DTYPE in the kernel templates
  std::string_view cublas_compute;         // cublasComputeType_t by name (fast mode)
  // Largest relative Frobenius error a correct result shows against an
  // fp32-accumulated reference.
  double error_bound;
};

std::span<const dtype_row> dtype_table();
const dtype_row& row_of(dtype t);
std::span<const element_info> element_table();
const element_info& info_of(element_type e);

// The element types of one problem's operands, from its dtype's row.
struct operand_types {
  element_type a, b, c, accumulator;
};

std::string_view to_string(dtype t);
std::string_view to_string(element_type e);
std::string_view to_string(scaling_mode s);
// Throw usage_error naming the text when it is not a known value.
dtype parse_dtype(std::string_view text);
scaling_mode parse_scaling_mode(std::string_view text);
// The dtype names joined by sep, in table order: "f32, tf32, f16, bf16, e4m3, e5m2, e4m3_e5m2, e5m2_e4m3".
std::string dtype_names(std::string_view sep);

int element_bytes(element_type e);
// Bytes of one A (and B) element as stored in memory.
int element_bytes(dtype t);
// True for the dtypes that run on tensor cores.
bool is_tensor_core_dtype(dtype t);
bool allows(const dtype_row& r, scaling_mode s);
// The element types C may take instead of the row's (--out-dtype): fp8's f16 and f32 (its default
// bf16 too); none for the others.
std::span<const element_type> other_outputs(dtype t);
// Throws usage_error naming the text when it is no element type.
element_type parse_element_type(std::string_view text);
// C's element type as --out-dtype and a suite's out_dtype name it: bf16, f16 or f32.
element_type parse_output_type(std::string_view text);
// The scaling a problem of this dtype has when none is named: the row's first.
scaling_mode default_scaling(dtype t);
// True for the one-byte (fp8) dtypes.
bool is_fp8(dtype t);

}  // namespace tiletune
