#include "core/train/zero_buffers.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/train/moe_parallel.hpp"
#include "core/train/training_framework.hpp"

namespace tiletune {

namespace {
double parameter_bytes(const training_setup& s) { return s.prec == precision::fp32 ? 4 : 2; }

std::int64_t reduce_bucket_elements(const training_setup& s) { return s.model.hidden_size * s.model.hidden_size; }
}  // namespace

bool deepspeed_zero(const training_setup& s) {
  return s.zero_stage >= 1 && (s.framework == training_framework::hf || s.framework == training_framework::deepspeed);
}

double gathered_unit_parameters(const training_setup& s) {
  const double layers = std::max<double>(1, static_cast<double>(s.model.num_layers));
  const double ep = expert_parallel_degree(s);
  double blocks = 0, largest_outer = 0;
  for (const auto& t : weight_tensors(s.model)) {
    if (t.name.rfind("layers.", 0) == 0) blocks += static_cast<double>(t.parameters()) / (t.routed() ? ep : 1);
    else largest_outer = std::max(largest_outer, static_cast<double>(t.parameters()));
  }
  return std::max(blocks / layers, largest_outer);
}

std::int64_t gathered_weights_bytes(const training_setup& s) {
  return std::llround(2 * parameter_bytes(s) * gathered_unit_parameters(s));
}

std::int64_t deepspeed_bucket_bytes(const training_setup& s) {
  if (!deepspeed_zero(s)) return 0;
  const int buffers = s.zero_stage < 3 && s.overlap_comm ? 2 : 1;
  return std::llround(buffers * parameter_bytes(s) * static_cast<double>(reduce_bucket_elements(s)));
}

void add_deepspeed_zero_settings(const training_setup& s, nlohmann::json& zero) {
  if (s.zero_stage < 1) return;
  zero["reduce_bucket_size"] = reduce_bucket_elements(s);
  if (s.zero_stage < 3) return;
  const auto unit = std::llround(gathered_unit_parameters(s));
  zero["stage3_prefetch_bucket_size"] = unit;
  zero["stage3_max_live_parameters"] = 2 * unit;
  zero["stage3_max_reuse_distance"] = unit;
}

}  // namespace tiletune
