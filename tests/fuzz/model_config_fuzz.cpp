// Hugging Face config.json (batch --model FILE): a model, its tensors and its JSON, or a usage_error.
#include "core/errors.hpp"
#include "core/train/model_spec.hpp"
#include "fuzz_input.hpp"

#include <nlohmann/json.hpp>

using namespace tiletune;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const model_spec m = load_model(fuzz::input_file(data, size, "config.json").string());
    (void)weight_tensors(m);
    if (parameter_count(m) <= 0) fuzz::finding("a model with no parameters was accepted");
    (void)to_json(m).dump(2);
  } catch (const usage_error& e) {
    if (std::string(e.what()).empty()) fuzz::finding("a usage error without a message");
  }
  return 0;
}
