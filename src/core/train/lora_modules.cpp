// The frameworks' own LoRA modules (lora_module_of), where they move other bytes than peft's
// (lora_step.cpp). Read from the sources, not traced:
// - torchtune bd2a0fc, modules/peft/lora.py LoRALinear.forward:
//     out = F.linear(x, weight); lora_out = lora_a(dropout(x));
//     lora_out = (alpha / rank) * lora_b(lora_out); return out + lora_out
//   in the model's dtype (bf16 or fp32, no autocast): no cast.
// - torchtitan b5bcd76, components/lora.py LoRALinear.forward:
//     base_out = super().forward(input); lora_out = lora_b(lora_a(input))
//     return base_out + scaling * lora_out
//   no dropout; LoRAConverter without target_modules converts the LM head too (lora_head_adapter),
//   run a chunk at a time under the chunked loss. It applies fully_shard at every parallelism, one
//   GPU included (llama3/parallelize.py), whose MixedPrecisionPolicy gathers every parameter in
//   bf16: no cast on the adapter path, no autocast.
// - LitGPT 2685705, lora.py: LoRALinear.forward
//     pretrained = linear(x); lora = (lora_dropout(x) @ lora_A.T @ lora_B.T) * scaling
//     return pretrained + lora
//   and on the one qkv linear LoRAQKVLinear: one lora_A for every adapted part of q, k and v (r
//   rows a part), so x is dropped out, cast and multiplied once; lora_B through conv1d, one
//   grouped conv where every query head has its own k and v, else one conv a part and a cat;
//   zero_pad writes zeros across the whole qkv width and index_copy_'s the adapted parts into it
//   unless q, k and v are all adapted; then the scale and the add, both at the whole qkv width.
//   Backward: the scale's gradient, zero_pad's (an index_select of the adapted parts), each
//   conv's gradient made contiguous (by our reading of PyTorch's convolution_backward, which
//   asks cuDNN for contiguous tensors), the convs' and lora_A's GEMMs.
// Under autocast (LitGPT's *-mixed) the residual stream is the model's fp32, so the norms hand q,
// k, v, gate and up an fp32 input, which autocast casts to 16 bits for the adapter's matmul
// (activations are not cached: a cast an adapter); the attention's and the MLP's outputs reach o
// and down in 16 bits.
// Fp32 adapters are cast once a forward each (leaves that require grad: cached), their 16-bit
// gradients cast back. Dropout (torchtune's and LitGPT's, above 0): a bool mask kept, in x's
// dtype. Every adapter adds its input's gradient into x's, beside the frozen linear's.
#include <algorithm>

#include "core/train/lora_step.hpp"
#include "core/train/training_framework.hpp"
#include "core/train/training_precision.hpp"
#include "core/train/zero_buffers.hpp"

namespace tiletune {

namespace {

bool is_qkv(const weight_tensor& t) {
  return t.name == "layers.q_proj" || t.name == "layers.k_proj" || t.name == "layers.v_proj";
}

// The linears that read a norm's output: q, k and v the attention's, gate and up the MLP's, the
// LM head the final norm's.
bool reads_norm_output(const weight_tensor& t) {
  return is_qkv(t) || t.name == "layers.gate_proj" || t.name == "layers.up_proj" || t.name == "lm_head";
}

// The element bytes of an adapted linear's input.
double input_bytes(const training_setup& s, const weight_tensor& t) {
  return runs_under_autocast(s) && reads_norm_output(t) ? 4 : activation_bytes(s.prec);
}

// What one adapter moves and launches per token and pass, apart from its GEMMs' own bytes.
struct adapter_cost {
  double fwd = 0, bwd = 0;      // bytes a token
  double k_fwd = 0, k_bwd = 0;  // kernels
};

// The input side: the dropout, autocast's cast of the input, and in backward their gradients and
// the add into x's gradient. x_bytes: the input's element bytes; a: the compute dtype's.
void add_input_side(const training_setup& s, double in, double x_bytes, double a, adapter_cost& c) {
  if (s.lora_dropout > 0) {
    c.fwd += in * (2 * x_bytes + 1);  // read, write the dropped-out copy and the mask
    c.bwd += in * (2 * x_bytes + 1);  // read the gradient and the mask, write
    c.k_fwd += 1;
    c.k_bwd += 1;
  }
  if (x_bytes != a) {
    c.fwd += in * (x_bytes + a);  // autocast's cast for the matmul
    c.bwd += in * (a + x_bytes);  // its gradient, cast back
    c.k_fwd += 1;
    c.k_bwd += 1;
  }
  c.bwd += in * 3 * x_bytes;  // dx added into the frozen linear's
  c.k_bwd += 1;
}

// LoRALinear: the input side, the scale and the add into the frozen output, the scale's gradient.
adapter_cost linear_adapter(const training_setup& s, const weight_tensor& t, double a) {
  adapter_cost l;
  const double out = static_cast<double>(t.rows);
  add_input_side(s, static_cast<double>(t.cols), input_bytes(s, t), a, l);
  l.fwd += out * (2 * a + 3 * a);  // the scale, the add into the frozen output
  l.bwd += out * 2 * a;            // the scale's gradient
  l.k_fwd += 4;                    // A, B, scale, add
  l.k_bwd += 5;                    // the scale, four GEMMs
  return l;
}

}  // namespace

bool one_qkv_adapter(const training_setup& s, const weight_tensor& t) {
  return lora_module_of(s) == lora_module::litgpt && is_qkv(t) && lora_adapts(s, t);
}

double one_qkv_adapter_width(const training_setup& s) {
  double width = 0;
  bool adapted = false;
  for (const auto& t : weight_tensors(s.model))
    if (is_qkv(t)) width += static_cast<double>(t.rows), adapted = adapted || one_qkv_adapter(s, t);
  return adapted ? width : 0;
}

bool lora_copies_input(const training_setup& s, const weight_tensor& t) {
  if (s.lora_dropout > 0) return true;
  if (lora_module_of(s) == lora_module::peft)  // its cast to the adapters' dtype (and autocast's back)
    return s.adapters == adapter_dtype::fp32 && activation_bytes(s.prec) != 4;
  return input_bytes(s, t) != activation_bytes(s.prec);  // autocast's cast of an fp32 input
}

lora_path_cost own_lora_path(const training_setup& s, std::int64_t tokens, bool checkpointing) {
  lora_path_cost c;
  const model_spec& m = s.model;
  const double a = activation_bytes(s.prec), n = static_cast<double>(tokens);
  // Fp32 adapters under autocast: cast to 16 bits every forward (again in recompute); their
  // gradients, computed in 16 bits, cast back to fp32.
  const bool cast_weights = runs_under_autocast(s) && s.adapters == adapter_dtype::fp32 && a != 4;
  const double fwd_passes = 1 + recompute_share(s, checkpointing);
  // Their bytes, and `casts` kernels each way (A's and B's: 2 an adapter).
  auto add_weight_casts = [&](const weight_tensor& t, double passes, double casts) {
    if (!cast_weights) return;
    c.bytes += static_cast<double>(s.lora_rank) * static_cast<double>(t.cols + t.rows) *
               static_cast<double>(t.count) * ((4 + a) * passes + (a + 4));
    c.forward_kernels += casts;
    c.backward_kernels += casts;
  };
  double qkv_in = 0, qkv_x = 0, qkv_width = 0, qkv_adapted = 0, parts = 0, qkv_count = 0;
  for (const auto& t : weight_tensors(m)) {
    if (is_qkv(t)) qkv_width += static_cast<double>(t.rows);
    if (!lora_adapts(s, t)) continue;
    const double in = static_cast<double>(t.cols), out = static_cast<double>(t.rows);
    const double count = static_cast<double>(t.count), launches = static_cast<double>(t.count / t.group);
    if (one_qkv_adapter(s, t)) {  // its casts' kernels below, once for all the parts
      add_weight_casts(t, fwd_passes, 0);
      qkv_in = in, qkv_x = input_bytes(s, t), qkv_adapted += out, parts += 1, qkv_count = count;
      continue;
    }
    add_weight_casts(t, fwd_passes, 2 * launches);
    const adapter_cost l = linear_adapter(s, t, a);
    c.bytes += n * count * t.token_share * (l.fwd * fwd_passes + l.bwd);
    c.forward_kernels += launches * l.k_fwd;
    c.backward_kernels += launches * l.k_bwd;
  }
  if (const auto head = lora_head_adapter(s)) {
    // torchtitan's LM head adapter: once a step, never recomputed; under the chunked loss a chunk
    // at a time, each chunk launching its kernels.
    const double chunks = s.loss == loss_impl::chunked ? 8 : 1;
    const adapter_cost l = linear_adapter(s, *head, a);
    add_weight_casts(*head, 1, 2);
    c.bytes += n * (l.fwd + l.bwd);
    c.forward_kernels += chunks * l.k_fwd;
    c.backward_kernels += chunks * l.k_bwd;
  }
  if (parts > 0) {
    // LitGPT's LoRAQKVLinear over the whole qkv width W, its adapted parts' width V.
    const double W = qkv_width, V = qkv_adapted;
    const bool one_conv = m.num_kv_heads == m.num_heads;  // a grouped conv; else one a part and a cat
    const double convs = one_conv ? 1 : parts;
    adapter_cost q;
    add_input_side(s, qkv_in, qkv_x, a, q);
    q.k_fwd += 1 + convs;                           // lora_A, the convs
    q.k_bwd += 2 + 2 * convs + (one_conv ? 0 : 2);  // their GEMMs; the chunk's and the split's cats
    if (!one_conv) {
      q.fwd += 2 * V * a;  // the cat of the convs' outputs
      q.bwd += 2 * V * a;  // each conv's gradient made contiguous
      q.k_fwd += 1;
      q.k_bwd += parts;
    }
    if (parts < 3) {
      q.fwd += W * a + 2 * V * a;  // zero_pad: zeros at the whole width, index_copy_ of the parts
      q.bwd += 2 * V * a;          // its gradient: an index_select
      q.k_fwd += 2;
      q.k_bwd += 1;
    }
    q.fwd += W * (2 * a + 3 * a);  // the scale, the add, at the whole width
    q.bwd += W * 2 * a;            // the scale's gradient
    q.k_fwd += 2;
    q.k_bwd += 1;
    c.bytes += n * qkv_count * (q.fwd * fwd_passes + q.bwd);
    c.forward_kernels += qkv_count * q.k_fwd;
    c.backward_kernels += qkv_count * q.k_bwd;
    if (cast_weights) {  // one lora_A cast for all the parts, lora_B's one a conv
      c.forward_kernels += qkv_count * (1 + convs);
      c.backward_kernels += qkv_count * (1 + convs);
    }
  }
  return c;
}

}  // namespace tiletune
