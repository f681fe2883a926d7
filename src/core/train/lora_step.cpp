// The LoRA adapter path of a training step, as peft's lora.Linear.forward
// runs it (peft 0.13+, tuners/lora/layer.py):
//   result = base_layer(x)                          (the frozen GEMM)
//   x = self._cast_input_dtype(x, lora_A.weight.dtype)   (a copy when dtypes differ)
//   result = result + lora_B(lora_A(dropout(x))) * scaling
//   result = result.to(torch_result_dtype)
// with fp32 adapters (get_peft_model(autocast_adapter_dtype=True) upcasts
// bf16/fp16 adapter weights to fp32). Under torch.autocast the two adapter
// linears cast their inputs back to 16 bits; without autocast (a bf16 model
// trained in bf16) they run as fp32 GEMMs on an fp32 copy of x, and their
// fp32 output turns the sum fp32 (type promotion) until the final cast.
// Counted per adapted linear and token, in bytes read + written by each
// elementwise kernel (the GEMMs' own reads and writes are in their time).
// Not run: the frozen base's weight-gradient GEMM (step_gemms leaves it
// out); its forward and data-gradient GEMMs are the base's own.
// lora_dropout > 0 (nn.Dropout instead of nn.Identity): native_dropout on
// the cast input reads it and writes a dropped-out copy and a bool mask,
// which it keeps; its backward multiplies the gradient by the mask.
#include "core/train/lora_step.hpp"

#include <algorithm>
#include <cmath>

#include "core/train/moe_parallel.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

bool lora_adapters_run_fp32(const training_setup& s) {
  return s.lora_rank > 0 && !is_mixed(s.prec) && s.adapters == adapter_dtype::fp32;
}

bool lora_adapts(const training_setup& s, const weight_tensor& t) {
  if (!t.linear || !t.name.starts_with("layers.")) return false;
  if (s.lora_targets == lora_all_linear) return true;
  std::string_view n = std::string_view(t.name).substr(7);
  for (std::string_view owner : {"experts.", "shared_expert."})
    if (n.starts_with(owner)) n.remove_prefix(owner.size());
  unsigned bits = 0;
  if (n == "q_proj" || n == "q_a_proj" || n == "q_b_proj") bits = lora_q;
  else if (n == "k_proj") bits = lora_k;
  else if (n == "v_proj") bits = lora_v;
  else if (n == "kv_a_proj" || n == "kv_b_proj") bits = lora_k | lora_v;
  else if (n == "o_proj") bits = lora_o;
  else if (n == "gate_proj") bits = lora_gate;
  else if (n == "up_proj") bits = lora_up;
  else if (n == "down_proj") bits = lora_down;
  return (s.lora_targets & bits) != 0;
}

std::optional<weight_tensor> lora_head_adapter(const training_setup& s) {
  const model_spec& m = s.model;
  if (s.lora_rank <= 0 || !m.causal || s.lora_targets != lora_all_linear) return std::nullopt;
  if (lora_module_of(s) != lora_module::torchtitan) return std::nullopt;
  return weight_tensor{"lm_head", m.vocab_size, m.hidden_size, 1, true};
}

double adapter_element_bytes(const training_setup& s) { return s.adapters == adapter_dtype::bf16 ? 2 : 4; }

double optimizer_state_element_bytes(const training_setup& s) {
  if (s.lora_rank > 0) return adapter_element_bytes(s);
  return s.prec == precision::bf16 ? 2 : 4;
}

lora_module lora_module_of(const training_setup& s) {
  switch (layers_of(s)) {
    case layer_impl::torchtune: return lora_module::torchtune;
    case layer_impl::torchtitan: return lora_module::torchtitan;
    case layer_impl::litgpt: return lora_module::litgpt;
    case layer_impl::transformers:
    case layer_impl::transformer_engine: return lora_module::peft;
  }
  return lora_module::peft;
}

std::string_view to_string(lora_module m) {
  switch (m) {
    case lora_module::peft: return "peft";
    case lora_module::torchtune: return "torchtune";
    case lora_module::torchtitan: return "torchtitan";
    case lora_module::litgpt: return "litgpt";
  }
  return "?";
}

void add_lora_gemms(const training_setup& s, std::int64_t tokens, bool checkpointing, std::vector<step_gemm>& out) {
  if (s.lora_rank <= 0) return;
  const std::int64_t r = s.lora_rank;
  const int ep = expert_parallel_degree(s);
  const bool fp32 = lora_adapters_run_fp32(s);
  std::vector<weight_tensor> tensors;  // the adapted linears
  for (const auto& t : weight_tensors(s.model))
    if (lora_adapts(s, t)) tensors.push_back(t);
  if (const auto head = lora_head_adapter(s)) tensors.push_back(*head);
  // LitGPT's qkv adapter: one lora_A of r rows a part, its GEMMs run once (at the first part).
  std::int64_t qkv_parts = 0;
  for (const auto& t : tensors) qkv_parts += one_qkv_adapter(s, t);
  bool qkv_a_added = false;
  for (const auto& t : tensors) {
    const bool head = !t.name.starts_with("layers.");  // lora_head_adapter's: outside the blocks, not recomputed
    const bool qkv = one_qkv_adapter(s, t);
    const bool add_a = !qkv || !qkv_a_added;
    qkv_a_added = qkv_a_added || qkv;
    const std::int64_t a_rank = qkv ? r * qkv_parts : r;
    const std::string a_name = qkv ? "layers.qkv lora" : t.name + " lora";
    // A routed expert's adapters: one batch entry per local expert, with its rows.
    const std::int64_t batch = t.group > 1 ? t.group / ep : 1, count = t.count / std::max<std::int64_t>(1, t.group);
    const auto rows = t.group > 1 ? static_cast<std::int64_t>(std::ceil(static_cast<double>(tokens) * t.token_share * ep))
                                  : tokens;
    const std::string name = t.name + " lora";
    auto add = [&](const std::string& adapter, const char* what, std::int64_t m, std::int64_t n, std::int64_t k,
                   std::int64_t runs) {
      step_gemm g{adapter + what, m, n, k, batch, runs, 1};
      g.fp32 = fp32;
      g.thin = true;
      out.push_back(g);
    };
    if (add_a) add(a_name, "_A forward", rows, a_rank, t.cols, count);
    add(name, "_B forward", rows, t.rows, r, count);
    if (checkpointing && !head) {
      if (add_a) add(a_name, "_A recompute", rows, a_rank, t.cols, recomputed_count(s, count));
      add(name, "_B recompute", rows, t.rows, r, recomputed_count(s, count));
    }
    add(name, "_B data-grad", rows, r, t.rows, count);
    add(name, "_B weight-grad", t.rows, r, rows, count);
    if (add_a) {
      add(a_name, "_A data-grad", rows, t.cols, a_rank, count);
      add(a_name, "_A weight-grad", a_rank, t.cols, rows, count);
    }
  }
}

double thin_gemm_us(const gemm_problem& p, const device_spec& d, double bandwidth_gbs) {
  const double bytes = static_cast<double>(p.operand_bytes());
  const double flops = p.flops();
  const double peak = d.peak_tflops(p.type);
  return std::max(bytes / (bandwidth_gbs * 1e3), peak > 0 ? flops / (peak * 1e6) : 0.0);
}

namespace {

// What the adapter path moves and launches around each adapted linear.
struct lora_pass_costs {
  // Bytes per input-wide and output-wide element, forward and backward, and kernels.
  double in_fwd = 0, out_fwd = 0, in_bwd = 0, out_bwd = 0, k_fwd = 0, k_bwd = 0;
  // Per adapter and pass, bytes per adapter weight element (A: r x in, B: out x r).
  double weight_fwd = 0, weight_bwd = 0;
};

lora_pass_costs lora_pass_costs_of(const training_setup& s) {
  const double a = activation_bytes(s.prec);
  lora_pass_costs c;
  if (is_mixed(s.prec) && s.adapters == adapter_dtype::fp32) {
    // Autocast: peft's cast of x to fp32 (a + 4) and autocast's back to 16
    // bits for lora_A (4 + a); B's 16-bit output scaled (a + a) and added to
    // the base output (3a). Backward: the scale's gradient (2a), the two
    // casts' gradients (2 x (a + 4)) and dx added into the base's (3a).
    // Autocast also casts the fp32 A and B weights to 16 bits once per
    // forward (cached_cast: leaf fp32 weights that require grad; again in
    // recompute, whose autocast context is a new one), and the weight
    // gradients the 16-bit GEMMs produce are cast back to fp32 (ToCopy's
    // backward) before AccumulateGrad.
    c.in_fwd = 2 * (a + 4);
    c.out_fwd = 5 * a;
    c.out_bwd = 2 * a;
    c.in_bwd = 2 * (a + 4) + 3 * a;
    c.weight_fwd = 4 + a;
    c.weight_bwd = a + 4;
    c.k_fwd = 8;   // two input casts, two weight casts, A, B, scale, add
    c.k_bwd = 10;  // scale, four GEMMs, two weight-gradient casts, two input casts, the add into dx
  } else if (lora_adapters_run_fp32(s) && a < 4) {
    // A 16-bit model without autocast: x copied to fp32 (a + 4); B's fp32
    // output scaled (8), added to the 16-bit base output into fp32 (a + 8),
    // the sum cast back (4 + a). Backward: that cast's gradient (a + 4), the
    // base branch's gradient cast to 16 bits (4 + a), the scale's (8), dx
    // cast from fp32 (4 + a) and added into the base's (3a).
    c.in_fwd = a + 4;
    c.out_fwd = 8 + (a + 8) + (4 + a);
    c.out_bwd = 2 * (a + 4) + 8;
    c.in_bwd = (4 + a) + 3 * a;
    c.k_fwd = 6;  // cast, A, B, scale, add, cast
    c.k_bwd = 9;  // two casts, scale, four GEMMs, dx's cast and add
  } else {
    // No casts (fp32 throughout, or bf16 adapters on a bf16 base): the scale, the add, the
    // scale's gradient and dx's add.
    c.out_fwd = 2 * a + 3 * a;
    c.out_bwd = 2 * a;
    c.in_bwd = 3 * a;
    c.k_fwd = 4;
    c.k_bwd = 6;
  }
  if (s.lora_dropout > 0) {
    // On the input in the adapters' dtype (fp32: peft casts before dropout):
    // read it, write it and the mask (1 byte); backward reads the gradient
    // and the mask and writes the input's.
    const double x = s.adapters == adapter_dtype::fp32 ? 4 : a;
    c.in_fwd += 2 * x + 1;
    c.in_bwd += 2 * x + 1;
    c.k_fwd += 1;
    c.k_bwd += 1;
  }
  return c;
}

}  // namespace

lora_path_cost lora_path(const training_setup& s, std::int64_t tokens, bool checkpointing) {
  lora_path_cost c;
  if (s.lora_rank <= 0) return c;
  if (lora_module_of(s) != lora_module::peft) return own_lora_path(s, tokens, checkpointing);
  const lora_pass_costs p = lora_pass_costs_of(s);
  const double fwd_passes = 1 + recompute_share(s, checkpointing);
  const double n = static_cast<double>(tokens);
  for (const auto& t : weight_tensors(s.model)) {
    if (!lora_adapts(s, t)) continue;
    // An expert's adapters see its share of the tokens; launches are per expert group.
    const double per_token = static_cast<double>(t.count) * t.token_share;
    const double in = static_cast<double>(t.cols), out = static_cast<double>(t.rows);
    c.bytes += n * per_token * ((in * p.in_fwd + out * p.out_fwd) * fwd_passes + in * p.in_bwd + out * p.out_bwd);
    c.bytes += static_cast<double>(s.lora_rank) * (in + out) * static_cast<double>(t.count) *
               (p.weight_fwd * fwd_passes + p.weight_bwd);
    const double launches = static_cast<double>(t.count / std::max<std::int64_t>(1, t.group));
    c.forward_kernels += launches * p.k_fwd;
    c.backward_kernels += launches * p.k_bwd;
  }
  return c;
}

}  // namespace tiletune
