#include "core/train/fused_projections.hpp"

#include <map>
#include <utility>

namespace tiletune {

std::string step_gemm_layer(const std::string& gemm_name) {
  std::string n = gemm_name.substr(0, gemm_name.find(" ("));
  n = n.substr(0, n.rfind(' '));  // " forward", " recompute", " data-grad", " weight-grad"
  return n.starts_with("layers.") ? n.substr(7) : n;
}

std::vector<step_gemm> fuse_projections(const model_spec& m, std::vector<step_gemm> gemms) {
  if (!m.fused_qkv && !m.fused_gate_up) return gemms;
  std::vector<step_gemm> out;
  std::map<std::string, std::size_t> fused;  // by fused layer and pass: its place in out
  for (step_gemm& g : gemms) {
    const std::string layer = step_gemm_layer(g.name);
    const char* into = m.fused_qkv && (layer == "q_proj" || layer == "k_proj" || layer == "v_proj") ? "qkv_proj"
                       : m.fused_gate_up && (layer == "gate_proj" || layer == "up_proj")       ? "gate_up_proj"
                                                                                               : nullptr;
    if (!into) {
      out.push_back(std::move(g));
      continue;
    }
    const std::string pass = g.name.substr(g.name.rfind(' '));
    const auto [at, first] = fused.try_emplace(into + pass, out.size());
    if (first) {
      g.first_part = g.name;
      g.name = "layers." + std::string(into) + pass;
      out.push_back(std::move(g));
      continue;
    }
    step_gemm& f = out[at->second];
    if (pass == " forward" || pass == " recompute") f.n += g.n;
    else if (pass == " data-grad") f.k += g.k;
    else f.m += g.m;
  }
  return out;
}

layout model_gemm_layout(const model_spec& m, step_gemm& g) {
  if (m.model_type != "gpt2" || !g.name.starts_with("layers.")) return step_gemm_layout(g.name);
  if (g.name.ends_with(" forward") || g.name.ends_with(" recompute")) return parse_layout("nn");
  if (g.name.ends_with(" data-grad")) return parse_layout("nt");
  std::swap(g.m, g.n);
  return parse_layout("tn");
}

}  // namespace tiletune
