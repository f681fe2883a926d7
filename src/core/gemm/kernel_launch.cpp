#include "core/gemm/kernel_launch.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "core/compile/kernel_templates.hpp"
#include "core/measure/measure_protocol.hpp"

namespace tiletune {

std::string element_c_type(element_type e) { return std::string(info_of(e).parameter_type); }
std::string element_c_type(dtype t) { return element_c_type(row_of(t).a); }

namespace {
// " (bf16 bits: pass a __nv_bfloat16*)" where the parameter type is only the bits.
std::string bits_note(element_type e) {
  const element_info& i = info_of(e);
  return i.device_type.empty() ? "" : fmt::format(" ({} bits: pass a {}*)", i.name, i.device_type);
}
}  // namespace

std::string stored_as(char matrix, bool transposed, const char* rows, const char* cols) {
  return transposed ? fmt::format("{} stored {} x {} row-major (layout '{}': op({}) is its transpose)", matrix, cols,
                                  rows, 't', matrix)
                    : fmt::format("{} stored {} x {} row-major (layout '{}')", matrix, rows, cols, 'n');
}

kernel_parameter scalar_parameter(std::string name, std::string type, std::string meaning, nlohmann::json value) {
  return kernel_parameter{std::move(name), std::move(type), "scalar", std::move(meaning), std::move(value)};
}

// The parameters of a pointer-and-stride kernel, in the order of its signature.
std::vector<kernel_parameter> pointer_stride_parameters(const gemm_problem& p) {
  const operand_types e = p.elements();
  const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  return {
      {"A", "const " + element_c_type(e.a) + "*", "pointer",
       "device pointer to " + stored_as('A', p.layout.a_transposed, "M", "K") + bits_note(e.a), nullptr},
      {"B", "const " + element_c_type(e.b) + "*", "pointer",
       "device pointer to " + stored_as('B', p.layout.b_transposed, "K", "N") + bits_note(e.b), nullptr},
      {"C", element_c_type(e.c) + "*", "pointer",
       "device pointer to C stored M x N row-major" + bits_note(e.c) + "; read only when beta != 0", nullptr},
      scalar_parameter("M", "int", "rows of C and op(A)", p.m),
      scalar_parameter("N", "int", "columns of C and op(B)", p.n),
      scalar_parameter("K", "int", "the reduction dimension", p.k),
      scalar_parameter("lda", "int", "elements between rows of A as stored", p.lda()),
      scalar_parameter("ldb", "int", "elements between rows of B as stored", p.ldb()),
      scalar_parameter("ldc", "int", "elements between rows of C", p.ldc()),
      scalar_parameter("batch_stride_a", "long long", "elements between the batch's A matrices (grid z picks the matrix)",
             p.m * p.k),
      scalar_parameter("batch_stride_b", "long long", "elements between the batch's B matrices", p.k * p.n),
      scalar_parameter("batch_stride_c", "long long", "elements between the batch's C matrices", p.m * p.n),
      scalar_parameter("alpha", "float", "scale of op(A) * op(B)", alpha),
      scalar_parameter("beta", "float", "scale of the old C (0: C is not read)", beta),
      {"workspace", "float*", "pointer",
       "scratch buffer of buffer_bytes for fp32 partial sums, zeroed once (nullptr when buffer_bytes is 0)", nullptr},
      {"tile_counters", "unsigned*", "pointer",
       "scratch buffer of buffer_bytes for 32-bit tile counters, zeroed once before the first launch (the kernel "
       "leaves them zero; nullptr when buffer_bytes is 0)",
       nullptr},
  };
}

bool is_operand_pointer(const kernel_parameter& k) {
  return k.kind == "pointer" && (k.name == "A" || k.name == "B" || k.name == "C");
}

bool is_k_major_copy(const kernel_parameter& k) {
  return k.kind == "pointer" && (k.name == "A_k_major" || k.name == "B_k_major");
}

bool is_group_rows_pointer(const kernel_parameter& k) { return k.kind == "pointer" && k.name == "group_rows"; }
bool is_scale_pointer(const kernel_parameter& k) {
  return k.kind == "pointer" && (k.name == "scale_a" || k.name == "scale_b");
}

kernel_parameter& parameter_named(kernel_launch& l, std::string_view name) {
  for (auto& k : l.parameters)
    if (k.name == name) return k;
  throw std::logic_error(fmt::format("the launch of {} has no parameter named {}", l.entry, name));
}

std::int64_t scratch_bytes(const kernel_launch& l) {
  std::int64_t bytes = 0;
  std::int64_t copies[2] = {0, 0};  // A's and B's K-major copy: one buffer however many launches name it
  auto add = [&](const kernel_launch& one) {
    for (const auto& k : one.parameters) {
      if (is_k_major_copy(k))
        copies[k.name[0] - 'A'] = std::max(copies[k.name[0] - 'A'], k.buffer_bytes);
      else
        bytes += k.buffer_bytes;
    }
  };
  add(l);
  for (const kernel_launch& before : l.prologue) add(before);
  return bytes + copies[0] + copies[1];
}

namespace {

template <typename T>
std::vector<unsigned char> scalar_bytes(const kernel_parameter& k) {
  if (!k.value.is_number())
    throw std::invalid_argument(fmt::format("parameter {} ({}) has no numeric value", k.name, k.c_type));
  T v{};
  if constexpr (std::is_integral_v<T>) {
    if (!k.value.is_number_integer())
      throw std::invalid_argument(fmt::format("parameter {} ({}) is {}, not an integer", k.name, k.c_type,
                                              k.value.dump()));
    const long double wide = k.value.get<long double>();
    if (wide < static_cast<long double>(std::numeric_limits<T>::min()) ||
        wide > static_cast<long double>(std::numeric_limits<T>::max()))
      throw std::invalid_argument(fmt::format("parameter {} = {} does not fit its C type {}", k.name,
                                              k.value.dump(), k.c_type));
  }
  v = k.value.get<T>();
  std::vector<unsigned char> out(sizeof(T));
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}

char operand_letter(const std::string& tensor, const std::string& parameter) {
  if (tensor == "A" || tensor == "B" || tensor == "C" || tensor == "A_k_major" || tensor == "B_k_major")
    return tensor[0];
  throw std::invalid_argument(
      fmt::format("parameter {} maps tensor '{}', not A, B, C, A_k_major or B_k_major", parameter, tensor));
}

}  // namespace

std::vector<argument_binding> bind_arguments(const kernel_launch& l) {
  std::vector<argument_binding> out;
  for (const auto& k : l.parameters) {
    argument_binding b;
    if (is_group_rows_pointer(k)) {
      b.from = argument_binding::source::group_rows;
    } else if (is_k_major_copy(k)) {
      b.from = argument_binding::source::k_major_copy;
      b.operand = k.name[0];
      if (k.buffer_bytes <= 0)
        throw std::invalid_argument(fmt::format("parameter {} asks for {} bytes", k.name, k.buffer_bytes));
      b.buffer_bytes = k.buffer_bytes;
    } else if (is_scale_pointer(k)) {
      b.from = argument_binding::source::scales;
      b.operand = k.name == "scale_a" ? 'A' : 'B';
    } else if (k.kind == "pointer") {
      b.from = is_operand_pointer(k) ? argument_binding::source::operand : argument_binding::source::scratch;
      if (is_operand_pointer(k)) b.operand = k.name[0];
      if (k.buffer_bytes < 0)
        throw std::invalid_argument(fmt::format("parameter {} asks for {} bytes", k.name, k.buffer_bytes));
      b.buffer_bytes = k.buffer_bytes;
    } else if (k.kind == "tensor_map") {
      b.from = argument_binding::source::tensor_map;
      const auto t = std::find_if(l.tensor_maps.begin(), l.tensor_maps.end(),
                                  [&](const tensor_map_description& m) { return m.parameter == k.name; });
      if (t == l.tensor_maps.end())
        throw std::invalid_argument(fmt::format("tensor map parameter {} has no tensor_maps entry", k.name));
      b.operand = operand_letter(t->tensor, k.name);
      b.of_copy = t->tensor.size() > 1;
    } else if (k.kind == "scalar") {
      b.bytes = k.c_type == "int"         ? scalar_bytes<std::int32_t>(k)
                : k.c_type == "unsigned"  ? scalar_bytes<std::uint32_t>(k)
                : k.c_type == "long long" ? scalar_bytes<std::int64_t>(k)
                : k.c_type == "float"     ? scalar_bytes<float>(k)
                : k.c_type == "double"    ? scalar_bytes<double>(k)
                                          : throw std::invalid_argument(fmt::format(
                                                "parameter {} has C type {}, which no launcher binds", k.name,
                                                k.c_type));
    } else {
      throw std::invalid_argument(fmt::format("parameter {} is of kind '{}'", k.name, k.kind));
    }
    out.push_back(std::move(b));
  }
  return out;
}

// One block per BM x BN tile of C, the batch on grid z.
kernel_launch tile_grid_launch(const tile_config& c, const gemm_problem& p) {
  const launch_shape s = launch_shape_for(c, p);
  kernel_launch l;
  l.entry = kernel_entry_name;
  l.grid = {s.grid_x, s.grid_y, s.grid_z};
  l.block = {s.threads, 1, 1};
  l.dynamic_smem_bytes = s.dynamic_smem_bytes;
  l.grid_rule = fmt::format("(ceil(M / {}), ceil(N / {}), batch)", c.block_m, c.block_n);
  l.parameters = pointer_stride_parameters(p);
  l.requirements = {
      "the tile constants are fixed; M, N, K, the strides, alpha and beta are run-time values, so any shape of this "
      "dtype and layout runs (edge tiles are predicated) with the grid given by grid_rule",
      "each matrix must be indexable with 32-bit ints (M*K, K*N, M*N under 2^31 elements)",
      "16-byte aligned pointers and leading dimensions give vector loads; others take a slower element-wise path",
      "above 48 KiB of dynamic shared memory, set cudaFuncAttributeMaxDynamicSharedMemorySize "
      "(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) to dynamic_smem_bytes before the launch",
  };
  return l;
}

}  // namespace tiletune
