// The gemm command's tables: a plan's variants, measured on the GPU or
// predicted by the model, with the recommendation and the notes.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/tune/variant_ranking.hpp"
#include "cli/gemm_options.hpp"
#include "cli/output.hpp"

namespace tiletune::cli {

namespace {

// The row with "GB/s" and "% HBM" after its "% peak" cell (the sixth) where add.
std::vector<std::string> with_bandwidth(std::vector<std::string> cells, bool add, std::string gbs, std::string share) {
  if (add) cells.insert(cells.begin() + 6, {std::move(gbs), std::move(share)});
  return cells;
}
// A time's bandwidth cells: the problem's least traffic over it, and its share of the device's.
std::pair<std::string, std::string> bandwidth_cells(const gemm_plan& plan, double time_us) {
  if (time_us <= 0 || plan.device.memory_bandwidth_gbs <= 0) return {"-", "-"};
  const double gbs = static_cast<double>(plan.problem.least_traffic_bytes()) / (time_us * 1e3);
  return {fmt::format("{:.0f}", gbs), fmt::format("{:.0f}", 100 * gbs / plan.device.memory_bandwidth_gbs)};
}

std::string format_measured_table(const gemm_plan& plan, int top) {
  const double peak = plan.device.peak_tflops(plan.problem.type);
  const bool bw = memory_bound(plan.problem, plan.device);  // GB/s and % HBM after % peak
  text_table t(with_bandwidth({"rank", "variant", "status", "median us", "TFLOP/s", "% peak", "vs cuBLAS", "regs",
                               "smem KiB", "blocks/SM", "rel error"},
                              bw, "GB/s", "% HBM"));
  int shown = 0;
  for (const auto& v : plan.variants) {
    if (!v.measured) continue;
    if (shown++ >= top) break;
    const auto& m = *v.measured;
    const bool timed = m.timing.samples > 0;
    const double tflops = timed ? plan.problem.flops() / (m.timing.median_us * 1e6) : 0;
    const bool ref = plan.reference && plan.reference->timing.median_us > 0 && timed;
    const auto [gbs, share] = bandwidth_cells(plan, timed ? m.timing.median_us : 0);
    t.add_row(with_bandwidth(
        {v.rank ? std::to_string(v.rank) : "-", v.config.id(), std::string(to_string(v.status)),
         timed ? fmt::format("{:.1f}", m.timing.median_us) : "-", timed ? fmt::format("{:.1f}", tflops) : "-",
         timed && peak > 0 ? fmt::format("{:.0f}", 100 * tflops / peak) : "-",
         ref ? fmt::format("{:.2f}", plan.reference->timing.median_us / m.timing.median_us) : "-",
         std::to_string(v.resources.registers), fmt::format("{:.1f}", v.smem_bytes / 1024.0),
         std::to_string(v.occupancy.blocks_per_sm),
         m.verified && std::isfinite(m.error.rel_frobenius) ? fmt::format("{:.1e}", m.error.rel_frobenius) : "-"},
        bw, gbs, share));
  }
  std::string out = fmt::format("{} on {} ({}), MEASURED\n", plan.problem.describe(), plan.device.name,
                                plan.device.arch());
  if (plan.reference && plan.reference->timing.median_us > 0)
    out += fmt::format("cuBLASLt: {:.1f} us, {:.1f} TFLOP/s ({}; {})\n", plan.reference->timing.median_us,
                       plan.problem.flops() / (plan.reference->timing.median_us * 1e6), plan.reference->algorithm,
                       plan.reference->timer);
  out += "\n" + t.render();
  if (plan.recommended) {
    const auto& v = plan.variants[*plan.recommended];
    out += fmt::format("\nrecommended: {}\n  triton:  {}\n  cutlass: {}\n", v.config.id(),
                       triton_summary(v.config, plan.problem.type), cutlass_shape(v.config, plan.problem.type));
  } else {
    out += "\nno variant ran correctly; the JSON says why for each\n";
  }
  for (const auto& n : plan.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace

std::string common_reasons(const std::vector<variant_result>& variants) {
  std::vector<std::pair<std::string, std::pair<int, std::string>>> by;  // constraint or status -> count, reason
  for (const auto& v : variants) {
    const std::string key = v.constraint.empty() ? std::string(to_string(v.status)) : v.constraint;
    auto it = std::find_if(by.begin(), by.end(), [&](const auto& e) { return e.first == key; });
    if (it == by.end()) it = by.insert(by.end(), {key, {0, v.reason}});
    ++it->second.first;
  }
  std::stable_sort(by.begin(), by.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::string out;
  for (std::size_t i = 0; i < by.size() && i < 3; ++i)
    out += fmt::format("  {} variant{} ({}): {}\n", by[i].second.first, by[i].second.first == 1 ? "" : "s", by[i].first,
                       by[i].second.second);
  return out;
}

std::string format_table(const gemm_plan& plan, int top) {
  if (plan.mode == plan_mode::measured) return format_measured_table(plan, top);
  const double peak = plan.device.peak_tflops(plan.problem.type);
  const bool bw = memory_bound(plan.problem, plan.device);  // GB/s and % HBM after % peak
  text_table t(with_bandwidth({"rank", "variant", "status", "pred us", "TFLOP/s", "% peak", "regs", "smem KiB",
                               "threads", "blocks/SM", "bound"},
                              bw, "GB/s", "% HBM"));
  int shown = 0;
  for (const auto& v : plan.variants) {
    if (v.status != variant_status::ok) continue;
    if (shown++ >= top) break;
    const auto [gbs, share] = bandwidth_cells(plan, v.predicted.time_us);
    t.add_row(with_bandwidth({std::to_string(v.rank), v.config.id(), "ok", fmt::format("{:.1f}", v.predicted.time_us),
                              fmt::format("{:.1f}", v.predicted.tflops),
                              peak > 0 ? fmt::format("{:.0f}", 100 * v.predicted.tflops / peak) : "-",
                              std::to_string(v.resources.registers), fmt::format("{:.1f}", v.smem_bytes / 1024.0),
                              std::to_string(v.config.threads()), std::to_string(v.occupancy.blocks_per_sm),
                              v.predicted.bound},
                             bw, gbs, share));
  }
  constexpr int statuses = variant_status_count;
  std::size_t counts[statuses] = {};
  for (const auto& v : plan.variants) ++counts[static_cast<int>(v.status)];
  std::string tally;
  for (int i = 0; i < statuses; ++i)
    if (counts[i]) tally += fmt::format("{}{} {}", tally.empty() ? "" : ", ", counts[i], to_string(static_cast<variant_status>(i)));
  std::string out = fmt::format("{} on {} ({}), PREDICTED by the analytical model, not measured\n",
                                plan.problem.describe(), plan.device.name, plan.device.arch());
  out += fmt::format("{} variants: {}; compiled {} ({} from cache) in {:.1f} s\n\n", plan.variants.size(), tally,
                     plan.compiled, plan.cache_hits, plan.compile_wall_ms / 1000);
  out += t.render();
  if (plan.recommended) {
    const auto& v = plan.variants[*plan.recommended];
    out += fmt::format("\nrecommended: {} (predicted {:.1f} TFLOP/s)\n  triton:  {}\n  cutlass: {}\n",
                       v.config.id(), v.predicted.tflops, triton_summary(v.config, plan.problem.type),
                       cutlass_shape(v.config, plan.problem.type));
  } else {
    out += std::string(plan.selected
                           ? "\nnone of the variants selected can run this problem on this GPU"
                           : "\nno variant can run this problem on this GPU") +
           "; the JSON says why for each, most often:\n" + common_reasons(plan.variants);
  }
  for (const auto& n : plan.notes) out += "note: " + n + "\n";
  if (const std::string tie = top_tie_note(plan); !tie.empty()) out += "note: " + tie + "\n";
  return out;
}

}  // namespace tiletune::cli
