// --quantize nf4: QLoRA (Dettmers et al. 2023, "QLoRA: Efficient Finetuning of Quantized LLMs",
// arXiv:2305.14314): the frozen base's linears in 4-bit NormalFloat with double quantization,
// bf16 adapters by default. As bitsandbytes runs it (bitsandbytes/nn/modules.py Linear4bit,
// bitsandbytes/autograd/_functions.py MatMul4Bit): each Linear4bit dequantizes its weight to the
// compute dtype in forward (dequantize_4bit) and again in backward for the input's gradient, then
// frees the copy; transformers' BitsAndBytesConfig(load_in_4bit, bnb_4bit_quant_type "nf4",
// bnb_4bit_use_double_quant) replaces the blocks' nn.Linear modules and keeps the output layer
// (integrations/bitsandbytes.py get_keys_to_not_convert), embeddings and norms in torch_dtype.
#include "core/train/quantized_base.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/training_precision.hpp"

namespace tiletune {

bool nf4_quantizes(const training_setup& s, const weight_tensor& t) {
  return s.quantize == quantize_kind::nf4 && t.linear && t.name.rfind("layers.", 0) == 0;
}

double quantized_parameters(const training_setup& s, bool experts) {
  double n = 0;
  for (const auto& t : weight_tensors(s.model))
    if (nf4_quantizes(s, t) && t.routed() == experts) n += static_cast<double>(t.parameters());
  return n;
}

std::int64_t dequantized_weight_bytes(const training_setup& s) {
  std::int64_t largest = 0;
  for (const auto& t : weight_tensors(s.model))
    if (nf4_quantizes(s, t)) largest = std::max(largest, t.rows * t.cols);
  return largest * activation_bytes(s.prec);
}

double dequantize_traffic_bytes(const training_setup& s, int expert_parallel, bool checkpointing) {
  if (s.quantize == quantize_kind::none) return 0;
  const double local = quantized_parameters(s, false) + quantized_parameters(s, true) / expert_parallel;
  return local * (nf4_bytes_per_weight + activation_bytes(s.prec)) * (2 + recompute_share(s, checkpointing));
}

void validate_quantize(const training_setup& s) {
  if (s.quantize == quantize_kind::nf4 && s.lora_rank == 0)
    throw usage_error("--quantize nf4 needs --lora-rank above 0: QLoRA trains adapters on a frozen 4-bit base "
                      "(a 4-bit weight gets no gradient)");
}

std::string quantize_note(const training_setup& s, const memory_breakdown& m) {
  if (s.quantize == quantize_kind::none) return "";
  return fmt::format(
      "QLoRA: the blocks' linears in NF4 with double quantization ({:.6f} bytes a weight: 4 bits, an fp8 absmax per "
      "64 and an fp32 constant per 64 x 256), embeddings, norms and the LM head in 16 bits; each linear dequantizes "
      "its weight in forward and again in backward ({:.2f} GiB for the largest, one at a time; their bytes are in the "
      "memory-bound work, their launches not counted). peft's prepare_model_for_kbit_training, which upcasts the "
      "16-bit parameters to fp32, and paged optimizers are not modelled; no QLoRA step was run here",
      nf4_bytes_per_weight, static_cast<double>(m.dequantized_weight_bytes) / double(1LL << 30));
}

}  // namespace tiletune
