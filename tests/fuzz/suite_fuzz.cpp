// Suite files (gemm --suite FILE): a suite or a usage_error naming what is wrong.
#include "core/errors.hpp"
#include "core/gemm/gemm_suite.hpp"
#include "fuzz_input.hpp"

using namespace tiletune;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const gemm_suite s = load_suite(fuzz::input_file(data, size, "suite.json"));
    for (const auto& p : s.problems) validate(p.problem);  // what load_suite accepts is a valid problem
  } catch (const usage_error& e) {
    if (std::string(e.what()).empty()) fuzz::finding("a usage error without a message");
  }
  return 0;
}
