#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gemm/problem.hpp"
#include "core/gemm/tile_config.hpp"

// How a variant is launched: what its family says (gemm_family::describe_launch),
// which the measuring worker binds and launches and the kernel export writes out,
// and the pieces the families share to write theirs.
namespace tiletune {

// One kernel parameter, in the order the entry function takes them.
struct kernel_parameter {
  std::string name;     // as in the kernel's signature
  std::string c_type;   // as in the kernel's signature, e.g. "const unsigned short*"
  std::string kind;     // "pointer" | "scalar" | "tensor_map"
  std::string meaning;  // a sentence for the user
  nlohmann::json value;  // for the exported problem; null for pointers and tensor maps
  // A pointer that is not an operand (A, B, C): a scratch buffer of these bytes
  // that the caller allocates and zeroes once before the first launch (the kernel
  // leaves it as it found it); 0: the caller passes nullptr.
  std::int64_t buffer_bytes = 0;
};

// Whether a pointer parameter is an operand's device pointer ("A", "B" or "C").
bool is_operand_pointer(const kernel_parameter& k);
// Whether it is a grouped problem's rows per group ("group_rows"): G 32-bit ints in device memory,
// which the caller fills from the problem (its value holds them too).
bool is_group_rows_pointer(const kernel_parameter& k);
// Whether it is an operand's K-major copy ("A_k_major", "B_k_major"; kernel_launch::prologue).
bool is_k_major_copy(const kernel_parameter& k);
// Whether it is fp8's scales of A or B ("scale_a", "scale_b"): fp32 in device memory, laid out as
// the problem's scaling mode says (the parameter's meaning spells it), which the caller fills.
bool is_scale_pointer(const kernel_parameter& k);

// What the host gives cuTensorMapEncodeTiled for a CUtensorMap parameter
// (passed by value as a __grid_constant__ parameter). Dimensions innermost first.
struct tensor_map_description {
  std::string parameter;  // the kernel parameter it is passed as
  std::string tensor;     // whose memory it maps: "A", "B" or "C", or "A_k_major", "B_k_major" (a copy)
  std::string data_type;  // CU_TENSOR_MAP_DATA_TYPE_...
  std::vector<std::int64_t> global_dims;
  std::vector<std::int64_t> global_strides_bytes;  // rank - 1 values
  std::vector<std::int64_t> box_dims;
  std::vector<std::int64_t> element_strides;
  std::string interleave = "CU_TENSOR_MAP_INTERLEAVE_NONE";
  std::string swizzle;       // CU_TENSOR_MAP_SWIZZLE_...
  std::string l2_promotion;  // CU_TENSOR_MAP_L2_PROMOTION_...
  std::string oob_fill;      // CU_TENSOR_MAP_FLOAT_OOB_FILL_...
};

// How to launch one variant on one problem; each family fills it in
// (gemm_family::describe_launch).
struct kernel_launch {
  std::string entry;  // extern "C" name of the entry function
  std::array<std::int64_t, 3> grid{1, 1, 1};
  std::array<std::int64_t, 3> block{1, 1, 1};
  std::array<std::int64_t, 3> cluster{1, 1, 1};
  std::int64_t dynamic_smem_bytes = 0;
  std::string grid_rule;  // how the grid follows from another problem's sizes
  std::vector<kernel_parameter> parameters;
  std::vector<tensor_map_description> tensor_maps;
  std::vector<std::string> requirements;  // what the caller must hold to (alignment, ...)
  // Every CTA of the grid must be resident at once, one an SM (stream-K's owners wait for their peers'
  // partials): on a GPU of fewer SMs than the grid it would never finish.
  bool all_resident = false;
  // The kernel walks its tiles by the clusters it is given (%nclusterid), not by a grid fixed to the
  // problem: a launch may give it fewer whole clusters, and should give it no more than the GPU holds
  // at once (cudaOccupancyMaxActiveClusters): the clusters past those would run as a second wave
  // after the first had finished its share (split-K in clusters of 4 on an H200, 2026-12-04: 32
  // clusters took 1.5x the time of 16).
  bool clusters_walk_tiles = false;
  // Kernels of the same module the caller launches first, in order, on the same stream, every time
  // it launches this one (a transposing pre-pass): each is timed as part of the variant. A pointer
  // parameter named "A_k_major" or "B_k_major" is that operand's K-major copy, one buffer of its
  // buffer_bytes shared by every launch that names it (a prologue writes it, the GEMM reads it);
  // a tensor map whose tensor is so named maps that copy.
  std::vector<kernel_launch> prologue;
};

// One argument of a launch as a launcher binds it (the measuring worker, any family).
struct argument_binding {
  enum class source { operand, scratch, tensor_map, value, group_rows, scales, k_major_copy };
  source from = source::value;
  // operand, tensor_map: 'A', 'B' or 'C'; scales, k_major_copy: 'A' or 'B'
  char operand = 0;
  // tensor_map: it maps the operand's K-major copy (the buffer k_major_copy binds), not the operand
  bool of_copy = false;
  // scratch: a zeroed device buffer, 0: nullptr; k_major_copy: the copy's bytes
  std::int64_t buffer_bytes = 0;
  std::vector<unsigned char> bytes;  // value: the scalar as the kernel's C type holds it
};
// The launch's parameters in order, each bound to what the caller passes: an
// operand's pointer, a scratch buffer, an operand's tensor map, the rows per group, A's or B's
// scales, or a scalar
// ("int", "unsigned", "long long", "float", "double"). Throws
// std::invalid_argument naming a parameter it cannot bind.
std::vector<argument_binding> bind_arguments(const kernel_launch& l);

// The C type of an element as the templates' signatures spell it (a dtype: its A and B).
std::string element_c_type(element_type e);
std::string element_c_type(dtype t);
// "A stored M x K row-major (layout 'n')" and the like.
std::string stored_as(char matrix, bool transposed, const char* rows, const char* cols);
kernel_parameter scalar_parameter(std::string name, std::string type, std::string meaning, nlohmann::json value);

// The parameter of a launch with a name; throws std::logic_error when there is none.
kernel_parameter& parameter_named(kernel_launch& l, std::string_view name);
// The bytes of every scratch buffer a launch asks the caller for, its prologue's and the K-major
// copies (once each) included.
std::int64_t scratch_bytes(const kernel_launch& l);

// A grid of one block per BM x BN tile of C (launch_shape_for), operands by
// pointer and stride, then two scratch pointers ("workspace", float*, and
// "tile_counters", unsigned*) that a family sizes where its kernel uses them.
kernel_launch tile_grid_launch(const tile_config& c, const gemm_problem& p);

}  // namespace tiletune
