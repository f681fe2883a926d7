#include "core/train/training_fp8.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/model_spec.hpp"

namespace tiletune {

namespace {
// A linear of the blocks the recipe converts: in the layers, dense (routed experts run grouped GEMMs
// torchao's stable float8 does not convert), and both its widths multiples of 16 (torchtitan's float8
// module filter, for fp8's tensor cores: a router over 8 or 60 experts, a 1-wide gate stay bf16).
bool converted(const weight_tensor& t) {
  return t.linear && !t.routed() && t.name.rfind("layers.", 0) == 0 && t.rows % 16 == 0 && t.cols % 16 == 0;
}
}  // namespace

std::optional<dtype> fp8_gemm_dtype(const training_setup& s, const std::string& gemm_name) {
  if (s.fp8 == fp8_recipe::none || s.lora_rank > 0) return std::nullopt;
  for (const weight_tensor& t : weight_tensors(s.model)) {
    if (!converted(t) || !gemm_name.starts_with(t.name + " ")) continue;
    const std::string kind = gemm_name.substr(t.name.size() + 1);
    if (kind == "forward" || kind == "recompute") return dtype::e4m3;
    if (kind == "data-grad" || kind == "weight-grad") return s.fp8 == fp8_recipe::rowwise ? dtype::e4m3 : dtype::e5m2_e4m3;
  }
  return std::nullopt;
}

scaling_mode fp8_gemm_scaling(const training_setup& s) {
  return s.fp8 == fp8_recipe::rowwise ? scaling_mode::rowwise : scaling_mode::tensor;
}

double fp8_cast_bytes(const training_setup& s, std::int64_t tokens, bool checkpointing) {
  if (s.fp8 == fp8_recipe::none || s.lora_rank > 0) return 0;
  // tensorwise: amax 2 + cast 3 + transpose 2; rowwise: two amax passes and casts, one copy transposed
  // (training_fp8.hpp).
  const double per_element = s.fp8 == fp8_recipe::rowwise ? 12 : 7;
  const double recompute = recompute_share(s, checkpointing);
  double bytes = 0;
  for (const weight_tensor& t : weight_tensors(s.model)) {
    if (!converted(t)) continue;
    const double x = static_cast<double>(tokens) * static_cast<double>(t.cols),
                 dy = static_cast<double>(tokens) * static_cast<double>(t.rows),
                 w = static_cast<double>(t.rows) * static_cast<double>(t.cols);
    // The recomputed forward casts its input and weight again (amax and cast: 5 bytes an element).
    bytes += static_cast<double>(t.count) * (per_element * (x + dy + w) + recompute * 5 * (x + w));
  }
  return bytes;
}

double fp8_kept_bytes_per_token_per_layer(const training_setup& s) {
  if (s.fp8 != fp8_recipe::rowwise || s.lora_rank > 0 || s.model.num_layers < 1) return 0;
  double bytes = 0;
  for (const weight_tensor& t : weight_tensors(s.model))
    if (converted(t)) bytes += static_cast<double>(t.cols) * static_cast<double>(t.count) * t.token_share;
  return bytes / static_cast<double>(s.model.num_layers);
}

double fp8_all_gather_parameters(const training_setup& s) {
  if (!s.fp8_all_gather || s.fp8 != fp8_recipe::tensorwise || s.zero_stage < 3) return 0;
  double n = 0;
  for (const weight_tensor& t : weight_tensors(s.model))
    if (converted(t)) n += static_cast<double>(t.parameters());
  return n;
}

void validate_fp8(const training_setup& s, const device_spec& d) {
  if (s.fp8_all_gather && (s.fp8 != fp8_recipe::tensorwise || s.zero_stage < 3))
    throw usage_error(fmt::format("--fp8-all-gather gathers FSDP's tensorwise-scaled fp8 weights: --fp8 tensorwise "
                                  "and --zero 3, not --fp8 {} and --zero {}",
                                  to_string(s.fp8), s.zero_stage));
  if (s.fp8 == fp8_recipe::none) return;
  if (s.prec != precision::bf16 && s.prec != precision::bf16_mixed)
    throw usage_error(fmt::format("--fp8 {} casts bf16 activations and weights: --precision bf16 or bf16-mixed, not {}",
                                  to_string(s.fp8), to_string(s.prec)));
  if (d.peak_tflops_fp8 <= 0)
    throw usage_error(fmt::format("--fp8 {} needs fp8 tensor cores (sm_89 and later); the {} has none", to_string(s.fp8),
                                  d.name));
  if (s.lora_rank > 0)
    throw usage_error(fmt::format("--fp8 {} converts the trained linears; with --lora-rank the base is frozen and "
                                  "this recipe is not modelled for it",
                                  to_string(s.fp8)));
}

std::string fp8_note(const training_setup& s) {
  if (s.fp8 == fp8_recipe::rowwise)
    return "fp8 linears (--fp8 rowwise, torchao's rowwise float8 recipe as torchtitan runs it): every GEMM of the "
           "blocks' linears in e4m3 with a scale per row of A and column of B (tiletune's rowwise-scaled e4m3 GEMMs), "
           "the LM head and routed experts in bf16; each linear's input, weight and output gradient is cast along "
           "both axes its two GEMMs reduce over (about 12 bytes an element in the memory-bound time), and an fp8 "
           "copy of each linear's input is kept for the weight gradient (1 byte an element: torchtitan measured "
           "Llama-3-8B on 8 H100s at 58.55 GiB against 47.65 GiB in bf16, 10.9 GiB more, of which this term is "
           "9.5). Held only against torchtitan's published figures (6,424 against 5,760 tokens/s a GPU, 1.12x), not "
           "a traced step";
  return fmt::format(
      "fp8 linears (--fp8 {}, torchao's float8 training as torchtitan runs it): the blocks' linears multiply in fp8 "
      "with dynamic per-tensor scales (forward e4m3, as tiletune's e4m3 GEMMs; data- and weight-gradients e5m2 "
      "gradients against e4m3, as its e5m2_e4m3 GEMMs), the LM head and routed experts in bf16; the casts add about "
      "7 bytes per element of each linear's input, weight and output gradient to the memory-bound time; memory as "
      "bf16 (torchtitan measured Llama-3-8B at 47.32 GiB with fp8 all-gather against 47.65 GiB in bf16). {}The step "
      "time has been held only against torchtitan's published Llama-3-8B speed-up (1.25x on H100s), not a traced "
      "step",
      to_string(s.fp8),
      s.fp8_all_gather ? "FSDP gathers the fp8 linears' weights in fp8 (--fp8-all-gather): one byte a parameter, not "
                         "two; the amax all-reduce it adds is not counted. "
                       : "");
}

}  // namespace tiletune
