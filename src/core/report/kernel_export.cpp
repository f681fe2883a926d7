#include "core/report/kernel_export.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"
#include "core/compile/kernel_templates.hpp"
#include "core/measure/measure_protocol.hpp"
#include "core/version.hpp"
#include "core/gemm/family.hpp"

namespace tiletune {

namespace fs = std::filesystem;

namespace {

std::string dims(const std::array<std::int64_t, 3>& d) { return fmt::format("({}, {}, {})", d[0], d[1], d[2]); }

bool has_cluster(const kernel_launch& l) { return l.cluster[0] * l.cluster[1] * l.cluster[2] > 1; }

// The compiler options as nvcc spells them.
std::string nvcc_command(const compile_job& job, const std::string& id) {
  std::string s = "nvcc -cubin -arch=" + job.arch;
  for (const auto& o : job.options) s += " " + o;
  return s + fmt::format(" -o {0}.cubin {0}.cu", id);
}

std::string figures_sentence(const gemm_plan& plan, const variant_result& v) {
  if (v.measured && v.measured->timing.median_us > 0) {
    const double us = v.measured->timing.median_us;
    std::string s = fmt::format("MEASURED: {:.1f} us median, {:.1f} TFLOP/s", us, plan.problem.flops() / (us * 1e6));
    if (plan.reference && plan.reference->timing.median_us > 0)
      s += fmt::format(", {:.2f}x cuBLASLt", plan.reference->timing.median_us / us);
    return s + fmt::format(" (timer: {}), verified against cuBLASLt", v.measured->timer);
  }
  return fmt::format("PREDICTED by tiletune's analytical model, not measured: {:.1f} us, {:.1f} TFLOP/s{}",
                     v.predicted.time_us, v.predicted.tflops,
                     v.measured && v.measured->verified ? " (verified against cuBLASLt on the GPU, not timed)" : "");
}

// The rendered source marks where each template starts with #line, which
// would point a reader's compiler errors at files they do not have.
std::string readable_body(const std::string& rendered) {
  std::string out;
  std::size_t at = 0;
  while (at < rendered.size()) {
    std::size_t end = rendered.find('\n', at);
    if (end == std::string::npos) end = rendered.size();
    const std::string_view line(rendered.data() + at, end - at);
    if (line.starts_with("#line ")) {
      const auto q = line.find('"');
      const std::string_view file = q == std::string_view::npos ? line : line.substr(q + 1, line.size() - q - 2);
      out += fmt::format("\n// ---- from tiletune's kernels_templates/{} ----\n", file);
    } else {
      out += line;
      out += '\n';
    }
    at = end + 1;
  }
  return out;
}

}  // namespace

kernel_launch describe_launch(const tile_config& c, const gemm_problem& p, const device_spec& d) {
  if (!c.family.impl) throw std::invalid_argument(fmt::format("no launch description for the family of {}", c.id()));
  return c.family->describe_launch(c, p, d);
}

nlohmann::json to_json(const kernel_parameter& k) {
  return {{"name", k.name}, {"c_type", k.c_type}, {"kind", k.kind}, {"meaning", k.meaning}, {"value", k.value}};
}

nlohmann::json to_json(const tensor_map_description& t) {
  return {{"parameter", t.parameter},
          {"tensor", t.tensor},
          {"encoder", "cuTensorMapEncodeTiled"},
          {"data_type", t.data_type},
          {"rank", t.global_dims.size()},
          {"global_dims", t.global_dims},
          {"global_strides_bytes", t.global_strides_bytes},
          {"box_dims", t.box_dims},
          {"element_strides", t.element_strides},
          {"interleave", t.interleave},
          {"swizzle", t.swizzle},
          {"l2_promotion", t.l2_promotion},
          {"oob_fill", t.oob_fill}};
}

nlohmann::json to_json(const kernel_launch& l) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& k : l.parameters) params.push_back(to_json(k));
  nlohmann::json maps = nlohmann::json::array();
  for (const auto& t : l.tensor_maps) maps.push_back(to_json(t));
  return {{"entry", l.entry},
          {"grid", l.grid},
          {"block", l.block},
          {"cluster", l.cluster},
          {"dynamic_smem_bytes", l.dynamic_smem_bytes},
          {"grid_rule", l.grid_rule},
          {"parameters", params},
          {"tensor_maps", maps},
          {"requirements", l.requirements}};
}

std::string exported_source(const gemm_plan& plan, const variant_result& v, const kernel_launch& launch,
                            const run_info& run) {
  const gemm_problem& p = plan.problem;
  const compile_job job = make_compile_job(v.config, p.type, p.layout, plan.device);
  const std::string id = v.config.id();
  std::string s;
  auto line = [&s](const std::string& text) { s += text.empty() ? "//\n" : "// " + text + "\n"; };
  line(fmt::format("tiletune kernel {} (family {})", id, to_string(v.config.family)));
  line("");
  line(fmt::format("C = alpha * op(A) * op(B) + beta * C in {} with fp32 accumulation, layout {}:",
                   to_string(p.type), p.layout.name()));
  line(fmt::format("  {}; {}; C stored M x N row-major.", stored_as('A', p.layout.a_transposed, "M", "K"),
                   stored_as('B', p.layout.b_transposed, "K", "N")));
  line(fmt::format("Tuned for {} (alpha {}, beta {}) on {} ({}).", p.describe(), p.alpha, p.beta, plan.device.name,
                   job.arch));
  line(figures_sentence(plan, v) + ".");
  line(fmt::format("Resources: {} threads, {} registers, {} B dynamic + {} B static shared memory, {} B spilled.",
                   v.config.threads(), v.resources.registers, launch.dynamic_smem_bytes, v.resources.static_smem_bytes,
                   v.resources.spill_bytes()));
  line("The tile constants are fixed (the #defines below); sizes, strides, alpha and beta are parameters.");
  line("");
  line("Compile (no header is included; the file compiles as it is):");
  line(fmt::format("  NVRTC: nvrtcCreateProgram(&prog, source, \"{}.cu\", 0, nullptr, nullptr), then", id));
  std::vector<std::string> quoted{fmt::format("\"--gpu-architecture={}\"", job.arch)};
  for (const auto& o : job.options) quoted.push_back("\"" + o + "\"");
  line(fmt::format("         nvrtcCompileProgram with {{{}}} and nvrtcGetCUBIN.", fmt::join(quoted, ", ")));
  line("  nvcc:  " + nvcc_command(job, id));
  line(fmt::format("  The cubin beside this file ({}.cubin) is what tiletune compiled from this source.", id));
  line("");
  line(fmt::format("Launch: entry \"{}\" (extern \"C\"), grid {} = {}, block {}{},", launch.entry, dims(launch.grid),
                   launch.grid_rule, dims(launch.block), has_cluster(launch) ? ", cluster " + dims(launch.cluster) : ""));
  line(fmt::format("  {} bytes of dynamic shared memory. Parameters, in order:", launch.dynamic_smem_bytes));
  for (const auto& k : launch.parameters)
    line(fmt::format("    {} {}: {}{}", k.c_type, k.name, k.meaning,
                     k.value.is_null() ? "" : fmt::format(" (here {})", k.value.dump())));
  for (const auto& t : launch.tensor_maps)
    line(fmt::format("    {}: cuTensorMapEncodeTiled over {}, see tensor_maps in {}.json", t.parameter, t.tensor, id));
  line("  With the driver API:");
  line("    CUmodule mod; cuModuleLoadData(&mod, cubin);");
  line(fmt::format("    CUfunction f; cuModuleGetFunction(&f, mod, \"{}\");", launch.entry));
  line(fmt::format("    cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, {});",
                   launch.dynamic_smem_bytes));
  std::vector<std::string> refs;
  for (const auto& k : launch.parameters) refs.push_back("&" + k.name);
  line(fmt::format("    void* args[] = {{{}}};", fmt::join(refs, ", ")));
  if (has_cluster(launch)) {
    line(fmt::format("    cuLaunchKernelEx with gridDim {}, blockDim {}, sharedMemBytes {} and the attribute",
                     dims(launch.grid), dims(launch.block), launch.dynamic_smem_bytes));
    line(fmt::format("    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION {}, passing args.", dims(launch.cluster)));
  } else {
    line(fmt::format("    cuLaunchKernel(f, {}, {}, {}, {}, {}, {}, {}, stream, args, nullptr);", launch.grid[0],
                     launch.grid[1], launch.grid[2], launch.block[0], launch.block[1], launch.block[2],
                     launch.dynamic_smem_bytes));
  }
  line(fmt::format("{}.json beside this file says the same for programs (schema tiletune.kernel/1).", id));
  line(fmt::format("Generated by tiletune {} ({}) on {}.", tool_version, plan.compiler_version, run.date_utc));
  s += "\n";
  s += readable_body(job.source);
  return s;
}

nlohmann::json export_manifest(const gemm_plan& plan, const variant_result& v, const kernel_launch& launch,
                               const run_info& run) {
  const gemm_problem& p = plan.problem;
  const compile_job job = make_compile_job(v.config, p.type, p.layout, plan.device);
  const std::string id = v.config.id();
  // The variant's figures exactly as the gemm result JSON gives them.
  const nlohmann::json body = result_body(plan, plan.variants.size());
  nlohmann::json figures;
  for (const auto& vj : body["variants"])
    if (vj["id"] == id) figures = vj;
  const bool measured = v.measured && v.measured->timing.median_us > 0;

  nlohmann::json j = result_header("tiletune.kernel/1", plan.device, plan.mode, plan.compiler_version,
                                   run);
  j["id"] = id;
  j["family"] = to_string(v.config.family);
  j["tile"] = tile_to_json(v.config);
  j["arch"] = job.arch;
  j["files"] = {{"source", id + ".cu"}, {"cubin", id + ".cubin"}};
  std::vector<std::string> nvrtc_options{"--gpu-architecture=" + job.arch};
  nvrtc_options.insert(nvrtc_options.end(), job.options.begin(), job.options.end());
  j["compile"] = {{"nvrtc_options", nvrtc_options}, {"nvcc", nvcc_command(job, id)}, {"compiler", plan.compiler_version}};
  j["launch"] = to_json(launch);
  j["resources"] = {{"registers", v.resources.registers},
                    {"threads", v.config.threads()},
                    {"dynamic_smem_bytes", launch.dynamic_smem_bytes},
                    {"static_smem_bytes", v.resources.static_smem_bytes},
                    {"smem_bytes", v.smem_bytes},
                    {"spill_bytes", v.resources.spill_bytes()},
                    {"stack_bytes", v.resources.stack_bytes},
                    {"blocks_per_sm", v.occupancy.blocks_per_sm}};
  j["problem"] = to_json(p);
  j["problem"]["note"] = "the problem the tile was tuned for; the kernel runs other sizes of this dtype and layout";
  j["figures"] = {{"basis", measured ? "measured" : "predicted"},
                  {"rank", figures.value("rank", nlohmann::json(nullptr))},
                  {"median_us", figures.value("median_us", nlohmann::json(nullptr))},
                  {"predicted_us", figures.value("predicted_us", nlohmann::json(nullptr))},
                  {"tflops", figures.value("tflops", nlohmann::json(nullptr))},
                  {"percent_of_peak", figures.value("percent_of_peak", nlohmann::json(nullptr))},
                  {"vs_reference", figures.value("vs_reference", nlohmann::json(nullptr))},
                  {"max_rel_error", figures.value("max_rel_error", nlohmann::json(nullptr))}};
  j["figures"]["verified"] = v.measured && v.measured->verified;
  if (measured) {
    j["figures"]["timer"] = v.measured->timer;
    j["figures"]["reference"] = body["reference"];
  } else {
    j["figures"]["note"] = "predicted by the analytical model; nothing was run";
  }
  return j;
}

std::vector<export_file> export_variant(const gemm_plan& plan, const variant_result& v, const run_info& run) {
  if (v.status != variant_status::ok || v.cubin.empty())
    throw std::invalid_argument(fmt::format("{} is {}: there is no kernel to export", v.config.id(),
                                            to_string(v.status)));
  const kernel_launch launch = describe_launch(v.config, plan.problem, plan.device);
  const std::string id = v.config.id();
  return {{id + ".cu", exported_source(plan, v, launch, run)},
          {id + ".cubin", v.cubin},
          {id + ".json", export_manifest(plan, v, launch, run).dump(2) + "\n"}};
}

std::vector<const variant_result*> variants_to_export(const gemm_plan& plan, const std::vector<std::string>& only) {
  std::vector<const variant_result*> out;
  if (only.empty()) {
    if (plan.recommended) out.push_back(&plan.variants[*plan.recommended]);
    return out;
  }
  for (const auto& id : only) {
    for (const auto& v : plan.variants)
      if (v.config.id() == id && std::find(out.begin(), out.end(), &v) == out.end()) out.push_back(&v);
  }
  return out;
}

std::string export_folder_name(const std::string& problem_name) {
  std::string s;
  for (const char ch : problem_name) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                      ch == '.' || ch == '_' || ch == '-';
    s += keep ? ch : '-';
  }
  // "." and ".." would name the folder itself or its parent.
  if (s.empty() || s.find_first_not_of('.') == std::string::npos) s = "problem" + s;
  return s;
}

void check_export_dir(const fs::path& dir) {
  if (dir.empty()) throw usage_error("--export needs a folder name");
  std::error_code ec;
  // The nearest part of the path that exists must be a writable folder.
  fs::path at = fs::absolute(dir, ec);
  while (!at.empty() && !fs::exists(at, ec)) {
    if (at == at.parent_path()) break;
    at = at.parent_path();
  }
  if (!fs::is_directory(at, ec)) {
    if (at == fs::absolute(dir, ec))
      throw usage_error(fmt::format("--export {}: that is a file, not a folder", dir.string()));
    throw usage_error(fmt::format("--export {}: {} is a file, not a folder", dir.string(), at.string()));
  }
  if (access(at.c_str(), W_OK | X_OK) != 0)
    throw usage_error(fmt::format("--export {}: the folder {} is not writable", dir.string(), at.string()));
}

void write_export(const fs::path& dir, const std::vector<export_file>& files) {
  check_export_dir(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw usage_error(fmt::format("--export {}: cannot create the folder: {}", dir.string(), ec.message()));
  const fs::path tmp = dir / fmt::format(".tiletune-export.{}.tmp", getpid());
  fs::remove_all(tmp, ec);
  struct remove_on_exit {
    fs::path path;
    ~remove_on_exit() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } cleanup{tmp};
  for (const auto& f : files) {
    const fs::path staged = tmp / f.name;
    fs::create_directories(staged.parent_path(), ec);
    std::ofstream out(staged, std::ios::binary | std::ios::trunc);
    out.write(f.bytes.data(), static_cast<std::streamsize>(f.bytes.size()));
    out.close();
    if (!out) throw environment_error(fmt::format("--export {}: could not write {}", dir.string(), staged.string()));
  }
  // Renaming over a device, a FIFO or a link would replace it: such names are
  // refused before any file is written.
  for (const auto& f : files) {
    const auto st = fs::symlink_status(dir / f.name, ec);
    if (fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st))
      throw usage_error(fmt::format("--export {}: {} exists and is not a regular file (a link, device or FIFO); "
                                    "move it away or export elsewhere",
                                    dir.string(), (dir / f.name).string()));
  }
  for (const auto& f : files) {
    const fs::path target = dir / f.name;
    fs::create_directories(target.parent_path(), ec);
    if (ec || !fs::is_directory(target.parent_path()))
      throw usage_error(fmt::format("--export {}: cannot make the folder {}", dir.string(),
                                    target.parent_path().string()));
    if (fs::is_directory(target, ec))
      throw usage_error(fmt::format("--export {}: {} is a folder; cannot replace it with a file", dir.string(),
                                    target.string()));
    fs::rename(tmp / f.name, target, ec);
    if (ec) throw environment_error(fmt::format("--export {}: could not write {}: {}", dir.string(), target.string(),
                                          ec.message()));
  }
}

}  // namespace tiletune
