#include "core/train/training_fp8.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/train/model_spec.hpp"

namespace tiletune {

namespace {
// A linear of the blocks the recipe converts: in the layers, dense (routed experts run grouped GEMMs
// torchao's stable float8 does not convert).
bool converted(const weight_tensor& t) { return t.linear && !t.routed() && t.name.rfind("layers.", 0) == 0; }
}  // namespace

std::optional<dtype> fp8_gemm_dtype(const training_setup& s, const std::string& gemm_name) {
  if (s.fp8 == fp8_recipe::none || s.lora_rank > 0) return std::nullopt;
  for (const weight_tensor& t : weight_tensors(s.model)) {
    if (!converted(t) || !gemm_name.starts_with(t.name + " ")) continue;
    const std::string kind = gemm_name.substr(t.name.size() + 1);
    if (kind == "forward" || kind == "recompute") return dtype::e4m3;
    if (kind == "data-grad" || kind == "weight-grad") return dtype::e5m2_e4m3;
  }
  return std::nullopt;
}

double fp8_cast_bytes(const training_setup& s, std::int64_t tokens, bool checkpointing) {
  if (s.fp8 == fp8_recipe::none || s.lora_rank > 0) return 0;
  constexpr double per_element = 7;  // amax 2 + cast 3 + transpose 2 (training_fp8.hpp)
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

void validate_fp8(const training_setup& s, const device_spec& d) {
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
  return fmt::format(
      "fp8 linears (--fp8 {}, torchao's float8 training as torchtitan runs it): the blocks' linears multiply in fp8 "
      "with dynamic per-tensor scales (forward e4m3, as tiletune's e4m3 GEMMs; data- and weight-gradients e5m2 "
      "gradients against e4m3, as its e5m2_e4m3 GEMMs), the LM head and routed experts in bf16; the casts add about "
      "7 bytes per element of each linear's input, weight and output gradient to the memory-bound time; memory as "
      "bf16 (torchtitan measured Llama-3-8B at 47.32 GiB with fp8 all-gather against 47.65 GiB in bf16). The step "
      "time has been held only against torchtitan's published Llama-3-8B speed-up (1.25x on H100s), not a traced "
      "step; fp8 all-gather's halved FSDP traffic is not modelled",
      to_string(s.fp8));
}

}  // namespace tiletune
