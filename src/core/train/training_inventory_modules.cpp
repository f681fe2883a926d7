// The frameworks' own Llama-style modules in the activation inventory (training_inventory.hpp,
// layer_impl torchtitan, torchtune, litgpt), where they keep or move other tensors than
// transformers' modules, and each framework's chunked loss. Read from the sources, not traced:
// - torchtitan b5bcd76 (models/common: nn_modules.py RMSNorm is torch.nn.RMSNorm; rope.py
//   apply_rotary_emb: view_as_complex(q.float()) * freqs_cis, type_as(q); attention.py: SDPA with
//   enable_gqa, no repeat). PyTorch's rms_norm (aten/src/ATen/native/layer_norm.cpp, the nightly
//   torchtitan asks for) runs _fused_rms_norm on CUDA when the weight's dtype is the input's, as
//   FSDP2's bf16 gathers and autocast's fp32 model both make it; its derivative
//   (tools/autograd/derivatives.yaml) keeps the input, the weight and the fp32 rstd, and its
//   backward writes the input's gradient in the input's dtype. components/loss.py
//   ChunkedLossWrapper: the hidden states detached and split into 8 chunks (views), each chunk's
//   LM head, cross_entropy(logits.float()) and backward run before the next chunk, the chunks'
//   gradients written into an fp32 buffer of the hidden states' shape, cast back and sent through
//   the decoder's backward.
// - torchtune bd2a0fc (modules/rms_norm.py: x.float(), pow, mean, rsqrt, type_as, * scale, as
//   transformers' LlamaRMSNorm keeps; position_embeddings.py: x.float(), four muls, a sub and an
//   add, stack, type_as; attention.py: k and v unsqueeze(2).expand().flatten(1, 2), a copy at every
//   query head's width, before SDPA; loss/cross_entropy_loss.py LinearCrossEntropyLoss).
// - LitGPT 2685705 (model.py RMSNorm: x.float(), x * x, mean, rsqrt, x * rsqrt, * weight.float(),
//   .to(dtype): the weight's gradient keeps the fp32 normalised tensor; one qkv linear; apply_rope
//   with fp32 cos and sin, .to(q's dtype), then cat with the unrotated part, a copy; k and v
//   repeat_interleave'd to every query head; utils.py chunked_cross_entropy over the 128-token
//   chunks finetune/lora.py asks the model for).
#include <algorithm>
#include <cmath>

#include "core/train/training_inventory_ops.hpp"

namespace tiletune {

using namespace inventory_ops;

bool framework_modules_cover(const model_spec& m, layer_impl layers) {
  if (layers == layer_impl::transformers) return true;
  if (layers == layer_impl::transformer_engine) return transformer_engine_covers(m);
  // Dense Llama-style blocks: RMSNorm before attention and MLP, rotary, a gated MLP. Qwen3's q/k
  // norms are each framework's RMSNorm too (torchtitan's fused one; torchtune's RMSNorm runs
  // transformers' ops after the rotary, LitGPT's its own before it), over each head. Of the MoE
  // families, torchtitan's own MoE (moe_inventory.cpp) as its Qwen3-MoE configures it.
  const bool moe_covered = !m.is_moe() || (layers == layer_impl::torchtitan && m.model_type == "qwen3_moe" &&
                                           m.capacity_factor == 0 && m.shared_intermediate_size == 0);
  return m.causal && m.learned_positions == 0 && !m.layernorm_bias && m.gated_mlp && !m.is_mla() && moe_covered &&
         m.norms_per_layer == 2 && !m.embedding_norm && m.final_logit_softcap == 0;
}

double inventory_ops::framework_rms_norm(const dims& d, tally& t, double n, double in, double rows) {
  const double stat = 4 * rows;  // one fp32 statistic a row
  if (d.layers == layer_impl::torchtitan) {
    // One kernel: the input read, the output and the per-row rstd written; the input and rstd kept
    // (the weight's gradient and the input's both need them: kept with a frozen weight too).
    t.op(in * n, in * n + stat, in * n + stat);
    return in;
  }
  if (d.layers == layer_impl::litgpt) {
    if (in != 4) t.op(in * n, 4 * n, 4 * n);  // x.float(), kept by x * x and x * rsqrt
    else t.saved += 4 * n;                    // the fp32 input itself
    t.op(4 * n, 4 * n);                       // x * x
    t.op(4 * n, stat);                        // mean
    t.op(2 * stat, 2 * stat);                 // + eps, rsqrt
    t.op(4 * n + stat, 4 * n);                // x * rsqrt
    t.op(4 * n, 4 * n, d.kept_by_weight(4 * n));  // * weight.float() keeps the fp32 normalised tensor
    if (in != 4) t.op(4 * n, in * n);         // .to(dtype)
    return in;
  }
  return 0;
}

bool inventory_ops::framework_rotary(const dims& d, tally& t, double n) {
  const double a = d.a;  // q and k leave their linears in the compute dtype (under autocast too)
  if (d.layers == layer_impl::torchtitan) {
    if (a != 4) t.op(a * n, 4 * n);  // q.float()
    t.op(4 * n, 4 * n);              // the complex product with freqs_cis (a buffer: nothing kept)
    if (a != 4) t.op(4 * n, a * n);  // type_as(q)
    return true;
  }
  if (d.layers == layer_impl::torchtune) {
    if (a != 4) t.op(a * n, 4 * n);            // x.float()
    for (int i = 0; i < 4; ++i) t.op(2 * n, 2 * n);  // the four products with the cache's halves
    t.op(4 * n, 2 * n);                        // -
    t.op(4 * n, 2 * n);                        // +
    t.op(4 * n, 4 * n);                        // stack
    if (a != 4) t.op(4 * n, a * n);            // type_as(x)
    return true;
  }
  if (d.layers == layer_impl::litgpt) {
    t.op(a * n / 2, a * n / 2);  // -x2
    t.op(a * n, a * n);          // cat(-x2, x1)
    t.op(a * n, 4 * n);          // x * cos (fp32)
    t.op(a * n, 4 * n);          // rotated * sin
    t.op(8 * n, 4 * n);          // +
    if (a != 4) t.op(4 * n, a * n);  // .to(x.dtype)
    t.op(a * n, a * n);          // cat with the unrotated part (none in Llama): a copy
    return true;
  }
  return false;
}

bool repeats_kv_before_sdpa(layer_impl layers) {
  return layers == layer_impl::torchtune || layers == layer_impl::litgpt;
}

bool inventory_ops::repeats_kv_for_sdpa(const dims& d) { return repeats_kv_before_sdpa(d.layers); }

void inventory_ops::framework_chunked_loss(const model_spec& m, const dims& d, chunked_loss chunks,
                                           token_inventory& inv) {
  const double a = d.a, h = static_cast<double>(m.hidden_size);
  const double cast = a != 4 ? 4 : 0;  // logits.float(): a copy unless the logits are fp32
  if (chunks == chunked_loss::litgpt) {
    // The caller holds every 16-bit logit; each chunk's log_softmax keeps its output, fp32 under
    // autocast (which casts its input), else in the logits' dtype; one chunk's casts and gradients
    // at a time. The chunks are x.split(128) along the sequence: 128 tokens and the remainder, so
    // the largest is min(128, s) of the s tokens (at 129 tokens, 128 of them; not half).
    const double n = std::max(1.0, std::ceil(d.s / 128)), lsm = d.autocast ? 4 : a, in_cast = d.autocast && a != 4 ? 4 : 0;
    const double largest = std::min(d.s, 128.0) / std::max(d.s, 1.0);
    inv.logit_forward_bytes = a + lsm + in_cast * largest;
    inv.logit_backward_bytes = a + lsm + (2 * lsm + (in_cast > 0 ? a : 0)) * largest;
    inv.logit_held_bytes = a;
    inv.logit_traffic = in_cast > 0 ? inv.logit_traffic : 8 * lsm;  // no casts: log_softmax, nll, their backward
    inv.outer_kernels += 10 * (n - 1);
    return;
  }
  constexpr double n = 8;
  inv.outer_kernels += 10 * (n - 1);
  inv.logit_held_bytes = 0;
  if (chunks == chunked_loss::torchtitan) {
    // One chunk at a time, forward and backward: its 16-bit logits (held by the loop's variable),
    // the fp32 copy, log_softmax's output, and in backward nll's and log_softmax's gradients and
    // the cast back. Beside them the fp32 gradient buffer of the hidden states.
    inv.logit_forward_bytes = (a + cast + 4) / n;
    inv.logit_backward_bytes = (a + 4 + 4 + 4 + (cast > 0 ? a : 0)) / n;
    inv.loss_token_bytes = 4 * h;
    // Each chunk's gradient cast to fp32 and copied into the buffer; the buffer cast back.
    inv.outer_traffic += (cast > 0 ? (a + 4) + (4 + a) : 0) * h + 8 * h;
    inv.outer_kernels += 2 * n + 1;
    return;
  }
  // torchtune's LinearCrossEntropyLoss: every chunk's fp32 log-probabilities kept to backward; the
  // chunk being computed also holds its logits and their fp32 copy, and in backward nll's and
  // log_softmax's gradients and the cast back.
  inv.logit_forward_bytes = 4 + (a + cast) / n;
  inv.logit_backward_bytes = 4 + (4 + 4 + (cast > 0 ? a : 0)) / n;
}

}  // namespace tiletune
