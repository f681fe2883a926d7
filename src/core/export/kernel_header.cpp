#include "core/export/kernel_header.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/compile/kernel_templates.hpp"

namespace tiletune {

namespace {

bool identifier_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

// alpha and beta are run-time values of every GEMM; the other scalars (sizes,
// strides, batch) are the tuned problem's, which the tensor maps and grid assume.
bool passed_by_caller(const kernel_parameter& k) { return k.kind == "scalar" && (k.name == "alpha" || k.name == "beta"); }

const tensor_map_description* map_of(const kernel_launch& l, const std::string& parameter) {
  for (const auto& t : l.tensor_maps)
    if (t.parameter == parameter) return &t;
  return nullptr;
}

template <typename T>
std::string c_array(const std::vector<T>& v) {
  return v.empty() ? "{0}" : fmt::format("{{{}}}", fmt::join(v, ", "));
}

std::string encode_map(const tensor_map_description& t, const std::string& pointer) {
  std::string s;
  s += fmt::format("  CUtensorMap {};\n  {{\n", t.parameter);
  s += fmt::format("    const cuuint64_t dims[] = {};\n", c_array(t.global_dims));
  s += fmt::format("    const cuuint64_t strides_bytes[] = {};\n", c_array(t.global_strides_bytes));
  s += fmt::format("    const cuuint32_t box[] = {};\n", c_array(t.box_dims));
  s += fmt::format("    const cuuint32_t element_strides[] = {};\n", c_array(t.element_strides));
  // The pointer is the caller's `const void*`, or a K-major copy's typed buffer (a pre-pass writes it).
  s += fmt::format("    if (encode(&{}, {}, {}, const_cast<void*>(static_cast<const void*>({})), dims, strides_bytes, box, "
                   "element_strides,\n",
                   t.parameter, t.data_type, t.global_dims.size(), pointer);
  s += fmt::format("               {}, {}, {}, {}) != CUDA_SUCCESS)\n", t.interleave, t.swizzle, t.l2_promotion,
                   t.oob_fill);
  s += "      return cudaErrorInvalidValue;\n  }\n";
  return s;
}

// The launches of a variant: its prologue's kernels in order, then the GEMM's.
std::vector<const kernel_launch*> launches_of(const kernel_launch& l) {
  std::vector<const kernel_launch*> out;
  for (const kernel_launch& k : l.prologue) out.push_back(&k);
  out.push_back(&l);
  return out;
}

}  // namespace

std::string export_entry_name(const tile_config& c, const gemm_problem& p) {
  std::string s = fmt::format("tiletune_{}_{}_{}_{}x{}x{}", c.id(), to_string(p.type), p.layout.name(), p.m, p.n, p.k);
  if (p.batch > 1) s += fmt::format("_b{}", p.batch);
  if (p.grouped()) {
    // FNV-1a of the description and of each group's rows (what the launch's group table holds).
    std::string what = p.describe() + fmt::format(" stride {}", p.groups->stride);
    for (const std::int64_t r : p.groups->rows) what += fmt::format(" {}", r);
    std::uint32_t h = 2166136261u;
    for (const unsigned char ch : what) h = (h ^ ch) * 16777619u;
    s += fmt::format("_g{}_{:08x}", p.groups->count(), h);
  }
  for (char& ch : s)
    if (!identifier_char(ch)) ch = '_';
  return s;
}

std::string rename_entry(const std::string& source, const std::string& entry) {
  const std::string_view from = kernel_entry_name;
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit; (hit = source.find(from, at)) != std::string::npos; at = hit + from.size()) {
    out.append(source, at, hit - at);
    const bool starts = hit == 0 || !identifier_char(source[hit - 1]);
    // The entry itself, or a prologue's entry (the name and "_transpose"), as a whole word.
    const std::string_view prologue_suffix = kernel_prologue_suffix;
    auto whole_after = [&](std::size_t at) { return at >= source.size() || !identifier_char(source[at]); };
    const std::size_t after = hit + from.size();
    const bool ends = whole_after(after) || (source.compare(after, prologue_suffix.size(), prologue_suffix) == 0 &&
                                             whole_after(after + prologue_suffix.size()));
    out += starts && ends ? std::string_view(entry) : from;
  }
  out.append(source, at);
  return out;
}

namespace {

// The prefix of one launch's scalar constants: the GEMM's entry; a prologue kernel's entry and the
// operand it reads (two pre-passes of one entry, A's and B's, take scalars of their own).
std::string constant_prefix(const kernel_launch& k, const kernel_launch& gemm) {
  if (&k == &gemm || k.parameters.empty()) return k.entry;
  return k.entry + "_" + k.parameters.front().name;
}

// The header's comment, includes, the kernel's declaration and the tuned problem's constants.
std::string header_declarations(const kernel_launch& l, const std::string& id, const std::string& about) {
  const std::string& e = l.entry;
  std::string s = about;
  s += fmt::format(
      "//\n"
      "// Declares {0}, the kernel of {1}.cu, and {0}_launch(), which launches it on\n"
      "// the problem it was tuned for (the {0}_* constants below). Include this from a .cu\n"
      "// file compiled by nvcc, and link {1}.cu compiled for the same architecture (see Build above).\n"
      "// For another problem size, launch {0} yourself with the grid of grid_rule in {1}.json.\n"
      "#pragma once\n#include <cuda_runtime.h>\n",
      e, id);
  if (!l.tensor_maps.empty()) s += "#include <cuda.h>  // CUtensorMap and its enums (no libcuda link needed)\n";

  s += "\n";
  std::vector<std::string> entries;
  for (const kernel_launch* k : launches_of(l)) {
    if (std::find(entries.begin(), entries.end(), k->entry) != entries.end()) continue;  // A's and B's pre-pass
    entries.push_back(k->entry);
    std::vector<std::string> declared;
    for (const auto& p : k->parameters) declared.push_back(p.c_type + " " + p.name);
    s += fmt::format("extern \"C\" __global__ void {}({});\n", k->entry, fmt::join(declared, ", "));
  }
  s += "\n// The tuned problem's scalars, as the launcher passes them.\n";
  for (const kernel_launch* k : launches_of(l))
    for (const auto& p : k->parameters)
      if (p.kind == "scalar" && !passed_by_caller(p))
        s += fmt::format("static constexpr {} {}_{} = {};  // {}\n", p.c_type, constant_prefix(*k, l), p.name,
                         p.value.dump(), p.meaning);
  s += fmt::format("static constexpr unsigned {}_dynamic_smem_bytes = {};\n", e, l.dynamic_smem_bytes);
  return s;
}

// What the launcher takes from its caller, and what it passes on to the kernel.
struct launcher_arguments {
  std::vector<std::string> taken, passed;
};

// What one launch passes its kernel: pointers and tensor maps by name, the tuned scalars as the
// constants, alpha and beta as the caller's.
std::vector<std::string> passed_to(const kernel_launch& l, const kernel_launch& gemm) {
  std::vector<std::string> passed;
  for (const auto& k : l.parameters)
    passed.push_back(k.kind == "scalar" && !passed_by_caller(k) ? constant_prefix(l, gemm) + "_" + k.name : k.name);
  return passed;
}

// The caller's pointers once each, however many launches take them (a prologue writes A_k_major,
// the GEMM's tensor map reads it): A, B and C first, then the K-major copies' buffers, then the
// rest in the order the launches name them; then alpha and beta, then the stream.
launcher_arguments launcher_arguments_of(const kernel_launch& l) {
  launcher_arguments a;
  std::vector<std::pair<std::string, std::string>> pointers;  // (name, declaration)
  auto take = [&](const std::string& type, const std::string& name) {
    for (const auto& p : pointers)
      if (p.first == name) return;
    pointers.emplace_back(name, type + " " + name);
  };
  for (const kernel_launch* k : launches_of(l))
    for (const auto& p : k->parameters) {
      if (p.kind == "tensor_map") {
        const tensor_map_description* t = map_of(*k, p.name);
        take("const void*", t ? t->tensor : p.name);
      } else if (p.kind == "pointer") {
        take(p.c_type, p.name);
      }
    }
  auto rank = [](const std::string& name) {
    static const std::string order[] = {"A", "B", "C", "A_k_major", "B_k_major"};
    return std::find(std::begin(order), std::end(order), name) - std::begin(order);  // the rest: last
  };
  std::stable_sort(pointers.begin(), pointers.end(),
                   [&](const auto& x, const auto& y) { return rank(x.first) < rank(y.first); });
  for (const auto& p : pointers) a.taken.push_back(p.second);
  for (const auto& k : l.parameters)
    if (passed_by_caller(k)) a.taken.push_back(k.c_type + " " + k.name);
  a.taken.emplace_back("cudaStream_t stream = 0");
  a.passed = passed_to(l, l);
  return a;
}

// The launcher's comment, its signature and the shared memory attribute it sets.
std::string launcher_opening(const kernel_launch& l, const launcher_arguments& a) {
  const std::string& e = l.entry;
  std::string s = "\n// Pointers are device pointers";
  s += l.tensor_maps.empty() ? ".\n" : " (A and B: the start of each matrix the tensor maps cover).\n";
  for (const kernel_launch& k : l.prologue)
    for (const auto& p : k.parameters)
      if (p.kind == "pointer" && p.buffer_bytes > 0)
        s += fmt::format("// {}: a device buffer of {} bytes the caller allocates: {}.\n", p.name, p.buffer_bytes,
                         p.meaning);
  const bool maps = !l.tensor_maps.empty();
  s += maps ? "// Returns the first CUDA error: the attribute, the tensor maps, or the launch.\n"
            : "// Returns the first CUDA error: the attribute or the launch.\n";
  if (!l.requirements.empty())
    s += maps ? "// The launcher sets the shared memory attribute and encodes the tensor maps itself; what the kernel\n"
                "// needs (requirements in the .json):\n"
              : "// The launcher sets the shared memory attribute itself; what the kernel needs (requirements in\n"
                "// the .json):\n";
  for (const auto& r : l.requirements) s += "//  - " + r + "\n";
  s += fmt::format("static inline cudaError_t {}_launch({}) {{\n", e, fmt::join(a.taken, ", "));
  // A grid whose CTAs must all be resident is the tuned GPU's SM count: on a GPU of fewer SMs (another
  // part, a MIG slice) the launch would never finish, so the launcher refuses it.
  if (l.all_resident)
    s += fmt::format("  {{\n    int device = 0, sms = 0;\n    cudaError_t got = cudaGetDevice(&device);\n"
                     "    if (got == cudaSuccess) got = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, "
                     "device);\n    if (got != cudaSuccess) return got;\n"
                     "    if (sms < {}) return cudaErrorCooperativeLaunchTooLarge;  // every CTA resident: tuned for {} "
                     "SMs\n  }}\n",
                     l.grid[0] * l.grid[1] * l.grid[2], l.grid[0] * l.grid[1] * l.grid[2]);
  s += fmt::format("  cudaError_t err = cudaFuncSetAttribute({}, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                   "(int){}_dynamic_smem_bytes);\n  if (err != cudaSuccess) return err;\n",
                   e, e);
  return s;
}

// The driver's encoder, found through the runtime, and each tensor map encoded with it.
std::string tensor_map_encoding(const kernel_launch& l) {
  if (l.tensor_maps.empty()) return "";
  std::string s =
      "  typedef CUresult (*encode_fn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,\n"
      "                                const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,\n"
      "                                CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);\n"
      "  void* encoder = nullptr;\n"
      "  cudaDriverEntryPointQueryResult found;\n"
      "  err = cudaGetDriverEntryPointByVersion(\"cuTensorMapEncodeTiled\", &encoder, 12000, cudaEnableDefault, "
      "&found);\n"
      "  if (err != cudaSuccess) return err;\n"
      "  if (found != cudaDriverEntryPointSuccess || !encoder) return cudaErrorNotSupported;\n"
      "  const encode_fn encode = reinterpret_cast<encode_fn>(encoder);\n";
  for (const auto& t : l.tensor_maps) s += encode_map(t, t.tensor);
  return s;
}

// The prologue's kernels, each launched on the stream before the GEMM (no shared memory, no cluster).
std::string prologue_calls(const kernel_launch& l) {
  std::string s;
  for (const kernel_launch& k : l.prologue) {
    s += "  {\n    cudaLaunchConfig_t before = {};\n";
    s += fmt::format("    before.gridDim = dim3({}, {}, {});\n", k.grid[0], k.grid[1], k.grid[2]);
    s += fmt::format("    before.blockDim = dim3({}, {}, {});\n    before.stream = stream;\n", k.block[0], k.block[1],
                     k.block[2]);
    s += fmt::format("    err = cudaLaunchKernelEx(&before, {}, {});  // {}\n", k.entry, fmt::join(passed_to(k, l), ", "),
                     k.grid_rule);
    s += "    if (err != cudaSuccess) return err;\n  }\n";
  }
  return s;
}

// The launch configuration (grid, block, shared memory, cluster) and the launch itself.
std::string launch_call(const kernel_launch& l, const launcher_arguments& a) {
  const std::string& e = l.entry;
  std::string s = prologue_calls(l) + "  cudaLaunchConfig_t config = {};\n";
  s += fmt::format("  config.gridDim = dim3({}, {}, {});\n", l.grid[0], l.grid[1], l.grid[2]);
  s += fmt::format("  config.blockDim = dim3({}, {}, {});\n", l.block[0], l.block[1], l.block[2]);
  s += fmt::format("  config.dynamicSmemBytes = {}_dynamic_smem_bytes;\n  config.stream = stream;\n", e);
  if (l.cluster[0] * l.cluster[1] * l.cluster[2] > 1) {
    s += "  cudaLaunchAttribute cluster[1];\n";
    s += "  cluster[0].id = cudaLaunchAttributeClusterDimension;\n";
    s += fmt::format("  cluster[0].val.clusterDim.x = {};\n  cluster[0].val.clusterDim.y = {};\n"
                     "  cluster[0].val.clusterDim.z = {};\n",
                     l.cluster[0], l.cluster[1], l.cluster[2]);
    s += "  config.attrs = cluster;\n  config.numAttrs = 1;\n";
  }
  s += fmt::format("  return cudaLaunchKernelEx(&config, {}, {});\n}}\n", e, fmt::join(a.passed, ", "));
  return s;
}

}  // namespace

std::string exported_header(const kernel_launch& l, const std::string& id, const std::string& about) {
  const launcher_arguments a = launcher_arguments_of(l);
  return header_declarations(l, id, about) + launcher_opening(l, a) + tensor_map_encoding(l) + launch_call(l, a);
}

}  // namespace tiletune
