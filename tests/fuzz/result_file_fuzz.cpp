// Result files given to compare/check: loaded, compared with themselves and
// written as JSON and JUnit, as `tiletune compare A A --out --junit` does.
#include "core/errors.hpp"
#include "core/results/result_compare.hpp"
#include "fuzz_input.hpp"

#include <nlohmann/json.hpp>

using namespace tiletune;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const result_file r = load_result_file(fuzz::input_file(data, size, "result.json"));
    const comparison c = compare_results(r, r, compare_options{});
    (void)to_json(c).dump(2);
    (void)to_junit_xml(c);
  } catch (const usage_error& e) {
    if (std::string(e.what()).empty()) fuzz::finding("a usage error without a message");
  }
  return 0;
}
