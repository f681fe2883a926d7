// `gemm --model`: a model's step as a suite of distinct GEMMs with counts.
#include "core/train/model_gemms.hpp"

#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/train/model_spec.hpp"

using namespace tiletune;

namespace {
// Every GEMM's FLOPs times how often the step runs it.
double step_flops(const model_gemm_suite& s) {
  double f = 0;
  for (std::size_t i = 0; i < s.suite.problems.size(); ++i)
    f += static_cast<double>(s.counts[i]) * s.suite.problems[i].problem.flops();
  return f;
}
double linear_parameters(const model_spec& m) {
  double p = 0;
  for (const auto& t : weight_tensors(m))
    if (t.linear) p += static_cast<double>(t.parameters());
  return p;
}
}  // namespace

// A dense model's training step runs 6 x tokens x (linear parameters) FLOPs in its
// linears (forward 2, data- and weight-gradient 2 each), prefill 2 x; merging equal
// shapes keeps every FLOP, and no shape appears twice.
TEST(model_gemms, a_step_runs_every_linear_flop_once_per_pass) {
  const model_spec m = load_model("llama-3-8b");
  const double params = linear_parameters(m);
  for (const auto& [phase, passes] : {std::pair{model_phase::train, 6.0}, {model_phase::prefill, 2.0}}) {
    const auto s = model_gemms(m, 4096, phase, dtype::bf16);
    EXPECT_NEAR(step_flops(s) / (passes * 4096 * params), 1.0, 1e-12) << to_string(phase);
    std::set<std::string> shapes;
    for (const auto& p : s.suite.problems) EXPECT_TRUE(shapes.insert(p.problem.describe()).second) << p.name;
  }
  // q_proj and o_proj are both 4096x4096: one problem, run 2 x 32 times a step.
  const auto train = model_gemms(m, 4096, model_phase::train, dtype::bf16);
  bool merged = false;
  for (std::size_t i = 0; i < train.suite.problems.size(); ++i)
    if (train.suite.problems[i].name == "layers.q_proj forward, layers.o_proj forward") {
      merged = true;
      EXPECT_EQ(train.counts[i], 64);
      EXPECT_EQ(train.suite.problems[i].problem.layout.name(), "nt");
    }
  EXPECT_TRUE(merged);
}

// Decode runs the forward GEMMs only, with the sequences as rows; the gradients' layouts are
// those of dx = dy W (nn) and dW = dy^T x (tn).
TEST(model_gemms, phases_choose_the_passes_and_layouts) {
  const model_spec m = load_model("tinyllama-1.1b");
  const auto decode = model_gemms(m, 16, model_phase::decode, dtype::bf16);
  for (const auto& p : decode.suite.problems) {
    EXPECT_EQ(p.problem.layout.name(), "nt") << p.name;
    EXPECT_EQ(p.problem.m, 16) << p.name;
  }
  std::set<std::string> layouts;
  for (const auto& p : model_gemms(m, 1024, model_phase::train, dtype::f16).suite.problems) {
    layouts.insert(p.problem.layout.name());
    EXPECT_EQ(p.problem.type, dtype::f16);
  }
  EXPECT_EQ(layouts, (std::set<std::string>{"nt", "nn", "tn"}));
  EXPECT_THROW(model_gemms(m, 0, model_phase::train, dtype::bf16), usage_error);
  EXPECT_THROW(parse_model_phase("inference"), usage_error);
  EXPECT_THROW(model_gemms(load_model("bert-base-uncased"), 16, model_phase::decode, dtype::bf16), usage_error);
  EXPECT_NO_THROW(model_gemms(load_model("bert-base-uncased"), 16, model_phase::prefill, dtype::bf16));
}

// A serving engine's prefill takes each sequence's last logits only: with --sequences the LM head
// has that many rows (Llama-3-8B, 8 sequences of 512 tokens: 8 x 128,256 x 4,096), the rest of the
// step the tokens'; without it every token's, and a note says so. Before, the LM head always ran on
// every token: 4,096 x 128,256 x 4,096 in place of 8 rows, 7% of the prefill's GEMM FLOPs.
TEST(model_gemms, a_prefill_of_sequences_runs_the_lm_head_on_their_last_tokens) {
  const model_spec m = load_model("llama-3-8b");
  auto lm_head = [](const model_gemm_suite& s) -> const gemm_problem* {
    for (const auto& p : s.suite.problems)
      if (p.name.starts_with("lm_head")) return &p.problem;
    return nullptr;
  };
  auto said = [](const model_gemm_suite& s, const std::string& text) {
    for (const auto& n : s.notes)
      if (n.find(text) != std::string::npos) return true;
    return false;
  };
  const auto served = model_gemms(m, 4096, model_phase::prefill, dtype::bf16, 1, std::nullopt, fp8_recipe::none, 8);
  ASSERT_NE(lm_head(served), nullptr);
  EXPECT_EQ(lm_head(served)->m, 8);
  EXPECT_EQ(lm_head(served)->n, 128'256);
  for (const auto& p : served.suite.problems)
    if (!p.name.starts_with("lm_head")) {
      EXPECT_EQ(p.problem.m, 4096) << p.name;
    }
  EXPECT_TRUE(said(served, "the LM head runs on the last token of each of the 8 sequences"));
  const auto every = model_gemms(m, 4096, model_phase::prefill, dtype::bf16);
  EXPECT_EQ(lm_head(every)->m, 4096);
  EXPECT_TRUE(said(every, "a serving engine's prefill (vLLM, transformers' generate) runs it on each sequence's last token"));
  // Another phase, an encoder, or more sequences than tokens are refused.
  EXPECT_THROW(model_gemms(m, 4096, model_phase::train, dtype::bf16, 1, std::nullopt, fp8_recipe::none, 8), usage_error);
  EXPECT_THROW(model_gemms(m, 16, model_phase::decode, dtype::bf16, 1, std::nullopt, fp8_recipe::none, 16), usage_error);
  EXPECT_THROW(model_gemms(m, 16, model_phase::prefill, dtype::bf16, 1, std::nullopt, fp8_recipe::none, 17), usage_error);
  EXPECT_THROW(model_gemms(load_model("bert-base-uncased"), 512, model_phase::prefill, dtype::bf16, 1, std::nullopt,
                           fp8_recipe::none, 1),
               usage_error);
}

// Fused projections are one GEMM of the summed widths (GPT-2's c_attn, GPT-NeoX's query_key_value,
// Phi-3's qkv_proj and gate_up_proj), each rank's shares summed under --tp; GPT-2's Conv1D stores
// its weights in x out, so its forward reads them as written (nn). They were tuned as separate
// q, k, v (and gate, up) shapes in the nn.Linear layouts, shapes those models never run.
TEST(model_gemms, fused_projections_are_one_gemm_and_gpt2_reads_its_conv1d_weights_as_stored) {
  auto find = [](const model_gemm_suite& s, const std::string& prefix) -> const gemm_problem* {
    for (const auto& p : s.suite.problems)
      if (p.name.rfind(prefix, 0) == 0) return &p.problem;
    return nullptr;
  };
  const model_spec gpt2 = load_model("gpt2");
  const auto train = model_gemms(gpt2, 1024, model_phase::train, dtype::bf16);
  EXPECT_EQ(find(train, "layers.q_proj"), nullptr);
  const gemm_problem* qkv = find(train, "layers.qkv_proj forward");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->n, 3 * 768);
  EXPECT_EQ(qkv->k, 768);
  EXPECT_EQ(qkv->layout.name(), "nn");
  EXPECT_EQ(find(train, "layers.qkv_proj data-grad")->layout.name(), "nt");
  const gemm_problem* wgrad = find(train, "layers.qkv_proj weight-grad");
  EXPECT_EQ(wgrad->m, 768);  // dW = x^T dy: in x out
  EXPECT_EQ(wgrad->n, 3 * 768);
  EXPECT_EQ(find(train, "lm_head forward")->layout.name(), "nt");  // nn.Linear, tied to wte
  // --fp8 converts the fused GEMM as it does its parts.
  const auto fp8 = model_gemms(gpt2, 512, model_phase::train, dtype::bf16, 1, std::nullopt, fp8_recipe::tensorwise);
  EXPECT_EQ(find(fp8, "layers.qkv_proj forward")->type, dtype::e4m3);
  EXPECT_EQ(find(fp8, "layers.qkv_proj data-grad")->type, dtype::e5m2_e4m3);
  // The fused GEMMs run the FLOPs of the separate ones.
  model_spec apart = gpt2;
  apart.fused_qkv = false;
  EXPECT_NEAR(step_flops(train) / step_flops(model_gemms(apart, 1024, model_phase::train, dtype::bf16)), 1.0, 1e-12);
  nlohmann::json phi3 = {{"model_type", "phi3"},          {"vocab_size", 32064},         {"hidden_size", 3072},
                         {"num_hidden_layers", 32},       {"num_attention_heads", 32},   {"num_key_value_heads", 32},
                         {"intermediate_size", 8192},     {"max_position_embeddings", 4096}};
  const model_spec phi = model_from_hf_config(phi3, "phi3.json");
  const auto prefill = model_gemms(phi, 512, model_phase::prefill, dtype::bf16, 2);
  EXPECT_EQ(find(prefill, "layers.qkv_proj forward")->n, 3 * 3072 / 2);
  EXPECT_EQ(find(prefill, "layers.gate_up_proj forward")->n, 2 * 8192 / 2);
  EXPECT_EQ(find(prefill, "layers.qkv_proj forward")->layout.name(), "nt");
  EXPECT_EQ(find(prefill, "layers.gate_proj"), nullptr);
}

// A mixture of experts: the routed experts are one batched problem per projection, and the
// notes say it is an approximation of a grouped GEMM.
TEST(model_gemms, experts_are_batched_and_said_to_be) {
  const auto s = model_gemms(load_model(std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/mixtral-8x7b.json"), 4096, model_phase::prefill, dtype::bf16);
  bool batched = false;
  for (const auto& p : s.suite.problems) batched = batched || p.problem.batch > 1;
  EXPECT_TRUE(batched);
  bool noted = false;
  for (const auto& n : s.notes) noted = noted || n.find("grouped GEMM") != std::string::npos;
  EXPECT_TRUE(noted);
}

// --routing: the experts' forward and data-grad GEMMs are grouped GEMMs of the step's tokens routed
// to top-2 of 8 experts; the weight-grad ones stay batched, and the notes say which is which.
TEST(model_gemms, routed_experts_are_grouped_problems) {
  const model_spec mixtral =
      load_model(std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/mixtral-8x7b.json");
  const auto s = model_gemms(mixtral, 4096, model_phase::train, dtype::bf16, 1, parse_routing("zipf:1.2"));
  int grouped = 0, batched = 0;
  for (const auto& p : s.suite.problems) {
    if (p.problem.groups) {
      ++grouped;
      EXPECT_EQ(p.problem.groups->count(), 8) << p.name;
      EXPECT_EQ(p.problem.m, 4096 * 2) << p.name;
      EXPECT_EQ(p.problem.groups->routing, "zipf:1.2");
      EXPECT_EQ(p.problem.groups->rows, routed_rows(4096, 2, 8, parse_routing("zipf:1.2")));
      EXPECT_EQ(p.name.find("weight-grad"), std::string::npos) << p.name;
      EXPECT_NO_THROW(validate(p.problem));
    }
    if (p.problem.batch > 1) {
      ++batched;
      EXPECT_NE(p.name.find("weight-grad"), std::string::npos) << p.name;
    }
  }
  // forward: gate/up (one shape) and down; data-grad: the same two transposed.
  EXPECT_EQ(grouped, 4);
  EXPECT_EQ(batched, 2);
  bool noted = false;
  for (const auto& n : s.notes) noted = noted || n.find("grouped GEMMs of the tokens routed zipf:1.2") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_THROW(model_gemms(load_model("llama-3-8b"), 64, model_phase::decode, dtype::bf16, 1, parse_routing("uniform")),
               usage_error);
  // Prefill and decode run forward only: their notes name no backward GEMM (a decode step's spoke of
  // data-grad and weight-grad GEMMs it has not).
  for (const auto phase : {model_phase::prefill, model_phase::decode})
    for (const auto& routing : {std::optional<expert_routing>(parse_routing("zipf:1.2")), std::optional<expert_routing>()}) {
      const auto f = model_gemms(mixtral, 64, phase, dtype::bf16, 1, routing);
      ASSERT_FALSE(f.notes.empty());
      for (const auto& n : f.notes) {
        EXPECT_EQ(n.find("data-grad"), std::string::npos) << n;
        EXPECT_EQ(n.find("weight-grad"), std::string::npos) << n;
      }
    }
  // Uniform routing is another problem, with its own key.
  const auto u = model_gemms(mixtral, 4096, model_phase::prefill, dtype::bf16, 1, parse_routing("uniform"));
  for (const auto& p : u.suite.problems)
    if (p.problem.groups) {
      EXPECT_EQ(p.problem.groups->rows, std::vector<std::int64_t>(8, 1024)) << p.name;
    }
}

namespace {
// The problem whose name starts with this layer's GEMM of that pass ("layers.q_proj forward").
const suite_problem* gemm_named(const model_gemm_suite& s, const std::string& name) {
  for (const auto& p : s.suite.problems)
    if (p.name.starts_with(name) || p.name.find(", " + name) != std::string::npos) return &p;
  return nullptr;
}
std::string shape_of(const model_gemm_suite& s, const std::string& name) {
  const suite_problem* p = gemm_named(s, name);
  return p ? fmt::format("{}x{}x{}", p->problem.m, p->problem.n, p->problem.k) : "missing";
}
}  // namespace

// --tp N: one rank's GEMMs. Llama-3-8B (32 heads, 8 key/value heads, vocabulary 128256) splits
// every block linear exactly by N up to 8, so a rank runs 1/N of the step's FLOPs but for the LM
// head's padding: Megatron pads the vocabulary to a multiple of 128 x N (128,256 at N = 2; 128,512
// at 4; 129,024 at 8), each padded row three GEMMs of 2 x 4,096 tokens x 4,096 FLOPs. Each pass
// splits the dimension its layer is parallel in (column: outputs; row: inputs).
TEST(model_gemms, tensor_parallel_ranks_split_columns_by_outputs_and_rows_by_inputs) {
  const model_spec m = load_model("llama-3-8b");
  const double whole = step_flops(model_gemms(m, 4096, model_phase::train, dtype::bf16));
  for (const auto& [tp, padded] : {std::pair{2, 128'256}, std::pair{4, 128'512}, std::pair{8, 129'024}})
    EXPECT_NEAR(step_flops(model_gemms(m, 4096, model_phase::train, dtype::bf16, tp)) * tp,
                whole + 3 * 2.0 * 4096 * 4096 * (padded - 128'256), whole * 1e-12)
        << tp;
  const auto s = model_gemms(m, 4096, model_phase::train, dtype::bf16, 4);
  // Column-parallel q (4096 -> 4096): forward N, data-grad K, weight-grad M are a quarter.
  EXPECT_EQ(shape_of(s, "layers.q_proj forward"), "4096x1024x4096");
  EXPECT_EQ(shape_of(s, "layers.q_proj data-grad"), "4096x4096x1024");
  EXPECT_EQ(shape_of(s, "layers.q_proj weight-grad"), "1024x4096x4096");
  // Row-parallel down (14336 -> 4096): forward K, data-grad N, weight-grad N.
  EXPECT_EQ(shape_of(s, "layers.down_proj forward"), "4096x4096x3584");
  EXPECT_EQ(shape_of(s, "layers.down_proj data-grad"), "4096x3584x4096");
  EXPECT_EQ(shape_of(s, "layers.down_proj weight-grad"), "4096x3584x4096");
  EXPECT_EQ(shape_of(s, "layers.k_proj forward"), "4096x256x4096");  // 2 of the 8 key/value heads
  EXPECT_EQ(shape_of(s, "lm_head forward"), "4096x32128x4096");  // 128,512 / 4
  // Serving (vLLM's ParallelLMHead): the vocabulary padded to a multiple of 64, 128,256 already,
  // / 4; GPT-2's 50,257 to 50,304, 25,152 a rank of 2 (Megatron's training pad: 50,432, 25,216).
  EXPECT_EQ(shape_of(model_gemms(m, 16, model_phase::decode, dtype::bf16, 4), "lm_head forward"), "16x32064x4096");
  const model_spec gpt2 = load_model("gpt2");
  EXPECT_EQ(shape_of(model_gemms(gpt2, 16, model_phase::decode, dtype::bf16, 2), "lm_head forward"), "16x25152x768");
  EXPECT_EQ(shape_of(model_gemms(gpt2, 16, model_phase::train, dtype::bf16, 2), "lm_head forward"), "16x25216x768");
  EXPECT_EQ(shape_of(model_gemms(gpt2, 16, model_phase::decode, dtype::bf16), "lm_head forward"), "16x50257x768");
  EXPECT_NE(s.suite.name.find("tp 4"), std::string::npos) << s.suite.name;
  bool noted = false;
  for (const auto& n : s.notes) noted = noted || n.find("one of 4 tensor-parallel ranks") != std::string::npos;
  EXPECT_TRUE(noted);
  // 16 ranks over 8 key/value heads: each rank holds one (128 outputs), replicated twice.
  const auto s16 = model_gemms(m, 16, model_phase::decode, dtype::bf16, 16);
  EXPECT_EQ(shape_of(s16, "layers.k_proj forward"), "16x128x4096");
  EXPECT_EQ(shape_of(s16, "layers.q_proj forward"), "16x256x4096");
  EXPECT_EQ(shape_of(s16, "layers.o_proj forward"), "16x4096x256");
  // Counts that do not divide are refused, naming what.
  try {
    model_gemms(m, 16, model_phase::decode, dtype::bf16, 3);
    ADD_FAILURE() << "--tp 3 accepted";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("--tp 3 does not divide the attention heads"), std::string::npos) << e.what();
  }
  EXPECT_THROW(model_gemms(m, 16, model_phase::decode, dtype::bf16, 0), usage_error);
  EXPECT_THROW(model_gemms(m, 16, model_phase::decode, dtype::bf16, 64), usage_error);  // 64 > 32 heads
}

// Experts split like the MLP; the router stays whole on every rank.
TEST(model_gemms, tensor_parallel_experts_split_like_the_mlp_and_the_router_is_replicated) {
  const model_spec m =
      load_model(std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/mixtral-8x7b.json");
  const auto one = model_gemms(m, 4096, model_phase::prefill, dtype::bf16);
  const auto two = model_gemms(m, 4096, model_phase::prefill, dtype::bf16, 2);
  const suite_problem* gate1 = gemm_named(one, "layers.experts.gate_proj");
  const suite_problem* gate2 = gemm_named(two, "layers.experts.gate_proj");
  ASSERT_TRUE(gate1 && gate2);
  EXPECT_EQ(gate2->problem.n * 2, gate1->problem.n);
  EXPECT_EQ(gate2->problem.batch, gate1->problem.batch);
  EXPECT_EQ(shape_of(two, "layers.router forward"), shape_of(one, "layers.router forward"));
}

// --fp8 tensorwise and rowwise: the step as `batch --fp8` runs it, keyed as batch looks it up: every
// linear GEMM batch times (recorded through its GEMM-time hook) is a problem of the suite, dtype,
// scaling and layout included; the blocks' linears are e4m3 forward and e5m2_e4m3 gradients
// (tensorwise) or e4m3 with rowwise scales throughout (rowwise), the LM head bf16. A non-bf16 step
// is refused.
TEST(model_gemms, fp8_suites_are_the_problems_batch_times) {
  const model_spec m = load_model("llama-3-8b");
  for (fp8_recipe recipe : {fp8_recipe::tensorwise, fp8_recipe::rowwise}) {
    const auto suite = model_gemms(m, 4096, model_phase::train, dtype::bf16, 1, std::nullopt, recipe);
    std::set<std::string> tuned;
    int e4m3 = 0, mixed = 0, bf16 = 0;
    for (const auto& p : suite.suite.problems) {
      tuned.insert(p.problem.describe() + " " + std::string(to_string(p.problem.scaling)));
      e4m3 += p.problem.type == dtype::e4m3;
      mixed += p.problem.type == dtype::e5m2_e4m3;
      bf16 += p.problem.type == dtype::bf16;
      if (p.name.starts_with("lm_head")) {
        EXPECT_EQ(p.problem.type, dtype::bf16) << p.name;
      }
      if (is_fp8(p.problem.type)) {
        EXPECT_EQ(p.problem.scaling, recipe == fp8_recipe::rowwise ? scaling_mode::rowwise : scaling_mode::tensor)
            << p.name;
      }
    }
    EXPECT_GE(e4m3, 3);
    if (recipe == fp8_recipe::tensorwise) {
      EXPECT_EQ(mixed, 2 * e4m3);
    } else {
      EXPECT_EQ(mixed, 0);
    }
    EXPECT_GE(bf16, 1);
    training_setup s;
    s.model = m;
    s.seq_len = 4096;
    s.prec = precision::bf16_mixed;
    s.fp8 = recipe;
    s.world_size = 8;  // so that the step fits and batch times it
    s.zero_stage = 3;
    s.micro_batch = 1;
    s.checkpointing = checkpoint_policy::off;
    std::set<std::string> timed;
    const gemm_time_fn record = [&](const gemm_problem& p) {
      if (p.batch == 1 && p.type != dtype::f32 && p.m >= 1024)
        timed.insert(p.describe() + " " + std::string(to_string(p.scaling)));
      return 10.0;
    };
    plan_batch(s, find_preset("h100-sxm"), record);
    int found = 0;
    for (const std::string& t : timed) {
      if (t.find("e4m3") == std::string::npos && t.find("lm") == std::string::npos && t.find("bf16") != std::string::npos)
        continue;  // attention's own GEMMs (not in the suite)
      EXPECT_TRUE(tuned.count(t)) << "batch times " << t << ", which gemm --model --fp8 " << to_string(recipe)
                                  << " does not tune";
      ++found;
    }
    EXPECT_GE(found, 9) << to_string(recipe);
  }
  EXPECT_THROW(model_gemms(m, 4096, model_phase::train, dtype::f16, 1, std::nullopt, fp8_recipe::tensorwise),
               usage_error);
}

// torchtitan's float8 filter converts a linear only where both its widths are multiples of 16:
// Mixtral's router (8 outputs) and Qwen's shared-expert gate (1) stay bf16.
TEST(model_gemms, fp8_converts_only_linears_whose_widths_are_multiples_of_16) {
  const model_spec m =
      load_model(std::string(TILETUNE_SOURCE_DIR) + "/tests/fuzz/seeds/model_config/mixtral-8x7b.json");
  const auto suite = model_gemms(m, 16, model_phase::decode, dtype::bf16, 1, std::nullopt, fp8_recipe::tensorwise);
  bool router = false;
  for (const auto& p : suite.suite.problems) {
    if (p.name.rfind("layers.router", 0) == 0) {
      router = true;
      EXPECT_EQ(p.problem.type, dtype::bf16) << p.name;
    }
    if (p.name.rfind("layers.q_proj", 0) == 0) {
      EXPECT_EQ(p.problem.type, dtype::e4m3) << p.name;
    }
  }
  EXPECT_TRUE(router);
}
