#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>
#include <map>
#include <set>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/errors.hpp"
#include "core/gemm/gemm_in_parts.hpp"
#include "core/measure/gemm_measure.hpp"
#include "core/tune/perf_model.hpp"
#include "core/results/result_file.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_plan.hpp"
#include "core/tune/tuning_db/stored_gemm_times.hpp"
#include "cli/gemm_tuning.hpp"
#include "cli/batch_options.hpp"
#include "core/results/json_file.hpp"

namespace tiletune::cli {

namespace {

// In GiB to two decimals; a figure that would print as 0.00 but is not zero (a LoRA run's gradients,
// its FSDP unit gradients) to two significant digits, so no held buffer reads as none.
std::string gib(std::int64_t bytes) {
  const double g = static_cast<double>(bytes) / (1LL << 30);
  return bytes > 0 && g < 0.005 ? fmt::format("{:.2g}", g) : fmt::format("{:.2f}", g);
}

// "on", "off", or "every 2" where every N-th layer is checkpointed.
std::string checkpointing_name(const training_setup& s, bool on) {
  if (!on) return "off";
  if (s.checkpoint_ops) return "selective";
  return s.checkpoint_every > 1 ? fmt::format("every {}", s.checkpoint_every) : "on";
}

std::string format_plan(const batch_plan& plan) {
  const auto& s = plan.setup;
  const auto& m = plan.memory;
  std::string out = fmt::format(
      "{} ({:.3f} B parameters{}, {:.3f} B trainable) on {}, seq {}, {}, {}{}: {}\n", terminal_text(s.model.name),
      m.parameters / 1e9,
      s.model.is_moe() ? fmt::format(", {:.3f} B active, experts over {} GPU(s)", m.active_parameters / 1e9,
                                     m.expert_parallel)
                       : "",
      m.trainable_parameters / 1e9, plan.device.name, s.seq_len, to_string(s.prec),
      to_string(s.optimizer),
      (s.lora_rank ? fmt::format(", {} rank {} on {}", s.quantize == quantize_kind::nf4 ? "QLoRA (NF4 base)" : "LoRA",
                                 s.lora_rank, lora_targets_name(s.lora_targets))
                   : "") +
          (s.optimizer_in_backward ? ", optimizer in backward" : "") +
          (s.offload != offload_kind::none ? fmt::format(", offload {}", to_string(s.offload)) : "") +
          parallelism_summary(s) +
          (s.framework != training_framework::hf ? fmt::format(", {} defaults", to_string(s.framework)) : ""),
      plan.mode == plan_mode::measured ? "step GEMMs MEASURED with cuBLASLt, memory predicted"
                              : "PREDICTED, not measured");
  // The data-parallel framework's own buffers, where it has them (zero_buffers.hpp).
  std::string buffers;
  for (const auto& [bytes, what] : {std::pair{m.deepspeed_bucket_bytes, "DeepSpeed reduce buckets"},
                                    std::pair{m.fsdp_unit_gradient_bytes, "FSDP unit gradients (backward)"},
                                    std::pair{m.no_sync_gradient_bytes, "unsharded gradients (accumulating)"},
                                    std::pair{m.optimizer_step_gradient_bytes, "fp32 step gradients (optimizer step)"}})
    if (bytes > 0) buffers += fmt::format("  {} {}", what, gib(bytes));
  // A pipeline's first stage holds the micro-batches the recommendation's step leaves in flight (the
  // most where nothing fits); its last stage holds the logits.
  const bool pipeline = !m.other_stages.empty();
  const double share = pipeline && plan.recommended ? candidate_in_flight_share(m, plan.candidates[*plan.recommended]) : 1;
  auto held = [&](std::int64_t bytes) { return std::llround(share * static_cast<double>(bytes)); };
  out += fmt::format("memory GiB: weights {}  autocast copies {}  gradients {}  optimizer {}{}  activations/sample {} "
                     "({} checkpointed{})  logits/sample {}{}  budget {}\n",
                     gib(m.weights_bytes), gib(m.autocast_weight_copies_bytes),
                     gib(m.gradients_bytes) +
                         (m.optimizer_in_backward ? fmt::format(" ({} in flight)", gib(m.gradients_in_flight_bytes)) : ""),
                     gib(m.optimizer_bytes) +
                         (m.offloaded_bytes > 0 ? fmt::format(" (host {})", gib(m.offloaded_bytes)) : ""),
                     buffers,
                     gib(held(m.activation_bytes_per_sample)), gib(held(m.checkpointed_activation_bytes_per_sample)),
                     !pipeline ? "" : plan.recommended ? "; first stage, the recommendation's micro-batches in flight"
                                                       : "; first stage, the most micro-batches in flight",
                     gib(pipeline ? m.other_stages.front().logits_bytes_per_sample : m.logits_bytes_per_sample),
                     pipeline ? " (last stage)" : "", gib(plan.memory_budget_bytes));
  out += fmt::format("peak GiB = weights and optimizer states + transient x (1 + {:.2f} allocator slack; with "
                     "checkpointing + {:.2f} x gradients) + {} CUDA context\n\n",
                     m.allocator_overhead, m.allocator_overhead_ckpt, gib(m.cuda_context_bytes));
  text_table t({"micro-batch", "checkpointing", "peak GiB", "fits", "accum", "global", "ms/micro-step", "samples/s",
                "tokens/s"});
  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    const auto& c = plan.candidates[i];
    t.add_row({fmt::format("{}{}", c.micro_batch, plan.recommended == i ? " *" : ""), checkpointing_name(s, c.checkpointing),
               gib(c.peak_bytes), c.fits ? "yes" : "no", std::to_string(c.grad_accum_steps),
               std::to_string(c.effective_global_batch), fmt::format("{:.1f}", c.step_ms),
               fmt::format("{:.1f}", c.samples_per_s), fmt::format("{:.0f}", c.tokens_per_s)});
  }
  out += t.render();
  if (plan.recommended) {
    const auto& r = plan.candidates[*plan.recommended];
    out += fmt::format("\nrecommended (*): micro-batch {}, gradient accumulation {}, global batch {}, checkpointing {}, "
                       "{}, {}\n",
                       r.micro_batch, r.grad_accum_steps, r.effective_global_batch, checkpointing_name(s, r.checkpointing),
                       to_string(s.prec), to_string(s.optimizer));
  } else {
    out += "\nno micro-batch fits.";
    if (!plan.suggestions.empty()) {
      out += " These would fit:";
      for (const auto& sg : plan.suggestions) out += "\n  " + terminal_text(sg);
    }
    out += "\n";
  }
  // (A note is one line; one quoting the model's name keeps it to one.)
  for (const auto& n : plan.notes) out += "note: " + terminal_text(n) + "\n";
  // The notes on the configs --json and --out emit (hf_training_args, model_load, deepspeed, peft).
  for (const auto& n : emitted_config_notes(plan)) out += "note: " + terminal_text(n) + "\n";
  return out;
}

// The worker's setup: a placeholder problem of the step's type on the chosen GPU, brief sampling.
worker_setup batch_worker_setup(const training_setup& s, const device_choice& device) {
  worker_setup setup;
  setup.problem.m = setup.problem.n = setup.problem.k = 128;
  setup.problem.type = gemm_dtype(s.prec);
  setup.device = device.index;
  setup.sampling.time_cap_ms = 200;
  setup.sampling.target_spread = 0.02;
  return setup;
}

// The memory-bound work's rates: a 1 GiB device-to-device copy, and 1000
// back-to-back tiny launches.
device_rates time_device_rates(measure_backend& backend, progress_line& progress) {
  device_rates rates;
  auto time_rate = [&](measure_op op, std::int64_t m, std::int64_t n) -> std::optional<double> {
    measure_request r;
    r.op = op;
    r.id = std::string(to_string(op));
    r.problem.m = m;
    r.problem.n = n;
    r.problem.k = 1;
    r.problem.type = dtype::f32;
    const measure_response got = backend.measure(r, {});
    if (got.status != variant_status::ok || got.timing.median_us <= 0) return std::nullopt;
    return got.timing.median_us;
  };
  progress.update("timing the device's copy bandwidth and launch floor");
  if (const auto us = time_rate(measure_op::bandwidth, 1 << 14, 1 << 14)) rates.copy_bandwidth_gbs = 2.0 * (1LL << 30) / (*us * 1e3);
  rates.launch_floor_us = time_rate(measure_op::launch, 1000, 1);
  return rates;
}

void add_timing_notes(batch_plan& plan, std::size_t shapes, const std::string& gpu, int split, std::size_t failures,
                      const device_rates& rates) {
  plan.notes.push_back(fmt::format("{} distinct GEMM shapes timed with cuBLASLt on the {}", shapes, gpu));
  if (split)
    plan.notes.push_back(fmt::format("{} GEMM shapes too big to time whole were timed in halves", split));
  if (failures)
    plan.notes.push_back(fmt::format("{} GEMMs could not be timed even in parts: the model, scaled to the timed "
                                     "shapes on this GPU, stands in",
                                     failures));
  if (!rates.copy_bandwidth_gbs || !rates.launch_floor_us)
    plan.notes.push_back("the copy bandwidth or launch floor could not be timed: the calibrated constants stand in");
}

// Times every distinct GEMM of the candidates' training steps with cuBLASLt
// (what the framework runs) in a worker process on the local GPU, started with worker_argv.
batch_plan plan_on_gpu(const training_setup& s, const device_choice& device,
                       const std::vector<std::string>& worker_argv, bool quiet) {
  const scratch_dir scratch("tiletune-batch");
  subprocess_backend backend(worker_argv, batch_worker_setup(s, device), scratch.path(), request_timeout::fixed(120));
  progress_line progress(!quiet);
  std::map<std::string, std::optional<double>> timed;
  std::size_t failures = 0;
  std::vector<double> measured_over_model;  // for shapes that cannot be timed even in parts
  auto time_once = [&](const gemm_problem& p) -> std::optional<double> {
    const std::string key = problem_key(p);
    if (const auto it = timed.find(key); it != timed.end()) return it->second;
    progress.update(fmt::format("timing the step's GEMMs with cuBLASLt: {} done, now {}", timed.size(), key));
    measure_request r;
    r.op = measure_op::library;
    r.id = key;
    r.problem = p;
    const measure_response m = backend.measure(r, {});
    std::optional<double> us;
    if (m.status == variant_status::ok && m.timing.median_us > 0) {
      us = m.timing.median_us;
      measured_over_model.push_back(*us / predict_library_gemm(device.spec, p).time_us);
    }
    timed[key] = us;
    return us;
  };
  // Too-big shapes are timed in halves, so every candidate's GEMMs stay
  // measured on the same basis and their time grows with the work.
  int split = 0;
  const gemm_time_fn gemm_time = [&](const gemm_problem& p) {
    if (const auto us = time_in_parts(p, time_once, &split)) return *us;
    // The model stands in, scaled by how the timed shapes compared with it on this GPU.
    ++failures;
    std::vector<double> r = measured_over_model;
    std::sort(r.begin(), r.end());
    const double scale = r.empty() ? 1.0 : r[r.size() / 2];
    return predict_library_gemm(device.spec, p).time_us * scale;
  };
  const device_rates rates = time_device_rates(backend, progress);
  batch_plan plan = plan_batch(s, device.spec, gemm_time, rates);
  progress.finish();
  add_timing_notes(plan, timed.size(), device.spec.name, split, failures, rates);
  return plan;
}

// The tuning database batch reads: --db, else the default.
std::filesystem::path database_file(const batch_options& o) {
  return o.db.empty() ? default_tuning_db_path() : std::filesystem::path(o.db);
}

// A predicted plan, with the GEMM times the tuning database holds for this GPU model
// (cuBLASLt's, measured by `tiletune gemm` runs) and the model scaled to them for the rest.
batch_plan plan_from_stored_times(const training_setup& s, const device_spec& d, const batch_options& o) {
  if (o.no_db) return plan_batch(s, d);
  const std::filesystem::path file = database_file(o);
  check_db_path(file, o.db);
  if (!std::filesystem::exists(file)) {
    if (!o.db.empty()) throw usage_error(fmt::format("--db {}: no such file", o.db));
    return plan_batch(s, d);
  }
  const stored_gemm_times stored = load_stored_gemm_times(
      tuning_db(file, tuning_db::open_mode::read, tuning_db::page_check::as_read),
                                                          device_model_of(d), d);
  if (stored.us.empty()) return plan_batch(s, d);
  // The plan keeps the lookup (its rates): it owns what it reads.
  auto used = std::make_shared<std::set<std::string>>();
  device_rates rates;
  rates.stored_gemm_scale = stored.model_scale;
  rates.stored_gemm_us = [stored, used](const gemm_problem& p) {
    const auto us = stored.find(p);
    if (us) used->insert(tuning_problem_key(p));
    return us;
  };
  batch_plan plan = plan_batch(s, d, {}, rates);
  plan.notes.push_back(fmt::format(
      "the tuning database {} holds cuBLASLt times of {} GEMM problem(s) measured on the {}: {} of the candidates' "
      "GEMM shapes are those times, and the model's GEMM times for the rest are scaled by {:.2f} to match them",
      file.string(), stored.us.size(), device_model_of(d), used->size(), stored.model_scale));
  return plan;
}

// The framework-dependent options the user gave, as their flags' text (apply_framework fills the rest).
std::map<std::string, std::string> given_flags(const batch_options& o) {
  std::map<std::string, std::string> given;
  auto add = [&](const char* flag, const auto& value) {
    if (value) given[flag] = fmt::format("{}", *value);
  };
  add("--precision", o.precision);
  add("--attention", o.attention);
  add("--loss", o.loss);
  add("--checkpointing", o.checkpointing);
  add("--zero", o.zero);
  add("--lora-targets", o.lora_targets);
  add("--adapter-dtype", o.adapter_dtype);
  add("--lora-dropout", o.lora_dropout);
  add("--overlap-comm", o.overlap_comm);
  add("--grad-clip", o.grad_clip);
  add("--expert-parallel", o.expert_parallel);
  return given;
}

// The link and network options where no byte crosses them, said (they were taken without a word):
// one GPU exchanges nothing, and GPUs that all sit in one node use no network.
void note_unused_link_options(const batch_options& o, const training_setup& s, batch_plan& plan) {
  std::vector<std::string> unused;
  if (s.world_size == 1) {
    if (o.link_gbs) unused.push_back(fmt::format("--link-gbs {}", *o.link_gbs));
    if (o.overlap_comm) unused.push_back(fmt::format("--overlap-comm {}", *o.overlap_comm));
    if (o.gpus_per_node_given) unused.push_back(fmt::format("--gpus-per-node {}", o.gpus_per_node));
    if (o.network_gbs_given) unused.push_back(fmt::format("--network-gbs {}", o.network_gbs));
    if (!unused.empty())
      plan.notes.push_back(fmt::format("{} not used: one GPU (--world-size 1) exchanges nothing with others",
                                       fmt::join(unused, ", ")));
  } else if (o.network_gbs_given && o.link_gbs) {
    plan.notes.push_back(fmt::format("--network-gbs {} not used: --link-gbs {} sets the bandwidth of every exchange, "
                                     "inside a node and across nodes",
                                     o.network_gbs, *o.link_gbs));
  } else if (o.network_gbs_given && s.world_size <= s.gpus_per_node) {
    plan.notes.push_back(fmt::format("--network-gbs {} not used: the {} GPUs sit in one node (--gpus-per-node {}), "
                                     "joined by its GPU link",
                                     o.network_gbs, s.world_size, s.gpus_per_node));
  }
}

void run_batch(const batch_options& o, run_context& ctx) {
  training_setup s;
  const training_framework framework = parse_framework(o.framework);
  const std::map<std::string, std::string> given = given_flags(o);
  check_framework_flags(given);  // before the device is chosen: a bad value is a usage error anywhere
  s.model = load_model(o.model);
  if (o.seq_len && *o.seq_len < 1)
    throw usage_error(fmt::format("--seq-len {} is invalid: it must be at least 1", *o.seq_len));
  s.seq_len = o.seq_len ? *o.seq_len
                        : std::min<std::int64_t>(2048, s.model.max_positions > 0 ? s.model.max_positions : 2048);
  s.optimizer = parse_optimizer(o.optimizer);
  s.optimizer_in_backward = o.optimizer_in_backward;
  s.offload = parse_offload(o.offload);
  s.quantize = parse_quantize(o.quantize);
  s.fp8 = parse_fp8_recipe(o.fp8);  // before the framework: QLoRA's adapters default to bf16
  s.fp8_all_gather = o.fp8_all_gather;
  s.paged_optimizer = o.paged_optimizer;
  s.pcie_gbs = o.pcie_gbs;
  s.host_memory_gbs = o.host_memory_gbs;
  s.global_batch = o.global_batch;
  s.micro_batch = o.micro_batch;
  s.world_size = o.world_size;
  s.link_gbs = o.link_gbs;
  s.gpus_per_node = o.gpus_per_node;
  s.network_gbs = o.network_gbs;
  s.lora_rank = o.lora_rank;
  s.tensor_parallel = o.tensor_parallel;
  s.sequence_parallel = o.sequence_parallel;
  s.pipeline_parallel = o.pipeline_parallel;
  s.virtual_stages = o.virtual_stages;
  s.packing = o.packing;
  s.context_parallel = o.context_parallel;
  s.safety_margin = o.safety_margin;
  if (!o.out.empty()) {
    std::vector<named_input> inputs = model_config_inputs(o.model);
    if (!o.no_db) inputs.push_back({"--db", database_file(o)});
    check_output_path(o.out, "--out", inputs);
  }
  const device_choice device = choose_device(o.gpu, o.device, ctx.host);
  // Precision, attention, loss, checkpointing, --zero and LoRA's targets, dtype and dropout: the
  // user's flags, else the framework's defaults (hf: bf16-mixed where the GPU has bf16, else fp16-mixed).
  apply_framework(framework, given, device.spec.compute_capability >= 80, s);
  if ((s.prec == precision::bf16_mixed || s.prec == precision::bf16) && device.spec.compute_capability < 80)
    throw usage_error(fmt::format("--precision {}: the {} ({}) has no bf16; use fp16-mixed", to_string(s.prec),
                                  device.spec.name, device.spec.arch()));
  validate(s);

  batch_plan plan;
  if (device.live && !o.predict) {
    plan = plan_on_gpu(s, device, ctx.host.worker_argv(), o.quiet);
  } else {
    plan = plan_from_stored_times(s, device.spec, o);
  }
  note_unused_link_options(o, s, plan);
  // --predict keeps a machine's GPU untimed; a plan for a preset (--gpu NAME) is predicted anyway.
  if (o.predict && !device.live)
    plan.notes.push_back(fmt::format("--predict has no effect: a plan for --gpu {} is predicted anyway (--predict "
                                     "keeps this machine's own GPU untimed)",
                                     o.gpu.value_or("NAME")));
  const nlohmann::json j = to_json(plan, ctx.command_line, utc_now_iso());
  if (!o.out.empty()) write_file_atomically(o.out, json_text(j) + "\n");
  if (o.json) {
    std::fputs((json_text(j) + "\n").c_str(), stdout);
  } else if (!o.quiet) {
    std::fputs(format_plan(plan).c_str(), stdout);
    if (!o.out.empty()) fmt::print("wrote {}\n", o.out);
  }
  ctx.exit_code = exit_ok;
}

}  // namespace

void add_batch_command(CLI::App& app, run_context& ctx) {
  auto o = std::make_shared<batch_options>();
  auto* cmd = app.add_subcommand("batch", "Plan micro-batch, accumulation, checkpointing, precision and optimizer "
                                          "for training a model on a GPU");
  add_training_options(cmd, o.get());
  cmd->add_option("--db", o->db,
                  "Predicted plans: read the GEMM times that `tiletune gemm` runs stored for this GPU model from "
                  "this tuning database (default: tuning.sqlite3 beside the compile cache, where it exists)");
  cmd->add_flag("--no-db", o->no_db, "Predicted plans: read no tuning database; the model times every GEMM");
  cmd->get_option("--db")->excludes(cmd->get_option("--no-db"));
  cmd->add_option("--out", o->out, "Write the JSON plan to FILE (atomically)")->check(refuse_empty_path);
  cmd->add_flag("--json", o->json, "Print the JSON on stdout instead of the table");
  cmd->add_flag("--quiet,-q", o->quiet, "No table");
  cmd->add_flag("--predict", o->predict, "On a machine with a GPU: plan from its specification, time nothing");
  cmd->footer(R"(
Examples:
  tiletune batch --model llama-3-8b --gpu h100-sxm --seq-len 2048 --global-batch 256 --lora-rank 16
  tiletune batch --model ./config.json --gpu a100-sxm-80gb --seq-len 1024 --global-batch 512 --out plan.json

The memory model counts, term by term, what eager PyTorch and transformers
keep (--framework megatron: Transformer Engine's fused layers; each framework
its own buffers): weights, gradients, optimizer states, autocast's 16-bit weight copies,
the activations each op saves for backward (with and without gradient
checkpointing), the loss on upcast logits, and the peak over the step's
phases; then the caching allocator's slack and the CUDA context. The speed
of each candidate comes from the GEMMs of one training step (forward,
data-gradient and weight-gradient of every linear layer, attention, LM head)
plus the bytes the memory-bound kernels move and the optimizer step; the
constants fitted to real training are in profiles/batch_calibration.json.
With --gpu NAME (or --predict) every figure is PREDICTED ("mode":
"predicted"); on a machine with a GPU the step's GEMMs, the copy bandwidth and
the launch floor are timed on it ("mode": "measured"; memory stays a model).
A predicted plan reads the tuning database: where `tiletune gemm` (--model
with the plan's tokens, say) measured a step GEMM on this GPU model, its
cuBLASLt time is the GEMM's, and the model's times for the rest are scaled to
those measurements (a note says how many and by what).

The recommendation is the throughput-best micro-batch that fits with the
safety margin, with gradient accumulation to reach --global-batch exactly where
any micro-batch can (a prime reaches it only with micro-batch 1: then a note says
what a global batch near it gains, wherever it is more than 5%); it is also
written as Hugging Face TrainingArguments and a DeepSpeed config.

Exit codes: 0 done (also when nothing fits: the plan says what would); 2 bad
input; 3 no GPU and no --gpu, a GPU worker that cannot start, or a damaged or
foreign --db tuning database.)");
  cmd->callback([o, cmd, &ctx] {
    o->gpus_per_node_given = cmd->get_option("--gpus-per-node")->count() > 0;
    o->network_gbs_given = cmd->get_option("--network-gbs")->count() > 0;
    run_batch(*o, ctx);
  });
}

}  // namespace tiletune::cli
