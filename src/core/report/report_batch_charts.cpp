// The charts of a training plan (tiletune batch): peak memory by term, tokens/s by micro-batch.
#include <cmath>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/report/report_charts.hpp"
#include "core/plan_mode.hpp"

namespace tiletune::report {

namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;

bool is_recommended(const json& candidate, const json& rec) {
  return rec.is_object() && number_at(candidate, "micro_batch") == number_at(rec, "micro_batch") &&
         bool_at(candidate, "checkpointing", false) == bool_at(rec, "checkpointing", false);
}

std::string policy(bool checkpointing) { return checkpointing ? "with checkpointing" : "without checkpointing"; }

// A candidate's or the recommendation's figures: a micro-batch below 1 had been drawn on the log axis,
// negative bytes as a bar below the budget.
void check_batch_candidate(const json& c, const std::string& where) {
  for (const char* k : {"micro_batch", "grad_accum_steps"}) at_least(c, k, 1, where);
  for (const char* k : {"peak_bytes", "peak_allocated_bytes", "tokens_per_s", "samples_per_s", "step_ms"})
    at_least(c, k, 0, where);
  for (const char* k : {"checkpointing", "fits"}) (void)bool_at(c, k, false);
}

// The plan's fields the charts read, held to the schema before anything is drawn (tiletune's gemm
// files get result_compare's checks; a plan's "mode" "bogus" had been drawn as predicted).
void check_batch_plan_fields(const json& doc, const std::string& path) {
  check_mode_field(doc, "mode", path, false);
  for (const char* k : {"model", "gpu", "setup", "recommendation"}) check_object(doc, k, path);
  const json& memory = require(doc, "memory", false, path, "the batch plan");
  for (const auto& [k, v] : memory.items())
    if (v.is_number()) at_least(memory, k.c_str(), 0, path + ": \"memory\"");
  const json& candidates = require(doc, "candidates", true, path, "the batch plan");
  for (std::size_t i = 0; i < candidates.size(); ++i)
    check_batch_candidate(entry_object(candidates, i, "candidates", path), fmt::format("{}: candidate {}", path, i + 1));
  if (doc.contains("recommendation") && doc["recommendation"].is_object())
    check_batch_candidate(doc["recommendation"], path + ": \"recommendation\"");
  if (doc.contains("setup")) at_least(doc["setup"], "seq_len", 1, path + ": \"setup\"");
}

}  // namespace

json batch_memory_rows(const json& batch, bool checkpointing, const std::string& path) {
  const json& memory = require(batch, "memory", false, path, "the batch plan");
  const json& candidates = require(batch, "candidates", true, path, "the batch plan");
  const json rec = batch.value("recommendation", json());
  const double per_sample_act = number_at(memory, checkpointing ? "checkpointed_activation_bytes_per_sample"
                                                                : "activation_bytes_per_sample")
                                    .value_or(0);
  json rows = json::array();
  for (const auto& c : candidates) {
    if (!c.is_object()) throw usage_error(fmt::format("{}: a candidate is not an object", path));
    if (bool_at(c, "checkpointing", false) != checkpointing) continue;
    const auto mb = number_at(c, "micro_batch");
    const auto peak = number_at(c, "peak_bytes");
    if (!mb || !peak) throw usage_error(fmt::format("{}: a candidate lacks micro_batch or peak_bytes", path));
    // The file's terms at this micro-batch; what peak_bytes holds beyond them
    // (CUDA context, allocator slack, workspaces, autocast copies, the peak
    // phase's own mix) is "overhead". Where the terms exceed the peak (not all
    // are live at the peak phase) overhead is 0 and the tick marks the peak.
    const std::vector<std::pair<std::string, double>> terms = {
        {"weights", number_at(memory, "weights_bytes").value_or(0)},
        {"gradients", number_at(memory, "gradients_bytes").value_or(0)},
        {"optimizer", number_at(memory, "optimizer_bytes").value_or(0)},
        {"activations", per_sample_act * *mb},
        {"logits", number_at(memory, "logits_bytes_per_sample").value_or(0) * *mb}};
    double sum = 0;
    for (const auto& [_, b] : terms) sum += b;
    std::vector<std::pair<std::string, double>> all = terms;
    all.push_back({"overhead", std::max(0.0, *peak - sum)});
    const bool fits = bool_at(c, "fits", false), recommended = is_recommended(c, rec);
    int order = 0;
    for (const auto& [term, bytes] : all)
      rows.push_back({{"micro_batch", *mb},
                      {"term", term},
                      {"order", order++},
                      {"gib", bytes / gib},
                      {"peak_gib", *peak / gib},
                      {"fits", fits},
                      {"recommended", recommended},
                      {"tip", fmt::format("micro-batch {:.0f} {}: {} {:.2f} GiB; peak {:.2f} GiB{}{}", *mb,
                                          policy(checkpointing), term, bytes / gib, *peak / gib,
                                          fits ? "" : " (does not fit)", recommended ? " (recommended)" : "")}});
  }
  return rows;
}

json batch_throughput_rows(const json& batch, const std::string& path) {
  const json& candidates = require(batch, "candidates", true, path, "the batch plan");
  const json rec = batch.value("recommendation", json());
  json rows = json::array();
  for (const auto& c : candidates) {
    if (!c.is_object()) throw usage_error(fmt::format("{}: a candidate is not an object", path));
    const auto mb = number_at(c, "micro_batch"), tokens = number_at(c, "tokens_per_s");
    if (!mb || !tokens) continue;
    const bool ckpt = bool_at(c, "checkpointing", false), fits = bool_at(c, "fits", false);
    const bool recommended = is_recommended(c, rec);
    rows.push_back({{"micro_batch", *mb},
                    {"policy", policy(ckpt)},
                    {"tokens_per_s", *tokens},
                    {"fits", fits},
                    {"recommended", recommended},
                    {"basis", string_at(c, "gemm_time_basis", string_at(batch, "mode", "predicted"))},
                    {"tip", fmt::format("micro-batch {:.0f} {}: {:.0f} tokens/s ({}){}{}", *mb, policy(ckpt), *tokens,
                                        string_at(c, "gemm_time_basis", "?"), fits ? "" : ", does not fit",
                                        recommended ? ", recommended" : "")}});
  }
  return rows;
}

std::vector<report_section> batch_sections(const json& doc, const std::string& path, const report_options&) {
  check_batch_plan_fields(doc, path);
  const json& memory = require(doc, "memory", false, path, "the batch plan");
  const json model = doc.value("model", json::object());
  const json gpu = doc.value("gpu", json::object());
  const json setup = doc.value("setup", json::object());
  const json rec = doc.value("recommendation", json());
  const bool measured = is_measured_result(doc);
  report_section s;
  s.source = path;
  s.kind = result_kind::batch;
  s.predicted = !measured;
  s.title = fmt::format("Training plan: {} on {}, sequence {}, {}", string_at(model, "name", "?"),
                        string_at(gpu, "name", "?"), number_at(setup, "seq_len").value_or(0),
                        string_at(setup, "precision", "?"));
  s.basis = fmt::format(
      "Memory is modelled, not measured (the model's terms; peak_bytes adds allocator slack and the CUDA context). "
      "Step time: {}.",
      measured ? "the GEMMs were timed with cuBLASLt on the GPU, the rest modelled"
                         : "predicted offline from the device model; no GPU ran");
  if (rec.is_object())
    s.facts.push_back(fmt::format("Recommended: micro-batch {:.0f}, {} accumulation step(s), {} checkpointing: {:.0f} "
                                  "tokens/s, peak {:.1f} GiB.",
                                  number_at(rec, "micro_batch").value_or(0), number_at(rec, "grad_accum_steps").value_or(0),
                                  bool_at(rec, "checkpointing", false) ? "with" : "without",
                                  number_at(rec, "tokens_per_s").value_or(0), number_at(rec, "peak_bytes").value_or(0) / gib));
  else {
    s.facts.push_back("Nothing fits: no micro-batch fits the budget with either checkpointing policy.");
    if (doc.contains("suggestions") && doc["suggestions"].is_array())
      for (const auto& sug : doc["suggestions"])
        s.facts.push_back("Suggestion: " + (sug.is_string() ? sug.get<std::string>() : sug.dump()));
  }
  const double budget_gib = number_at(memory, "budget_bytes").value_or(0) / gib;
  for (const bool ckpt : {false, true}) {
    const json rows = batch_memory_rows(doc, ckpt, path);
    if (rows.empty()) {
      s.notices.push_back(fmt::format("Peak memory {}: no candidate.", policy(ckpt)));
      continue;
    }
    s.charts.push_back(make_chart(
        ckpt ? "memory-checkpointing" : "memory-no-checkpointing", fmt::format("Peak memory by term, {}", policy(ckpt)),
        fmt::format("Stacks: weights, gradients, optimizer state, activations and logits (the file's terms times the "
                    "micro-batch) and the rest of peak_bytes as overhead; the black tick is the candidate's peak, the "
                    "dashed line the budget ({:.1f} GiB: the GPU's memory less the safety margin). Pale bars do not fit.",
                    budget_gib),
        rows, memory_stack_spec(rows, budget_gib, policy(ckpt))));
  }
  const json tp = batch_throughput_rows(doc, path);
  if (tp.empty())
    s.notices.push_back("Tokens/s: no candidate has a time.");
  else
    s.charts.push_back(make_chart("throughput", "Tokens/s by micro-batch",
                                  "One line per checkpointing policy; filled points fit the budget, hollow ones do not; "
                                  "the orange diamond is the recommendation.",
                                  tp, throughput_spec(tp)));
  return {s};
}

}  // namespace tiletune::report
