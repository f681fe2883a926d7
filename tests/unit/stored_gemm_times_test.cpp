// The GEMM times `tiletune batch` reads from a tuning database, and what it does with them.
#include "core/tune/tuning_db/stored_gemm_times.hpp"

#include <filesystem>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/tune/perf_model.hpp"
#include "core/train/model_gemms.hpp"
#include "core/train/training_plan.hpp"
#include "core/tune/tuning_db/tuning_db.hpp"

namespace fs = std::filesystem;
using namespace tiletune;

namespace {

gemm_problem stored_problem(std::int64_t m, std::int64_t n, std::int64_t k, const char* lay = "nt") {
  gemm_problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.type = dtype::bf16;
  p.layout = parse_layout(lay);
  return p;
}

// A record of problem p on a GPU model, at a time, with cuBLASLt's median (none: no reference).
tuning_record stored_record(const gemm_problem& p, const std::string& model, const std::string& at,
                     std::optional<double> reference_us, const std::string& mode = "measured") {
  tuning_record r;
  r.key.device_model = model;
  r.key.driver = mode == "measured" ? "580.1" : predicted_driver;
  r.key.cuda = mode == "measured" ? "13.0" : predicted_driver;
  r.key.tool_version = "0.1.0";
  r.key.compiler = at;  // a key of its own per time
  r.key.problem = p;
  r.measured_at = at;
  r.recommended = "wgmma_x";
  r.result = {{"problem", to_json(p)}, {"mode", mode}, {"variants", nlohmann::json::array()}};
  if (reference_us) r.result["reference"] = {{"provider", "cublaslt"}, {"median_us", *reference_us}};
  return r;
}

struct scratch_file {
  fs::path path = fs::temp_directory_path() / ("tiletune-stored-" + std::to_string(::getpid()) + ".sqlite");
  ~scratch_file() {
    for (const char* ext : {"", "-wal", "-shm"}) fs::remove(path.string() + ext);
  }
};

}  // namespace

// cuBLASLt's time of each measured problem of the GPU model, the newest per problem; plans,
// other GPU models and records without a timed reference are not read; the model's scale is
// the median of the stored times over its predictions.
TEST(stored_gemm_times, the_newest_measured_cublaslt_time_per_problem_of_the_gpu_model) {
  scratch_file f;
  const device_spec& d = find_preset("h100-sxm");
  const gemm_problem q = stored_problem(4096, 4096, 4096), k = stored_problem(4096, 1024, 4096),
                     down = stored_problem(4096, 4096, 14336);
  const double pq = predict_library_gemm(d, q).time_us, pk = predict_library_gemm(d, k).time_us,
               pd = predict_library_gemm(d, down).time_us;
  {
    tuning_db db(f.path);
    db.store_all({stored_record(q, "h100-sxm", "2026-11-20T00:00:00Z", 2 * pq),  // older
                  stored_record(q, "h100-sxm", "2026-11-22T00:00:00Z", 1.5 * pq),
                  stored_record(k, "h100-sxm", "2026-11-21T00:00:00Z", 0.5 * pk),
                  stored_record(down, "h100-sxm", "2026-11-21T00:00:00Z", 1.0 * pd),
                  stored_record(stored_problem(512, 512, 512), "h100-sxm", "2026-11-21T00:00:00Z",
                                std::nullopt),  // no reference
                  stored_record(stored_problem(256, 256, 256), "h100-sxm", "2026-11-21T00:00:00Z", 9.0, "predicted"),
                  stored_record(stored_problem(128, 128, 128), "h200", "2026-11-21T00:00:00Z", 9.0)});
  }
  const stored_gemm_times t = load_stored_gemm_times(tuning_db(f.path, tuning_db::open_mode::existing), "h100-sxm", d);
  EXPECT_EQ(t.us.size(), 3u);
  ASSERT_TRUE(t.find(q));
  EXPECT_DOUBLE_EQ(*t.find(q), 1.5 * pq);
  EXPECT_DOUBLE_EQ(*t.find(k), 0.5 * pk);
  EXPECT_FALSE(t.find(stored_problem(4096, 4096, 4096, "nn")));  // the layout is part of the problem
  EXPECT_FALSE(t.find(stored_problem(256, 256, 256)));
  EXPECT_FALSE(t.find(stored_problem(128, 128, 128)));
  EXPECT_DOUBLE_EQ(t.model_scale, 1.0);  // the median of 1.5, 0.5 and 1.0
  EXPECT_TRUE(load_stored_gemm_times(tuning_db(f.path, tuning_db::open_mode::existing), "a100", d).us.empty());
}

// A predicted plan takes a stored problem's time for that GEMM and scales the model for the
// rest: one stored forward GEMM moves the step's GEMM time by exactly its difference.
TEST(stored_gemm_times, a_plan_uses_a_stored_time_where_its_gemm_is_and_the_scaled_model_elsewhere) {
  training_setup s;
  s.model = load_model("llama-3-8b");
  s.seq_len = 4096;
  const device_spec& d = find_preset("h100-sxm");
  const step_time base = predict_step(s, d, 1, false);
  // q_proj and o_proj forward are 4096x4096x4096 nt, 32 layers each.
  const gemm_problem q = stored_problem(4096, 4096, 4096);
  const double predicted = predict_library_gemm(d, q).time_us;
  device_rates rates;
  rates.stored_gemm_us = [&](const gemm_problem& p) -> std::optional<double> {
    if (p.m == q.m && p.n == q.n && p.k == q.k && p.layout == q.layout && p.batch == 1) return 2 * predicted;
    return std::nullopt;
  };
  const step_time stored = predict_step(s, d, 1, false, {}, rates);
  EXPECT_NEAR(stored.gemm_ms - base.gemm_ms, 64 * predicted * 1e-3, 1e-6);
  // Scaling the model by 2 doubles every GEMM it times (the stored one included at its 2x).
  rates.stored_gemm_scale = 2;
  const step_time scaled = predict_step(s, d, 1, false, {}, rates);
  EXPECT_NEAR(scaled.gemm_ms, 2 * base.gemm_ms, 1e-6 * base.gemm_ms);
  // The passes have their layouts: the data-gradient GEMM of q (nn) is not the stored nt problem.
  int asked_nn = 0;
  rates.stored_gemm_us = [&](const gemm_problem& p) -> std::optional<double> {
    asked_nn += p.layout.name() == "nn";
    return std::nullopt;
  };
  predict_step(s, d, 1, false, {}, rates);
  EXPECT_GT(asked_nn, 0);
}

// A mixture of experts: the routed experts' forward and data-grad GEMMs read the time `gemm --model
// --routing uniform` stores for the same step (the grouped problem, keyed as model_gemms makes it),
// and fall back to the batched problem's; the weight-grad GEMMs (grouped along K) stay batched.
TEST(stored_gemm_times, moe_experts_read_the_grouped_problems_gemm_model_stores) {
  training_setup s;
  s.model = load_model(std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/mixtral-8x7b.json");
  s.seq_len = 4096;
  s.prec = precision::bf16;
  const device_spec& d = find_preset("h100-sxm");
  std::set<std::string> grouped_keys;
  for (const suite_problem& p :
       model_gemms(s.model, 4096, model_phase::train, dtype::bf16, 1, parse_routing("uniform")).suite.problems)
    if (p.problem.grouped()) grouped_keys.insert(tuning_problem_key(p.problem));
  ASSERT_EQ(grouped_keys.size(), 4u);  // gate/up and down, forward and data-grad
  std::set<std::string> asked;
  device_rates rates;
  rates.stored_gemm_us = [&](const gemm_problem& p) -> std::optional<double> {
    if (!p.grouped()) return std::nullopt;
    asked.insert(tuning_problem_key(p));
    return 1.0;  // 1 us: far below the model's time for any of them
  };
  const step_time base = predict_step(s, d, 1, false), stored = predict_step(s, d, 1, false, {}, rates);
  EXPECT_EQ(asked, grouped_keys);
  EXPECT_LT(stored.gemm_ms, base.gemm_ms);
  // Expert parallelism routes other ranks' tokens here: no grouped problem of this step is asked.
  s.world_size = 8;
  s.expert_parallel = 8;
  asked.clear();
  predict_step(s, d, 1, false, {}, rates);
  EXPECT_TRUE(asked.empty());
}

// A model with fused projections: batch asks for the GEMMs `gemm --model` tunes and stores, GPT-2's
// q, k and v as its one c_attn GEMM in the Conv1D layouts (forward nn, data-grad nt, weight-grad
// in x out tn) and Phi-3's gate and up as gate_up_proj. It asked for three nn.Linear q, k, v GEMMs
// in nt, nn and tn, which GPT-2 never runs, so a tuned c_attn was never found.
TEST(stored_gemm_times, fused_projections_read_the_gemms_gemm_model_stores) {
  const nlohmann::json phi3 = {{"model_type", "phi3"},          {"vocab_size", 32064},       {"hidden_size", 3072},
                               {"num_hidden_layers", 32},       {"num_attention_heads", 32}, {"num_key_value_heads", 32},
                               {"intermediate_size", 8192},     {"max_position_embeddings", 4096}};
  for (const model_spec& model : {load_model("gpt2"), model_from_hf_config(phi3, "phi3.json")}) {
    const std::string name = model.name;
    training_setup s;
    s.model = model;
    s.seq_len = 1024;
    s.prec = precision::bf16;
    std::set<std::string> tuned;
    for (const suite_problem& p : model_gemms(s.model, 1024, model_phase::train, dtype::bf16).suite.problems)
      tuned.insert(tuning_problem_key(p.problem));
    std::set<std::string> asked;
    device_rates rates;
    rates.stored_gemm_us = [&](const gemm_problem& p) -> std::optional<double> {
      if (p.batch == 1) asked.insert(tuning_problem_key(p));  // the linears (attention's are batched)
      return std::nullopt;
    };
    predict_step(s, find_preset("h100-sxm"), 1, false, {}, rates);
    EXPECT_GE(tuned.size(), 4u) << name;
    EXPECT_EQ(asked, tuned) << name;
  }
}
